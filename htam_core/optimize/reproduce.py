"""No fake wins: the best kernel's speedup re-timed in a fresh process, and the kept steps against their spread.

A speedup counts only when a re-timing in a *fresh* worker process (not the one that timed the search, whose
caches, clocks and allocator state the search may have tuned itself to) reproduces it and it exceeds the
measured noise. After the search the loop times the start kernel and the best kernel interleaved in a new
worker (:meth:`htam_core.optimize.evaluate.Evaluator.compare` with ``fresh=True``); :func:`judge_reproduction`
(pure) compares that ratio with the speedup the search reported:

* ``reproduced``: the fresh ratio is a win by the spread rule of :mod:`htam_core.measure.stats`
  (``speedup > 1 + spread``) and is no more than :data:`TOLERANCE` (5 %) below the reported speedup. A fresh
  ratio *above* the reported one reproduces it too (the re-timing shows at least the claimed gain); the
  published figure stays the reported, smaller one, and the reason line gives both;
* ``not reproduced``: anything else on a GPU (more than 5 % below, inside the noise, or the re-timing failed),
  with the figures. Such a best is not reported as a win, ``--apply`` does not write it, and the memory records
  the steps that led to it as neutral (with the spread);
* ``not measured``: nothing to re-time (static mode without a GPU, no candidate beat the start, the start
  could not be timed, or the run was cancelled).

:func:`kept_beyond_spread` checks the other half of the rule on the step records: every kept step's measured
gain is larger than its measured spread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from htam_core.measure.compare import Comparison
    from htam_core.optimize.task import StepRecord

__all__ = ["TOLERANCE", "REPRODUCED", "NOT_REPRODUCED", "NOT_MEASURED", "Reproduction", "judge_reproduction",
           "not_measured", "kept_beyond_spread"]

#: Largest relative difference between the fresh re-timing and the reported speedup (5 %).
TOLERANCE = 0.05
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_MEASURED = "not measured"


@dataclass
class Reproduction:
    """The verdict of the fresh-process re-timing of the best kernel.

    Attributes:
        status: :data:`REPRODUCED`, :data:`NOT_REPRODUCED` or :data:`NOT_MEASURED`.
        reported: the speedup of the best over the start that the search reported, or ``None``.
        fresh: the speedup re-timed interleaved in a fresh worker, or ``None`` (not re-timed, or it failed).
        fresh_spread: the relative spread of ``fresh`` (its win threshold is ``1 + fresh_spread``).
        ratio: ``fresh / reported`` (1.0 means the same figure), or ``None``.
        tolerance: the largest accepted shortfall ``1 - ratio`` (a ratio above 1 is accepted: the fresh re-timing
            shows more than the reported gain, and the reported figure is the one published).
        kept_steps: how many steps were kept with a measured gain (the chain that led to the best and any other
            kept branch); 0 in static mode, where nothing is measured.
        followed_steps: how many steps the loop continued from (``StepRecord.accepted``): the kept ones on a
            GPU, the static ranking's chain without one.
        kept_beyond_spread: every kept step's gain exceeded its measured spread (``None``: no kept step with a
            measured speedup).
        reason: one line saying why, in words.
    """

    status: str
    reported: float | None = None
    fresh: float | None = None
    fresh_spread: float | None = None
    ratio: float | None = None
    tolerance: float = TOLERANCE
    kept_steps: int = 0
    kept_beyond_spread: bool | None = None
    reason: str = ""
    followed_steps: int = 0

    @property
    def reproduced(self) -> bool:
        """The best's speedup was reproduced in a fresh process."""
        return self.status == REPRODUCED

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Reproduction:
        """Inverse of :meth:`to_json`. Raises KeyError/TypeError on malformed input."""
        return cls(**{k: d[k] for k in ("status", "reported", "fresh", "fresh_spread", "ratio", "tolerance",
                                        "kept_steps", "kept_beyond_spread", "reason", "followed_steps")
                      if k in d})

    def line(self) -> str:
        """The report line: ``fresh-process re-timing: reproduced (1.48× vs 1.50× reported, ±2.1%)``."""
        if self.status == NOT_MEASURED or self.fresh is None:
            return f"fresh-process re-timing: {self.status} ({self.reason})"
        rep = f"{self.reported:.3f}×" if self.reported is not None else "no"
        return (f"fresh-process re-timing: {self.status}: {self.fresh:.3f}× ±{(self.fresh_spread or 0):.1%} against "
                f"{rep} reported (ratio {self.ratio:.3f}, at most {self.tolerance:.0%} below); {self.reason}")


