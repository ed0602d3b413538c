"""A thread-per-row kernel whose row loop is uncoalesced and reduces ranks one warp per row first, whatever the
element type and the reduction kind: a ``__half`` arg-max from the first element, a ``double`` arg-min keeping the
last index, an ``unsigned char`` running max written as an ``if``, and a softmax whose max is a ternary.

The analysis layer reads each step as a loop accumulator (``argmax``/``argmin``, or ``max`` with its comparison),
so ``reduction_like`` holds next to ``uncoalesced_row_loop`` and warp_per_row gets its boost, while one thread per
element (for loops that carry nothing) is not ranked. Regression: a new user's ``__half`` top-1 kernel ranked
warp_per_row 7th, below one thread per element (which is then refused) and the launch steps. That the step is made
(nvcc, CPU equality) is tested with the transform (tests/transforms/test_transforms_row_select.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.memory import Ranker, load_knowledge, state_from_profile
from htam_core.memory.facts import compute_facts
from htam_core.source import load
from htam_core.types.profile import Bottleneck, Profile

KB = load_knowledge()
OWN = Path(__file__).resolve().parents[1] / "fixtures" / "transforms"
FILE = "row_top1_spellings.cu"
CASES = [(FILE, "row_top1_half"), (FILE, "row_argmin_last"), (FILE, "row_peak_u8"),
         ("row_select_variants.cu", "softmax_ternary")]


def _ranked(file: str, kernel: str, cls: str) -> list[str]:
    k = load(OWN / file).kernel(kernel)
    profile = Profile(kernel, bottleneck=Bottleneck(cls))
    steps = Ranker(KB, None).rank(state_from_profile(profile), [], k.features, k.language, profile, top=40, kernel=k)
    return [s.strategy for s in steps]


@pytest.mark.parametrize(("file", "kernel"), CASES)
def test_the_row_reduction_is_seen(file: str, kernel: str) -> None:
    k = load(OWN / file).kernel(kernel)
    facts = compute_facts(k.features, k.language, kernel=k)
    assert facts["uncoalesced_row_loop"] is True and facts["reduction_like"] is True


@pytest.mark.parametrize("cls", ["memory-bound", "unknown"])
@pytest.mark.parametrize(("file", "kernel"), CASES)
def test_warp_per_row_ranks_first(file: str, kernel: str, cls: str) -> None:
    ranked = _ranked(file, kernel, cls)
    assert ranked[0] == "warp_per_row" and "thread_per_element" not in ranked


def test_the_row_cache_needs_two_passes_over_the_row():
    """Regression: a one-pass row reduction (an arg-max per row, a row max) ranked "keep the row in registers
    between passes" (its rule read ``loads >= 2``), which the rules engine then refused ("does not walk its row in
    two or more passes"); the rule reads the analysis layer's passes now."""
    from htam_core.memory.facts import compute_facts
    from htam_core.source import parse_text

    one = """__global__ void rmax(const float *x, float *m, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float v = x[(size_t)r * cols];
    for (int c = 1; c < cols; ++c) v = fmaxf(v, x[(size_t)r * cols + c] + x[(size_t)r * cols + c] * 0.5f);
    m[r] = v;
}
"""
    two = one.replace("    m[r] = v;\n", "    float s = 0.f;\n    for (int c = 0; c < cols; ++c) s += expf(x[(size_t)r * cols + c] - v);\n"
                                         "    m[r] = s;\n")
    for text, passes in ((one, 1), (two, 2)):
        model = parse_text(text, "cuda", "k.cu")
        k = model.kernel("rmax")
        facts = compute_facts(k.features, k.language, None, k, model)
        assert facts["row_passes"] == passes
