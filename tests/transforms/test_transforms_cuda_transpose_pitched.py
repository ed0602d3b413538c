"""The transpose tile on pitched transposes: row strides (an element pitch, BLAS-style ``lda``/``ldb``, a byte pitch
divided by ``sizeof``, ``int64_t`` strides, a byte row pointer of 8-bit pixels) separate from the extents the guard
checks (``dst[x * dst_pitch + y] = src[y * src_pitch + x]`` under ``x < w && y < h``). Each spelling: the step is
offered and made (the coarsened 32x8 tile and the element loop), the tile reads and writes with the kernel's
strides and bounds with its extents, every candidate compiles with nvcc (sm_90), and on the CPU
(:func:`cpu_emulation.run_block_main`) every candidate gives the original's output, the rows' padding untouched,
on a 37 x 70 matrix whose pitches exceed its widths. The kernels are written for these tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, candidate_texts

IDX = ("int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
       "    int y = blockIdx.y * blockDim.y + threadIdx.y;\n")

#: name -> (element type, stride parameter type, kernel parameters after the pointers, guarded body, stride text the
#: tile must hold for (in, out), a stride's value in elements -> the argument passed)
KERNELS = {
    "element_pitch": ("float", "int", "int sp, int dp, int w, int h",
                      "out[x * dp + y] = in[y * sp + x];", ("sp", "dp"), "{}"),
    "lda_ldb": ("float", "int", "int m, int n, int lda, int ldb",
                "out[x * ldb + y] = in[y * lda + x];", ("lda", "ldb"), "{}"),
    "byte_pitch": ("float", "size_t", "size_t sp, size_t dp, int w, int h",
                   "out[x * (dp / sizeof(float)) + y] = in[y * (sp / sizeof(float)) + x];",
                   ("(sp / sizeof(float))", "(dp / sizeof(float))"), "(size_t){} * sizeof(float)"),
    "int64_strides": ("double", "int64_t", "int64_t sp, int64_t dp, int w, int h",
                      "out[(int64_t)x * dp + y] = in[(int64_t)y * sp + x];", ("sp", "dp"), "(int64_t){}"),
    "u8_row_pointer": ("unsigned char", "size_t", "size_t sp, size_t dp, int w, int h",
                       "const unsigned char *s = in + y * sp; unsigned char *d = out + x * dp; d[y] = s[x];",
                       ("sp", "dp"), "(size_t){}"),
}


def _kernel(name: str) -> str:
    etype, _, params, body, _, _ = KERNELS[name]
    guard = "x < n && y < m" if name == "lda_ldb" else "x < w && y < h"
    args = "m, n, lda, ldb" if name == "lda_ldb" else "sp, dp, w, h"
    return f"""#include <cstdint>
__global__ void tp(const {etype} *in, {etype} *out, {params}) {{
    {IDX}    if ({guard}) {{ {body} }}
}}

void run(const {etype} *in, {etype} *out, {params}) {{
    dim3 block(16, 16), grid(({'n' if name == 'lda_ldb' else 'w'} + 15) / 16, ({'m' if name == 'lda_ldb' else 'h'} + 15) / 16);
    tp<<<grid, block>>>(in, out, {args});
}}
"""


def _made(name: str) -> list[str]:
    return candidate_texts("cuda.transpose_smem_tile", _kernel(name), "tp", "tp.cu")


@pytest.mark.parametrize("name", list(KERNELS))
def test_the_tile_uses_the_strides_for_the_rows_and_the_extents_for_the_bounds(name):
    ins, outs = KERNELS[name][4]
    made = _made(name)
    assert len(made) == 2  # the coarsened 32x8 tile first, the element loop next
    rows, cols = ("m", "n") if name == "lda_ldb" else ("h", "w")
    for text in made:
        assert f"htam_ld_in = {ins}, htam_ld_out = {outs};" in text
        assert f"htam_rows = {rows}, htam_cols = {cols};" in text
        assert "* htam_ld_in + htam_c]" in text and "* htam_ld_out + htam_" in text
        assert "* htam_cols +" not in text and "* htam_rows +" not in text  # no dense index left
        if KERNELS[name][1] != "int":
            assert "const long long htam_ld_in" in text  # 64-bit strides: 64-bit flat indices
    cols_arg = "n" if name == "lda_ldb" else "w"
    assert "block(32, 8)" in made[0] and f"grid(({cols_arg} + 31) / 32" in made[0]  # the grid takes the extents


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(tmp_path: Path):
    for k, name in enumerate(KERNELS):
        for j, text in enumerate(_made(name)):
            assert_nvcc_compiles(text, tmp_path, f"t{k}_{j}.cu")


MAIN = """
#include <vector>
int main() {
    const int rows = 37, cols = 70, ldi = cols + 5, ldo = rows + 3;  // pitches wider than the rows
    std::vector<ETYPE_> in((size_t)rows * ldi), out((size_t)cols * ldo);
    for (size_t i = 0; i < in.size(); ++i) in[i] = (ETYPE_)(i % 251);
    for (ETYPE_ &o : out) o = (ETYPE_)255;  // the padding must stay
    htam_launch2(LAUNCH_, [&] { tp(in.data(), out.data(), ARGS_); });
    for (const ETYPE_ &o : out) std::printf("%d\\n", (int)o);
    return 0;
}
"""

#: each candidate's launch, as the candidate makes it: the coarsened tile's 32x8 block and one block per 32x32 tile,
#: the element loop under the original's 16x16 block and grid
LAUNCHES = ("(cols + 31) / 32, (rows + 31) / 32, 32, 8", "(cols + 15) / 16, (rows + 15) / 16, 16, 16")


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("name", list(KERNELS))
def test_the_tile_gives_the_original_output_on_the_cpu(name, tmp_path: Path):
    etype, _, _, _, _, arg = KERNELS[name]
    ldi, ldo = arg.format("ldi"), arg.format("ldo")
    args = f"rows, cols, {ldi}, {ldo}" if name == "lda_ldb" else f"{ldi}, {ldo}, cols, rows"
    main = MAIN.replace("ETYPE_", etype).replace("ARGS_", args)
    prelude = "#include <cstdint>\n#include <cstdio>\n"
    want = run_block_main(_kernel(name), "tp", main.replace("LAUNCH_", LAUNCHES[1]), tmp_path, prelude=prelude)
    assert any(v not in (0, 255) for v in want) and 255 in want  # moved elements and untouched padding
    for text, launch in zip(_made(name), LAUNCHES, strict=True):
        assert run_block_main(text, "tp", main.replace("LAUNCH_", launch), tmp_path, prelude=prelude) == want
