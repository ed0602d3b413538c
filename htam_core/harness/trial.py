"""What a prepared harness hands to the correctness check and to the timer: a :class:`Trial`.

A :class:`Trial` is the interface between the harness layer (which knows how to build the inputs and call
the reference and the candidate) and the layers above it: :mod:`htam_core.verify.correctness` runs it over
seeds, :mod:`htam_core.measure` times its candidate on the inputs of :data:`BASE_SEED`. It lives here, below
``verify`` and ``measure``, so that the harness never imports the layers that consume it.

Also here: :func:`poison_` (the harness fills write-only output buffers with it before every checked call)
and :func:`as_outputs` (a return value as a list of outputs). Torch is imported lazily: this module runs
inside worker processes and is imported by callers that never touch a tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: KernelBench's base seed (upstream ``eval.py``): the inputs of every timed call and the first checked trial.
BASE_SEED = 42


@dataclass
class Trial:
    """The pieces of one check, supplied by the harness runner.

    Attributes:
        make_inputs: ``(seed, set_index, scale) -> list`` of arguments (fresh tensors each call).
        run_reference: ``inputs -> list of outputs``.
        run_candidate: ``inputs -> list of outputs`` (poisons its own write-only output buffers and
            restores its in-out ones to their initial value first).
        output_indices: indices of inputs that are output buffers, write-only or in-out, and scratch
            buffers (not checked for mutation).
        input_sets: number of input sets.
        run_reference64: ``inputs -> list of outputs`` of the start's float64 twin (its float32 inputs given as
            float64 of the same values, its outputs cast back to float32), or ``None`` when there is none; used for
            :attr:`long_sum_outputs` only (:mod:`htam_core.verify.long_sum_rule`).
        long_sum_outputs: positions (in the outputs list) of the outputs the start fills with a long float32 sum
            (:class:`~htam_core.source.analysis.facts.LongSum`).
    """

    make_inputs: Callable[[int, int, float], list[Any]]
    run_reference: Callable[[list[Any]], list[Any]]
    run_candidate: Callable[[list[Any]], list[Any]]
    output_indices: set[int] = field(default_factory=set)
    input_sets: int = 1
    run_reference64: Callable[[list[Any]], list[Any]] | None = None
    long_sum_outputs: tuple[int, ...] = ()


def poison_(t: Any) -> Any:
    """Fill tensor ``t`` in place with NaN (floating) or its dtype's maximum (integers, bool: True).

    *Rationale* (KernelBench's reward-hack lessons): an output buffer left unwritten must fail the check,
    which stale memory that already holds the answer would otherwise pass.
    """
    import torch  # lazily: start-up speed of the callers that only build harnesses

    if t.dtype.is_floating_point or t.dtype.is_complex:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)
    return t


def as_outputs(value: Any) -> list[Any]:
    """Normalize a return value to a list of outputs (tensor -> ``[t]``, tuple/list -> list)."""
    if isinstance(value, tuple | list):
        return list(value)
    return [value]
