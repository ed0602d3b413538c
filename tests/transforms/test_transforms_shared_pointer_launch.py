"""A step that changes the launch is refused when the kernel is launched through a function pointer or a table of
kernels that runs other kernels too (their grid and block would change with it), or made in its launch-independent
form (correct for any grid, said in its title); a step that edits only the kernel is still made, and a pointer that
runs the kernel alone does not block a launch step. The same when the table is in another file of the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source import parse_text
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose

KERNELS = """
__global__ void scale(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
__global__ void shift(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
typedef void (*Op)(const float *, float *, int);
void run(const float *x, float *y, int n) {
  int threads = 256;
  int blocks = (n + threads - 1) / threads;
"""
TABLE = KERNELS + "  Op ops[] = {&scale, shift};\n  for (int k = 0; k < 2; ++k) ops[k]<<<blocks, threads>>>(x, y, n);\n}\n"
LONE = KERNELS + "  Op f = &scale;\n  f<<<blocks, threads>>>(x, y, n);\n}\n"


def _scale(text: str):  # noqa: ANN202 - (model, kernel)
    model = parse_text(text, "cuda", "ops.cu")
    return model, next(k for k in model.kernels if k.name == "scale")


@pytest.mark.parametrize("step", ["cuda.block_size"])
def test_a_launch_step_on_a_shared_pointer_launch_is_refused_by_name(step: str) -> None:
    model, kernel = _scale(TABLE)
    result = propose(step, model, kernel)
    assert isinstance(result, NotApplicable)
    assert "through the function pointer ops[k], which runs shift too" in result.reason


def test_a_kernel_only_step_is_still_made_on_a_shared_launch() -> None:
    model, kernel = _scale(TABLE)
    result = propose("cuda.launch_bounds", model, kernel)
    assert not isinstance(result, NotApplicable), result.reason
    assert "__launch_bounds__(256)" in result[0].new_text


def test_a_pointer_that_runs_the_kernel_alone_lets_the_launch_change() -> None:
    model, kernel = _scale(LONE)
    result = propose("cuda.block_size", model, kernel)
    assert not isinstance(result, NotApplicable), result.reason


@pytest.mark.parametrize("text", [TABLE, LONE], ids=["table", "lone"])
def test_a_parameter_type_change_is_refused_when_a_pointer_reaches_the_kernel(text: str) -> None:
    plain = text.replace("const float *x", "float *x")
    model, kernel = _scale(plain)
    result = propose("cuda.restrict_const", model, kernel)
    assert isinstance(result, NotApplicable)
    assert "whose type spells scale's parameter types" in result.reason


@pytest.mark.parametrize("step", ["cuda.vectorize_float4", "cuda.grid_stride"])
def test_a_grid_step_on_a_shared_launch_is_made_launch_independent(step: str) -> None:
    model, kernel = _scale(TABLE)
    result = propose(step, model, kernel)
    assert not isinstance(result, NotApplicable), result.reason
    assert [c.params.get("launch") for c in result] == ["independent"]
    assert result[0].title_note == ("launch through the pointer ops[k] on line 15 runs other kernels too, left as "
                                    "is: correct for any grid")
    assert result[0].new_text.count("<<<blocks, threads>>>") == 1  # the launch is unchanged


def test_a_table_in_another_file_is_read_with_its_lines(tmp_path: Path) -> None:
    head, _, host = TABLE.partition("typedef")
    (tmp_path / "kern.cu").write_text(head)
    (tmp_path / "main.cu").write_text(
        "__global__ void scale(const float *x, float *y, int n);\n"
        "__global__ void shift(const float *x, float *y, int n);\n"
        "typedef" + host + "int main() { run(nullptr, nullptr, 0); return 0; }\n")
    from htam_core.source import load

    model = load(tmp_path / "kern.cu")
    kernel = next(k for k in model.kernels if k.name == "scale")
    refused = propose("cuda.block_size", model, kernel)
    assert isinstance(refused, NotApplicable)
    assert any("the launch on line 8 of main.cu runs scale through the function pointer ops[k]" in r
               for r in refused.rejected), refused.rejected
    made = propose("cuda.grid_stride", model, kernel)
    assert not isinstance(made, NotApplicable), made.reason
    assert made[0].file_edits == {}
    assert "(launch through the pointer ops[k] on line 8 of main.cu runs other kernels too" in made[0].description
