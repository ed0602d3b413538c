"""Text shown to the user (hover Markdown, action titles, diagnostics facts), from engine objects only."""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.editor import AppliedStep, ProfileEntry, ProfileView, render
from htam_core.editor.ranking import Analysis
from htam_core.memory import Outcome
from htam_core.source import parse_text
from htam_core.types.profile import Bottleneck, Profile, TimeStats

KERNEL = parse_text("__global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 2 * x[i]; }\n",
                    "cuda").kernels[0]


@dataclass
class _Step:
    rank: int = 1
    direction_name: str = "Memory Access"
    title: str = "vectorize loads (float4)"
    expected_gain: float | None = 0.35
    wins: int = 7
    trials: int = 9
    evidence: str = "7 of 9 paid off"
    rationale: str = "because"
    transform: str | None = "cuda.vectorize"
    risk: str | None = "alignment"


def _profile(**kw) -> Profile:
    return Profile("k", mode="gpu", bottleneck=Bottleneck("memory-bound"), device="NVIDIA H200",
                   time_ms=TimeStats(0.1, 0.12, 0.2), registers=40, spill_bytes=16, theoretical_occupancy=0.25,
                   **kw)


def test_action_title_and_gain():
    assert render.action_title(_Step()) == "HTAM 1 · Memory Access → vectorize loads (float4) · +35% (7/9)"
    assert render.gain_text(_Step(expected_gain=None, trials=0)) == "prior"
    assert render.gain_text(_Step(expected_gain=None, trials=2)) == "prior (2 unmeasured)"


def test_hover_markdown_states():
    entry = ProfileEntry("k.cu", "k", "h", profile=_profile(), finished=0.0)
    md = render.hover_markdown(KERNEL, ProfileView(entry, True, False), [_Step()],
                               [AppliedStep("s", "d", "restrict", 0.0, Outcome(1.5, True, True, "win"))],
                               ready=True, engine="rules")
    assert "`k`" in md and "measured on NVIDIA H200" in md and "**stale**" in md
    assert "**vectorize loads (float4)** · expected +35% (7/9)" in md and "mechanical transform" in md
    assert "restrict — win, 1.50× measured" in md
    loading = render.hover_markdown(KERNEL, ProfileView(None, False, True), [], [], ready=False, engine="rules")
    assert "profiling in the background" in loading and "loading the HTAM memory" in loading


def test_profile_facts_and_analysis_view():
    facts = render.profile_facts(_profile())
    assert [c for _, c, _ in facts] == ["register-spill", "low-occupancy"]
    old = ProfileEntry("k.cu", "k", "old", profile=_profile())
    new = ProfileEntry("k.cu", "k", "new", profile=_profile())
    a = Analysis(("old", 1, (), 5, 0), "old", old, [], 0.0)
    live = ProfileView(new, False, True)
    shown = render.analysis_view(live, a, "new")
    assert shown.entry is old and shown.stale and shown.running  # the profile that ranking used
    assert render.analysis_view(live, None, "new") is live


def test_an_incomplete_kernel_gets_no_recommendation_nor_advice():
    """The hover agrees with `htam suggest`: a half-typed kernel is not ranked (regression, new-user trial)."""
    half = parse_text("__global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 2 *", "cuda")
    kernel = half.kernels[0]
    assert kernel.incomplete
    md = render.hover_markdown(kernel, ProfileView(None, False, False), [_Step()], [], ready=True, engine="rules",
                               advice=[(_Step(), _Step())])
    assert "**Recommended next step:** none: k is incomplete" in md and "steps are ranked once it parses" in md
    assert "vectorize loads" not in md and "**Advice**" not in md
    # and it does not ask for a profile it will not run (the hover said both, a new user's trial)
    assert "it can run once the kernel parses" in md and "Profile kernel" not in md
