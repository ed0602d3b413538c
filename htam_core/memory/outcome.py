"""The one outcome rule: what a measured (or failed, or unmeasured) step counts as in the memory.

Both the auto-optimize loop (:mod:`htam_core.optimize.loop`) and the editor (a code action applied and then
re-profiled, :mod:`htam_core.editor.record`) turn their result into an :class:`~htam_core.memory.Outcome`
through :func:`outcome_of`, so that a win in the editor and a win in the loop mean the same thing.

The rule, in order:

* the step failed (did not compile, crashed, timed out): ``failed``, no speedup;
* the result did not match the reference: ``incorrect``, no speedup (a wrong kernel's time means nothing);
* a speedup was measured (``old_ms / new_ms`` on a GPU): the win rule of :func:`htam_core.measure.stats.
  classify_gain`: ``win`` only above ``1 + spread``, ``loss`` below its inverse, else ``neutral`` (inside the
  measured noise), where the spread is the measured one of the comparison and never less than
  :data:`htam_core.measure.stats.MIN_SPREAD` (2 %);
* nothing was measured (no GPU, a static profile): ``neutral`` with ``measured=False``: a trial, not evidence.
"""

from __future__ import annotations

import math

from htam_core.measure.stats import MIN_SPREAD, classify_gain
from htam_core.memory.records import Outcome

__all__ = ["MIN_SPREAD", "outcome_of", "status_of"]


def status_of(speedup: float | None, *, spread: float | None = None, failed: bool = False,
              incorrect: bool = False) -> str:
    """The outcome status (``win``, ``loss``, ``neutral``, ``incorrect``, ``failed``) of one step.

    Args:
        speedup: ``old_ms / new_ms`` when measured on a GPU, else ``None``.
        spread: the measured relative spread of ``speedup`` (0.02 = 2 %), or ``None`` for the floor.
        failed: the step did not compile or run.
        incorrect: the result did not match the reference.
    """
    if failed:
        return "failed"
    if incorrect:
        return "incorrect"
    return classify_gain(speedup, spread)


def outcome_of(speedup: float | None, *, spread: float | None = None, failed: bool = False,
               incorrect: bool = False, note: str = "") -> Outcome:
    """The :class:`Outcome` of one step under the rule of this module.

    Args:
        speedup: ``old_ms / new_ms`` measured on a GPU (finite, > 0), or ``None`` when not measured; it is
            dropped for failed and incorrect steps.
        spread: the measured relative spread of ``speedup``, stored with the outcome (``None``: not measured
            interleaved; the rule then uses the floor).
        failed, incorrect: see :func:`status_of`.
        note: why (shown to the user, stored with the record; cut to 300 characters).

    Raises:
        ValueError: ``speedup`` is not a finite positive number.
    """
    if speedup is not None and not (math.isfinite(speedup) and speedup > 0):
        raise ValueError(f"speedup must be a finite positive number or None, got {speedup!r}")
    status = status_of(speedup, spread=spread, failed=failed, incorrect=incorrect)
    sp = speedup if status in ("win", "loss", "neutral") else None
    return Outcome(sp, status not in ("failed", "incorrect"), sp is not None, status, note[:300],
                   spread=spread if sp is not None else None)
