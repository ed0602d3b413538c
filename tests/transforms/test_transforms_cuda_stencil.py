"""The stencil tile (``cuda.stencil_smem_tile``) on every spelling of its folder and on kernels written here: made,
accepted by ``nvcc -arch=sm_90 -c``, and run on the CPU (:func:`cpu_emulation.run_block_main`, one host thread per
CUDA thread, so ``__syncthreads`` is a barrier) under AddressSanitizer: on an ``n`` that is not a multiple of the
block, the rewritten kernel's output equals the original's bit for bit (the same sums in the same order), the edges
included, and no load of the tile reads outside the input (the input is a heap buffer of exactly ``n`` elements).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from cpu_emulation import compiler, run_block_main
from spellings import ROOT
from transform_helpers import only_candidate

from htam_core.source import load, parse_text
from htam_core.transforms import registry
from tests.support.nvcc_check import assert_compiles

FOLDER = ROOT / "stencil_tile"
ID = "cuda.stencil_smem_tile"

#: spelling -> (kernel, call with IN/W/OUT/N, block, C prelude: the file-scope names the kernel reads)
CALLS = {
    "llmc.cu": ("conv1d_forward_kernel", "conv1d_forward_kernel(OUT, IN, W, N)", 128, "#define KERNEL_RADIUS 3\n"),
    "nvidia_samples.cu": ("stencil_1d", "stencil_1d(IN, OUT, N)", 256,
                          "#define RADIUS 3\nstatic float d_weights[7] = {1, 2, 3, 4, 5, 6, 7};\n"),
    "templated.cu": ("stencil_padded", "stencil_padded<float, 2>(IN, W, OUT, N)", 128, ""),
    "aten.cu": ("smooth_kernel", "smooth_kernel(IN, W, OUT, N)", 256,
                "#include <cstdint>\nconstexpr int kRadius = 4;\n"),
    "unrolled.cu": ("blur3", "blur3(IN, OUT, (size_t)N)", 512, ""),
    "clamp_to_edge.cu": ("smooth_edge", "smooth_edge(IN, W, OUT, N)", 256,
                         "#define RAD 2\n#include <algorithm>\nusing std::max;\nusing std::min;\n"),
}

MAIN = """
int main() {
    const int n = N_;
    for (int round = 0; round < 2; ++round) {
        float *in = new float[n];  // exactly n elements: a read past either end aborts under AddressSanitizer
        std::vector<float> w(9), out(n, -1.0f);
        for (int i = 0; i < n; ++i) in[i] = (float)((i * 7) % 13) - 6.0f;
        for (int k = 0; k < 9; ++k) w[k] = 0.5f + k;
        htam_launch((n + BLOCK_ - 1) / BLOCK_, BLOCK_, 1, [&] { CALL_; });
        for (float v : out) std::printf("%.9g\\n", v);
        delete[] in;
    }
    return 0;
}
"""


def _run(text: str, kernel: str, call: str, block: int, prelude: str, n: int, tmp) -> list[float]:
    call = call.replace("IN", "in").replace("W", "w.data()").replace("OUT", "out.data()").replace("N", "n")
    main = MAIN.replace("N_", str(n)).replace("BLOCK_", str(block)).replace("CALL_", call)
    return run_block_main(text, kernel, main, tmp, prelude=prelude, flags=("-fsanitize=address",))


def _nvcc_ok(text: str, tmp) -> None:
    assert_compiles(text, tmp=tmp, name="k.cu")


@pytest.mark.parametrize("file", sorted(CALLS))
def test_the_tile_keeps_each_output_and_reads_nothing_out_of_range(file, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    kernel, call, block, prelude = CALLS[file]
    text = (FOLDER / file).read_text()
    c = only_candidate(ID, text, kernel)
    assert "__syncthreads()" in c.new_text and "htam_tile[threadIdx.x" in c.new_text
    n = 3 * block + 37  # a partial last block; the edges of both ends inside the first and last blocks
    want = _run(text, kernel, call, block, prelude, n, tmp_path)
    got = _run(c.new_text, kernel, call, block, prelude, n, tmp_path)
    assert got == want


#: every spelling of the folder (cooperative groups included, which the CPU emulation does not run)
KERNELS = {**{f: v[0] for f, v in CALLS.items()}, "coop_groups.cu": "smooth_cg"}


def test_every_spelling_of_the_folder_is_compiled_here():
    assert set(KERNELS) == {p.name for p in FOLDER.glob("*.cu")}


@pytest.mark.parametrize("file", sorted(KERNELS))
def test_the_tile_compiles(file, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    kernel = KERNELS[file]
    model = load(str(FOLDER / file))
    cs = registry.propose(ID, model, model.kernel(kernel))
    assert isinstance(cs, list), cs.reason
    _nvcc_ok(cs[0].new_text, tmp_path)


OFFSET_WINDOW = """#define R 2
__global__ void taps(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= R && i < n - R) {
        float s = 0.0f;
        for (int t = 0; t < R + R + 1; ++t) s += (t + 1) * in[i + t - R];
        out[i] = s;
    }
}
void launch(const float *in, float *out, int n) { taps<<<(n + 63) / 64, 64>>>(in, out, n); }
"""

RIGHT_WINDOW = """__global__ void forward_diff(const float *x, float *y, int n) {
    const int i = threadIdx.x + blockIdx.x * 64;
    if (i + 2 < n)
        y[i] = x[i + 2] - 2.0f * x[i + 1] + x[i];
}
void launch(const float *x, float *y, int n) { forward_diff<<<(n + 63) / 64, 64>>>(x, y, n); }
"""

DYNAMIC_BLOCK = """__global__ void box(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = -1; j <= 1; j++) {
        if (i + j < 0 || i + j >= n) continue;
        s += in[i + j];
    }
    out[i] = s;
}
void launch(const float *in, float *out, int n, int threads) { box<<<(n + threads - 1) / threads, threads>>>(in, out, n); }
"""

SHIFTED_POINTER = """__global__ void centred(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float *centre = in + 1;
    if (i > 0 && i < n - 1) out[i] = centre[i - 2] + centre[i];
}
void launch(const float *in, float *out, int n) { centred<<<(n + 31) / 32, 32>>>(in, out, n); }
"""

#: kernel text -> (kernel, call, block)
OWN = {
    "offset_window": (OFFSET_WINDOW, "taps", "taps(IN, OUT, N)", 64),
    "right_window": (RIGHT_WINDOW, "forward_diff", "forward_diff(IN, OUT, N)", 64),
    "dynamic_block": (DYNAMIC_BLOCK, "box", "box(IN, OUT, N)", 96),
    "shifted_pointer": (SHIFTED_POINTER, "centred", "centred(IN, OUT, N)", 32),
}


def test_a_pointer_offset_local_left_unread_is_removed():
    c = only_candidate(ID, SHIFTED_POINTER, "centred")
    assert "*centre" not in c.new_text and "htam_tile[threadIdx.x + 2]" in c.new_text


@pytest.mark.parametrize("name", sorted(OWN))
def test_other_spellings_keep_their_outputs(name, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text, kernel, call, block = OWN[name]
    c = only_candidate(ID, text, kernel)
    prelude = "#define R 2\n" if "#define R" in text else ""
    n = 2 * block + 5
    assert _run(c.new_text, kernel, call, block, prelude, n, tmp_path) == \
        _run(text, kernel, call, block, prelude, n, tmp_path)


def test_a_non_constant_block_gets_dynamic_shared_memory_sized_at_the_launch():
    c = only_candidate(ID, DYNAMIC_BLOCK, "box")
    assert "extern __shared__" in c.new_text
    assert "<<<(n + threads - 1) / threads, threads, (threads + 2) * sizeof(float)>>>" in c.new_text


def test_an_unguarded_halo_load_is_caught(tmp_path):
    """The check can fail: the tile loaded without its guard reads before the input's first element."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    kernel, call, block, prelude = CALLS["nvidia_samples.cu"]
    c = only_candidate(ID, (FOLDER / "nvidia_samples.cu").read_text(), kernel)
    head, sep, tail = c.new_text.partition("        if (")
    assert sep
    broken = head + "        if (true || " + tail
    with pytest.raises(subprocess.CalledProcessError):
        _run(broken, kernel, call, block, prelude, 3 * block + 37, tmp_path)


