"""A Triton kernel module launched from a separate launcher module: the launcher module is the host launcher.

Regression: ``rowk.py`` (the kernel) and ``ops.py`` (``from rowk import row_softmax`` and a ``softmax(x)`` that
launches it) gave no harness (``no function of rowk.py launches row_softmax``), and the template guessed
``grid = "(triton.cdiv(M, BLOCK),)"`` and ``BLOCK = 128`` although ``htam kernels`` had found the launch in
``ops.py``. The layouts below are the usual ones: a plain ``from`` import, a module alias, a package with a relative
import, a static method; and an instance method, which htam cannot call (the template then holds the launch).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.harness.find import find_harness
from htam_core.harness.foreign import foreign_launcher
from htam_core.harness.launch_values import recorded_constexprs
from htam_core.harness.template import write_template
from htam_core.source.api import load
from htam_core.verify.run import verify_in_worker

pytest.importorskip("triton")
pytest.importorskip("torch")

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def row_scale(out_ptr, in_ptr, w_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=m, other=0.0)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    tl.store(out_ptr + row * stride + cols, x * w + 1.0, mask=m)
'''

MAIN = '''

if __name__ == "__main__":
    x = torch.randn(12, 50)
    w = torch.randn(50)
    torch.testing.assert_close({call}, x * w + 1.0)
'''

LAUNCH = "{k}[(n_rows,)](y, x, w, x.stride(0), n_cols, BLOCK=triton.next_power_of_2(n_cols))"

LAYOUTS = {
    "from-import": ("ops.py", "import torch\nimport triton\nfrom rowk import row_scale\n\n\n"
                    "def scale(x, w):\n    n_rows, n_cols = x.shape\n    y = torch.empty_like(x)\n"
                    f"    {LAUNCH.format(k='row_scale')}\n    return y\n" + MAIN.format(call="scale(x, w)"),
                    "scale", "rowk"),
    "module-alias": ("ops.py", "import torch\nimport triton\nimport rowk as K\n\n\n"
                     "def scale(x, w):\n    n_rows, n_cols = x.shape\n    y = torch.empty_like(x)\n"
                     f"    {LAUNCH.format(k='K.row_scale')}\n    return y\n" + MAIN.format(call="scale(x, w)"),
                     "scale", "rowk"),
    "static-method": ("ops.py", "import torch\nimport triton\nfrom rowk import row_scale\n\n\nclass RowScale:\n"
                      "    @staticmethod\n    def apply(x, w):\n        n_rows, n_cols = x.shape\n"
                      f"        y = torch.empty_like(x)\n        {LAUNCH.format(k='row_scale')}\n        return y\n"
                      + MAIN.format(call="RowScale.apply(x, w)"), "RowScale.apply", "rowk"),
    "class-method": ("ops.py", "import torch\nimport triton\nfrom rowk import row_scale\n\n\nclass RowScale:\n"
                     "    @classmethod\n    def apply(cls, x, w):\n        n_rows, n_cols = x.shape\n"
                     f"        y = torch.empty_like(x)\n        {LAUNCH.format(k='row_scale')}\n        return y\n"
                     + MAIN.format(call="RowScale.apply(x, w)"), "RowScale.apply", "rowk"),
}


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_launcher_module_is_found(layout: str, tmp_path: Path) -> None:
    ops, text, launcher, module = LAYOUTS[layout]
    _write(tmp_path, {"rowk.py": KERNEL, ops: text})
    model = load(tmp_path / "rowk.py")
    found = foreign_launcher(model, model.kernels[0])
    assert found is not None and found.qualname == launcher and found.kernel_module == module
    assert found.path == (tmp_path / ops).resolve()
    assert found.params == ("x", "w")  # a class method's cls is the class's to bind


def _package(tmp_path: Path) -> Path:
    ops = ("import torch\nimport triton\nfrom .kernels import row_scale\n\n\n"
           "def scale(x, w):\n    n_rows, n_cols = x.shape\n    y = torch.empty_like(x)\n"
           f"    {LAUNCH.format(k='row_scale')}\n    return y\n" + MAIN.format(call="scale(x, w)"))
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/kernels.py": KERNEL, "pkg/ops.py": ops})
    return tmp_path / "pkg" / "kernels.py"


def test_package_with_a_relative_import_is_found(tmp_path: Path) -> None:
    kernels = _package(tmp_path)
    model = load(kernels)
    found = foreign_launcher(model, model.kernels[0])
    assert found is not None and found.kernel_module == "pkg.kernels" and found.package == "pkg"
    assert found.root == tmp_path.resolve()


def _check_candidates(h, kernel_file: Path, tmp_path: Path) -> None:
    """A planted wrong candidate is refused and an unchanged one passes: candidates replace the kernel module."""
    cand = tmp_path / "candidates" / "01" / kernel_file.name
    cand.parent.mkdir(parents=True)
    cand.write_text(KERNEL.replace("x * w + 1.0", "x * w + 1.01"), encoding="utf-8")
    bad = verify_in_worker(dataclasses.replace(h, path=str(cand)), timeout_s=300)
    assert bad.status == "incorrect" and "mismatch" in bad.refused_by, bad.messages
    good = cand.with_name("same.py")
    good.write_text(KERNEL, encoding="utf-8")
    ok = verify_in_worker(dataclasses.replace(h, path=str(good)), timeout_s=300)
    assert ok.correct, ok.messages


@pytest.mark.parametrize("layout", ["from-import", "static-method", "class-method"])
def test_inferred_through_the_launcher_module(layout: str, tmp_path: Path) -> None:
    ops, text, launcher, _ = LAYOUTS[layout]
    _write(tmp_path, {"rowk.py": KERNEL, ops: text})
    h = find_harness(tmp_path / "rowk.py", "row_scale")
    assert h.kind == "inferred" and h.launcher == launcher and h.path == str(tmp_path / "rowk.py")
    assert h.launcher_path == str((tmp_path / ops).resolve()) and h.kernel_module == "rowk"
    assert h.reference is not None and "x * w" in h.reference.replace("(", "").replace(")", "")
    model = load(tmp_path / "rowk.py")
    # the static compile reads the launch configuration in the launcher module (BLOCK over the timed set)
    n_cols = h.sizes[0][next(i.shape[1] for i in h.inputs if i.name == "x")]
    assert recorded_constexprs(h, model.text, model.kernels[0])["BLOCK"] == 1 << (int(n_cols) - 1).bit_length()
    if layout == "from-import":
        _check_candidates(h, tmp_path / "rowk.py", tmp_path)


def test_package_relative_import_is_verified(tmp_path: Path) -> None:
    kernels = _package(tmp_path)
    h = find_harness(kernels, "row_scale")
    assert h.launcher == "scale" and h.kernel_module == "pkg.kernels"
    _check_candidates(h, kernels, tmp_path)


def test_instance_method_launcher_gets_the_found_launch_in_the_template(tmp_path: Path) -> None:
    ops = ("import torch\nimport triton\nimport rowk\n\n\nclass Op:\n    def __call__(self, x, w):\n"
           "        n_rows, n_cols = x.shape\n        y = torch.empty_like(x)\n"
           f"        {LAUNCH.format(k='rowk.row_scale')}\n        return y\n")
    _write(tmp_path, {"rowk.py": KERNEL, "ops.py": ops})
    with pytest.raises(HarnessError) as err:
        find_harness(tmp_path / "rowk.py", "row_scale")
    assert "launched at ops.py:10" in err.value.message and "no function of rowk.py" not in err.value.message
    snippet = err.value.snippet or ""
    assert 'grid = "(n_rows,)"' in snippet and "ops.py:10" in snippet
    # what the launch passes to the kernel's n_cols is written as n_cols's size symbol, a name the table knows
    n_cols = next(ln for ln in snippet.splitlines() if 'name = "n_cols"' in ln).split('value = "')[1].split('"')[0]
    assert f'BLOCK = "triton.next_power_of_2({n_cols})"' in snippet
    assert "guessed: one program per block" not in snippet
    model = load(tmp_path / "rowk.py")
    assert write_template(model, model.kernels[0]) in f"{snippet}\n"
