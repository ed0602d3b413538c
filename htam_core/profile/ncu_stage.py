"""The second stage of a two-stage GPU profile: Nsight Compute counters added to a timed profile.

The editor shows the timer's profile (``profile_on_gpu(..., use_ncu=False)``: compile, the measure timer with its
CUPTI cross-check, static resources) at once, then runs this stage in the background: the harness under ncu in
the GPU worker, its SOL, achieved occupancy and rules added to a copy of the first profile, the bottleneck
re-classified from them. The time stays the timer's. A ``.cu`` program with ``main()`` is already timed by ncu,
so it has no second stage.
"""

from __future__ import annotations

import copy
from typing import Any

from htam_core.harness.base import Harness
from htam_core.measure.gpu import _apply_ncu, _call
from htam_core.measure.ncu import find_ncu
from htam_core.types.profile import Profile

__all__ = ["counters_follow", "add_ncu_counters", "FOLLOW_NOTE"]

#: The note a first-stage profile carries while its counters are being collected.
FOLLOW_NOTE = "ncu counters follow in the background"


def counters_follow(p: Profile, harness: Harness | None) -> bool:
    """Whether :func:`add_ncu_counters` can add to ``p``: a GPU profile timed through ``harness`` (not a
    ``.cu`` program, which ncu already times), without counters, with ``ncu`` on PATH."""
    return (p.mode == "gpu" and harness is not None and harness.kind != "cu-main" and not p.extra.get("ncu")
            and find_ncu() is not None)


def add_ncu_counters(p: Profile, harness: Harness, gpu_index: int = 0, *, kernel: Any = None,
                     timeout_s: float = 600.0, target: str = "sm_90") -> Profile:
    """A copy of the timed profile ``p`` with the Nsight Compute counters of ``harness`` and the bottleneck
    re-classified from them.

    Args:
        p: the first-stage profile; harness: the harness it was timed with; gpu_index: the GPU (its worker);
        kernel: the source-model kernel (features for the classifier), or ``None``; timeout_s: limit of the ncu
        run, seconds; target: the static target the classifier uses.

    Returns:
        The new profile (``p`` is unchanged). An ncu failure is a warning of the new profile, not an error.
    """
    from htam_core.profile.classify import classify

    q = copy.deepcopy(p)
    q.warnings = [w for w in q.warnings if w != FOLLOW_NOTE]
    r = _call("htam_core.measure.ncu:ncu_harness_target", {"harness": harness.to_json()}, gpu_index, timeout_s)
    if r.ok:
        _apply_ncu(q, r.value)
    else:
        q.warnings.append(f"ncu counters not collected: {r.error.message if r.error else 'unknown'}")
    q.bottleneck = classify(q, kernel.features if kernel is not None else None, target=target)
    return q
