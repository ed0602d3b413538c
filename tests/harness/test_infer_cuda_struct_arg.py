"""A kernel taking a struct by value (``Weights w = {0.5f, 0.25f};`` passed to the launch): the inferred harness
refuses it in one line that names the argument and the way out (a host launcher), never a misread ``dim3``; the
template marks it as a TODO instead of guessing a float; a host launcher that builds the struct is inferred; and a
static ``htam optimize`` on the program run whole says in its report that no candidate is checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.harness.find import find_harness
from htam_core.harness.infer_cuda import infer_cuda_harness
from htam_core.harness.template import write_template
from htam_core.source import load

TRIAL = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "trial"

KERNELS = {
    "brace": ("struct Weights { float wa, wb; };", "Weights w = {0.5f, 0.25f};", "Weights"),
    "list_init": ("struct Weights { float wa, wb; };", "Weights w{0.5f, 0.25f};", "Weights"),
    "typedef": ("typedef struct { float wa, wb; } Weights;", "Weights w; w.wa = 0.5f; w.wb = 0.25f;", "Weights"),
    "class": ("class Weights { public: float wa, wb; };", "Weights w; w.wa = 1.0f; w.wb = 2.0f;", "Weights"),
}

BODY = """{decl}
__global__ void wsum2(const float *a, const float *b, float *out, {ty} w, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = w.wa * a[i] + w.wb * b[i];
}}
int main() {{
  const int n = 4096;
  float *a, *b, *out;
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMalloc(&out, n * 4);
  {value}
  wsum2<<<(n + 255) / 256, 256>>>(a, b, out, w, n);
  return 0;
}}
"""


@pytest.mark.parametrize("which", sorted(KERNELS))
def test_a_struct_by_value_is_refused_in_one_line(tmp_path: Path, which: str) -> None:
    decl, value, ty = KERNELS[which]
    p = tmp_path / f"{which}.cu"
    p.write_text(BODY.format(decl=decl, value=value, ty=ty))
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(p, "wsum2")
    msg = e.value.message
    assert "`w` of wsum2 is a `Weights` passed by value" in msg and "host function" in msg, msg
    assert "\n" not in msg and "Dim3" not in msg and e.value.missing


def test_the_template_marks_the_struct_instead_of_guessing_a_float(tmp_path: Path) -> None:
    p = tmp_path / "struct_weights.cu"
    shutil.copy(TRIAL / "struct_weights.cu", p)
    model = load(str(p))
    lines = [ln for ln in write_template(model, model.kernel("wsum2")).splitlines() if 'name = "w"' in ln]
    assert len(lines) == 1 and "TODO: a `Weights` passed by value" in lines[0], lines


def test_a_host_launcher_that_builds_the_struct_is_inferred(tmp_path: Path) -> None:
    text = (TRIAL / "struct_weights.cu").read_text()
    text = text.replace("int main() {", "void run(const float *a, const float *b, float *out, int n) {\n"
                        "  Weights w = {0.5f, 0.25f};\n  wsum2<<<(n + 255) / 256, 256>>>(a, b, out, w, n);\n}\n"
                        "int main() {")
    text = text.replace("  Weights w = {0.5f, 0.25f};\n  wsum2<<<(n + 255) / 256, 256>>>(a, b, out, w, n);\n"
                        "  cudaDeviceSynchronize();", "  run(a, b, out, n);\n  cudaDeviceSynchronize();")
    assert "run(a, b, out, n);" in text
    p = tmp_path / "launcher.cu"
    p.write_text(text)
    h = infer_cuda_harness(p, "wsum2")
    assert h.launcher == "run" and [i.name for i in h.inputs] == ["a", "b", "out", "n"]


def test_the_program_runs_whole_and_an_optimize_report_says_nothing_is_checked(tmp_path: Path) -> None:
    from htam_core.optimize.loop import run_optimize
    from htam_core.optimize.task import OptimizeTask

    p = tmp_path / "struct_weights.cu"
    shutil.copy(TRIAL / "struct_weights.cu", p)
    h = find_harness(p, "wsum2", load(str(p)))
    assert h.kind == "cu-main" and "`w` of wsum2 is a `Weights` passed by value" in h.notes[0]
    res = run_optimize(OptimizeTask(path=str(p), kernel="wsum2", budget=1, static=True, out_dir=str(tmp_path / "out"),
                                    memory_path=str(tmp_path / "mem.sqlite3")))
    line = next(w for w in res.warnings if w.startswith("harness: "))
    assert "run whole" in line and "no candidate is checked for correctness" in line and "`Weights`" in line
    assert "no candidate is checked for correctness" in (tmp_path / "out" / "report.md").read_text()


def test_a_type_alias_of_a_number_is_not_taken_for_a_struct(tmp_path: Path) -> None:
    """``typedef float real; real s;`` declares a number: only the structs the file defines are passed whole."""
    p = tmp_path / "alias.cu"
    p.write_text(BODY.format(decl="typedef float real;", value="real w;", ty="real").replace("w.wa * a[i] + w.wb",
                                                                                             "w * a[i] + w"))
    try:
        infer_cuda_harness(p, "wsum2")
    except HarnessError as e:
        assert "passed by value" not in e.message, e.message
