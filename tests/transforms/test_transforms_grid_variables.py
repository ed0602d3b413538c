"""A grid held in variables of the launching function (``int blocks = (n + threads - 1) / threads;``, ``gx = (w
+ 63) / 64;`` then ``dim3 grid(gx, gy)``): the launch facts read the value each variable holds at the launch
(its nearest dominating definition), so the wide-block coalescing remap and the block-size step are made; the
block-size step edits the grid where its variable's reaching definition computes it (a local, a ``dim3`` local, a
local reassigned before the launch, one whose operand changes after, a launch in a lambda). Each candidate
compiles with nvcc. Kernels written for these tests."""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source.analysis import analyze
from htam_core.source.api import parse_text
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose

ROWX = """#include <cuda_runtime.h>
__global__ void rowx(const float *in, float *out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;   // the row on x
    int c = blockIdx.y * blockDim.y + threadIdx.y;   // the column on y
    if (r < rows && c < cols)
        out[r * cols + c] = 2.0f * in[r * cols + c] + (float)r;
}
void run(const float *in, float *out, int rows, int cols)
{
HOST
}
"""

#: name -> (launching code, the grid the coalescing remap writes)
GRIDS = {
    "declared": ("""    int gx = (rows + 63) / 64;
    int gy = (cols + 3) / 4;
    dim3 grid(gx, gy);
    dim3 block(64, 4);
    rowx<<<grid, block>>>(in, out, rows, cols);""", "dim3 grid((cols + 63) / 64, (rows + 3) / 4);"),
    "assigned": ("""    int gx, gy;
    gx = (rows + 63) / 64;
    gy = (cols + 3) / 4;
    dim3 grid(gx, gy);
    rowx<<<grid, dim3(64, 4)>>>(in, out, rows, cols);""", "dim3 grid((cols + 63) / 64, (rows + 3) / 4);"),
    "named sides": ("""    const int tx = 64, ty = 4;
    int gx = 1, gy = 1;
    gx = (rows + tx - 1) / tx;
    gy = (cols + ty - 1) / ty;
    rowx<<<dim3(gx, gy), dim3(tx, ty)>>>(in, out, rows, cols);""",
                    "rowx<<<dim3((cols + tx - 1) / tx, (rows + ty - 1) / ty), dim3(tx, ty)>>>"),
}


def _model(host: str):
    return parse_text(ROWX.replace("HOST", host), "cuda", "/tmp/grid_variables.cu")


@pytest.mark.parametrize("name", list(GRIDS))
def test_the_facts_read_the_grid_variables(name: str) -> None:
    model = _model(GRIDS[name][0])
    (la,) = analyze(model, model.kernel("rowx")).launches
    assert [str(d.expr) for d in la.grid] == ["div(rows + 63, 64)", "div(cols + 3, 4)"]


@pytest.mark.parametrize("name", list(GRIDS))
def test_the_wide_block_keeps_its_shape(name: str) -> None:
    model = _model(GRIDS[name][0])
    r = propose("cuda.coalesce_remap", model, model.kernel("rowx"))
    assert not isinstance(r, NotApplicable), r.reason
    (c,) = r
    assert "keeps its wide x" in c.description
    assert GRIDS[name][1] in c.new_text


def test_a_grid_variable_written_after_its_value_is_not_read_through() -> None:
    host = GRIDS["assigned"][0].replace("    dim3 grid(gx, gy);", "    rows = rows / 2;\n    dim3 grid(gx, gy);")
    model = _model(host)
    r = propose("cuda.coalesce_remap", model, model.kernel("rowx"))
    assert isinstance(r, list) and "keeps its wide x" not in r[0].description  # grid and block swapped instead
    assert "(cols + 63) / 64" not in r[0].new_text


def test_the_block_size_retunes_an_assigned_grid() -> None:
    model = _model(GRIDS["assigned"][0])
    r = propose("cuda.block_size", model, model.kernel("rowx"))
    assert not isinstance(r, NotApplicable), r.reason
    c = next(c for c in r if "32x8" in c.description)
    assert "gx = (rows + 31) / 32;" in c.new_text and "gy = (cols + 7) / 8;" in c.new_text
    assert "rowx<<<grid, dim3(32, 8)>>>" in c.new_text


