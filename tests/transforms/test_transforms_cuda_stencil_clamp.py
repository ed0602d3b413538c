"""The stencil tile on clamp-to-edge windows: a neighbour read at ``min(max(x + dx, 0), W - 1)`` (or its ``?:`` and
one-sided spellings) is read as a window with a clamp (:mod:`htam_core.source.analysis.clamp`), and the tile's load
reads the same clamped element, so each slot holds the value the original reads there. Checked as the other stencil
tests: made, accepted by ``nvcc -arch=sm_90 -c``, and run on the CPU under AddressSanitizer on sizes that are not
multiples of the block (the borders, where the clamp acts, included), with the element type as written (8-bit
pixels summed in an ``int``).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import only_candidate

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.facts import sym
from htam_core.transforms import registry
from tests.support.nvcc_check import assert_compiles

ID = "cuda.stencil_smem_tile"

PRELUDE = "#include <algorithm>\n#include <cstdint>\nusing std::max;\nusing std::min;\n"

#: the user's 8-bit box blur: clamped locals in nested loops, int accumulator, unsigned char pixels
BOXBLUR_U8 = """__global__ void boxblur3x3(const unsigned char* src, unsigned char* dst, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) {
    int sum = 0;
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        int xx = min(max(x + dx, 0), width - 1);
        int yy = min(max(y + dy, 0), height - 1);
        sum += src[yy * width + xx];
      }
    }
    dst[y * width + x] = (unsigned char)((sum + 4) / 9);
  }
}
void launch(const unsigned char* src, unsigned char* dst, int width, int height) {
  dim3 block(16, 16);
  dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
  boxblur3x3<<<grid, block>>>(src, dst, width, height);
}
"""

#: the clamp written inside the index, max outside min, an early return
INLINE_EARLY_RETURN = """__global__ void k(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    float s = 0.0f;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -2; dx <= 2; ++dx) s += in[max(0, min(y + dy, H - 1)) * W + max(min(x + dx, W - 1), 0)];
    out[y * W + x] = s;
}
void launch(const float *in, float *out, int W, int H) { k<<<dim3((W + 15) / 16, (H + 7) / 8), dim3(16, 8)>>>(in, out, W, H); }
"""

#: both sides through nested ?: on one axis, ::max/::min on the other, 64-bit sizes, a constant block in the index
NESTED_TERNARY_WIDE = """#include <cstdint>
__global__ void blur5(const float *__restrict__ in, float *__restrict__ out, int64_t W, int64_t H) {
    const int64_t x = (int64_t)blockIdx.x * 16 + threadIdx.x;
    const int64_t y = (int64_t)blockIdx.y * 16 + threadIdx.y;
    if (x < W && y < H) {
        float s = 0.0f;
        for (int dy = 0; dy < 5; ++dy)
            for (int dx = 0; dx < 5; ++dx) {
                const int64_t sx = x + dx - 2 < 0 ? 0 : (x + dx - 2 >= W ? W - 1 : x + dx - 2);
                const int64_t sy = ::max((int64_t)0, ::min(y + dy - 2, H - 1));
                s += in[sy * W + sx];
            }
        out[y * W + x] = s;
    }
}
void launch(const float *in, float *out, int64_t W, int64_t H) { blur5<<<dim3((W + 15) / 16, (H + 15) / 16), dim3(16, 16)>>>(in, out, W, H); }
"""

#: name -> (text, kernel, call with IN_/OUT_/W_/H_, block, element type)
KERNELS = {
    "boxblur_u8": (BOXBLUR_U8, "boxblur3x3", "boxblur3x3(IN_, OUT_, W_, H_)", (16, 16), "unsigned char"),
    "inline_early_return": (INLINE_EARLY_RETURN, "k", "k(IN_, OUT_, W_, H_)", (16, 8), "float"),
    "nested_ternary_wide": (NESTED_TERNARY_WIDE, "blur5", "blur5(IN_, OUT_, (int64_t)W_, (int64_t)H_)", (16, 16),
                            "float"),
}

MAIN = """
int main() {
    const int W = WIDTH, H = HEIGHT;
    for (int round = 0; round < 2; ++round) {
        ELEM *in = new ELEM[W * H];  // exactly W * H elements: a read past either end aborts under AddressSanitizer
        std::vector<ELEM> out(W * H, (ELEM)0);
        for (int i = 0; i < W * H; ++i) in[i] = (ELEM)((i * 37 + round) % 251);
        htam_launch2((W + BX - 1) / BX, (H + BY - 1) / BY, BX, BY, [&] { CALL; });
        for (ELEM v : out) std::printf("%.9g\\n", (double)v);
        delete[] in;
    }
    return 0;
}
"""


def _run(text: str, name: str, size: tuple[int, int], tmp) -> list[float]:
    _, kernel, call, block, elem = KERNELS[name]
    call = call.replace("IN_", "in").replace("OUT_", "out.data()").replace("W_", "W").replace("H_", "H")
    main = (MAIN.replace("WIDTH", str(size[0])).replace("HEIGHT", str(size[1])).replace("BX", str(block[0]))
            .replace("BY", str(block[1])).replace("CALL", call).replace("ELEM", elem))
    return run_block_main(text, kernel, main, tmp, prelude=PRELUDE, flags=("-fsanitize=address",))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_clamped_window_is_tiled_and_the_load_reads_the_clamped_element(name):
    text, kernel, _, block, elem = KERNELS[name]
    c = only_candidate(ID, text, kernel)
    load = next(ln for ln in c.new_text.splitlines() if "htam_tile[htam_r][htam_c] =" in ln)
    assert load.count("min(max(") == 2  # both coordinates of the load clamped as the kernel clamps them
    assert f"__shared__ {elem} htam_tile[" in c.new_text  # the kernel's element type, its sums kept as written
    assert c.new_text.count("htam_tile[threadIdx.y") == 1 and "__syncthreads()" in c.new_text


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_clamped_tile_keeps_each_output_at_the_borders(name, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text, kernel, _, block, _ = KERNELS[name]
    c = only_candidate(ID, text, kernel)
    for size in ((2 * block[0] + 5, 3 * block[1] + 3), (3, 2)):  # partial blocks; an image smaller than the halo
        want = _run(text, name, size, tmp_path)
        got = _run(c.new_text, name, size, tmp_path)
        assert len(got) == 2 * size[0] * size[1] and got == want


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_clamped_tile_compiles(name, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    text, kernel, _, _, _ = KERNELS[name]
    assert_compiles(only_candidate(ID, text, kernel).new_text, tmp=tmp_path, name="k.cu")


def test_an_unclamped_halo_load_is_caught(tmp_path):
    """The check can fail: the same tile loaded without the clamp reads outside the image at its border."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    c = only_candidate(ID, BOXBLUR_U8, "boxblur3x3")
    broken = c.new_text.replace("min(max(htam_ey, 0), -1 + ((int)height))", "htam_ey")
    assert broken != c.new_text
    with pytest.raises(subprocess.CalledProcessError):
        _run(broken, "boxblur_u8", (37, 21), tmp_path)


