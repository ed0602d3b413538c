"""``cuda.coalesce_remap`` on a block wider along x than along y: the block keeps its shape (its wide x moves onto
the contiguous index with the builtins' swap) and the grid's x and y trade places, each redivided by the block
side that now covers it, so a warp spans 32 consecutive columns and the grid still covers every element.

Coverage is checked on the CPU (``cpu_emulation``): the candidate's own grid and block expressions launch it on a
ragged shape, and every output element must match the starting kernel's.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from cpu_emulation import compiler, run_main

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate, NotApplicable
from tests.support.nvcc_check import assert_compiles

TID = "cuda.coalesce_remap"

_KERNEL = """__global__ void rowx(const float *in, float *out, int rows, int cols)
{
    {IDX} r = blockIdx.x * {BDX} + threadIdx.x;   // the row on x
    {IDX} c = blockIdx.y * {BDY} + threadIdx.y;   // the column on y
    if (r < rows && c < cols)
        out[r * cols + c] = 2.0f * in[r * cols + c] + (float)r;
}
"""

_DIM3_VARS = """
void run(const float *in, float *out, int rows, int cols)
{
    dim3 block(64, 4);
    dim3 grid((rows + 63) / 64, (cols + 3) / 4);
    rowx<<<grid, block>>>(in, out, rows, cols);
}
"""

_INLINE = """
void run(const float *in, float *out, int rows, int cols)
{
    rowx<<<dim3((rows + 31) / 32, (cols + 7) / 8), dim3(32, 8)>>>(in, out, rows, cols);
}
"""

_MACROS = """
void run(const float *in, float *out, int rows, int cols)
{
    dim3 block(TX, TY);
    dim3 grid(CEIL_DIV(rows, TX), CEIL_DIV(cols, TY));
    rowx<<<grid, block>>>(in, out, rows, cols);
}
"""

_MIXED = """
void run(const float *in, float *out, int rows, int cols)
{
    dim3 block(TX, ty);
    dim3 grid((rows + TX - 1) / TX, (cols + ty - 1) / ty);
    rowx<<<grid, block>>>(in, out, rows, cols);
}
"""

_MACRO_DEFS = "#define TX 128\n#define TY 2\n#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))\n"

_MAIN = """
int main() {{
    const int rows = 45, cols = 77;
    std::vector<float> in(rows * cols), out(rows * cols, 1.0e6f);
    for (int i = 0; i < rows * cols; ++i) in[i] = 0.5f * (float)(i % 23) - 3.0f;
    HTAM_LAUNCH({gx}, {gy}, {bx}, {by}, rowx(in.data(), out.data(), rows, cols));
    for (float v : out) std::printf("%.9g\\n", v);
    return 0;
}}
"""

_SPELLINGS = {
    "dim3 variables": ("", "int", "blockDim.x", "blockDim.y", _DIM3_VARS),
    "inline dim3": ("", "int", "blockDim.x", "blockDim.y", _INLINE),
    "macros": (_MACRO_DEFS, "int", "blockDim.x", "blockDim.y", _MACROS),
    "size_t indices": ("", "size_t", "(size_t)blockDim.x", "(size_t)blockDim.y", _DIM3_VARS),
    "constexpr and macro": (_MACRO_DEFS + "constexpr int ty = 2;\n", "int", "blockDim.x", "blockDim.y", _MIXED),
}


def _source(case: str) -> str:
    defs, idx, bdx, bdy, host = _SPELLINGS[case]
    kernel = _KERNEL.replace("{IDX}", idx).replace("{BDX}", bdx).replace("{BDY}", bdy)
    return "#include <cuda_runtime.h>\n" + defs + kernel + host


def _propose(src: str, tmp_path: Path) -> Candidate | NotApplicable:
    path = tmp_path / "k.cu"
    path.write_text(src)
    model = load(str(path))
    res = registry.propose(TID, model, model.kernel("rowx"))
    if isinstance(res, NotApplicable):
        return res
    (c,) = res
    return c


def _launch_dims(text: str) -> tuple[list[str], list[str]]:
    """The grid's and the block's components as written in ``run`` (dim3 variables or inline dim3)."""
    run = text[text.index("void run("):]
    found = re.findall(r"dim3\s*(?:grid|block)?\s*\(((?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)", run)
    grid, block = ([p.strip() for p in _split(s)] for s in found[:2])
    if "dim3 block(" in run and run.index("dim3 block(") < run.index("dim3 grid("):
        grid, block = block, grid
    return grid, block


def _split(args: str) -> list[str]:
    """Split a dim3's arguments at its top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in args:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur]


