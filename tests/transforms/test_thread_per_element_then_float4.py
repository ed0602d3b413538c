"""``cuda.thread_per_element`` writes the canonical one-element-per-thread form (``htam_e = blockIdx.x * blockDim.x
+ threadIdx.x; if (htam_e < rows * n) { row = htam_e / n; ...; c = htam_e % n; body }``), so the per-lane float4
step (``cuda.vectorize_float4``, strategy ``vectorize_loads``) reads it: ``suggest`` offers it as makeable on the
result, and it is made. An encoder-forward kernel (one thread per (b, t) row copying ``wte[ix, :] + wpe[t, :]``)
and other spellings of a thread per row (early return, ``auto`` index, a body that declares a name the code
before the loop declares too) are rewritten, compiled with nvcc and run on the CPU (:mod:`cpu_emulation`)
against the original.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cpu_emulation import compiler, run_main

import htam_core.profile.api as profile_api
from htam_core.cli.main import main
from htam_core.source import load
from htam_core.source.analysis import analyze
from htam_core.source.analysis.forms import KernelText, elementwise
from htam_core.source.analysis.unit import cuda_source
from htam_core.transforms import registry
from htam_core.types.profile import Bottleneck, Profile
from tests.support.nvcc_check import assert_compiles

TPE, VEC = "cuda.thread_per_element", "cuda.vectorize_float4"

ENCODER = """#include <cuda_runtime.h>

// one thread per (b, t): out[b, t, :] = wte[inp[b, t], :] + wpe[t, :]
__global__ void enc_fwd(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C)
{
    int bt = blockIdx.x * blockDim.x + threadIdx.x;
    if (bt < B * T) {
        int b = bt / T;
        int t = bt % T;
        int ix = inp[b * T + t];
        for (int c = 0; c < C; c++) {
            out[b * T * C + t * C + c] = wte[ix * C + c] + wpe[t * C + c];
        }
    }
}

void launch_enc(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C)
{
    enc_fwd<<<(B * T + 63) / 64, 64>>>(out, inp, wte, wpe, B, T, C);
}
"""

#: other spellings of a thread per row: (kernel text with its launch, kernel name)
SPELLINGS = {
    # early return, a row pointer, the row loop's body a single statement
    "early_return": ("""
__global__ void k(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C)
{
    const int bt = threadIdx.x + blockIdx.x * blockDim.x;
    if (bt >= B * T) return;
    const int t = bt % T;
    float *o = out + (long long)bt * C;
    for (int c = 0; c < C; ++c) o[c] = wte[inp[bt] * C + c] + wpe[t * C + c];
}
""", "k"),
    # an auto index, and a local the loop body declares again (it keeps its braces)
    "auto_and_shadow": ("""
__global__ void k(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C)
{
    auto bt = blockIdx.x * blockDim.x + threadIdx.x;
    if (bt < (unsigned)(B * T)) {
        int t = bt % T;
        float v = 0.0f;
        for (int c = 0; c < C; c++) {
            float v = wte[inp[bt] * C + c];
            out[bt * C + c] = v + wpe[t * C + c];
        }
    }
}
""", "k"),
}

LAUNCH = """
void launch_k(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C)
{
    k<<<(B * T + 31) / 32, 32>>>(out, inp, wte, wpe, B, T, C);
}
"""


def _propose(tmp_path: Path, name: str, text: str, kernel: str, tid: str) -> list:
    path = tmp_path / f"{name}.cu"
    path.write_text(text)
    model = load(str(path))
    cs = registry.propose(tid, model, model.kernel(kernel))
    assert isinstance(cs, list), cs.reason
    return cs


def _chain(tmp_path: Path, name: str, text: str, kernel: str) -> tuple[str, str]:
    """The texts after thread_per_element, then after the float4 step."""
    (tpe,) = _propose(tmp_path, name, text, kernel, TPE)
    (vec,) = _propose(tmp_path, f"{name}-tpe", tpe.new_text, kernel, VEC)
    return tpe.new_text, vec.new_text


def test_the_encoder_becomes_the_canonical_elementwise_form(tmp_path: Path) -> None:
    (c,) = _propose(tmp_path, "enc", ENCODER, "enc_fwd", TPE)
    path = tmp_path / "out.cu"
    path.write_text(c.new_text)
    model = load(str(path))
    kernel = model.kernel("enc_fwd")
    ew = elementwise(KernelText(cuda_source(model, kernel), analyze(model, kernel)))  # type: ignore[arg-type]
    assert not isinstance(ew, str), ew
    assert ew.name == "htam_e" and ew.form == "if" and "return" not in c.new_text
    assert " ".join(ew.bound.text.decode().split()) == "(long long)(B * T) * (C)"  # rows times the row length
    body = c.new_text[c.new_text.index("{", c.new_text.index("if (htam_e")):]
    assert "int bt = (int)(htam_e / (C));" in body and "const int c = (int)(htam_e % (C));" in body
    assert "for (" not in body.split("void launch_enc")[0]
    assert "enc_fwd<<<((B * T + 63) / 64) * ((C)), 64>>>" in c.new_text


def test_the_float4_step_is_made_on_it_per_lane(tmp_path: Path) -> None:
    tpe, vec = _chain(tmp_path, "enc", ENCODER, "enc_fwd")
    (c,) = _propose(tmp_path, "enc2", tpe, "enc_fwd", VEC)
    assert c.params["pointers"] == ["out"] and c.params["vector_width"] == 4  # out per lane, the rows gathered
    assert "reinterpret_cast<float4 *>(out)[htam_v]" in vec and "loops" not in c.params


@pytest.fixture
def fake_profiler(monkeypatch: pytest.MonkeyPatch) -> None:
    """A constructed static profile keeps ``suggest`` independent of compilers."""
    monkeypatch.setattr(profile_api, "profile_kernel",
                        lambda path, name, static=None, **kw: Profile(name, bottleneck=Bottleneck("memory-bound")))


def test_suggest_offers_vectorize_loads_as_makeable_after_it(tmp_path: Path, capsys, fake_profiler) -> None:
    (c,) = _propose(tmp_path, "enc", ENCODER, "enc_fwd", TPE)
    after = tmp_path / "after.cu"
    after.write_text(c.new_text)
    assert main(["suggest", str(after), "--kernel", "enc_fwd", "--top", "12",
                 "--memory", str(tmp_path / "m.sqlite3")]) == 0
    out = capsys.readouterr().out
    block = out.split("(vectorize_loads)", 1)
    assert len(block) == 2, out
    verdict = next(ln.strip() for ln in block[1].splitlines() if ln.strip().startswith(("makeable", "not made")))
    assert verdict.startswith("makeable: the rules engine makes"), verdict


def _emulate(text: str, kernel: str, grid: str, shape: tuple[int, int, int], tmp: Path) -> list[float]:
    b, t, c = shape
    main_cpp = f"""
