"""Interleaved comparison of a parent kernel and a candidate in one worker: the speedup and its spread.

Timing the two kernels in separate processes, minutes apart, lets clock and thermal drift pass for a
speedup. :func:`compare_harnesses` (a worker target) prepares both harnesses in the same worker, captures
each launcher once (:class:`htam_core.measure.timer.LauncherTimer`), and then alternates rounds of trials,
``A B B A A B ...`` (the order flips every round, so a slow drift biases neither side). Every round gives the
ratio of the two medians; :func:`comparison_from_rounds` (pure) turns the rounds into per-set speedups, the
headline geomean without launch-bound sets, and its spread by the rule of :mod:`htam_core.measure.stats`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from htam_core.measure.stats import (
    SPREAD_RULE,
    classify_gain,
    geomean,
    headline_geomean,
    launch_bound,
    ratio_spread,
)

__all__ = ["SetComparison", "Comparison", "comparison_from_rounds", "compare_harnesses"]

#: Rounds of interleaved trials per input set.
ROUNDS = 12
#: Trials per side and round (fewer for long kernels, see :func:`compare_harnesses`).
TRIALS_PER_ROUND = 10


@dataclass
class SetComparison:
    """One input set: medians over every round (ms), speedup (median round ratio), spread, launch-bound flag."""

    parent_ms: float
    candidate_ms: float
    speedup: float
    spread: float
    launch_bound: bool


@dataclass
class Comparison:
    """Parent against candidate, interleaved.

    Attributes:
        speedup: headline speedup (parent / candidate): the median over rounds of the geomean of the counted
            sets' round ratios.
        spread: its relative spread (the win threshold is ``1 + spread``).
        status: ``win``, ``loss`` or ``neutral`` by :func:`htam_core.measure.stats.classify_gain`.
        sets: per input set.
        counted, launch_bound: set indices in the headline, and left out as launch-bound.
        note: what was left out; rule: the spread rule in words.
        methods: the timing method of the parent and of the candidate.
    """

    speedup: float
    spread: float
    status: str
    sets: list[SetComparison] = field(default_factory=list)
    counted: list[int] = field(default_factory=list)
    launch_bound: list[int] = field(default_factory=list)
    note: str = ""
    rule: str = SPREAD_RULE
    methods: list[str] = field(default_factory=list)

    @property
    def threshold(self) -> float:
        """The speedup a win must exceed: ``1 + spread``."""
        return 1.0 + self.spread

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Comparison:
        """Inverse of :meth:`to_json`. Raises KeyError/TypeError on malformed input."""
        sets = [SetComparison(**s) for s in d.get("sets", [])]
        return cls(float(d["speedup"]), float(d["spread"]), str(d["status"]), sets, list(d.get("counted", [])),
                   list(d.get("launch_bound", [])), str(d.get("note", "")), str(d.get("rule", SPREAD_RULE)),
                   list(d.get("methods", [])))


def comparison_from_rounds(parent: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]], *,
                           methods: Sequence[str] = ()) -> Comparison:
    """Build a :class:`Comparison` from per-round medians.

    Args:
        parent, candidate: ``[set][round]`` median times (ms) of the parent and the candidate; every set has
            the same number of rounds on both sides.
        methods: the timing methods, for the record.

    Raises:
        ValueError: no sets, mismatched shapes, or a time that is not positive.
    """
    if not parent or len(parent) != len(candidate):
        raise ValueError("parent and candidate need the same, non-zero number of input sets")
    rounds = len(parent[0])
    if rounds == 0 or any(len(a) != rounds or len(b) != rounds for a, b in zip(parent, candidate, strict=True)):
        raise ValueError("every input set needs the same, non-zero number of rounds on both sides")
    if any(x <= 0 for row in (*parent, *candidate) for x in row):
        raise ValueError("times must be positive")
    sets: list[SetComparison] = []
    ratios: list[list[float]] = []
    for a, b in zip(parent, candidate, strict=True):
        r = [x / y for x, y in zip(a, b, strict=True)]
        sp, spread = ratio_spread(r)
        pm, cm = statistics.median(a), statistics.median(b)
        sets.append(SetComparison(pm, cm, sp, spread, launch_bound(pm) and launch_bound(cm)))
        ratios.append(r)
    head = headline_geomean([s.parent_ms for s in sets], [s.candidate_ms for s in sets])
    per_round = [geomean([ratios[s][i] for s in head.counted]) or 1.0 for i in range(rounds)]
    speedup, spread = ratio_spread(per_round)
    return Comparison(speedup, spread, classify_gain(speedup, spread), sets, head.counted, head.launch_bound,
                      head.note, SPREAD_RULE, list(methods))


def compare_harnesses(parent: dict[str, Any], candidate: dict[str, Any], rounds: int = ROUNDS,
                      trials_per_round: int = TRIALS_PER_ROUND, max_total_s: float = 60.0) -> dict[str, Any]:
    """Worker target: time the parent's and the candidate's kernels interleaved on every input set.

    Args:
        parent, candidate: :meth:`htam_core.harness.base.Harness.to_json` of each (same input sets).
        rounds: rounds per set; trials_per_round: trials per side and round (reduced so that the whole
            comparison stays near ``max_total_s`` seconds, at least 3).

    Returns:
        :meth:`Comparison.to_json` plus ``"device"``.

    Raises:
        HarnessError: a harness cannot be prepared. RuntimeError: a kernel faulted.
    """
    import torch

    from htam_core.harness.base import Harness
    from htam_core.harness.runner import prepare
    from htam_core.measure.timer import LauncherTimer
    from htam_core.verify.correctness import BASE_SEED

    pa, pb = prepare(Harness.from_json(parent), "cuda"), prepare(Harness.from_json(candidate), "cuda")
    n_sets = min(pa.trial.input_sets, pb.trial.input_sets)
    a_rounds: list[list[float]] = []
    b_rounds: list[list[float]] = []
    methods: list[str] = []
    for s in range(n_sets):
        ia, ib = pa.trial.make_inputs(BASE_SEED, s, 1.0), pb.trial.make_inputs(BASE_SEED, s, 1.0)
        ta = LauncherTimer(pa.bind(ia), launcher_kind=pa.launcher_kind)
        tb = LauncherTimer(pb.bind(ib), launcher_kind=pb.launcher_kind)
        try:
            per_trial_ms = max(ta.per_call_ms, tb.per_call_ms) + 0.1
            budget_ms = max_total_s * 1000.0 / max(1, n_sets)
            k = max(3, min(trials_per_round, int(budget_ms / (2 * rounds * per_trial_ms))))
            ra, rb = [], []
            for r in range(rounds):
                first, second = (ta, tb) if r % 2 == 0 else (tb, ta)
                x, y = statistics.median(first.sample(k)), statistics.median(second.sample(k))
                a, b = (x, y) if r % 2 == 0 else (y, x)
                ra.append(max(a, 1e-6))
                rb.append(max(b, 1e-6))
            a_rounds.append(ra)
            b_rounds.append(rb)
            if not methods:
                methods = [ta.method, tb.method]
        finally:
            ta.close()
            tb.close()
        del ia, ib
    torch.cuda.synchronize()
    out = comparison_from_rounds(a_rounds, b_rounds, methods=methods).to_json()
    out["device"] = torch.cuda.get_device_name()
    return out
