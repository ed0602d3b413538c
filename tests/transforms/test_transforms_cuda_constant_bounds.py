"""Grid-resizing steps on kernels whose size is a compile-time constant instead of a parameter: a ``#define``, a
``constexpr`` or a ``const int`` at file scope, a template parameter bound at the launch, a constant local to the
kernel. The register tile, the shared-memory tile with a block set at run time (both size a new grid from the
matrix's sides) and the row-per-block register cache (its grid is the row count) are made, the new grid spells
the constant as the launch sees it (its name where it means the same value there, else its value), and every
candidate compiles with nvcc. The kernels are written for these tests.
"""

from __future__ import annotations

import re
import shutil

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

MM = """#include <cuda_runtime.h>
DECL
__global__ void mm(const float *A, const float *B, float *C) {
    LOCAL
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= N || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
    C[row * N + col] = acc;
}
void run(const float *A, const float *B, float *C, int b) {
    dim3 block(BLOCK), grid((96 + 15) / 16, (96 + 15) / 16);
    mm<<<grid, block>>>(A, B, C);
}
"""

#: spelling -> (text before the kernel, a line inside it, how the new grid spells the side)
SPELLINGS = {
    "define": ("#define N 96", "", "N"),
    "constexpr": ("constexpr int N = 96;", "", "N"),
    "const_int": ("static const int N = 96;", "", "N"),
    "kernel_local": ("", "const int N = 96;", "96"),
}

TEMPLATE = """#include <cuda_runtime.h>
template <int N>
__global__ void mm(const float *A, const float *B, float *C) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
void run(const float *A, const float *B, float *C) {
    mm<64><<<dim3(4, 4), dim3(16, 16)>>>(A, B, C);
    mm<256><<<dim3(16, 16), dim3(16, 16)>>>(A, B, C);
}
"""


def _mm(spelling: str, block: str = "16, 16") -> str:
    decl, local, _ = SPELLINGS[spelling]
    return MM.replace("DECL", decl).replace("LOCAL", local).replace("BLOCK", block)


def _made(text: str, step: str, kernel: str = "mm") -> list:
    model = parse_text(text, "cuda")
    cs = registry.propose(step, model, model.kernel(kernel))
    assert isinstance(cs, list), cs.reason
    return cs


def _grids(text: str) -> list[str]:
    return re.findall(r"<<<(.*?)>>>|grid\((.*?)\);", text)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_the_register_tile_sizes_its_grid_from_a_constant_side(spelling):
    side = SPELLINGS[spelling][2]
    for c in _made(_mm(spelling), "cuda.register_tile_matmul"):
        assert re.search(rf"grid\(\(\({side}\) \+ \d+\) / \d+, \(\({side}\) \+ \d+\) / \d+\)", c.new_text), \
            c.new_text[-400:]
        assert "M = 96, N = 96" in c.description  # the constant sizes the tile choice too


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_the_shared_tile_with_a_run_time_block_sizes_its_grid_from_a_constant_side(spelling):
    side = SPELLINGS[spelling][2]
    cs = _made(_mm(spelling, "b, b"), "cuda.smem_tiling_matmul")
    assert [c.params["tile"] for c in cs] == [16, 32]
    for c in cs:
        t = c.params["tile"]
        assert f"grid((({side}) + {t - 1}) / {t}, (({side}) + {t - 1}) / {t})" in c.new_text


def test_a_template_side_is_its_value_at_each_launch():
    for c in _made(TEMPLATE, "cuda.register_tile_matmul"):
        bm, bn = c.params["bm"], c.params["bn"]
        assert f"mm<64><<<dim3(((64) + {bm - 1}) / {bm}, ((64) + {bn - 1}) / {bn})" in c.new_text
        assert f"mm<256><<<dim3(((256) + {bm - 1}) / {bm}, ((256) + {bn - 1}) / {bn})" in c.new_text


def test_a_side_that_is_neither_a_parameter_nor_a_constant_is_refused_in_one_line():
    text = _mm("kernel_local", "b, b").replace("const int N = 96;", "const int N = (int)gridDim.z * 96;")
    res = registry.propose("cuda.smem_tiling_matmul", (m := parse_text(text, "cuda")), m.kernel("mm"))
    assert isinstance(res, NotApplicable)
    assert "neither a kernel parameter nor a compile-time constant" in res.reason and "\n" not in res.reason


ROWS = """#include <cuda_runtime.h>
#define ROWS 512
#define COLS 256
__global__ void scale_rows(const float *x, float *y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= ROWS) return;
    float s = 0.0f;
    for (int j = 0; j < COLS; ++j) s += x[row * COLS + j] * x[row * COLS + j];
    float inv = rsqrtf(s / COLS + 1e-6f);
    for (int j = 0; j < COLS; ++j) y[row * COLS + j] = x[row * COLS + j] * inv;
}
void run(const float *x, float *y) {
    scale_rows<<<(ROWS + 127) / 128, 128>>>(x, y);
}
"""


def test_the_row_cache_launches_one_block_per_constant_row():
    cs = _made(ROWS, "cuda.row_in_registers", "scale_rows")
    assert all("scale_rows<<<dim3(ROWS), " in c.new_text for c in cs), cs[0].new_text[-300:]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_the_constant_side_candidates_compile_with_nvcc(tmp_path):
    made = [(s, c) for s in ("define", "const_int", "kernel_local")
            for c in _made(_mm(s), "cuda.register_tile_matmul")[:1]]
    made += [("template", c) for c in _made(TEMPLATE, "cuda.register_tile_matmul")[:1]]
    made += [("rows", c) for c in _made(ROWS, "cuda.row_in_registers", "scale_rows")[:1]]
    for k, (name, c) in enumerate(made):
        assert_nvcc_compiles(c.new_text, tmp_path, f"{name}_{k}.cu")


def test_an_empty_k_body_is_refused_in_one_line():
    """A k loop whose body is the empty statement is no product: refused, not an internal error."""
    text = _mm("define").replace("for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];",
                                 "for (int k = 0; k < N; ++k);\n    acc += A[row * N] * B[col];")
    for step in ("cuda.register_tile_matmul", "cuda.smem_tiling_matmul"):
        res = registry.propose(step, (m := parse_text(text, "cuda")), m.kernel("mm"))
        assert isinstance(res, NotApplicable) and "\n" not in res.reason
