"""Loops over a row's column tiles written ``for t in tl.static_range(NUM_TILES)`` with ``t * BLOCK +
tl.arange(0, BLOCK)`` are tile loops like ``range(0, N, BLOCK)``: one fact (``KernelFacts.row_tile_loops``,
``TritonFacts.tile_blocks``) that every row step reads, so their messages agree (row in registers counts the two
loops, several-rows-per-program sees them, block size knows the loop follows the block when
``@triton.heuristics`` recomputes the tile count, and not when the count is fixed at the launch)."""

from __future__ import annotations

from transform_helpers import fixture_path

from htam_core.source import load
from htam_core.source.analysis import analyze

FILE = "tri_static_tiles.py"


def _facts(kernel: str):
    model = load(fixture_path(FILE))
    return analyze(model, model.kernel(kernel))


def test_static_range_tile_index_loops_are_row_tile_loops() -> None:
    f = _facts("scale_rows_heur")
    assert [lp.line for lp in f.row_tile_loops()] == [13, 18]
    assert f.triton.tile_blocks == ((0, "BLOCK_N", True), (1, "BLOCK_N", True))
    assert f.triton.loops_over_block("BLOCK_N") and not f.triton.loops_over_block("NUM_TILES")
    fixed = _facts("scale_rows_fixed").triton  # the count is the launch's: a new block would not change it
    assert fixed.tile_blocks == ((0, "BLOCK_N", False), (1, "BLOCK_N", False))
    assert not fixed.loops_over_block("BLOCK_N")


def test_row_steps_agree_on_the_static_range_loops(refuse, cand) -> None:
    why = refuse("triton.row_in_registers", FILE, "scale_rows_heur")
    assert "lines 13 and 18 count tiles with tl.static_range" in why and "0 top-level" not in why, why
    assert "loops over column tiles" in refuse("triton.multi_row", FILE, "scale_rows_heur")
    # the heuristic recomputes NUM_TILES from BLOCK_N: a different block still covers the row
    (c, *_) = cand("triton.block_size", FILE, "scale_rows_heur")
    assert "BLOCK_N=128" not in c.new_text.split("def scale_rows(")[1].split("\n\n")[0]
    assert "does not loop over it" in refuse("triton.block_size", FILE, "scale_rows_fixed")
