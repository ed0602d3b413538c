"""The transpose tile on rotations and flips: a transpose whose one coordinate runs backwards on the read or the
write side (``out[x * H + (H - 1 - y)] = in[y * W + x]``, a rotation by 90 degrees; ``out[(W - 1 - x) * H + y]``,
a transposed flip; ``in[(H - 1 - y) * W + x]``, a reversed read). Each spelling: the step is offered and made (the
coarsened 32x8 tile and the element loop), the tile writes the reversed coordinate the analysis layer's fact
records, every candidate compiles with nvcc (sm_90), and on the CPU (:func:`cpu_emulation.run_block_main`) every
candidate gives the original's output on a 37 x 70 matrix (neither side a multiple of 32). The kernels are written
for these tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, candidate_texts

#: name -> (the guarded store, a text each candidate must hold: the reversed coordinate it writes or reads)
KERNELS = {
    "rot90_cw": ("out[x * h + (h - 1 - y)] = in[y * w + x];", "(htam_rows - 1 - "),
    "flip_transposed": ("out[(w - 1 - x) * h + y] = in[y * w + x];", "(htam_cols - 1 - "),
    "rot90_ccw_read": ("out[x * h + y] = in[y * w + (w - 1 - x)];", "(htam_cols - 1 - htam_c)"),
    "reversed_rows_read": ("out[x * h + y] = in[(h - 1 - y) * w + x];", "(htam_rows - 1 - "),
    "both_axes": ("out[(w - 1 - x) * h + (h - 1 - y)] = 2.f * in[y * w + x];", "(htam_cols - 1 - "),
}


def _kernel(name: str) -> str:
    return f"""__global__ void tp(const float *in, float *out, int w, int h) {{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {KERNELS[name][0]}
}}

void run(const float *in, float *out, int w, int h) {{
    dim3 block(16, 16), grid((w + 15) / 16, (h + 15) / 16);
    tp<<<grid, block>>>(in, out, w, h);
}}
"""


def _made(name: str) -> list[str]:
    return candidate_texts("cuda.transpose_smem_tile", _kernel(name), "tp", "tp.cu")


@pytest.mark.parametrize("name", list(KERNELS))
def test_the_tile_is_made_with_the_reversed_coordinate(name):
    made = _made(name)
    assert len(made) == 2  # the coarsened 32x8 tile first, the element loop next
    for text in made:
        assert "__shared__ float htam_tile[32][33];" in text
        assert KERNELS[name][1] in text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(tmp_path: Path):
    for k, name in enumerate(KERNELS):
        for j, text in enumerate(_made(name)):
            assert_nvcc_compiles(text, tmp_path, f"t{k}_{j}.cu")


MAIN = """
#include <vector>
int main() {
    const int rows = 37, cols = 70;
    std::vector<float> in((size_t)rows * cols), out((size_t)cols * rows, -1.f);
    for (size_t i = 0; i < in.size(); ++i) in[i] = (float)(i % 1009);
    htam_launch2(LAUNCH_, [&] { tp(in.data(), out.data(), cols, rows); });
    for (float o : out) std::printf("%g\\n", o);
    return 0;
}
"""

#: each candidate's launch, as the candidate makes it: the coarsened tile's 32x8 block and one block per 32x32 tile,
#: the element loop under the original's 16x16 block and grid
LAUNCHES = ("(cols + 31) / 32, (rows + 31) / 32, 32, 8", "(cols + 15) / 16, (rows + 15) / 16, 16, 16")


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("name", list(KERNELS))
def test_the_tile_gives_the_original_output_on_the_cpu(name, tmp_path: Path):
    prelude = "#include <cstdio>\n"
    want = run_block_main(_kernel(name), "tp", MAIN.replace("LAUNCH_", LAUNCHES[1]), tmp_path, prelude=prelude)
    assert -1.0 not in want and len(set(want)) > 500  # every element moved
    for text, launch in zip(_made(name), LAUNCHES, strict=True):
        assert run_block_main(text, "tp", MAIN.replace("LAUNCH_", launch), tmp_path, prelude=prelude) == want