int main() {{
    const int B = {b}, T = {t}, C = {c}, V = 7;
    std::vector<int> inp(B * T + 1);
    std::vector<float> wte(V * C + 4), wpe(T * C + 4), out(B * T * C + 8, -9.0f);
    for (size_t i = 0; i < inp.size(); ++i) inp[i] = (int)((i * 5 + 3) % V);
    for (size_t i = 0; i < wte.size(); ++i) wte[i] = 0.25f * (float)((i * 7) % 13) - 1.0f;
    for (size_t i = 0; i < wpe.size(); ++i) wpe[i] = 0.5f * (float)((i * 3) % 11) - 2.0f;
    HTAM_LAUNCH({grid}, 1, 32, 1, {kernel}(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C));
    for (float v : out) std::printf("%.9g\\n", v);
    return 0;
}}
"""
    return run_main(text, kernel, main_cpp, tmp)


CASES = [("encoder", ENCODER, "enc_fwd"), *((n, t + LAUNCH, "k") for n, (t, _) in SPELLINGS.items())]


@pytest.mark.parametrize(("name", "text", "kernel"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("shape", [(2, 5, 8), (3, 3, 7), (1, 4, 1), (2, 2, 0)])
def test_same_numbers_on_the_cpu_before_and_after_both_steps(name, text, kernel, shape, tmp_path: Path) -> None:
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    tpe, vec = _chain(tmp_path, name, text, kernel)
    rows_grid = f"({shape[0]} * {shape[1]} + 31) / 32"
    before = _emulate(text, kernel, rows_grid, shape, tmp_path)
    assert len(before) == shape[0] * shape[1] * shape[2] + 8
    assert _emulate(tpe, kernel, f"({rows_grid}) * {shape[2]}", shape, tmp_path) == before
    assert _emulate(vec, kernel, f"(({rows_grid}) * {shape[2]} + 3) / 4", shape, tmp_path) == before


@pytest.mark.parametrize(("name", "text", "kernel"), CASES, ids=[c[0] for c in CASES])
def test_nvcc_compiles_both_steps(name, text, kernel, tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc")
    for label, out in zip(("tpe", "vec"), _chain(tmp_path, name, text, kernel), strict=True):
        assert_compiles(out, tmp=tmp_path, name=f"{label}.cu")


def test_the_emulation_check_can_fail(tmp_path: Path) -> None:
    """A rewrite whose last element is left out of the guard gives other numbers."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    tpe, _ = _chain(tmp_path, "enc", ENCODER, "enc_fwd")
    broken = tpe.replace("(long long)(B * T) * (C))", "(long long)(B * T) * (C) - 1)")
    assert broken != tpe
    shape = (2, 5, 8)
    before = _emulate(ENCODER, "enc_fwd", "(2 * 5 + 31) / 32", shape, tmp_path)
    assert _emulate(broken, "enc_fwd", "((2 * 5 + 31) / 32) * 8", shape, tmp_path) != before
