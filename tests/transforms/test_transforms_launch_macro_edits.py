"""Steps that change a launch written through a generic launch macro edit the use's arguments.

A ``#define`` that passes the grid and the block each as one of its parameters (two- and four-slot bodies, a GNU
``args...``, the kernel's name in the middle, a ``do { ... } while (0)`` body, a use spread over lines) has its
launch changed at the use: the block size, the grid-stride loop's grid, a warp or a block per row, a dynamic
shared-memory histogram, a coarsened reduction's device-sized grid, a register-tiled matmul's block shape. Each step is offered, made, edits only the use, and the file compiles with nvcc. A
``#define`` that computes the grid, or has no shared-bytes slot for a step that adds one, is refused in one line.
Kernels written for these tests.
"""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source.api import parse_text
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose

KERNELS = """#include <cuda_runtime.h>
DEFINE

__global__ void scale(const float *x, float *y, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = s * x[i];
}

__global__ void row_sum(const float *x, float *out, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float acc = 0.0f;
        for (int j = 0; j < cols; j++)
            acc += x[(size_t)row * cols + j];
        out[row] = acc;
    }
}

__global__ void hist(const int *data, int *h, int n, int nb)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&h[data[i] % nb], 1);
}

void run(const float *x, float *y, const int *d, int *h, int n, int rows, int cols, int nb, cudaStream_t st)
{
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    int rblocks = (rows + 255) / 256;
    USE_SCALE;
    USE_ROWS;
    USE_HIST;
}
"""

#: name -> (#define, scale's use, row_sum's use, hist's use)
SPELLINGS = {
    "two slots": ("#define LAUNCH(k, grid, block, ...) k<<<grid, block>>>(__VA_ARGS__)",
                  "LAUNCH(scale, blocks, threads, x, y, 2.0f, n)", "LAUNCH(row_sum, rblocks, 256, x, y, rows, cols)",
                  "LAUNCH(hist, blocks, 256, d, h, n, nb)"),
    "four slots": ("#define LAUNCH_KERNEL(kernel, g, b, s, st, ...) kernel<<<g, b, s, st>>>(__VA_ARGS__)",
                   "LAUNCH_KERNEL(scale, blocks, threads, 0, st, x, y, 2.0f, n)",
                   "LAUNCH_KERNEL(row_sum, rblocks, 256, 0, st, x, y, rows, cols)",
                   "LAUNCH_KERNEL(hist, blocks, 256, 0, st, d, h, n, nb)"),
    "gnu args": ("#define LAUNCH_G(k, g, b, args...) k<<<g, b>>>(args)",
                 "LAUNCH_G(scale, blocks, threads, x, y, 2.0f, n)", "LAUNCH_G(row_sum, rblocks, 256, x, y, rows, cols)",
                 "LAUNCH_G(hist, blocks, 256, d, h, n, nb)"),
    "kernel in the middle": ("#define RUN(grid, k, block, ...) k<<<(grid), (block)>>>(__VA_ARGS__)",
                             "RUN(blocks, scale, threads, x, y, 2.0f, n)", "RUN(rblocks, row_sum, 256, x, y, rows, cols)",
                             "RUN(blocks, hist, 256, d, h, n, nb)"),
    "across lines": ("#define CHECKED(k, g, b, ...) \\\n    do { k<<<g, b>>>(__VA_ARGS__); cudaGetLastError(); } while (0)",
                     "CHECKED(scale,\n            blocks,\n            threads,\n            x, y, 2.0f, n)",
                     "CHECKED(row_sum, rblocks,\n            256, x, y, rows, cols)",
                     "CHECKED(hist, blocks, 256,\n            d, h, n, nb)"),
}

#: (step, kernel, what the kernel's use becomes, from its arguments ``grid`` and ``block`` as written)
STEPS = [
    ("cuda.block_size", "scale", None),
    ("cuda.grid_stride", "scale", "htam_sm_grid({grid}, 8)"),
    ("cuda.warp_per_row", "row_sum", "({grid}) * 32"),
    ("cuda.block_per_row", "row_sum", "({grid}) * 256"),
]


