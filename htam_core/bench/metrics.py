"""Benchmark aggregates: geomean speedup, KernelBench's fast_p, trials-to-target, medians, roofline.

Pure functions over plain numbers (``None`` = not measured), unit-tested on synthetic records.

Definitions:

* **fast_p** (KernelBench, arXiv:2502.10517 and upstream ``src/score.py`` at 423217d): the fraction of *all*
  problems whose solution is correct **and** faster than the eager reference by more than ``p``
  (``speedup > p``). fast_0 is therefore the fraction correct.
* **geomean speedup** (as KernelBench reports it): over the correct solutions only.
* **trials to 90 %** (our definition): the number of evaluated candidates after which a policy's
  best speedup so far first reaches 90 % of the best speedup that exhaustive search found on the same
  kernel; 0 when the starting kernel already does; ``None`` (not reached) when it never does.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

#: The p values KernelBench reports.
FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)


def geomean(values: Iterable[float | None]) -> float | None:
    """Geometric mean of the positive, measured values; ``None`` when there are none."""
    xs = [float(v) for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def fast_p(records: Sequence[tuple[bool | None, float | None]], p: float) -> float | None:
    """KernelBench's fast_p over ``records`` of ``(correct, speedup over eager)``.

    Args:
        records: one per problem; ``correct`` ``None`` or ``speedup`` ``None`` count as not fast.
        p: the speedup threshold (strictly greater than).

    Returns:
        The fraction in [0, 1], or ``None`` when ``records`` is empty or nothing was measured at all.
    """
    if not records or all(c is None for c, _ in records):
        return None
    n = sum(1 for c, s in records if c is True and s is not None and s > p)
    return n / len(records)


def correct_rate(records: Sequence[tuple[bool | None, float | None]]) -> float | None:
    """Fraction of problems verified correct, or ``None`` when none was verified at all."""
    if not records or all(c is None for c, _ in records):
        return None
    return sum(1 for c, _ in records if c is True) / len(records)


def geomean_correct(records: Sequence[tuple[bool | None, float | None]]) -> float | None:
    """KernelBench's geomean speedup over eager, over the correct problems only."""
    return geomean(s for c, s in records if c is True)


def best_so_far(speedups: Sequence[float | None]) -> list[float]:
    """Running maximum of per-trial speedups over the start (start counts as 1.0; ``None`` = no gain)."""
    out, best = [], 1.0
    for s in speedups:
        if s is not None and math.isfinite(s):
            best = max(best, s)
        out.append(best)
    return out


def trials_to_fraction(speedups: Sequence[float | None], target_best: float | None,
                       fraction: float = 0.9) -> int | None:
    """Trials needed until the best speedup so far reaches ``fraction * target_best``.

    Args:
        speedups: per evaluated candidate (in order), its speedup over the start kernel when it was correct
            and measured, else ``None``.
        target_best: the best speedup exhaustive search reached on this kernel (``None``: not measured).
        fraction: 0.9 for "trials to 90 %".

    Returns:
        0 when the start already reaches the target, the 1-based trial index, or ``None`` when the target
        is unknown or never reached.
    """
    if target_best is None or not math.isfinite(target_best):
        return None
    goal = fraction * target_best
    if 1.0 >= goal:
        return 0
    for i, b in enumerate(best_so_far(speedups), 1):
        if b >= goal:
            return i
    return None


def median_trials(values: Sequence[int | None], measured: Sequence[bool] | None = None) -> float | None:
    """Median of trials-to-target where "not reached" counts as infinitely many (a censored value).

    Args:
        values: per kernel, the trials or ``None`` (not reached).
        measured: per kernel, whether the target was known; unknown kernels are left out. Default: all known.

    Returns:
        The median, ``math.inf`` when more than half never reached it, or ``None`` when nothing is known.
    """
    keep = [v for i, v in enumerate(values) if measured is None or measured[i]]
    if not keep:
        return None
    xs = sorted(math.inf if v is None else float(v) for v in keep)
    return statistics.median(xs)


