"""The stencil tile (``cuda.stencil_smem_tile``) on 2-D stencils: every spelling of ``stencil_tile_2d`` and kernels
written here are made, accepted by ``nvcc -arch=sm_90 -c``, and run on the CPU (:func:`cpu_emulation.run_block_main`,
one host thread per CUDA thread of a 2-D block, so ``__syncthreads`` is a barrier) under AddressSanitizer: on a
``W x H`` image that is not a multiple of the block along either axis, the rewritten kernel's output equals the
original's bit for bit (the same sums in the same order), the borders included, and no load of the tile reads
outside the input (a heap buffer of exactly ``W * H`` elements).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from cpu_emulation import compiler, run_block_main
from spellings import ROOT
from transform_helpers import only_candidate

from htam_core.source import load, parse_text
from htam_core.transforms import registry
from tests.support.nvcc_check import assert_compiles

FOLDER = ROOT / "stencil_tile_2d"
ID = "cuda.stencil_smem_tile"

#: spelling -> (kernel, call with IN_/WT_/OUT_/W_/H_, block (x, y))
CALLS = {
    "nvidia_samples.cu": ("jacobi5", "jacobi5(IN_, OUT_, W_, H_)", (32, 8)),
    "llmc.cu": ("conv2d_forward_kernel", "conv2d_forward_kernel(OUT_, IN_, WT_, W_, H_)", (16, 16)),
    "templated.cu": ("box_blur", "box_blur<float, 1>(IN_, OUT_, W_, H_)", (16, 16)),
    "macro.cu": ("laplace9", "laplace9(IN_, OUT_, W_, H_)", (32, 4)),
    "coop_groups.cu": ("smooth2d_cg", "smooth2d_cg(IN_, OUT_, W_, H_, W_)", (64, 4)),
    "aten.cu": ("smooth2d_kernel", "smooth2d_kernel(IN_, WT_, OUT_, W_, H_)", (32, 8)),
    "clamp_to_edge.cu": ("blur3x3_clamp", "blur3x3_clamp(IN_, OUT_, W_, H_)", (16, 16)),
    "clamp_ternary.cu": ("laplace5_edge", "laplace5_edge(IN_, OUT_, W_, H_)", (32, 8)),
}

#: the cooperative-groups calls a kernel of the folder makes, for the host compiler
CG_SHIM = """namespace cooperative_groups {
struct thread_block {
    htam_dim3 group_index() const { return blockIdx; }
    htam_dim3 group_dim() const { return blockDim; }
    htam_dim3 thread_index() const { return threadIdx; }
    void sync() const { __syncthreads(); }
};
static thread_block this_thread_block() { return {}; }
}
namespace cg = cooperative_groups;
#include <algorithm>
#include <cstdint>
using std::max;  // CUDA's integer min/max, for the clamp-to-edge spellings
using std::min;
"""

MAIN = """
int main() {
    const int W = WIDTH, H = HEIGHT;
    for (int round = 0; round < 2; ++round) {
        float *in = new float[W * H];  // exactly W * H elements: a read past either end aborts under AddressSanitizer
        std::vector<float> w(25), out(W * H, -1.0f);
        for (int i = 0; i < W * H; ++i) in[i] = (float)((i * 7) % 13) - 6.0f;
        for (int k = 0; k < 25; ++k) w[k] = 0.5f + k;
        htam_launch2((W + BX - 1) / BX, (H + BY - 1) / BY, BX, BY, [&] { CALL; });
        for (float v : out) std::printf("%.9g\\n", v);
        delete[] in;
    }
    return 0;
}
"""


def _prelude(text: str) -> str:
    """The file-scope ``#define`` and ``constexpr`` lines the kernel reads, after the cooperative-groups shim."""
    lines = [ln for ln in text.splitlines() if ln.startswith(("#define", "constexpr"))]
    return CG_SHIM + "\n".join(lines) + "\n"


