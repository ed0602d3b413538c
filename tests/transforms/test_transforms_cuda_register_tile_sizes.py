"""``cuda.register_tile_matmul`` sizes its block tile from what the launching code fixes: never larger than a known
matrix side, and, among the tiles that fit, one whose grid gives the device at least one block per SM (the batch
of ``gridDim.z`` counted) first. Without known sides the default tiles stay. Every tile offered for a batch of
small matrices compiles with nvcc and, run on the CPU (:func:`cpu_emulation.run_block_main`), gives the original's
outputs on 64x64x64 with a batch of 3 and on sides that are no multiple of any tile.
"""

from __future__ import annotations

import math
import shutil

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import fixture_path

from htam_core.source import load
from htam_core.source.analysis.device_queries import REFERENCE_SM_COUNT
from htam_core.transforms.cuda_register_tiling import CONFIGS, SMALL, KnownSides, choose_configs
from tests.support.nvcc_check import assert_compiles

TID = "cuda.register_tile_matmul"
FILE = "matmul_known_sides.cu"
SMS = REFERENCE_SM_COUNT["sm_90"]


def _blocks(bm: int, bn: int, m: int, n: int, batch: int) -> int:
    return math.ceil(m / bm) * math.ceil(n / bn) * batch


def test_a_batch_of_small_matrices_gets_tiles_no_larger_than_a_side_that_fill_the_device(cand):
    cs = cand(TID, FILE, "bmm_small")  # main: batch 64 of 64x64 matrices
    assert cs and all(c.params["bm"] <= 64 and c.params["bn"] <= 64 for c in cs)
    first = cs[0].params
    assert _blocks(first["bm"], first["bn"], 64, 64, 64) >= SMS
    # the largest tile that still fills the device comes first
    assert all(_blocks(c.params["bm"], c.params["bn"], 64, 64, 64) < SMS or c.params["bm"] <= first["bm"]
               for c in cs)
    text = cs[0].new_text
    bm = first["bm"]
    assert f"dim3 grid(((N) + {bm - 1}) / {bm}, ((M) + {bm - 1}) / {bm}, batch);" in text
    assert "sized for M = 64, N = 64, batch 64" in cs[0].description
    # the launch whose sizes come from its caller is resized the same way, from its own arguments
    assert f"dim3 block({SMALL.threads if bm == SMALL.bm else 256});" in text.split("void run_bmm_small")[1]


def test_large_known_sides_keep_the_largest_tile_first_and_no_small_one(cand):
    cs = cand(TID, FILE, "mm_big")
    assert [c.params["bm"] for c in cs] == [c.bm for c in CONFIGS]


def test_sides_smaller_than_every_tile_are_refused_in_one_line(refuse):
    why = refuse(TID, FILE, "mm_tiny")
    assert "M = 16, N = 16" in why and f"smallest register tile, {SMALL.bm}x{SMALL.bn}" in why
    assert "\n" not in why


def test_an_unknown_batch_counts_as_one(cand):
    cs = cand(TID, FILE, "bmm_rows")  # 96 x 80, batch read at run time
    assert all(c.params["bm"] <= 80 for c in cs)
    assert cs[0].params["bm"] == min(c.params["bm"] for c in cs)  # no tile fills the device: most blocks first


@pytest.mark.parametrize(("sides", "expect"), [
    ([], CONFIGS),  # nothing known: today's default
    ([KnownSides(4096, None, 1, 1)], CONFIGS),  # one side known and large: every tile fits, order kept
    ([KnownSides(40, None, 1, 1)], (SMALL,)),  # one small side known
    ([KnownSides(64, 64, 1000, 1)], (CONFIGS[1],)),  # a big batch fills the device with 64x64 tiles
    ([KnownSides(64, 64, 1000, 1), KnownSides(64, 64, 1, 2)], (SMALL, CONFIGS[1])),  # the smaller grid decides
])
def test_choose_configs(sides, expect):
    assert choose_configs(sides, SMS) == expect


MAIN = """
int main() {
    const int batch = 3, M = M_, N = N_, K = K_;
    std::vector<float> A((size_t)batch * M * K), B((size_t)batch * K * N), C((size_t)batch * M * N, -1.0f);
    for (size_t i = 0; i < A.size(); ++i) A[i] = (float)((i * 7) % 13) - 6.0f + 0.25f * (float)(i % 3);
    for (size_t i = 0; i < B.size(); ++i) B[i] = (float)((i * 5) % 11) - 5.0f + 0.5f * (float)(i % 2);
    htam_launch3(GX, GY, batch, BX, BY, [&] { bmm_small(A.data(), B.data(), C.data(), M, N, K); });
    for (float v : C) std::printf("%.9g\\n", v);
    return 0;
}
"""


def _run(text: str, m: int, n: int, k: int, grid: tuple[int, int], block: tuple[int, int], tmp) -> list[float]:
    main = (MAIN.replace("M_", str(m)).replace("N_", str(n)).replace("K_", str(k))
            .replace("GX", str(grid[0])).replace("GY", str(grid[1]))
            .replace("BX", str(block[0])).replace("BY", str(block[1])))
    return run_block_main(text, "bmm_small", main, tmp)


@pytest.mark.parametrize(("m", "n", "k"), [(64, 64, 64), (45, 77, 53)])
def test_every_offered_tile_matches_the_original_on_the_cpu(m, n, k, tmp_path, cand):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    original = fixture_path(FILE).read_text()
    want = _run(original, m, n, k, (math.ceil(n / 16), math.ceil(m / 16)), (16, 16), tmp_path)
    for c in cand(TID, FILE, "bmm_small"):
        bm, bn = c.params["bm"], c.params["bn"]
        got = _run(c.new_text, m, n, k, (math.ceil(n / bn), math.ceil(m / bm)), (c.params["block"][0], 1), tmp_path)
        assert got == want, f"{bm}x{bn} tile"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not available")
def test_every_offered_tile_compiles(tmp_path, cand):
    for i, c in enumerate(cand(TID, FILE, "bmm_small")):
        assert_compiles(c.new_text, tmp=tmp_path, name=f"k{i}.cu")


def test_the_fixture_sides_are_what_the_analysis_reads():
    from htam_core.source.analysis import analyze

    model = load(str(fixture_path(FILE)))
    (la,) = [la for la in analyze(model, model.kernel("bmm_small")).launches if la.host == "main"]
    assert la.grid[2].value == 64 and [int(e) for e in la.arg_exprs[3:]] == [64, 64, 64]
