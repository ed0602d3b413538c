"""Rationales speak of the kernel at hand: no softmax wording for an RMSNorm, and no strategy
whose text names an operation the kernel does not perform."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from htam_core.memory import Ranker, load_knowledge, state_from_profile
from htam_core.source import parse_text
from htam_core.types.profile import Bottleneck, Profile

HONEST = Path(__file__).resolve().parents[1] / "fixtures" / "honest"
KB = load_knowledge()

CUDA_RMSNORM = textwrap.dedent("""
    __global__ void rmsnorm_rows(const float* __restrict__ x, const float* __restrict__ w,
                                 float* __restrict__ y, int cols, float eps) {
        int r = blockIdx.x * blockDim.x + threadIdx.x;
        float ss = 0.f;
        for (int c = 0; c < cols; ++c) ss += x[r * cols + c] * x[r * cols + c];
        float inv = rsqrtf(ss / cols + eps);
        for (int c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * inv * w[c];
    }
    """)
#: Words that claim the kernel computes an exponential, a softmax or attention.
_EXP_WORDS = re.compile(r"softmax|attention|sum of exp|\bexp\b|tl\.exp|\bexpf\b|max, then", re.IGNORECASE)


def _steps(text: str, language: str):
    model = parse_text(text, "python" if language == "triton" else "cuda")
    k = model.kernels[0]
    for cls in ("memory-bound", "compute-bound", "unknown"):
        profile = Profile(k.name, bottleneck=Bottleneck(cls))
        yield k, Ranker(KB).rank(state_from_profile(profile), [], k.features, k.language, profile, top=60,
                                 kernel=k)


@pytest.mark.parametrize("text,language", [((HONEST / "rmsnorm_fp32.py").read_text(), "triton"),
                                           (CUDA_RMSNORM, "cuda")], ids=["triton", "cuda"])
def test_rmsnorm_rationales_never_speak_of_softmax_or_exp(text: str, language: str) -> None:
    seen = set()
    for k, steps in _steps(text, language):
        assert not {"exp", "expf", "__expf"} & set(k.features.math_calls)
        for s in steps:
            seen.add(s.strategy)
            assert not _EXP_WORDS.search(s.rationale), (s.strategy, s.rationale)
    # the strategy of the original bug is recommended, with a generic text; Triton has its own form of it
    assert ("register_cache_row" if language == "cuda" else "triton_row_in_registers") in seen
    if language == "triton":
        assert "register_cache_row" not in seen  # a CUDA-only transform is never ranked for a Triton kernel


@pytest.mark.parametrize("text,language", [((HONEST / "rmsnorm_fp32.py").read_text(), "triton"),
                                           (CUDA_RMSNORM, "cuda")], ids=["triton", "cuda"])
def test_strategies_whose_summary_speaks_of_exp_do_not_apply_to_an_rmsnorm(text: str, language: str) -> None:
    k = parse_text(text, "python" if language == "triton" else "cuda").kernels[0]
    exp_only = {s.id for s in KB.strategies if _EXP_WORDS.search(s.guidance.split(". ")[0])}
    assert exp_only, "no strategy summary mentions exp: the pattern above is stale"
    applicable = {s.id for s in Ranker(KB).applicable(k.features, k.language, None, k)}
    assert applicable and not exp_only & applicable


def test_first_sentence_keeps_the_whole_sentence() -> None:
    """The one rule that cuts "how" out of a guidance: whole first sentence, ellipsis kept, no cut at "e.g."."""
    from htam_core.types.text import first_sentence

    assert first_sentence("Loop over tiles pid, pid + N, ... This removes\nthe tail.") == \
        "Loop over tiles pid, pid + N, ..."
    assert first_sentence("Use float4, e.g. for rows. Then check.") == "Use float4, e.g. for rows."
    assert first_sentence("Use float4, e.g. for rows. Then check.", stop=False) == "Use float4, e.g. for rows"
    assert first_sentence("x = a.b ... more", stop=False) == "x = a.b ... more"
    assert first_sentence("") == ""
    for s in KB.strategies:  # every rationale the ranker can write holds its guidance's first sentence whole
        assert len(first_sentence(s.guidance)) > 20, s.id