def _run(text: str, kernel: str, call: str, block: tuple[int, int], size: tuple[int, int], tmp,
         prelude: str | None = None) -> list[float]:
    call = (call.replace("IN_", "in").replace("WT_", "w.data()").replace("OUT_", "out.data()")
            .replace("W_", "W").replace("H_", "H"))
    main = (MAIN.replace("WIDTH", str(size[0])).replace("HEIGHT", str(size[1])).replace("BX", str(block[0]))
            .replace("BY", str(block[1])).replace("CALL", call))
    return run_block_main(text, kernel, main, tmp, prelude=_prelude(text) if prelude is None else prelude,
                          flags=("-fsanitize=address",))


def _nvcc_ok(text: str, tmp) -> None:
    assert_compiles(text, tmp=tmp, name="k.cu")


def test_every_spelling_of_the_folder_is_run_here():
    assert set(CALLS) == {p.name for p in FOLDER.glob("*.cu")}


@pytest.mark.parametrize("file", sorted(CALLS))
def test_the_2d_tile_keeps_each_output_and_reads_nothing_out_of_range(file, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    kernel, call, block = CALLS[file]
    text = (FOLDER / file).read_text()
    c = only_candidate(ID, text, kernel)
    assert "__syncthreads()" in c.new_text and re.search(r"htam_tile\[threadIdx\.y[^\]]*\]\[threadIdx\.x", c.new_text)
    size = (2 * block[0] + 7, 3 * block[1] + 5)  # partial last blocks along both axes
    want = _run(text, kernel, call, block, size, tmp_path)
    got = _run(c.new_text, kernel, call, block, size, tmp_path)
    assert len(got) == 2 * size[0] * size[1] and got == want  # two rounds


@pytest.mark.parametrize("file", sorted(CALLS))
def test_the_2d_tile_compiles(file, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    model = load(str(FOLDER / file))
    cs = registry.propose(ID, model, model.kernel(CALLS[file][0]))
    assert isinstance(cs, list), cs.reason
    _nvcc_ok(cs[0].new_text, tmp_path)


ROW_POINTERS = """__global__ void grad(const float *in, float *out, int W, int H) {
    const int x = threadIdx.x + blockIdx.x * 16;
    const int y = threadIdx.y + blockIdx.y * 16;
    if (x + 1 < W && y + 1 < H) {
        const float *row = in + y * W;
        const float *below = in + (y + 1) * W;
        out[y * W + x] = row[x + 1] - row[x] + below[x];
    }
}
void launch(const float *in, float *out, int W, int H) {
    grad<<<dim3((W + 15) / 16, (H + 15) / 16), dim3(16, 16)>>>(in, out, W, H);
}
"""

UNSIGNED_ASYMMETRIC = """#define R 2
__global__ void upwind(const double *u, double *v, unsigned W, unsigned H) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= R && x < W && y >= 1 && y + 1 < H) {
        double s = 0.0;
        for (int k = 0; k <= R; ++k)
            s += u[(size_t)(y - 1) * W + x + k - R] + u[(size_t)(y + 1) * W + x + k - R];
        v[(size_t)y * W + x] = s;
    }
}
void launch(const double *u, double *v, unsigned W, unsigned H) {
    dim3 b(8, 8);
    upwind<<<dim3((W + 7) / 8, (H + 7) / 8), b>>>(u, v, W, H);
}
"""

FLAT_INDEX = """__global__ void lap(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int idx = y * W + x;
    if (x > 0 && x < W - 1 && y > 0 && y < H - 1)
        out[idx] = in[idx - W] + in[idx + W] + in[idx - 1] + in[idx + 1] - 4.0f * in[idx];
}
void launch(const float *in, float *out, int W, int H) { lap<<<dim3((W + 31) / 32, (H + 7) / 8), dim3(32, 8)>>>(in, out, W, H); }
"""

ROW_POINTER_PER_TAP_ROW = """#define R 1
__global__ void box(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < R || y < R || x >= W - R || y >= H - R) return;
    float s = 0.0f;
    #pragma unroll
    for (int dy = -R; dy <= R; ++dy) {
        const float *row = in + (y + dy) * W;
        #pragma unroll
        for (int dx = -R; dx <= R; ++dx) s += row[x + dx];
    }
    out[y * W + x] = s;
}
void launch(const float *in, float *out, int W, int H) { box<<<dim3((W + 15) / 16, (H + 3) / 4), dim3(16, 4)>>>(in, out, W, H); }
"""

TEMPLATE_BLOCK_3X5 = """template <int BX, int BY>
__global__ void wide(const float *__restrict__ in, float *__restrict__ out, int W, int H) {
    const int x = blockIdx.x * BX + threadIdx.x;
    const int y = blockIdx.y * BY + threadIdx.y;
    if (x >= W || y >= H) return;
    float s = 0.0f;
    for (int dy = 0; dy < 3; dy++)
        for (int dx = 0; dx < 5; dx++) {
            const int sy = y + dy - 1, sx = x + dx - 2;
            if (sx < 0 || sy < 0 || sx >= W || sy >= H) continue;
            s += in[sy * W + sx];
        }
    out[y * W + x] = s;
}
void launch(const float *in, float *out, int W, int H) {
    constexpr int B = 16;
    wide<B, 8><<<dim3((W + B - 1) / B, (H + 7) / 8), dim3(B, 8)>>>(in, out, W, H);
}
"""

#: name -> (kernel text, kernel, call, block)
OWN = {
    "template_block_3x5": (TEMPLATE_BLOCK_3X5, "wide", "wide<16, 8>(IN_, OUT_, W_, H_)", (16, 8)),
    "flat_index": (FLAT_INDEX, "lap", "lap(IN_, OUT_, W_, H_)", (32, 8)),
    "row_pointer_per_tap_row": (ROW_POINTER_PER_TAP_ROW, "box", "box(IN_, OUT_, W_, H_)", (16, 4)),
    "row_pointers": (ROW_POINTERS, "grad", "grad(IN_, OUT_, W_, H_)", (16, 16)),
    "unsigned_asymmetric": (UNSIGNED_ASYMMETRIC.replace("double", "float"), "upwind",
                            "upwind(IN_, OUT_, (unsigned)W_, (unsigned)H_)", (8, 8)),
}


@pytest.mark.parametrize("name", sorted(OWN))
def test_other_2d_spellings_keep_their_outputs(name, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text, kernel, call, block = OWN[name]
    c = only_candidate(ID, text, kernel)
    size = (3 * block[0] + 3, 2 * block[1] + 5)
    assert _run(c.new_text, kernel, call, block, size, tmp_path) == _run(text, kernel, call, block, size, tmp_path)


@pytest.mark.parametrize("name", sorted(OWN))
def test_other_2d_spellings_compile(name, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    text, kernel, _, _ = OWN[name]
    _nvcc_ok(only_candidate(ID, text, kernel).new_text, tmp_path)


def test_an_unguarded_halo_load_is_caught(tmp_path):
    """The check can fail: the tile loaded without its guard reads before the input's first element."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    kernel, call, block = CALLS["nvidia_samples.cu"]
    text = (FOLDER / "nvidia_samples.cu").read_text()
    c = only_candidate(ID, text, kernel)
    head, sep, tail = c.new_text.partition("        if (")
    assert sep
    with pytest.raises(subprocess.CalledProcessError):
        _run(head + "        if (true || " + tail, kernel, call, block, (71, 29), tmp_path, prelude=_prelude(text))


def test_the_tile_is_sized_by_the_launch_and_the_window():
    c = only_candidate(ID, UNSIGNED_ASYMMETRIC, "upwind")
    assert "__shared__ double htam_tile[10][10];" in c.new_text  # 8 + 2 rows (y - 1 to y + 1), 8 + 2 columns (x - 2 to x)
    assert "htam_tile[threadIdx.y][threadIdx.x + k]" in c.new_text and "htam_tile[threadIdx.y + 2][" in c.new_text
    assert "long long" in c.new_text  # the size_t index keeps 64-bit arithmetic


REFUSED = {
    "wrapped": ("""__global__ void k(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    float s = 0.0f;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) s += in[min(max(y + dy, 0), H - 1) * W + (x + dx + W) % W];
    out[y * W + x] = s;
}
void launch(const float *in, float *out, int W, int H) { k<<<dim3((W + 15) / 16, (H + 15) / 16), dim3(16, 16)>>>(in, out, W, H); }
""", "not affine"),
    "runtime_block": ("""__global__ void k(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && y > 0 && x < W - 1 && y < H - 1) out[y * W + x] = in[y * W + x - 1] + in[(y - 1) * W + x];
}
void launch(const float *in, float *out, int W, int H, int b) { dim3 t(b, b); k<<<dim3((W + b - 1) / b, (H + b - 1) / b), t>>>(in, out, W, H); }
""", "does not give a constant 2-D block"),
    "flat_guard": ("""__global__ void k(const float *in, float *out, int W, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (y * W + x + W < n && x > 0) out[y * W + x] = in[y * W + x - 1] + in[(y + 1) * W + x];
}
void launch(const float *in, float *out, int W, int n) { k<<<dim3(W / 16, n / W / 16), dim3(16, 16)>>>(in, out, W, n); }
""", "not a bound on one axis"),
    "computed_bound": ("""__global__ void k(const float *in, float *out, const int *dims) {
    int W = dims[0], H = dims[1];
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && y > 0 && x < W - 1 && y < H - 1) out[y * W + x] = in[y * W + x - 1] + in[(y - 1) * W + x];
}
void launch(const float *in, float *out, const int *d, int W, int H) { k<<<dim3(W / 16, H / 16), dim3(16, 16)>>>(in, out, d); }
""", "which the kernel computes"),
    "in_place": ("""__global__ void k(float *a, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && y > 0 && x < W - 1 && y < H - 1) a[y * W + x] = a[y * W + x - 1] + a[(y - 1) * W + x];
}
void launch(float *a, int W, int H) { k<<<dim3(W / 16, H / 16), dim3(16, 16)>>>(a, W, H); }
""", "not only read"),
    "layered": ("""__global__ void k(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && y > 0 && x < W - 1 && y < H - 1)
        out[(threadIdx.z * H + y) * W + x] = in[y * W + x - 1] + in[(y - 1) * W + x];
}
void launch(const float *in, float *out, int W, int H) { k<<<dim3(W / 16, H / 16), dim3(16, 16, 2)>>>(in, out, W, H); }
""", "threadIdx.z"),
    "bound_reassigned": ("""__global__ void k(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (H > 512) H = 512;
    if (x > 0 && y > 0 && x < W - 1 && y < H - 1) out[y * W + x] = in[y * W + x - 1] + in[(y + 1) * W + x];
}
void launch(const float *in, float *out, int W, int H) { k<<<dim3(W / 16, H / 16), dim3(16, 16)>>>(in, out, W, H); }
""", "assigns H"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_is_not_read_is_refused_in_one_line(name):
    text, why = REFUSED[name]
    model = parse_text(text, "cuda")
    got = registry.propose(ID, model, model.kernel("k"))
    assert not isinstance(got, list)
    assert why in got.reason and "\n" not in got.reason


CHAINED_ROWS = """__global__ void k(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= W - 1 || y >= H - 1) return;
    const float *row = in + y * W, *up = row - W;
    const float *c = row + x;
    out[y * W + x] = c[-1] + c[1] + up[x];
}
void launch(const float *in, float *out, int W, int H) { k<<<dim3(W / 16, H / 16), dim3(16, 16)>>>(in, out, W, H); }
"""


def test_row_pointers_left_unread_are_removed():
    """The pointer-offset locals the window was read through are read by nothing once it reads the tile: their
    declarations go (chains and several declarators in one statement alike), and the rest stays."""
    c = only_candidate(ID, CHAINED_ROWS, "k")
    assert "*row" not in c.new_text and "*up" not in c.new_text and "*c =" not in c.new_text
    assert "int y = blockIdx.y" in c.new_text and "out[y * W + x] = htam_tile[" in c.new_text


def test_the_block_is_not_retuned_under_a_2d_tile():
    """The tile is sized for the launch's block: the block-size step on the tiled kernel refuses, so it never
    leaves a tile that does not match the block."""
    kernel = CALLS["templated.cu"][0]
    c = only_candidate(ID, (FOLDER / "templated.cu").read_text(), kernel)
    model = parse_text(c.new_text, "cuda")
    got = registry.propose("cuda.block_size", model, model.kernel(kernel))
    assert not isinstance(got, list)
