"""A thread-per-row loop over groups of consecutive elements (a RoPE pair loop: ``x[2 * p]``, ``x[2 * p + 1]``)
is a row loop whose reads are contiguous for the ranking, as for the transforms (one thread per group, a vector per
group): ``uncoalesced_row_loop`` and ``scalar_contiguous_reads`` hold, so thread_per_element and vectorize_loads
are ranked. Regression: a new user's RoPE kernel had neither ranked though both transforms made it."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.memory.facts import compute_facts
from htam_core.source import load

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "transforms" / "group_loops.cu"


@pytest.mark.parametrize("kernel", ["rope_rows", "rope_inline", "rgba_gain"])
def test_a_group_loop_is_a_row_loop_with_contiguous_reads(kernel: str) -> None:
    k = load(FIXTURE).kernel(kernel)
    facts = compute_facts(k.features, k.language, kernel=k)
    assert facts["uncoalesced_row_loop"] is True
    assert facts["scalar_contiguous_reads"] >= 1