def test_the_clamp_is_a_fact_of_the_window():
    """The analysis layer reads the clamp per axis, from the bounds as written."""
    model = parse_text(BOXBLUR_U8, "cuda")
    facts = analyze(model, model.kernel("boxblur3x3"))
    (st,) = facts.stencils2d
    assert st.clamps == ((0, sym("width") - 1), (0, sym("height") - 1))


LAUNCH = "void launch(const float *in, float *out, int W, int H) { k<<<dim3(W / 16, H / 16), dim3(16, 16)>>>(in, out, W, H); }\n"
HEAD = """__global__ void k(const float *in, float *out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
"""

REFUSED = {
    # two reads clamping the same axis to different edges: a slot would hold two values
    "different_bounds": (HEAD + """    out[y * W + x] = in[y * W + min(x + 1, W - 1)] + in[y * W + min(x + 2, W - 2)];
}
""" + LAUNCH, "different bounds"),
    # the unclamped read at x - 1 reads the previous row's last element at x == 0, not the clamped one
    "unclamped_past_the_edge": (HEAD + """    out[y * W + x] = in[y * W + max(x - 1, 0)] + in[y * W + x - 1] + in[min(y + 1, H - 1) * W + x];
}
""" + LAUNCH, "may reach past the bound"),
    # a clamp of the flattened index is not a clamp of one axis
    "flat_clamp": (HEAD + """    out[y * W + x] = in[min((y + 1) * W + x, W * H - 1)] + in[y * W + x];
}
""" + LAUNCH, "not a clamp of the column"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_clamp_the_tile_cannot_hold_is_refused_in_one_line(name):
    text, why = REFUSED[name]
    model = parse_text(text, "cuda")
    got = registry.propose(ID, model, model.kernel("k"))
    assert not isinstance(got, list)
    assert why in got.reason and "\n" not in got.reason


KEPT_LOCAL = HEAD + """    const int xr = min(x + 1, W - 1), yd = min(y + 1, H - 1);
    out[y * W + x] = in[y * W + xr] + in[yd * W + x] + in[y * W + x] + (float)xr;
}
""" + LAUNCH


def test_clamp_locals_nothing_reads_any_more_are_removed():
    """The locals that held a clamped coordinate go once the reads read the tile (no unused-variable warning),
    unless something else still reads them."""
    c = only_candidate(ID, BOXBLUR_U8, "boxblur3x3")
    assert "int xx" not in c.new_text and "int yy" not in c.new_text and "int sum = 0;" in c.new_text
    kept = only_candidate(ID, KEPT_LOCAL, "k").new_text
    # xr is still read; yd, declared beside it, is not: its declarator goes, the statement stays
    assert "const int xr = min(x + 1, W - 1);" in kept and "(float)xr" in kept and "yd" not in kept
