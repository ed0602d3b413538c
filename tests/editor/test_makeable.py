"""Which ranked steps the editor offers: verdicts once per kernel version, cached; a code
action only for a step that can be made; strategies with no transform as advice (an action only with the LLM)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from htam_core.editor.makeable import Makeability, Verdict, plan
from htam_core.memory import load_knowledge
from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable, Transform

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
KB = load_knowledge()


@dataclass
class _Step:
    strategy: str
    rank: int = 1


def _v(sid: str, *, made: bool = False, advice: bool = False) -> Verdict:
    return Verdict(sid, made, advice, made, None if made else "why")


def test_plan_lists_makeable_steps_and_keeps_advice_for_the_hover() -> None:
    steps = [_Step("advice1"), _Step("made1"), _Step("refused"), _Step("made2"), _Step("made3")]
    vs = {"advice1": _v("advice1", advice=True), "made1": _v("made1", made=True), "refused": _v("refused"),
          "made2": _v("made2", made=True), "made3": _v("made3", made=True)}
    p = plan(steps, vs, 2, llm=False)
    assert [s.strategy for s in p.actions] == ["made1", "made2"]  # two makeable steps fill top=2
    assert [s.strategy for s, _ in p.advice] == ["advice1"]
    assert [s.strategy for s, _ in p.skipped] == ["refused"]
    p = plan(steps, vs, 3, llm=True)  # the LLM writes any step, advice included
    assert [s.strategy for s in p.actions] == ["advice1", "made1", "refused"]
    assert [s.strategy for s, _ in p.advice] == ["advice1"]


def test_verdicts_are_computed_once_per_kernel_version() -> None:
    model = load(CORPUS / "sgemm_naive.cu")
    k = model.kernel("sgemm_naive")
    m = Makeability(KB.strategy)
    ids = ["smem_tiling", "l2_block_swizzle", "vectorize_loads"]
    assert m.peek(model, k, ids) is None
    v = m.verdicts(model, k, ids)
    assert m.checks == 3
    assert v["smem_tiling"].makeable and v["smem_tiling"].structural and v["smem_tiling"].reason is None
    assert v["l2_block_swizzle"].advice and not v["l2_block_swizzle"].makeable and v["l2_block_swizzle"].how
    assert not v["vectorize_loads"].makeable and "does not apply to sgemm_naive" in v["vectorize_loads"].reason
    assert m.verdicts(model, k, ids) == v and m.checks == 3  # cached: nothing re-checked
    assert m.peek(model, k, ids) == v
    omodel = load(CORPUS / "transpose_naive.cu")
    other = omodel.kernel("transpose_naive")
    assert m.peek(omodel, other, ids) is None  # another kernel: not known
    # a new version of the kernel (here: shared-memory tiling applied) is checked again
    edited = registry.propose("cuda.smem_tiling_matmul", model, k)
    assert isinstance(edited, list)
    model2 = parse_text(edited[0].new_text, "cuda", str(CORPUS / "sgemm_naive.cu"))
    k2 = model2.kernel("sgemm_naive")
    assert m.peek(model2, k2, ids) is None
    v2 = m.verdicts(model2, k2, ids)
    assert m.checks == 6 and not v2["smem_tiling"].makeable  # already tiled: no longer offered


def test_the_same_kernel_in_another_file_is_checked_again() -> None:
    """Regression: verdicts were keyed by the kernel's version only, so the same kernel in a file where another
    launch shares its block-size macro reused a verdict of another file, and a listed action failed on click."""
    model = load(CORPUS / "sgemm_naive.cu")
    k = model.kernel("sgemm_naive")
    m = Makeability(KB.strategy)
    m.verdicts(model, k, ["cuda_block_size"])
    other = parse_text(model.text + "\n// another kernel's launch could be here\n", "cuda", model.path)
    assert m.peek(other, other.kernel("sgemm_naive"), ["cuda_block_size"]) is None


def test_unknown_strategy_is_not_makeable() -> None:
    model = load(CORPUS / "sgemm_naive.cu")
    v = Makeability(KB.strategy).verdicts(model, model.kernel("sgemm_naive"), ["no_such_strategy"])
    assert not v["no_such_strategy"].makeable and "no_such_strategy" in v["no_such_strategy"].reason


def test_transform_kinds_are_declared_and_only_structural_counts() -> None:
    kinds = {t.id: t.kind for t in registry.all_transforms()}
    assert set(kinds.values()) <= set(registry.KINDS)
    for tid in ("cuda.block_size", "triton.block_size", "triton.warps_stages", "triton.autotune"):
        assert kinds[tid] == "launch" and not registry.is_structural(tid)
    for tid in ("cuda.restrict_const", "cuda.ldg", "cuda.unroll", "cuda.launch_bounds", "triton.cache_hints",
                "triton.divisibility_hints"):
        assert kinds[tid] == "hint" and not registry.is_structural(tid)
    for tid in ("cuda.smem_tiling_matmul", "cuda.coalesce_remap", "cuda.warp_per_row", "cuda.transpose_smem_tile"):
        assert registry.is_structural(tid)
    assert not registry.is_structural(None) and not registry.is_structural("no.such")

    class _Bad(Transform):
        id = "test.bad_kind"
        kind = "cosmetic"

        def propose(self, model, kernel, profile=None):
            return NotApplicable("never")

    with pytest.raises(ValueError, match="kind 'cosmetic'"):
        registry.register(_Bad)


def test_plan_checks_lazily_in_rank_order() -> None:
    steps = [_Step(f"s{i}") for i in range(10)]
    asked: list[str] = []

    def verdict_of(sid: str) -> Verdict:
        asked.append(sid)
        return _v(sid, made=sid != "s1")

    p = plan(steps, verdict_of, 3, llm=False)
    assert [s.strategy for s in p.actions] == ["s0", "s2", "s3"] and p.complete
    assert asked == ["s0", "s1", "s2", "s3"]  # nothing after the list is full is checked
    p = plan(steps, lambda sid: _v(sid, made=True) if sid == "s0" else None, 3, llm=False)
    assert not p.complete and [s.strategy for s in p.actions] == ["s0"]  # an unknown verdict: not complete


def test_the_hover_checks_only_up_to_its_recommendation() -> None:
    @dataclass
    class _T(_Step):
        transform: str | None = "t"

    steps = [_T("s0"), _T("advice", transform=None), _T("s2"), _T("s3")]
    asked: list[str] = []

    def verdict_of(sid: str) -> Verdict:
        asked.append(sid)
        return _v(sid, advice=sid == "advice", made=sid != "advice")

    p = plan(steps, verdict_of, 3, llm=False, need=1)
    assert [s.strategy for s in p.actions] == ["s0"] and [s.strategy for s, _ in p.advice] == ["advice"]
    assert asked == ["s0", "advice"]  # no transform after the first action; the advice costs none
    assert [s.strategy for s in plan(steps, verdict_of, 3, llm=False).actions] == ["s0", "s2", "s3"]
