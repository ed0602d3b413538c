"""A kernel whose ``{`` is never closed inside a namespace, an ``extern "C" {}`` block or next to a struct takes
the enclosing scope's ``}`` as its own end: it is still reported incomplete (no step is made on it), with one line
from the CLI, while kernels outside the open scope stay complete. Every fixture is the complete file with one
``}`` deleted; the complete files compile with ``nvcc -arch=sm_90 -c`` (checked below)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.source import parse_text
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose
from tests.support.nvcc_check import nvcc_error

ROW = """__global__ void row_sum(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.f;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c];
    out[r] = s;
}
"""
CUT = "    out[r] = s;\n}\n"  # the kernel's closing brace, deleted in the half-typed file
HOST = """
int main() {
    float *x, *out;
    cudaMalloc(&x, 1024 * 256 * sizeof(float)); cudaMalloc(&out, 1024 * sizeof(float));
    LAUNCH<<<8, 128>>>(x, out, 1024, 256);
    cudaDeviceSynchronize(); return 0;
}
"""
OTHER = """__global__ void fill(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.f;
}
"""

SPELLINGS = {
    "namespace": ("namespace ops {\n" + ROW + "}  // namespace ops\n", "ops::row_sum"),
    "nested": ("namespace ops {\nnamespace rows {\n" + ROW + "}\n}\n", "ops::rows::row_sum"),
    "a_b": ("namespace ops::rows {\n" + ROW + "}\n", "ops::rows::row_sum"),
    "anonymous": ("namespace {\n" + ROW + "}\n", "row_sum"),
    "extern_c": ('extern "C" {\n' + ROW + "}\n", "row_sum"),
    "indented": ("namespace ops {\n    " + ROW.replace("\n", "\n    ").rstrip(" ") + "}\n", "ops::row_sum"),
    "struct_after": (ROW + "struct Pair { float a, b; };\n", "row_sum"),
    "namespace_struct": ("namespace ops {\n" + ROW + "struct Pair { float a, b; };\n}\n", "ops::row_sum"),
}


def _file(spelling: str, *, half: bool) -> tuple[str, str]:
    body, callee = SPELLINGS[spelling]
    text = OTHER + body + HOST.replace("LAUNCH", callee)
    if half:
        cut = CUT.replace("\n", "\n    ") if spelling == "indented" else CUT
        cut = cut.rstrip(" ")
        assert cut in text
        text = text.replace(cut, cut.replace("}\n", "\n", 1), 1)
    return text, callee


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_half_typed_kernel_in_a_scope_is_incomplete(spelling: str) -> None:
    text, callee = _file(spelling, half=True)
    model = parse_text(text, "cuda")
    row = next(k for k in model.kernels if k.name == "row_sum")
    assert row.incomplete and row.parse_problem is not None
    assert not model.kernel("fill").incomplete  # the kernel before the open scope is read as it is
    assert isinstance(propose("cuda.warp_per_row", model, row), NotApplicable)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_the_complete_file_is_complete(spelling: str) -> None:
    text, callee = _file(spelling, half=False)
    model = parse_text(text, "cuda")
    row = model.kernel(callee)
    assert not row.incomplete and row.parse_problem is None
    assert [s.line for s in row.launch_sites] == [text[: text.index(callee + "<<<")].count("\n") + 1]


def test_cli_says_incomplete_in_one_line_and_exits_2(tmp_path: Path, capsys) -> None:
    path = tmp_path / "half.cu"
    path.write_text(_file("nested", half=True)[0])
    assert main(["suggest", str(path), "--kernel", "ops::rows::row_sum"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "row_sum is incomplete" in err[0] and "namespace rows" in err[0]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("half", [False, True])
def test_nvcc_agrees(tmp_path: Path, half: bool) -> None:
    for spelling in SPELLINGS:
        err = nvcc_error(textwrap.dedent(_file(spelling, half=half)[0]), tmp=tmp_path, name=f"{spelling}.cu")
        assert (err == "") != half, (spelling, err)


def test_a_kernel_half_typed_inside_a_host_function_is_blamed_not_the_complete_one_before_it():
    """``__global__ void k(float* y) {`` typed inside a host launcher of a namespace takes the rest of the file
    (the namespace's ``}`` included): the complete kernel before it stays complete; the ``__global__`` inside a
    function body is the sign of the half-typed one (a kernel cannot be defined in a function)."""
    text = textwrap.dedent("""\
        namespace ops {
        __global__ void scale(float* y, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] *= 2.f;
        }
        void launch(float* y, int n) {
        __global__ void k(float* y) {
            scale<<<(n + 255) / 256, 256>>>(y, n);
        }
        }
        """)
    model = parse_text(text, "cuda")
    scale = next(k for k in model.kernels if k.name == "scale")
    assert not scale.incomplete, scale.parse_problem
    assert scale.parse_problem is None