def _text(name: str) -> str:
    define, s, r, h = SPELLINGS[name]
    return (KERNELS.replace("DEFINE", define).replace("USE_SCALE", s).replace("USE_ROWS", r)
            .replace("USE_HIST", h))


def _use(name: str, kernel: str) -> str:
    return SPELLINGS[name][{"scale": 1, "row_sum": 2, "hist": 3}[kernel]]


def _propose(text: str, tid: str, kernel: str):
    model = parse_text(text, "cuda", "/tmp/launch_macro_edits.cu")
    return propose(tid, model, model.kernel(kernel))


@pytest.mark.parametrize("name", list(SPELLINGS))
@pytest.mark.parametrize(("tid", "kernel", "grid_fmt"), STEPS)
def test_the_step_edits_the_use(name: str, tid: str, kernel: str, grid_fmt: str | None) -> None:
    text = _text(name)
    cands = _propose(text, tid, kernel)
    assert not isinstance(cands, NotApplicable), cands.reason
    use = _use(name, kernel)
    grid = "blocks" if kernel == "scale" else "rblocks"
    new = cands[0].new_text
    assert SPELLINGS[name][0] in new  # the #define is left as written
    for other in ("scale", "row_sum", "hist"):
        if other != kernel:
            assert _use(name, other) in new  # the other uses too
    if grid_fmt is None:  # the block size: `threads` is the use's block, retuned where it is declared
        assert use in new and "int threads = 256;" not in new
    else:
        assert use.replace(grid, grid_fmt.format(grid=grid), 1) in new


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_every_step_made_through_the_macro_compiles(tmp_path, name: str) -> None:
    text = _text(name)
    made = [_propose(text, tid, kernel) for tid, kernel, _ in STEPS] + [_propose(text, "cuda.smem_histogram", "hist")]
    for k, cands in enumerate(made):
        assert isinstance(cands, list) and cands
        assert_nvcc_compiles(cands[0].new_text, tmp_path, f"c{k}.cu")


def test_a_dynamic_shared_memory_size_goes_into_the_shared_bytes_argument() -> None:
    (c,) = _propose(_text("four slots"), "cuda.smem_histogram", "hist")
    assert c.params["shared"] == "dynamic"
    # the grid capped too (the privatized histogram's grid-stride form): both through the macro's own slots
    assert "LAUNCH_KERNEL(hist, htam_sm_grid(blocks, 8), 256, (nb) * sizeof(int), st, d, h, n, nb)" in c.new_text


def test_a_macro_without_a_shared_bytes_slot_is_refused_in_one_line() -> None:
    (c,) = _propose(_text("two slots"), "cuda.smem_histogram", "hist")
    assert c.params["shared"] == "capped"  # the launch-independent form, saying why
    assert "written through the macro LAUNCH, whose #define passes no dynamic shared-memory size" in c.description
    # no shared-memory size at the use; only its grid is capped (the grid-stride form)
    assert _use("two slots", "hist").replace("blocks", "htam_sm_grid(blocks, 8)", 1) in c.new_text


COMPUTED = "#define LAUNCH1D(k, n, ...) k<<<((n) + 255) / 256, 256>>>(__VA_ARGS__)"


@pytest.mark.parametrize("tid", ["cuda.block_size", "cuda.warp_per_row"])
def test_a_macro_that_computes_the_grid_keeps_refusing(tid: str) -> None:
    text = (KERNELS.replace("DEFINE", COMPUTED).replace("USE_SCALE", "LAUNCH1D(scale, n, x, y, 2.0f, n)")
            .replace("USE_ROWS", "LAUNCH1D(row_sum, rows, x, y, rows, cols)").replace("USE_HIST", "(void)0"))
    r = _propose(text, tid, "scale" if tid == "cuda.block_size" else "row_sum")
    assert isinstance(r, NotApplicable)
    assert "through the macro LAUNCH1D: the #define of LAUNCH1D computes the grid (`((n) + 255) / 256`)" in r.reason
    assert "\n" not in r.reason


