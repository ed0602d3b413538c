"""The stencil tile (``cuda.stencil_smem_tile``) on 2-D stencils over planes: a depthwise convolution or a per-plane
stencil whose block reads one plane (``c = blockIdx.z``: ``in[((size_t)c * H + y) * W + x]``, a flat ``p`` index,
``in + c * H * W`` as a base pointer) is staged from that plane. Each spelling is made, accepted by ``nvcc -arch=sm_90
-c``, and run on the CPU (:func:`cpu_emulation.run_block_main`, a 3-D grid, one host thread per CUDA thread) under
AddressSanitizer on ``C`` planes of ``W x H`` (not multiples of the block): the rewritten kernel's output equals the
original's bit for bit, and no load reads outside the ``C * W * H`` input.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import only_candidate

from tests.support.nvcc_check import assert_compiles

ID = "cuda.stencil_smem_tile"

DEPTHWISE = """__global__ void dwconv3x3(const float *in, const float *w, float *out, int C, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.z;
    if (x >= W || y >= H) return;
    float acc = 0.f;
    for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx) {
            int yy = y + dy - 1, xx = x + dx - 1;
            if (yy >= 0 && yy < H && xx >= 0 && xx < W) acc += in[((size_t)c * H + yy) * W + xx] * w[c * 9 + dy * 3 + dx];
        }
    out[((size_t)c * H + y) * W + x] = acc;
}
void launch(const float *in, const float *w, float *out, int C, int H, int W) {
    dwconv3x3<<<dim3((W + 15) / 16, (H + 15) / 16, C), dim3(16, 16)>>>(in, w, out, C, H, W);
}
"""

FLAT_P = """__global__ void plane_avg(const float *in, const float *w, float *out, int C, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.z;
    if (x < 1 || y < 1 || x >= W - 1 || y >= H - 1) return;
    size_t p = ((size_t)c * H + y) * W + x;
    out[p] = 0.2f * (in[p] + in[p - 1] + in[p + 1] + in[p - W] + in[p + W]);
}
void launch(const float *in, const float *w, float *out, int C, int H, int W) {
    dim3 block(32, 8);
    dim3 grid((W + 31) / 32, (H + 7) / 8, C);
    plane_avg<<<grid, block>>>(in, w, out, C, H, W);
}
"""

BASE_POINTER = """#define R 1
__global__ void blur(const float *in, const float *w, float *out, int C, int H, int W) {
    const int x = blockIdx.x * 8 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;
    if (blockIdx.z >= C || x >= W || y >= H) return;
    const float *src = in + (size_t)blockIdx.z * H * W;
    float s = 0.0f;
    for (int dy = -R; dy <= R; ++dy)
        for (int dx = -R; dx <= R; ++dx) {
            const int sy = y + dy, sx = x + dx;
            if (sx < 0 || sy < 0 || sx >= W || sy >= H) continue;
            s += src[sy * W + sx] * w[(dy + R) * 3 + dx + R];
        }
    out[(size_t)blockIdx.z * H * W + y * W + x] = s;
}
void launch(const float *in, const float *w, float *out, int C, int H, int W) {
    blur<<<dim3((W + 7) / 8, (H + 7) / 8, C), dim3(8, 8)>>>(in, w, out, C, H, W);
}
"""

#: name -> (text, kernel, block (x, y))
PLANES = {
    "depthwise": (DEPTHWISE, "dwconv3x3", (16, 16)),
    "flat_p": (FLAT_P, "plane_avg", (32, 8)),
    "base_pointer": (BASE_POINTER, "blur", (8, 8)),
}

MAIN = """
int main() {
    const int C = 3, W = WIDTH, H = HEIGHT;
    float *in = new float[C * W * H];  // exactly C * W * H elements: a read past either end aborts under ASan
    std::vector<float> w(C * 9), out(C * W * H, -1.0f);
    for (int i = 0; i < C * W * H; ++i) in[i] = (float)((i * 7) % 13) - 6.0f;
    for (int k = 0; k < C * 9; ++k) w[k] = 0.5f + k;
    htam_launch3((W + BX - 1) / BX, (H + BY - 1) / BY, C, BX, BY, [&] { KERNEL(in, w.data(), out.data(), C, H, W); });
    for (float v : out) std::printf("%.9g\\n", v);
    delete[] in;
    return 0;
}
"""


def _run(text: str, kernel: str, block: tuple[int, int], tmp) -> list[float]:
    size = (2 * block[0] + 5, 2 * block[1] + 3)  # partial last blocks along both axes
    main = (MAIN.replace("WIDTH", str(size[0])).replace("HEIGHT", str(size[1])).replace("BX", str(block[0]))
            .replace("BY", str(block[1])).replace("KERNEL", kernel))
    prelude = "\n".join(ln for ln in text.splitlines() if ln.startswith("#define")) + "\n"
    return run_block_main(text, kernel, main, tmp, prelude=prelude, flags=("-fsanitize=address",))


@pytest.mark.parametrize("name", sorted(PLANES))
def test_the_tile_is_loaded_from_the_blocks_plane(name):
    text, kernel, _ = PLANES[name]
    c = only_candidate(ID, text, kernel)
    assert "blockIdx.z" in c.new_text.split("__syncthreads()")[0]  # the load adds the plane's offset
    assert "htam_tile[threadIdx.y" in c.new_text


@pytest.mark.parametrize("name", sorted(PLANES))
def test_the_plane_tile_keeps_each_output_and_reads_nothing_out_of_range(name, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text, kernel, block = PLANES[name]
    c = only_candidate(ID, text, kernel)
    want = _run(text, kernel, block, tmp_path)
    got = _run(c.new_text, kernel, block, tmp_path)
    assert len(want) == 3 * (2 * block[0] + 5) * (2 * block[1] + 3) and got == want


def test_a_tile_loaded_from_plane_zero_is_caught(tmp_path):
    """The check can fail: the tile loaded without the plane's offset gives plane 0's window to every plane."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text, kernel, block = PLANES["flat_p"]
    c = only_candidate(ID, text, kernel)
    head, sep, tail = c.new_text.partition("__syncthreads()")
    wrong = head.replace("((int)blockIdx.z)", "0").replace("((long long)blockIdx.z)", "0")
    assert wrong != head
    assert _run(wrong + sep + tail, kernel, block, tmp_path) != _run(text, kernel, block, tmp_path)


@pytest.mark.parametrize("name", sorted(PLANES))
def test_the_plane_tile_compiles(name, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    text, kernel, _ = PLANES[name]
    assert_compiles(only_candidate(ID, text, kernel).new_text, tmp=tmp_path, name="k.cu")
