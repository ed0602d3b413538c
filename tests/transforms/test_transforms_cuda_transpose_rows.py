"""``cuda.transpose_smem_tile`` on the samples-style transpose: a loop over the rows of a 32-row tile
(``for (j = 0; j < TILE_DIM; j += BLOCK_ROWS) out[x * H + (y + j)] = in[(y + j) * W + x];``, 32 x 8 or 32 x 16
threads per block) gets the padded ``[TILE_DIM][TILE_DIM + 1]`` shared tile, matched on the analysis layer's affine
indices however the indices are spelled.

Fixture ``tests/fixtures/transforms/transpose_rows_variants.cu`` (written for these tests): a square matrix whose
width comes from the grid with 8 rows per pass, and a width x height matrix of doubles through index locals with 16
rows per pass. The CPU runs (one host thread per CUDA thread, ``__syncthreads`` a barrier) compare every output with
the original's; nvcc compiles the candidates.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source import load, parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.transforms.cpu_emulation import compiler, run_block_main

TID = "cuda.transpose_smem_tile"
FILE = Path(__file__).resolve().parents[1] / "fixtures" / "transforms" / "transpose_rows_variants.cu"
PRELUDE = "#define TILE_DIM 32\n#define BLOCK_ROWS 8"


def _propose(kernel: str, text: str | None = None):
    model = parse_text(text, "cuda", str(FILE)) if text is not None else load(FILE)
    return registry.propose(TID, model, model.kernel(kernel))


@pytest.mark.parametrize(("kernel", "rows", "etype"), [("transpose_rows", 8, "float"),
                                                       ("transpose_rows_wh", 16, "double")])
def test_the_row_loop_gets_the_padded_tile(kernel, rows, etype):
    model = load(FILE)
    (tl,) = analyze(model, model.kernel(kernel)).transpose_loops()
    assert (tl.tile, tl.rows) == (32, rows)  # sympy integers
    cs = _propose(kernel)
    assert not isinstance(cs, NotApplicable), cs.reason
    (c,) = cs
    assert c.params == {"tile": 32, "block": [32, rows]}
    body = c.new_text[c.new_text.index(f"void {kernel}("):].split("\n}\n")[0]
    assert f"__shared__ {etype} htam_tile[TILE_DIM][TILE_DIM + 1];" in body
    load_, store = body.split("__syncthreads();")
    assert "htam_tile[threadIdx.y + " in load_ and "idata[" in load_ and "odata[" not in load_
    assert "= htam_tile[threadIdx.x][threadIdx.y + " in store
    assert "index_out" not in body  # the local only the old store read goes with it


def test_a_block_that_does_not_fit_the_loop_is_refused():
    text = FILE.read_text().replace("dim3(TILE_DIM, 16)", "dim3(TILE_DIM, 8)")
    r = _propose("transpose_rows_wh", text)
    # with 32x8 threads the loop (j += 16) moves only half of each 32x32 tile: a tile over the whole matrix would
    # write elements the kernel never writes (the output contract), so the step is refused, saying so
    assert isinstance(r, NotApplicable), [c.description for c in r]
    assert "a 32x8 block moves 512 of the 32x32 cells of its tile" in r.reason


def test_a_copy_is_not_a_transpose():
    text = FILE.read_text().replace("odata[x * width + (y + j)]", "odata[(y + j) * width + x]")
    r = _propose("transpose_rows", text)
    assert isinstance(r, NotApplicable) and "nor a loop over rows" in r.reason, r


_MAIN = """
int main() {
    const int w = W, h = H;
    std::vector<ETYPE> in((size_t)w * h), out((size_t)w * h, (ETYPE)-1);
    for (int k = 0; k < w * h; ++k) in[k] = (ETYPE)(k * 7 % 1009) + (ETYPE)0.25;
    htam_launch2(w / 32, h / 32, 32, ROWS, [&] { CALL; });
    for (ETYPE v : out) std::printf("%.9g\\n", (double)v);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize(("kernel", "w", "h", "rows", "etype", "call"), [
    ("transpose_rows", 64, 64, 8, "float", "transpose_rows(out.data(), in.data())"),
    ("transpose_rows_wh", 64, 96, 16, "double", "transpose_rows_wh(out.data(), in.data(), w, h)"),
])
def test_tiled_transpose_gives_the_same_outputs_on_the_cpu(kernel, w, h, rows, etype, call, tmp_path):
    main = (_MAIN.replace("W,", f"{w},").replace("H;", f"{h};").replace("ROWS", str(rows))
            .replace("ETYPE", etype).replace("CALL", call))
    want = run_block_main(FILE.read_text(), kernel, main, tmp_path, prelude=PRELUDE)
    assert -1.0 not in want and len(set(want)) > 500  # every element written, and they differ
    (c,) = _propose(kernel)
    assert run_block_main(c.new_text, kernel, main, tmp_path, prelude=PRELUDE) == want


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("kernel", ["transpose_rows", "transpose_rows_wh"])
def test_candidates_compile(kernel, tmp_path):
    (c,) = _propose(kernel)
    assert_nvcc_compiles(c.new_text, tmp_path)


@pytest.mark.parametrize("kernel", ["transpose_rows", "transpose_rows_wh"])
def test_the_ranker_offers_the_tile(kernel):
    from htam_core.memory import Ranker, load_knowledge, state_from_profile
    from htam_core.types.profile import Bottleneck, Profile

    k = load(FILE).kernel(kernel)
    profile = Profile(kernel, bottleneck=Bottleneck("memory-bound"))
    steps = Ranker(load_knowledge(), None).rank(state_from_profile(profile), [], k.features, k.language, profile,
                                                top=5, kernel=k)
    assert "transpose_smem_tile" in [s.strategy for s in steps]