REFUSED = {
    "wrapped": ("""__global__ void k(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = -2; j <= 2; ++j) s += in[(i + j + n) % n];
    out[i] = s;
}
void launch(const float *in, float *out, int n) { k<<<(n + 127) / 128, 128>>>(in, out, n); }
""", "not affine"),
    "in_place": ("""__global__ void k(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < n - 1) a[i] = a[i - 1] + a[i + 1];
}
void launch(float *a, int n) { k<<<(n + 127) / 128, 128>>>(a, n); }
""", "not only read"),
    "strided": ("""__global__ void k(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 4 && i < n - 4) out[i] = in[i - 4] + in[i + 4] + in[2 * i];
}
void launch(const float *in, float *out, int n) { k<<<(n + 127) / 128, 128>>>(in, out, n); }
""", "does not move by one with threadIdx.x"),
    "dim3_runtime_block": ("""__global__ void k(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 1 && i < n - 1) out[i] = in[i - 1] + in[i] + in[i + 1];
}
void launch(const float *in, float *out, int n, int bs) { dim3 t(bs); k<<<(n + bs - 1) / bs, t>>>(in, out, n); }
""", "dim3 block"),
    "bound_reassigned": ("""__global__ void k(const float *in, float *out, int n, int cap) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (n > cap) n = cap;
    if (i >= 1 && i < n - 1) out[i] = in[i - 1] + in[i + 1];
}
void launch(const float *in, float *out, int n) { k<<<(n + 127) / 128, 128>>>(in, out, n, n); }
""", "assigns n"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_is_not_read_is_refused_in_one_line(name):
    text, why = REFUSED[name]
    model = parse_text(text, "cuda")
    got = registry.propose(ID, model, model.kernel("k"))
    assert not isinstance(got, list)
    assert why in got.reason and "\n" not in got.reason


def test_the_block_is_not_retuned_under_a_static_tile():
    """The static tile is sized for the launch's block: the block-size step, made on the tiled kernel, refuses (the
    load's index hard-codes the block), so it never leaves a tile smaller than the block."""
    kernel = CALLS["nvidia_samples.cu"][0]
    c = only_candidate(ID, (FOLDER / "nvidia_samples.cu").read_text(), kernel)
    model = parse_text(c.new_text, "cuda")
    got = registry.propose("cuda.block_size", model, model.kernel(kernel))
    assert not isinstance(got, list) and "hard-codes the block" in got.reason
