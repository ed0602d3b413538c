"""``cuda.block_size`` where the block-size constant also configures another kernel's launch: the retuned launch
gets a constant of its own (declared before its statement), the other launches keep theirs; where the kernel's
body reads the shared constant the step is refused with the hand edit that makes it possible."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import facts_of_text, fixture_path

from tests.support.nvcc_check import assert_compiles

TID = "cuda.block_size"
FILE = "block_constant_shared.cu"


def _launch_blocks(text: str) -> dict[str, tuple[int | None, ...]]:
    """Each kernel's launch block sizes, from the analysis facts of ``text``."""
    out = {}
    for k in ("sq_sum", "fill", "scale"):
        out[k] = tuple(la.block[0].value for la in facts_of_text(text, k).launches)
    return out


@pytest.mark.parametrize(("kernel", "name"), [("sq_sum", "sq_sum_threads"), ("fill", "fill_threads"),
                                             ("scale", "scale_BS")])
def test_shared_constant_gets_a_copy_for_the_retuned_launch(cand, kernel, name):
    before = _launch_blocks(fixture_path(FILE).read_text())
    for c in cand(TID, FILE, kernel):
        new = c.params["block"][0] if isinstance(c.params["block"], list) else c.params["block"]
        assert f"const int {name} = {new};" in c.new_text
        after = _launch_blocks(c.new_text)
        assert after[kernel] == (new,)
        assert {k: v for k, v in after.items() if k != kernel} == {k: v for k, v in before.items() if k != kernel}


def test_shared_memory_size_follows_the_own_constant(cand):
    c = cand(TID, FILE, "sq_sum")[0]
    assert "sq_sum_threads * sizeof(float)>>>" in c.new_text
    # the declaration goes before the `if` that holds the launch, in the same scope
    assert "const int sq_sum_threads" in c.new_text.split("if (n > 0)")[0]


def test_body_reading_the_shared_constant_is_refused_with_the_hand_edit(refuse):
    why = refuse(TID, FILE, "tile_sum")
    assert "also configures the launch scale" in why and "give tile_sum its own" in why


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_edits_compile(cand, tmp_path: Path):
    for k in ("sq_sum", "scale"):
        assert_compiles(cand(TID, FILE, k)[0].new_text, tmp=tmp_path, name=f"{k}.cu")