def test_one_launch_through_a_computing_macro_keeps_every_launch_of_the_kernel() -> None:
    """A kernel launched through an editable macro and through one that computes its grid: changing the kernel's
    mapping would leave the second launch wrong, so neither is changed."""
    text = _text("two slots")
    text = text.replace("#define LAUNCH(", COMPUTED + "\n#define LAUNCH(").replace(
        "LAUNCH(hist, blocks, 256, d, h, n, nb);", "LAUNCH1D(row_sum, rows, x, y, rows, cols);")
    r = _propose(text, "cuda.warp_per_row", "row_sum")
    assert isinstance(r, NotApplicable) and "through the macro LAUNCH1D" in r.reason


TILED = """#include <cuda_runtime.h>
DEFINE
__global__ void sumsq(const float *in, float *total, int n)
{
    __shared__ float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = i < n ? in[i] * in[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(total, s[0]);
}

__global__ void mm(const float *A, const float *B, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

void run(const float *x, float *t, int n, const float *A, const float *B, float *C, int M, int N, int K)
{
    USE_SUM;
    USE_MM;
}
"""

#: name -> (#define, sumsq's use, mm's use)
TILED_SPELLINGS = {
    "two slots": ("#define LAUNCH(k, grid, block, ...) k<<<grid, block>>>(__VA_ARGS__)",
                  "LAUNCH(sumsq, (n + 255) / 256, 256, x, t, n)",
                  "LAUNCH(mm, dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), A, B, C, M, N, K)"),
    "four slots": ("#define LAUNCH_KERNEL(kernel, g, b, s, st, ...) kernel<<<g, b, s, st>>>(__VA_ARGS__)",
                   "LAUNCH_KERNEL(sumsq, (n + 255) / 256, 256, 0, 0, x, t, n)",
                   "LAUNCH_KERNEL(mm,\n                  dim3((N + 15) / 16, (M + 15) / 16),\n                  dim3(16, 16), 0, 0,\n"
                   "                  A, B, C, M, N, K)"),
}


@pytest.mark.parametrize("name", list(TILED_SPELLINGS))
@pytest.mark.parametrize(("tid", "kernel", "made"), [
    ("cuda.coarsen_reduction", "sumsq", "htam_sm_grid((n + 255) / 256, "),
    ("cuda.register_tile_matmul", "mm", "dim3(((N) + 127) / 128, ((M) + 127) / 128)"),
])
def test_coarsening_and_tiling_change_the_use(tmp_path, name: str, tid: str, kernel: str, made: str) -> None:
    define, s, m = TILED_SPELLINGS[name]
    text = TILED.replace("DEFINE", define).replace("USE_SUM", s).replace("USE_MM", m)
    cands = _propose(text, tid, kernel)
    assert not isinstance(cands, NotApplicable), cands.reason
    new = cands[0].new_text
    use = new[new.index(define.split("(")[0].split()[-1] + f"({kernel},"):]
    assert made in use.split(";")[0]
    assert (m if kernel == "sumsq" else s) in new  # the other use is left as written
    if shutil.which("nvcc") is not None:
        assert_nvcc_compiles(new, tmp_path)


def test_an_edit_that_adds_a_macro_argument_is_rejected() -> None:
    """A brace list written into the use's grid argument would be two arguments to the preprocessor."""
    from htam_core.transforms.base import Candidate, TextEdit, apply_edits
    from htam_core.transforms.registry import validate

    text = _text("two slots")
    model = parse_text(text, "cuda", "/tmp/launch_macro_edits.cu")
    kernel = model.kernel("scale")
    at = text.index("LAUNCH(scale, blocks") + len("LAUNCH(scale, ")
    for new, bad in (("dim3{blocks, 1}", True), ("dim3(blocks, 1)", False)):
        edits = [TextEdit(at, at + len("blocks"), new)]
        cand = Candidate("t", "t", "d", {}, edits, apply_edits(text, edits))
        why = validate(model, kernel, cand)
        assert (why is not None and "one more argument" in why) == bad