def roofline_time_s(bytes_moved: float | None, flops: float | None, dram_bytes_per_s: float | None,
                    flops_per_s: float | None) -> float | None:
    """The least time a kernel can take: ``max(bytes / peak bandwidth, flops / peak FLOP/s)``, seconds."""
    parts = []
    if bytes_moved and dram_bytes_per_s:
        parts.append(bytes_moved / dram_bytes_per_s)
    if flops and flops_per_s:
        parts.append(flops / flops_per_s)
    return max(parts) if parts else None


def roofline_fraction(time_ms: float | None, bound_s: float | None) -> float | None:
    """Fraction of roofline reached: ``bound / measured`` (1.0 = at the roofline), or ``None``."""
    if time_ms is None or bound_s is None or time_ms <= 0:
        return None
    return bound_s / (time_ms / 1000.0)


def spread_pct(a: float | None, b: float | None) -> float | None:
    """Relative difference of two times in percent (``|a - b| / min``), for run-to-run repeatability."""
    if a is None or b is None or min(a, b) <= 0:
        return None
    return abs(a - b) / min(a, b) * 100.0


#: Resamples and seed of :func:`bootstrap_mean_ci` (fixed, so a report reads the same on every machine).
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


def bootstrap_mean_ci(values: Sequence[float], level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                      seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval of the mean of ``values`` (Efron and Tibshirani, *An
    Introduction to the Bootstrap*, 1993, ch. 13).

    The values are resampled with replacement ``resamples`` times by a ``numpy`` generator seeded with
    ``seed``, and the interval is the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the resampled
    means. For a replay the values are per-kernel figures (trials-to-90 %), so the interval is over kernels:
    it says how much the mean would move on another draw of kernels like these, not the run-to-run noise of
    one kernel (the table has one measurement per candidate).

    Args:
        values: the sample, in any unit (one value per kernel for a replay); not empty.
        level: the confidence level, in (0, 1).
        resamples: number of bootstrap resamples (at least 1).
        seed: the generator's seed.

    Returns:
        ``(low, high)`` in the unit of ``values``, or ``None`` for an empty sample. A sample of identical
        values gives ``(v, v)``.

    Raises:
        ValueError: ``level`` not in (0, 1) or ``resamples`` < 1.
    """
    import numpy as np

    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), not {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    xs = np.asarray(list(values), dtype=np.float64)
    if xs.size == 0:
        return None
    rng = np.random.default_rng(seed)
    means = xs[rng.integers(0, xs.size, size=(resamples, xs.size))].mean(axis=1)
    lo, hi = np.quantile(means, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(lo), float(hi)


def paired_counts(first: dict[str, float], second: dict[str, float], tol: float = 1e-9) -> dict[str, Any]:
    """Paired per-item comparison of two policies where a smaller value is better (trials-to-90 %).

    Args:
        first, second: item (kernel id) -> value (trials; a mean over seeds for a seeded policy). Only the
            items both hold are compared.
        tol: two values closer than this are a tie (means over seeds are floats).

    Returns:
        ``{"kernels", "better", "worse", "tied"}`` (``better``: ``first`` needs fewer trials than ``second``),
        ``"mean_difference"`` (mean of ``first - second`` over the items, ``None`` when none),
        ``"mean_difference_ci"`` (:func:`bootstrap_mean_ci` of the per-item differences, as a list) and
        ``"sign_test_p"`` (:func:`sign_test_p` of better against worse; ties left out).
    """
    common = sorted(set(first) & set(second))
    diffs = [first[k] - second[k] for k in common]
    ci = bootstrap_mean_ci(diffs)
    better = sum(1 for d in diffs if d < -tol)
    worse = sum(1 for d in diffs if d > tol)
    return {"kernels": len(common), "better": better, "worse": worse, "tied": len(common) - better - worse,
            "mean_difference": statistics.mean(diffs) if diffs else None,
            "mean_difference_ci": list(ci) if ci else None, "sign_test_p": sign_test_p(better, worse)}


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test: the probability, under a fair coin, of a split at least as uneven as
    ``wins`` against ``losses`` (ties are left out before; Conover, *Practical Nonparametric Statistics*,
    3rd ed., 1999, §3.4). ``1.0`` when both are 0.

    Raises:
        ValueError: a negative count.
    """
    if wins < 0 or losses < 0:
        raise ValueError("counts must not be negative")
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)
