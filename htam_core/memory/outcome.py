"""The one outcome rule: what a measured (or failed, or unmeasured) step counts as in the memory.

Both the auto-optimize loop (:mod:`htam_core.optimize.loop`) and the editor (a code action applied and then
re-profiled, :mod:`htam_core.editor.record`) turn their result into an :class:`~htam_core.memory.Outcome`
through :func:`outcome_of`, so that a win in the editor and a win in the loop mean the same thing.

The rule, in order:

* the step failed (did not compile, crashed, timed out): ``failed``, no speedup;
* the result did not match the reference: ``incorrect``, no speedup (a wrong kernel's time means nothing);
* a speedup was measured (``old_ms / new_ms`` on a GPU): ``win`` at or above :data:`WIN_THRESHOLD`, ``loss`` at
  or below its inverse, else ``neutral`` (timing noise);
* nothing was measured (no GPU, a static profile): ``neutral`` with ``measured=False``: a trial, not evidence.

The 2% band is the repeatability of one kernel's median time on one GPU (about 1-2% in our measurements,
``bench/results``), so a smaller change is not told apart from noise.
"""

from __future__ import annotations

import math

from htam_core.memory.records import Outcome

__all__ = ["WIN_THRESHOLD", "outcome_of", "status_of"]

#: A measured speedup counts as a win at or above this, and as a loss at or below its inverse.
WIN_THRESHOLD = 1.02


def status_of(speedup: float | None, *, failed: bool = False, incorrect: bool = False) -> str:
    """The outcome status (``win``, ``loss``, ``neutral``, ``incorrect``, ``failed``) of one step.

    Args:
        speedup: ``old_ms / new_ms`` when measured on a GPU, else ``None``.
        failed: the step did not compile or run.
        incorrect: the result did not match the reference.
    """
    if failed:
        return "failed"
    if incorrect:
        return "incorrect"
    if speedup is None:
        return "neutral"
    if speedup >= WIN_THRESHOLD:
        return "win"
    if speedup <= 1 / WIN_THRESHOLD:
        return "loss"
    return "neutral"


def outcome_of(speedup: float | None, *, failed: bool = False, incorrect: bool = False,
               note: str = "") -> Outcome:
    """The :class:`Outcome` of one step under the rule of this module.

    Args:
        speedup: ``old_ms / new_ms`` measured on a GPU (finite, > 0), or ``None`` when not measured; it is
            dropped for failed and incorrect steps.
        failed, incorrect: see :func:`status_of`.
        note: why (shown to the user, stored with the record; cut to 300 characters).

    Raises:
        ValueError: ``speedup`` is not a finite positive number.
    """
    if speedup is not None and not (math.isfinite(speedup) and speedup > 0):
        raise ValueError(f"speedup must be a finite positive number or None, got {speedup!r}")
    status = status_of(speedup, failed=failed, incorrect=incorrect)
    sp = speedup if status in ("win", "loss", "neutral") else None
    return Outcome(sp, status not in ("failed", "incorrect"), sp is not None, status, note[:300])
