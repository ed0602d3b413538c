"""``column_split_sum`` (the predicate of ``lane_columns``) comes from the analysis layer's column splits."""

from __future__ import annotations

from pathlib import Path

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import load

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "transforms" / "column_sum_variants.cu"


def _fact(name: str, language: str | None = None) -> bool | None:
    k = load(str(FIXTURE)).kernel(name)
    return compute_facts(k.features, language or k.language, kernel=k)["column_split_sum"]


def test_lanes_on_rows_is_a_column_split_and_a_thread_per_column_is_not():
    assert _fact("colsum_warp") is True and _fact("colsum_block") is True
    assert _fact("colsum_thread") is False
    strat = next(s for s in load_knowledge().strategies if s.id == "lane_columns")
    k = load(str(FIXTURE)).kernel("colsum_block")
    assert strat.applies.evaluate(compute_facts(k.features, k.language, kernel=k)) is True
    assert strat.transform == "cuda.lane_columns"


def test_unknown_without_the_kernel_false_for_triton():
    k = load(str(FIXTURE)).kernel("colsum_warp")
    assert compute_facts(k.features, k.language)["column_split_sum"] is None
    assert _fact("colsum_warp", "triton") is False


def test_thread_per_column_with_scalar_reads_is_a_thread_column_sum():
    def fact(name: str) -> bool | None:
        k = load(str(FIXTURE)).kernel(name)
        return compute_facts(k.features, k.language, kernel=k)["thread_column_sum"]

    assert fact("colsum_thread") is True and fact("colsum_thread_scaled") is True
    assert fact("colsum_warp") is False  # lanes on rows: a column split, not a thread per column
    strat = next(s for s in load_knowledge().strategies if s.id == "vector_columns")
    assert strat.transform == "cuda.vector_columns"