def kept_beyond_spread(steps: Sequence[StepRecord]) -> tuple[int, bool | None]:
    """``(kept, ok)``: how many steps were kept with a measured speedup, and whether every one's gain is larger
    than its measured spread (``speedup > 1 + spread``). A kept step without a measured spread (its interleaved
    comparison failed) fails the check: its gain was never weighed against a measured noise. A step the loop
    followed without a measurement (static mode) is not kept: ``(0, None)`` when no step has a measured
    speedup."""
    kept = [s for s in steps if s.accepted and s.speedup is not None]
    if not kept:
        return 0, None
    return len(kept), all(s.spread is not None and s.speedup > 1.0 + s.spread for s in kept)


def _followed(steps: Sequence[StepRecord]) -> int:
    return sum(1 for s in steps if s.accepted)


def not_measured(reason: str, steps: Sequence[StepRecord] = (), reported: float | None = None) -> Reproduction:
    """A :data:`NOT_MEASURED` verdict with ``reason`` (and the kept-steps check of ``steps``)."""
    kept, ok = kept_beyond_spread(steps)
    return Reproduction(NOT_MEASURED, reported=reported, kept_steps=kept, kept_beyond_spread=ok, reason=reason,
                        followed_steps=_followed(steps))


def judge_reproduction(reported: float | None, comp: Comparison | None, why: str = "",
                       steps: Sequence[StepRecord] = (), tolerance: float = TOLERANCE) -> Reproduction:
    """Judge the fresh re-timing ``comp`` of the start against the best, given the ``reported`` speedup.

    Args:
        reported: the search's speedup of the best over the start (geomean over the counted input sets).
        comp: the interleaved comparison (parent = start, candidate = best) made in a fresh worker, or ``None``
            when it failed (``why`` says why).
        steps: the run's step records, for the kept-steps check.
        tolerance: largest accepted relative shortfall of ``comp.speedup`` below ``reported``.

    Returns:
        :data:`REPRODUCED` only when ``comp`` is a win by the spread rule and at least ``(1 - tolerance)`` times
        ``reported`` (a faster re-timing confirms the reported, smaller figure, which stays the published one);
        :data:`NOT_REPRODUCED` otherwise (also when the re-timing failed).

    The one-sided rule is the usual reading of a replication: the claim is "at least this fast", so a second,
    independent measurement that shows more supports it (the published figure is the smaller of the two).
    """
    kept, ok = kept_beyond_spread(steps)
    base = {"reported": reported, "tolerance": tolerance, "kept_steps": kept, "kept_beyond_spread": ok,
            "followed_steps": _followed(steps)}
    if comp is None:
        return Reproduction(NOT_REPRODUCED, **base, reason=f"the fresh re-timing gave no figure: {why or 'failed'}")
    ratio = comp.speedup / reported if reported else None
    within = ratio is not None and ratio >= 1.0 - tolerance
    win = comp.status == "win"
    if win and within and ratio is not None and ratio > 1.0 + tolerance:
        status, reason = REPRODUCED, (f"above the spread and faster than reported ({comp.speedup:.3f}× against "
                                      f"{reported:.3f}×): the reported, smaller figure is the published one")
    elif win and within:
        status, reason = REPRODUCED, "within the tolerance and above the spread"
    elif not win:
        status, reason = NOT_REPRODUCED, (f"inside the noise: {comp.speedup:.3f}× does not exceed the win "
                                          f"threshold {comp.threshold:.3f}×" if comp.status == "neutral" else
                                          f"the best is slower than the start when re-timed ({comp.speedup:.3f}×)")
    else:
        status, reason = NOT_REPRODUCED, f"more than {tolerance:.0%} below the reported speedup"
    return Reproduction(status, fresh=comp.speedup, fresh_spread=comp.spread, ratio=ratio, **base, reason=reason)
