"""A half-typed kernel does not spoil the complete kernel after it: the complete kernel's facts, its
makeable transforms and the file's parse problems are those of its own text (the problem is reported in
the half-typed kernel, never at the complete one)."""

from __future__ import annotations

from pathlib import Path

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recovery" / "half_then_complete.cu"


def _texts() -> tuple[str, str]:
    both = FIXTURE.read_text(encoding="utf-8")
    alone = both[both.index("__global__ void complete_k"):]
    return both, alone


def _kernel(text: str, name: str):  # noqa: ANN202 - (model, kernel)
    model = parse_text(text, "cuda", "k.cu")
    return model, next(k for k in model.kernels if k.name == name)


def test_complete_kernel_after_half_typed_has_its_own_facts() -> None:
    both, alone = _texts()
    fb = analyze(*_kernel(both, "complete_k"))
    fa = analyze(*_kernel(alone, "complete_k"))
    names = lambda f: sorted((p.name, p.mode, len(p.reads), len(p.writes)) for p in f.pointers)  # noqa: E731
    assert names(fb) == names(fa)
    assert "a" not in {p.name for p in fb.pointers}
    acc = lambda f: [(a.pointer, a.kind, str(a.index), a.vector, len(a.guarded), a.loops)  # noqa: E731
                     for a in f.accesses]
    assert acc(fb) == acc(fa)
    assert len(fb.thread_indices) == len(fa.thread_indices)
    assert fb.errors == fa.errors


def test_complete_kernel_after_half_typed_keeps_its_steps() -> None:
    both, alone = _texts()
    for tid in ("cuda.vectorize_float4",):
        alone_res = propose(tid, *_kernel(alone, "complete_k"))
        assert not isinstance(alone_res, NotApplicable), tid
        res = propose(tid, *_kernel(both, "complete_k"))
        assert not isinstance(res, NotApplicable), (tid, res)
    # cuda.ldg is refused on both (its inputs already take the read-only path) with the same reason
    ldg_alone, ldg_both = (propose("cuda.ldg", *_kernel(t, "complete_k")) for t in (alone, both))
    assert isinstance(ldg_alone, NotApplicable) and isinstance(ldg_both, NotApplicable)
    assert ldg_alone.reason == ldg_both.reason and "read-only path" in ldg_alone.reason


def test_parse_problem_points_at_the_half_typed_kernel() -> None:
    both, _ = _texts()
    model = parse_text(both, "cuda", "k.cu")
    assert model.problems, "the half-typed kernel is a parse problem"
    assert all(p.line <= 4 for p in model.problems), [str(p) for p in model.problems]
    assert model.problems[0].line == 4
