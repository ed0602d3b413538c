"""The size symbols of a harness inferred through a launcher, and the kernel arguments they give.

Regression: a Triton matmul launched from ``MatMul.forward`` (a static method of a class in another module,
``M, K = a.shape`` and ``K2, N = b.shape``) got made-up symbols lettered in order (``a`` as ``(M, N)``, ``b`` as
``(N, K)``): the launcher's own names were looked up among top-level functions only, so the timed set and the
static estimate's trip counts swapped N and K. The launcher is now found by its qualified name everywhere, its
size names are read in more spellings (``x.size()``, ``x.size(1)``, ``x.shape[-1]``, a starred unpack), and a
kernel parameter takes the value the launcher passes to it (positionally, by keyword, ``a.shape[1]`` at the
launch) rather than the value of a harness symbol of the same name.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from htam_core.harness.infer_py import _shape_names

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def mm_tile(x_ptr, y_ptr, z_ptr, M, N, K, sxm, sxk, syk, syn, szm, szn,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    j = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + i[:, None] * sxm + k[None, :] * sxk, mask=(i[:, None] < M) & (k[None, :] < K), other=0.0)
        y = tl.load(y_ptr + k[:, None] * syk + j[None, :] * syn, mask=(k[:, None] < K) & (j[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
    tl.store(z_ptr + i[:, None] * szm + j[None, :] * szn, acc, mask=(i[:, None] < M) & (j[None, :] < N))
'''

STRIDES = "a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)"
MAIN = '''

if __name__ == "__main__":
    a = torch.randn(40, 24)
    b = torch.randn(24, 16)
    torch.testing.assert_close({call}(a, b), a @ b, atol=1e-2, rtol=1e-2)
'''
HEAD = "import torch\nimport triton\nfrom mmk import mm_tile\n\n\n"

#: launcher spelling -> (ops.py text, the launcher's call)
LAUNCHERS = {
    # the trial's form: a static method, unpacked shapes, sizes passed positionally
    "static-unpacked": (HEAD + "class MatMul:\n    @staticmethod\n    def forward(a, b):\n"
                        "        M, K = a.shape\n        K2, N = b.shape\n"
                        "        c = torch.empty((M, N), dtype=torch.float32)\n"
                        "        mm_tile[(triton.cdiv(M, 16), triton.cdiv(N, 16))](a, b, c, M, N, K, "
                        f"{STRIDES}, BM=16, BN=16, BK=16)\n        return c\n", "MatMul.forward"),
    # shapes read at the launch itself
    "function-shape-at-launch": (HEAD + "def matmul(a, b):\n"
                                 "    c = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32)\n"
                                 "    mm_tile[(triton.cdiv(a.shape[0], 16), triton.cdiv(b.shape[1], 16))](a, b, c, "
                                 f"a.shape[0], b.shape[1], a.shape[1], {STRIDES}, BM=16, BN=16, BK=16)\n"
                                 "    return c\n", "matmul"),
    # a class method, the launcher's own names (not the kernel's), sizes passed by keyword
    "classmethod-keywords": (HEAD + "class Ops:\n    @classmethod\n    def mm(cls, a, b):\n"
                             "        rows, inner = a.shape\n        cols = b.size(1)\n"
                             "        c = torch.empty((rows, cols), dtype=torch.float32)\n"
                             "        mm_tile[(triton.cdiv(rows, 16), triton.cdiv(cols, 16))](a, b, c, K=inner, M=rows, "
                             "N=cols, sxm=a.stride(0), sxk=a.stride(1), syk=b.stride(0), syn=b.stride(1), "
                             "szm=c.stride(0), szn=c.stride(1), BM=16, BN=16, BK=16)\n        return c\n", "Ops.mm"),
}


@pytest.mark.parametrize(("text", "expect"), [
    ("class C:\n    @staticmethod\n    def f(a, b):\n        M, K = a.shape\n        K2, N = b.shape\n",
     {("a", 0): "M", ("a", 1): "K", ("b", 0): "K2", ("b", 1): "N"}),
    ("class C:\n    @classmethod\n    def f(cls, x):\n        rows = x.size(0)\n        cols = x.shape[-1]\n",
     {("x", 0): "rows", ("x", -1): "cols"}),
    ("def f(x, w):\n    *batch, T, D = x.shape\n    O, I = w.size()\n",
     {("x", -2): "T", ("x", -1): "D", ("w", 0): "O", ("w", 1): "I"}),
])
def test_the_launchers_own_size_names_are_read(text, expect):
    assert _shape_names(text, "C.f" if text.startswith("class") else "f") == expect


def test_a_method_of_another_class_is_not_read():
    text = "class A:\n    @staticmethod\n    def f(a):\n        M, K = a.shape\n\n\nclass B:\n    @staticmethod\n" \
           "    def f(a):\n        R, C = a.shape\n"
    assert _shape_names(text, "B.f") == {("a", 0): "R", ("a", 1): "C"}


@pytest.fixture
def _infer_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")


@pytest.mark.usefixtures("_infer_env")
@pytest.mark.parametrize("layout", sorted(LAUNCHERS))
def test_kernel_sizes_follow_what_the_launcher_passes(layout: str, tmp_path: Path) -> None:
    from htam_core.harness.find import find_harness
    from htam_core.harness.launch_values import recorded_kernel_args
    from htam_core.profile.api import source_profile
    from htam_core.source.api import load

    text, launcher = LAUNCHERS[layout]
    (tmp_path / "mmk.py").write_text(KERNEL, encoding="utf-8")
    (tmp_path / "ops.py").write_text(text + MAIN.format(call=launcher), encoding="utf-8")
    h = find_harness(tmp_path / "mmk.py", "mm_tile")
    assert h.kind == "inferred" and h.launcher == launcher
    shapes = {i.name: i.shape for i in h.inputs if not i.is_scalar}
    assert shapes["a"][1] == shapes["b"][0]  # the shared K is one symbol
    # the recorded (unscaled) call: a is 40 x 24, b is 24 x 16
    assert {(s[shapes["a"][0]], s[shapes["a"][1]], s[shapes["b"][1]]) for s in h.sizes} >= {(40, 24, 16)}
    if layout == "static-unpacked":
        assert shapes == {"a": ["M", "K"], "b": ["K", "N"]}
    if layout == "classmethod-keywords":
        assert shapes["a"] == ["rows", "inner"] and shapes["b"][1] == "cols"
    model = load(tmp_path / "mmk.py")
    kernel = model.kernels[0]
    timed = h.sizes[0]
    args = recorded_kernel_args(h, model.text, kernel)
    want = {"M": timed[shapes["a"][0]], "N": timed[shapes["b"][1]], "K": timed[shapes["a"][1]]}
    assert {k: args.get(k) for k in want} == want
    assert args.get("BK") == 16
    # the static estimate's K loop runs K / BK times over the timed set
    (loop,) = source_profile(model, kernel, harness=h).extra["static_roofline"]["loops"]
    assert loop["trip_count"] == math.ceil(want["K"] / 16)


def test_the_template_writes_a_foreign_launch_in_the_kernels_size_symbols(tmp_path: Path) -> None:
    """An instance-method launcher (htam cannot call it, so the template holds the launch): its grid is a local
    over the launcher's own names; the template writes it over the size symbols of the kernel parameters they
    are passed to."""
    from htam_core.harness.template import write_template
    from htam_core.source.api import load

    ops = (HEAD + "class MatMul:\n    def forward(self, a, b):\n        rows, inner = a.shape\n"
           "        cols = b.shape[1]\n        c = torch.empty((rows, cols), dtype=torch.float32)\n"
           "        grid = (triton.cdiv(rows, 16), triton.cdiv(cols, 16))\n"
           f"        mm_tile[grid](a, b, c, rows, cols, inner, {STRIDES}, BM=16, BN=16, BK=16)\n        return c\n")
    (tmp_path / "mmk.py").write_text(KERNEL, encoding="utf-8")
    (tmp_path / "ops.py").write_text(ops, encoding="utf-8")
    model = load(tmp_path / "mmk.py")
    text = write_template(model, model.kernels[0])
    value = {ln.split('name = "')[1].split('"')[0]: ln.split('value = "')[1].split('"')[0]
             for ln in text.splitlines() if "name = " in ln and 'value = "' in ln}
    grid = next(ln for ln in text.splitlines() if ln.startswith("grid = "))
    assert f'"(triton.cdiv({value["M"]}, 16), triton.cdiv({value["N"]}, 16))"' in grid
    assert "rows" not in grid and "cols" not in grid
