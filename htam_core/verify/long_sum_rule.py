"""The check of an output that the start fills with a long float32 sum, against a float64 reference of the start.

Under the oracle rule the start is the reference. When the start sums many float32 terms in one running sum (a
float ``atomicAdd`` per element into one address, a sequential ``+=`` over a runtime bound:
:class:`~htam_core.source.analysis.facts.LongSum`), its result can be percents off the exact sum (the additions
stagnate once the sum dwarfs each term), and a candidate that sums in a tree is *more* accurate and still "differs"
from the start. For such an output the candidate is compared with the start's **float64 twin** (the same kernel
with its floats promoted to double, run on the same input values; its outputs cast back to float): an element is
correct when the candidate's error against that reference is within the reordered-sum tolerance
(:data:`~htam_core.verify.correctness.REORDERED_SUM_FP32_TOL`, atol = rtol) **or** no larger than the start's own
error against it (the larger over the start's runs on those inputs: a start that sums with atomics rounds
differently from run to run). A candidate farther from the float64 reference than both is refused.

An output counts as long when the worst-case rounding of its sum, ``terms * u`` (``u = 2**-24``), reaches the
reordered-sum tolerance (:func:`is_long`), or when its term count is unknown.

Idea source: Higham, "Accuracy and Stability of Numerical Algorithms", ch. 4 (the error bound of recursive
summation and its stagnation); checking against a higher-precision evaluation of the same algorithm is the usual
way to measure a float32 kernel's accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: What the verdict calls the reference of a long-sum output.
FLOAT64_REFERENCE = "float64 reference of the start"
#: The unit roundoff of float32.
FP32_UNIT_ROUNDOFF = 2.0 ** -24


def is_long(terms: int | None, tol: float) -> bool:
    """Whether a float32 sum of ``terms`` terms is long enough to be checked against the float64 reference: its
    worst-case relative rounding ``terms * 2**-24`` reaches ``tol`` (the reordered-sum tolerance,
    :data:`~htam_core.verify.correctness.REORDERED_SUM_FP32_TOL`), or ``terms`` is unknown (``None``)."""
    return terms is None or terms * FP32_UNIT_ROUNDOFF >= tol


@dataclass(frozen=True)
class LongSumVerdict:
    """The verdict of one long-sum output against the float64 reference.

    Attributes:
        ok: every element is within the tolerance of the reference or no farther from it than the start.
        cand_err: the candidate's largest absolute error against the reference (over finite elements).
        start_err: the start's largest absolute error against it (the worse of its runs).
        refused: elements farther from the reference than both the tolerance and the start.
        message: one line for the verdict, naming the reference used.
    """

    ok: bool
    cand_err: float
    start_err: float
    refused: int
    message: str


def judge_long_sum(cand: Any, starts: Sequence[Any], ref64: Any, *, tol: float, index: int = 0) -> LongSumVerdict:
    """Judge one output (tensors of one shape) flagged as a long float32 sum.

    Args:
        cand: the candidate's output.
        starts: the start's outputs on the same inputs, one per run (at least one).
        ref64: the float64 twin's output (float64, or already cast back to float32: it is cast to float32 and
            compared in float64, as the reference of a float32 output).
        tol: atol = rtol of the tolerance (:data:`~htam_core.verify.correctness.REORDERED_SUM_FP32_TOL`).
        index: the output's position, for the message.

    Returns:
        A :class:`LongSumVerdict`; a NaN/Inf candidate element where the reference is finite is refused, and where
        the reference is not finite only the same NaN/Inf passes (a twin that overflowed or left an element
        unwritten accepts nothing).

    Raises:
        ValueError: no start output, or the shapes differ.
    """
    import torch

    if not starts:
        raise ValueError("judge_long_sum needs at least one output of the start")
    r = torch.as_tensor(ref64).detach().to(torch.float32).to(torch.float64)
    c = torch.as_tensor(cand).detach().to(device=r.device, dtype=torch.float64)
    ss = [torch.as_tensor(s).detach().to(device=r.device, dtype=torch.float64) for s in starts]
    if any(t.shape != r.shape for t in (c, *ss)):
        raise ValueError(f"output {index}: shapes differ from the float64 reference's {tuple(r.shape)}")
    fin = torch.isfinite(r)
    c_err = torch.where(torch.isfinite(c), (c - r).abs(), torch.full_like(c, float("inf")))
    s_err = torch.stack([(s - r).abs() for s in ss]).amax(0)
    good = (c_err <= tol + tol * r.abs()) | (c_err <= s_err)
    # where the twin is not finite (it overflowed, or left an element unwritten) only the same value passes
    same = (c == r) | (torch.isnan(c) & torch.isnan(r))
    bad = (fin & ~good) | (~fin & ~same)
    n_bad = int(bad.sum())
    ce, se = _max(c_err[fin]), _max(s_err[fin])
    text = (f"output {index}: checked against the {FLOAT64_REFERENCE} (a long float32 sum): max error of the "
            f"candidate {ce:.3g}, of the start {se:.3g}, tolerance atol=rtol={tol:g}")
    if n_bad:
        text += f"; {n_bad} of {r.numel()} values are farther from it than both the tolerance and the start"
    return LongSumVerdict(n_bad == 0, ce, se, n_bad, text)


def _max(t: Any) -> float:
    return float(t.max()) if t.numel() else 0.0
