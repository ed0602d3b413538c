"""Did a candidate make the step it was asked for? Read from the analysis layer's facts of the start and the candidate.

An LLM asked for one strategy often writes another, or gives the kernel back unchanged. This module compares the
facts (:func:`htam_core.source.analysis.analyze`) of the kernel before and after, per strategy, and answers
``True`` (the fact the strategy changes did change the right way), ``False`` (it did not) or ``None`` (no
fact-based check is known for this strategy, or a side could not be read). Nothing here walks the syntax tree
or tests the source text: each check is a comparison of facts, registered per strategy id in :data:`CHECKS`.

The idea is the usual one of judging a code change by a property it must establish (the step's postcondition), as
the strategies' own guidance in ``htam_core/memory/knowledge.toml`` states them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from htam_core.source import SourceError, load
from htam_core.source.analysis import analyze
from htam_core.source.analysis.facts import KernelFacts
from htam_core.source.model import Kernel, SourceModel

#: A check: ``(facts before, kernel before, facts after, kernel after) -> bool``.
Check = Callable[[KernelFacts, Kernel, KernelFacts, Kernel], bool]

#: ``tl.*`` calls that state divisibility or contiguity to the compiler.
DIVISIBILITY_CALLS = frozenset({"multiple_of", "max_contiguous"})
#: Launch keywords that set warps and pipeline stages.
WARPS_STAGES = frozenset({"num_warps", "num_stages"})


def _hinted(f: KernelFacts) -> int:
    return sum(1 for m in (f.triton.memops if f.triton else ()) if m.hints)


def _calls(f: KernelFacts) -> set[str]:
    return set(f.triton.math_calls) if f.triton else set()


def _autotune(k: Kernel) -> object:
    return k.attributes.get("autotune")


def _launch_kwargs(f: KernelFacts, names: frozenset[str] | None) -> list[tuple[tuple[str, str], ...]]:
    return [tuple((n, v) for n, v in lf.kwargs if names is None or n in names) for lf in f.launches]


def _bindings(f: KernelFacts) -> list[tuple[tuple[str, int], ...]]:
    return [tuple(lf.bindings) for lf in f.launches]


def _cache_hints(fb: KernelFacts, kb: Kernel, fa: KernelFacts, ka: Kernel) -> bool:
    return _hinted(fa) > _hinted(fb)


def _divisibility(fb: KernelFacts, kb: Kernel, fa: KernelFacts, ka: Kernel) -> bool:
    return bool((_calls(fa) - _calls(fb)) & DIVISIBILITY_CALLS)


def _block_size(fb: KernelFacts, kb: Kernel, fa: KernelFacts, ka: Kernel) -> bool:
    return _bindings(fa) != _bindings(fb) or _autotune(ka) != _autotune(kb)


def _warps_stages(fb: KernelFacts, kb: Kernel, fa: KernelFacts, ka: Kernel) -> bool:
    return (_launch_kwargs(fa, WARPS_STAGES) != _launch_kwargs(fb, WARPS_STAGES)
            or _autotune(ka) != _autotune(kb))


def _autotuned(fb: KernelFacts, kb: Kernel, fa: KernelFacts, ka: Kernel) -> bool:
    return bool(fa.triton and fa.triton.autotuned) and not (fb.triton and fb.triton.autotuned)


def _new_call(name: str) -> Check:
    def check(fb: KernelFacts, kb: Kernel, fa: KernelFacts, ka: Kernel) -> bool:
        return name in _calls(fa) and name not in _calls(fb)
    return check


def _online(fb: KernelFacts, kb: Kernel, fa: KernelFacts, ka: Kernel) -> bool:
    return len(fa.online_stats) > len(fb.online_stats)


def _tf32(fb: KernelFacts, kb: Kernel, fa: KernelFacts, ka: Kernel) -> bool:
    def prec(f: KernelFacts) -> list[str | None]:
        return [d.input_precision for d in (f.triton.dots if f.triton else ())]
    return prec(fa) != prec(fb) and bool(prec(fa))


#: The fact-based check per strategy id; strategies not listed get ``None`` (not checked).
CHECKS: dict[str, Check] = {
    "triton_cache_hints": _cache_hints,
    "triton_divisibility_hints": _divisibility,
    "triton_block_size": _block_size,
    "triton_warps_stages": _warps_stages,
    "triton_autotune": _autotuned,
    "triton_exp2": _new_call("exp2"),
    "triton_block_pointers": _new_call("make_block_ptr"),
    "triton_online_softmax": _online,
    "triton_tf32_dot": _tf32,
}


def _kernel(model: SourceModel, name: str) -> Kernel | None:
    return next((k for k in model.kernels if k.name == name), None)


def step_made(strategy: str, before: SourceModel, after: SourceModel, kernel: str) -> bool | None:
    """Whether ``after`` makes the step ``strategy`` on ``kernel`` relative to ``before``.

    Args:
        strategy: a strategy id of the memory (``"triton_block_size"``).
        before, after: the parsed start and candidate (:func:`htam_core.source.load` or ``parse_text``).
        kernel: the kernel's name in both files.

    Returns:
        ``True`` or ``False`` from the facts; ``None`` when the strategy has no check here or the kernel is
        missing from either file (a candidate that renamed the kernel cannot be compared). Never raises for odd
        code: the analysis layer reports what it cannot read instead of raising.
    """
    check = CHECKS.get(strategy)
    kb, ka = _kernel(before, kernel), _kernel(after, kernel)
    if check is None or kb is None or ka is None:
        return None
    return check(analyze(before, kb), kb, analyze(after, ka), ka)


def step_made_files(strategy: str, before: Path, after: Path, kernel: str) -> bool | None:
    """:func:`step_made` on two files; ``None`` when either cannot be read."""
    try:
        return step_made(strategy, load(before), load(after), kernel)
    except (OSError, ValueError, SourceError):
        return None