SCALE = """#include <cuda_runtime.h>
__global__ void scale(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.0f * x[i];
}
void run(const float *x, float *y, int n)
{
    int threads = 256;
    int blocks = 0;
    if (n > 0) y = y + 0;
    blocks = (n + threads - 1) / threads;
    scale<<<blocks, threads>>>(x, y, n);
}
"""


def test_the_block_size_retunes_a_1d_grid_assigned_after_its_declaration() -> None:
    model = parse_text(SCALE, "cuda", "/tmp/grid_variables_1d.cu")
    r = propose("cuda.block_size", model, model.kernel("scale"))
    assert not isinstance(r, NotApplicable), r.reason
    c = next(c for c in r if "512 threads" in c.description)
    assert "int threads = 512;" in c.new_text and "blocks = (n + threads - 1) / threads;" in c.new_text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_candidates_compile(tmp_path) -> None:
    made = [propose(tid, m, m.kernel("rowx")) for m in (_model(h) for h, _ in GRIDS.values())
            for tid in ("cuda.coalesce_remap", "cuda.block_size")]
    m1 = parse_text(SCALE, "cuda", "/tmp/grid_variables_1d.cu")
    made.append(propose("cuda.block_size", m1, m1.kernel("scale")))
    for k, cands in enumerate(made):
        assert isinstance(cands, list) and cands
        assert_nvcc_compiles(cands[0].new_text, tmp_path, f"c{k}.cu")


SCALE_KERNEL = SCALE[:SCALE.index("void run")]
#: name -> (the launching function's body, the grid text the 128-thread candidate holds)
HELD_GRIDS = {
    "local": ("int blocks = (n + 255) / 256;\n  scale<<<blocks, 256>>>(x, y, n);", "int blocks = (n + 127) / 128;"),
    "dim3": ("dim3 grid((n + 255) / 256);\n  scale<<<grid, 256>>>(x, y, n);", "dim3 grid((n + 127) / 128);"),
    "dim3_of_local": ("int b = (n + 255) / 256;\n  dim3 grid(b, 1), block(256);\n  scale<<<grid, block>>>(x, y, n);",
                      "int b = (n + 127) / 128;"),
    "reassigned": ("int blocks = n / 256;\n  blocks = (n + 255) / 256;\n  scale<<<blocks, 256>>>(x, y, n);",
                   "blocks = (n + 127) / 128;"),
    "operand_changed": ("int blocks = (n + 255) / 256;\n  n = n - 1;\n  scale<<<blocks, 256>>>(x, y, n);",
                        "int blocks = (n + 127) / 128;"),
    "lambda": ("int blocks = (n + 255) / 256;\n  auto go = [&] { scale<<<blocks, 256>>>(x, y, n); };\n  go();",
               "int blocks = (n + 127) / 128;"),
}


@pytest.mark.parametrize("name", sorted(HELD_GRIDS))
def test_the_block_size_edits_the_grid_where_its_variable_is_computed(name: str, tmp_path) -> None:
    body, grid = HELD_GRIDS[name]
    text = SCALE_KERNEL + "void run(const float *x, float *y, int n)\n{\n  " + body + "\n}\n"
    model = parse_text(text, "cuda", "/tmp/grid_variables_held.cu")
    r = propose("cuda.block_size", model, model.kernel("scale"))
    assert not isinstance(r, NotApplicable), r.reason
    c = next(c for c in r if "128 threads" in c.description)
    assert grid in c.new_text and "256" not in c.new_text[len(SCALE_KERNEL):].replace("n / 256", "")
    if shutil.which("nvcc"):
        assert_nvcc_compiles(c.new_text, tmp_path)


def test_a_grid_set_in_a_branch_is_not_followed() -> None:
    text = SCALE_KERNEL + ("void run(const float *x, float *y, int n)\n{\n  int blocks = 1;\n"
                           "  if (n > 256) blocks = (n + 255) / 256;\n  scale<<<blocks, 256>>>(x, y, n);\n}\n")
    model = parse_text(text, "cuda", "/tmp/grid_variables_branch.cu")
    r = propose("cuda.block_size", model, model.kernel("scale"))
    assert isinstance(r, NotApplicable) and "the grid (blocks) does not follow the block size" in r.reason