@pytest.mark.parametrize("case", list(_SPELLINGS))
def test_the_wide_block_stays_and_the_grid_is_redivided(case, tmp_path):
    c = _propose(_source(case), tmp_path)
    assert isinstance(c, Candidate)
    grid, block = _launch_dims(c.new_text)
    old_grid, old_block = _launch_dims(_source(case))
    assert block == old_block  # the wide side stays on x
    assert grid != old_grid and len(grid) == 2
    assert "keeps its wide x" in c.description
    assert "blockIdx.y * " in c.new_text.split("// the row on x")[0]


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("case", list(_SPELLINGS))
def test_the_new_grid_covers_every_element(case, tmp_path):
    start = _source(case)
    c = _propose(start, tmp_path)
    assert isinstance(c, Candidate)
    prelude = _SPELLINGS[case][0]
    runs = []
    for text in (start, c.new_text):
        (gx, gy), (bx, by) = _launch_dims(text)
        runs.append(run_main(text, "rowx", _MAIN.format(gx=gx, gy=gy, bx=bx, by=by), tmp_path, prelude))
    before, after = runs
    assert len(before) == 45 * 77 and 1.0e6 not in before  # the start covers every element
    assert after == before


_FIXED = """__global__ void rowx(const float *in, float *out, int rows, int cols)
{
    int r = blockIdx.x * 64 + threadIdx.x;
    int c = blockIdx.y * 4 + threadIdx.y;
    if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c] + 1.0f;
}
void run(const float *in, float *out, int rows, int cols)
{
    dim3 block(64, 4);
    dim3 grid((rows + 63) / 64, (cols + 3) / 4);
    rowx<<<grid, block>>>(in, out, rows, cols);
}
"""

_NOT_CEIL = _source("dim3 variables").replace("dim3 grid((rows + 63) / 64, (cols + 3) / 4);",
                                                "int gx = (rows + 63) / 64;\n    dim3 grid(gx, cols);")


_EXPR_BLOCK = _source("dim3 variables").replace("dim3 block(64, 4);", "dim3 block(32 * 2, 4);")


@pytest.mark.parametrize("src", [_FIXED, _NOT_CEIL, _EXPR_BLOCK],
                         ids=["hard-coded extents", "grid not a ceil-division", "block side an expression"])
def test_a_launch_that_cannot_keep_its_block_swaps_grid_and_block(src, tmp_path):
    c = _propose(src, tmp_path)
    assert isinstance(c, Candidate)
    assert re.search(r"dim3 block\(4, (64|32 \* 2)\);", c.new_text)
    assert "keeps its wide x" not in c.description


def test_a_tall_block_still_swaps_into_a_wide_one(tmp_path):
    src = _source("dim3 variables").replace("dim3 block(64, 4);", "dim3 block(4, 64);").replace(
        "(rows + 63) / 64, (cols + 3) / 4", "(rows + 3) / 4, (cols + 63) / 64")
    c = _propose(src, tmp_path)
    assert isinstance(c, Candidate)
    assert "dim3 block(64, 4);" in c.new_text and "dim3 grid((cols + 63) / 64, (rows + 3) / 4);" in c.new_text


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_candidates_compile(tmp_path):
    texts = []
    for case in _SPELLINGS:
        c = _propose(_source(case), tmp_path)
        assert isinstance(c, Candidate)
        texts.append(c.new_text.replace("rowx", f"rowx{len(texts)}").replace("void run(", f"void run{len(texts)}("))
    text = "\n".join(t if i == 0 else t.split("\n", 1)[1] for i, t in enumerate(texts)).replace(
        _MACRO_DEFS, "") .replace("#include <cuda_runtime.h>\n", "#include <cuda_runtime.h>\n" + _MACRO_DEFS, 1)
    assert_compiles(text, tmp=tmp_path, name="all.cu")
