"""The stencil facts the knowledge base reads: ``stencil_window`` (the analysis layer's normal form, 1-D or 2-D)
offers the stencil tile; on a stencil, one warp per row and add-during-load (which cannot apply there) are not
offered; a row-sum kernel and a reduction keep them and do not get the tile; a 2-D stencil whose block is known only
at run time (which the 2-D tile refuses) does not get it either."""

from __future__ import annotations

import pytest

from htam_core.memory import load_knowledge
from htam_core.memory.facts import compute_facts
from htam_core.source.api import parse_text

KB = load_knowledge()

STENCILS = {
    "loop": """#define R 4
__global__ void k(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < R || i >= n - R) return;
    float acc = 0.0f;
    for (int j = -R; j <= R; ++j) acc += in[i + j];
    out[i] = acc;
}
void launch(const float *in, float *out, int n) { k<<<(n + 255) / 256, 256>>>(in, out, n); }
""",
    "template_radius": """template <int RAD> __global__ void k(const double *in, double *out, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double acc = 0;
    for (int t = 0; t <= 2 * RAD; t++) { long q = i + t - RAD; if (q >= 0 && q < n) acc += in[q]; }
    out[i] = acc;
}
void launch(const double *in, double *out, long n) { k<3><<<(n + 127) / 128, 128>>>(in, out, n); }
""",
}

STENCILS_2D = {
    "jacobi5": """__global__ void k(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && y > 0 && x < W - 1 && y < H - 1)
        out[y * W + x] = in[(y - 1) * W + x] + in[(y + 1) * W + x] + in[y * W + x - 1] + in[y * W + x + 1];
}
void launch(const float *in, float *out, int W, int H) { k<<<dim3(W / 32, H / 8), dim3(32, 8)>>>(in, out, W, H); }
""",
    "window_loops": """#define RAD 2
__global__ void k(const float *in, float *out, int W, int H, int pitch) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    float s = 0.0f;
    for (int dy = -RAD; dy <= RAD; ++dy) {
        if (y + dy < 0 || y + dy >= H) continue;
        for (int dx = -RAD; dx <= RAD; ++dx) {
            if (x + dx < 0 || x + dx >= W) continue;
            s += in[(y + dy) * pitch + x + dx];
        }
    }
    out[y * pitch + x] = s;
}
void launch(const float *in, float *out, int W, int H) {
    dim3 b(16, 16);
    k<<<dim3((W + 15) / 16, (H + 15) / 16), b>>>(in, out, W, H, W);
}
""",
    "rows_apart": """__global__ void k(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < W && y > 0 && y < H - 1) out[y * W + x] = in[(y - 1) * W + x] - in[(y + 1) * W + x];
}
void launch(const float *in, float *out, int W, int H) { k<<<dim3(W / 32, H / 8), dim3(32, 8)>>>(in, out, W, H); }
""",
}
STENCILS.update(STENCILS_2D)

NOT_STENCILS = {
    "row_sum": """__global__ void k(const float *x, float *out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c];
    out[r] = s;
}
void launch(const float *x, float *out, int rows, int cols) { k<<<(rows + 127) / 128, 128>>>(x, out, rows, cols); }
""",
}


def _facts(text: str) -> dict:
    model = parse_text(text, "cuda")
    k = model.kernel("k")
    return compute_facts(k.features, k.language, None, kernel=k, model=model)


@pytest.mark.parametrize("name", sorted(STENCILS))
def test_a_stencil_is_offered_the_tile_and_not_the_row_steps(name):
    f = _facts(STENCILS[name])
    assert f["stencil_window"] is True and f["stencil_like"] is True
    assert KB.strategy("stencil_smem_tile").applies.evaluate(f) is True
    for other in ("warp_per_row", "thread_coarsening"):
        assert KB.strategy(other).applies.evaluate(f) is False


@pytest.mark.parametrize("name", sorted(NOT_STENCILS))
def test_a_row_kernel_keeps_warp_per_row_and_gets_no_tile(name):
    f = _facts(NOT_STENCILS[name])
    assert f["stencil_window"] is False
    assert KB.strategy("stencil_smem_tile").applies.evaluate(f) is False
    assert KB.strategy("warp_per_row").applies.evaluate(f) is not False


def test_a_2d_stencil_launched_with_a_run_time_block_is_not_offered_the_tile():
    text = STENCILS_2D["jacobi5"].replace("dim3(32, 8)>>>", "dim3(b, b)>>>").replace("int H) { k<<<", "int H, int b) { k<<<")
    assert "int H, int b) { k<<<" in text
    f = _facts(text)
    assert f["stencil_like"] is True and f["stencil_window"] is False
    assert KB.strategy("stencil_smem_tile").applies.evaluate(f) is False


HEADER_STENCIL = """#pragma once
__global__ void dw(const float *in, float *out, int C, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.z;
    if (x < 1 || y < 1 || x >= W - 1 || y >= H - 1) return;
    size_t p = ((size_t)c * H + y) * W + x;
    out[p] = in[p - 1] + in[p + 1] + in[p - W] + in[p + W];
}
"""


@pytest.mark.parametrize("include", ["dw.cuh", "ops/dw.cuh"])
def test_a_2d_stencil_in_a_header_is_offered_through_its_launch_in_the_including_file(include, tmp_path):
    """The 2-D tile is sized by the launch's block: a kernel in a header, launched from the ``.cu`` file that
    includes it, is read with that launch (as the transform reads it), so the tile is offered for it."""
    from htam_core.source import load  # the file's path locates its workspace

    (tmp_path / include).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / ".git").mkdir()  # a repository: the launch search covers it, the header's sub-folder included
    (tmp_path / include).write_text(HEADER_STENCIL)
    (tmp_path / "main.cu").write_text(f'#include "{include}"\nvoid run(const float *i, float *o, int C, int H, int W) '
                                      "{ dw<<<dim3(W / 32, H / 8, C), dim3(32, 8)>>>(i, o, C, H, W); }\n")
    model = load(str(tmp_path / include))
    k = model.kernel("dw")
    assert compute_facts(k.features, k.language, kernel=k, model=model)["stencil_window"] is True
    (tmp_path / "main.cu").write_text(f'#include "{include}"\n')  # no launch anywhere: no block to size the tile
    model = load(str(tmp_path / include))
    k = model.kernel("dw")
    assert compute_facts(k.features, k.language, kernel=k, model=model)["stencil_window"] is False
