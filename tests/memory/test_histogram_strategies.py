"""On a global-atomic histogram, the row and tree strategies do not apply (a new user's trial ranked "keep the row
in registers", "one warp per row" and "add during load" on one, each then refused): a histogram's accumulation is
an atomic update of data-dependent bins, not a row or a block tree."""

from __future__ import annotations

import pytest

from htam_core.memory import load_knowledge
from htam_core.memory.facts import compute_facts
from htam_core.source import parse_text

HISTOGRAM = """__global__ void hist(const unsigned char *__restrict__ data, unsigned int *bins, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = blockDim.x * gridDim.x;
    while (idx < n) {
        atomicAdd(&bins[data[idx]], 1u);
        idx += stride;
    }
}
"""


def _applies(strategy: str) -> bool | None:
    k = parse_text(HISTOGRAM, "cuda").kernel("hist")
    facts = compute_facts(k.features, k.language, kernel=k)
    assert facts["histogram_like"] is True
    return next(s for s in load_knowledge().strategies if s.id == strategy).applies.evaluate(facts)


@pytest.mark.parametrize("strategy", ["register_cache_row", "warp_per_row", "thread_coarsening"])
def test_row_and_tree_strategies_do_not_apply_to_a_histogram(strategy: str) -> None:
    assert _applies(strategy) is False


def test_the_privatized_histogram_does() -> None:
    assert _applies("smem_histogram") is True
