"""``triton.block_size`` retunes both ways; with several ``BLOCK_*`` it tries the larger tile first (the knowledge
base's guidance: raise a small tile), and every candidate's description says whether it raises or lowers the tile
(a column sum's row tile lowered 32 -> 16 was described as "raise the per-program tile")."""

from __future__ import annotations

from htam_core.memory.knowledge import load_knowledge


def test_several_blocks_raise_first_and_each_candidate_says_its_direction(cand) -> None:
    cs = cand("triton.block_size", "tri_matmul.py", "matmul_2d")
    first = cs[0]
    (p,) = [k for k in first.params if k.startswith("BLOCK")]
    assert first.params[p] == 2 * first.params["previous"], first.params
    for c in cs:
        (p,) = [k for k in c.params if k.startswith("BLOCK")]
        word = "raises" if c.params[p] > c.params["previous"] else "lowers"
        assert f"{word} the per-program tile" in c.description, c.description


def test_the_step_guidance_names_both_directions() -> None:
    s = next(s for s in load_knowledge().strategies if s.id == "triton_block_size")
    assert s.guidance.startswith("Retune") and "lower one" in s.guidance and "raise a small one" in s.guidance
