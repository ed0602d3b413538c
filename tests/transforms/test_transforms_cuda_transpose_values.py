"""The transpose tile on transposes that store a function of the loaded element (a conjugate through a local, a scale
by a parameter, a negation, a cast): made, nvcc-compiled for sm_90, and run on the CPU
(:func:`cpu_emulation.run_block_main`) with the same output as the original kernel. The tile holds the raw loaded
element; the store applies the expression."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, candidate_texts

#: name -> (element type, guarded body, the stored text the tile's store must hold, ``T`` for the tile's entry)
BODIES = {
    "conj": ("float2", "float2 v = in[(long long)r * cols + c]; out[(long long)c * rows + r] = make_float2(v.x, -v.y);",
             "make_float2(T.x, -T.y)"),
    "scale": ("float", "out[c * rows + r] = alpha * in[r * cols + c];", "alpha * T"),
    "neg": ("float", "out[c * rows + r] = -in[r * cols + c];", "-T"),
    "cast": ("float", "out[c * rows + r] = (float)(int)in[r * cols + c];", "(float)(int)T"),
}
#: the tile's entries read and written by each form: the coarsened 32x8 tile (4 rows a thread), the element loop
ENTRIES = {"rows": ("htam_tile[htam_x][htam_y + htam_k]", "htam_tile[htam_y + htam_k][htam_x] = in["),
           "loop": ("htam_tile[htam_e % 32][htam_e / 32]", "htam_tile[htam_e / 32][htam_e % 32] = in[")}


def _kernel(name: str) -> str:
    etype, body, _ = BODIES[name]
    return f"""__global__ void tp(const {etype}* in, {etype}* out, int rows, int cols, float alpha) {{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {{ {body} }}
}}

void run(const {etype}* in, {etype}* out, int rows, int cols) {{
    dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    tp<<<grid, block>>>(in, out, rows, cols, 2.5f);
}}
"""


def _made(name: str) -> list[str]:
    return candidate_texts("cuda.transpose_smem_tile", _kernel(name), "tp", "tp.cu")


@pytest.mark.parametrize("name", list(BODIES))
def test_the_tile_applies_the_stored_function_at_the_store(name):
    etype, _, stored = BODIES[name]
    made = _made(name)
    assert len(made) == 2  # the coarsened tile first, the element loop next
    for text, form in zip(made, ("rows", "loop"), strict=True):
        entry, tiled = ENTRIES[form]
        assert f"__shared__ {etype} htam_tile[32][33];" in text and f"= {stored.replace('T', entry)};" in text
        assert tiled in text  # the raw element is tiled


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(tmp_path: Path):
    for k, name in enumerate(BODIES):
        for j, text in enumerate(_made(name)):
            assert_nvcc_compiles(text, tmp_path, f"t{k}_{j}.cu")


PRELUDE = """
#include <cstdio>
struct float2 { float x, y; };
static float2 make_float2(float x, float y) { return {x, y}; }
"""
MAIN = """
int main() {
    const int rows = 37, cols = 70;
    std::vector<ETYPE_> in((size_t)rows * cols), out((size_t)rows * cols + 8);
    for (size_t i = 0; i < in.size(); ++i) in[i] = FILL;
    htam_launch2((cols + 31) / 32, (rows + 7) / 8, 32, 8, [&] { tp(in.data(), out.data(), rows, cols, 2.5f); });
    for (const ETYPE_ &o : out) std::printf(PRINT);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("name", ["conj", "scale"])
def test_the_tile_gives_the_original_output_on_the_cpu(name, tmp_path: Path):
    f2 = BODIES[name][0] == "float2"
    main = MAIN.replace("ETYPE_", BODIES[name][0]).replace(
        "FILL", "make_float2((float)i, 0.5f * (float)i - 3.f)" if f2 else "0.25f * (float)i").replace(
        "PRINT", '"%.9g %.9g\\n", o.x, o.y' if f2 else '"%.9g\\n", o')
    want = run_block_main(_kernel(name), "tp", main, tmp_path, prelude=PRELUDE)
    assert any(v != 0 for v in want)
    for text in _made(name):
        assert run_block_main(text, "tp", main, tmp_path, prelude=PRELUDE) == want
