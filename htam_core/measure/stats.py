"""Noise-aware statistics of timings: spread, the win rule, launch-bound input sets, the headline geomean.

Pure functions, no GPU. The rules:

* **Spread of one timer run**: the relative inter-quartile range of its per-trial samples,
  ``(Q3 - Q1) / median`` (a robust dispersion; a few slow trials do not move it).
* **Comparison of two kernels** (parent ``A``, candidate ``B``) timed *interleaved* in one worker (rounds
  ``A B A B ...``): every round gives the ratio ``median(A) / median(B)``; the speedup is the median of the
  round ratios and its spread is the half-width of a 95 % percentile-bootstrap confidence interval of that
  median, relative to it (Efron's percentile bootstrap, seeded, so the result is reproducible), but never
  under :data:`MIN_SPREAD` (2 %: below that, clocks and placement dominate on one GPU).
* **Win rule**: a step is a ``win`` only when its gain exceeds its spread (``speedup > 1 + spread``), a
  ``loss`` when ``speedup < 1 / (1 + spread)``, otherwise ``neutral`` (inside the noise).
* **Launch-bound**: an input set whose kernel time is under :data:`LAUNCH_BOUND_MS` (10 µs). In a real
  pipeline without CUDA graphs such a kernel costs its launch, not its device time, so such sets are left
  out of the headline geomean (unless every set is launch-bound; the note says which).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["LAUNCH_BOUND_MS", "MIN_SPREAD", "BOOTSTRAP_RESAMPLES", "SPREAD_RULE", "relative_iqr", "quartiles",
           "launch_bound", "bootstrap_median_ci", "ratio_spread", "classify_gain", "Headline",
           "headline_geomean", "geomean", "spread_pct"]

#: Kernel time under which an input set is launch-bound, milliseconds (10 µs).
LAUNCH_BOUND_MS = 0.010
#: Smallest spread a comparison is given, as a fraction (2 %). On the H200 a kernel timed interleaved against
#: itself read 1.011x with a bootstrap spread under 1 % (bench/results/gputests-h200-2026-12-01.log), so the
#: bootstrap interval alone misses the slow drift of clocks and placement; 2 % is the floor that keeps an A/A
#: comparison neutral.
MIN_SPREAD = 0.02
#: Bootstrap resamples for the confidence interval of the median ratio.
BOOTSTRAP_RESAMPLES = 2000
#: The rule in words, for reports.
SPREAD_RULE = ("a step is a win only when its speedup exceeds 1 + spread, where the spread is the half-width of "
               "the 95% bootstrap confidence interval of the median parent/candidate time ratio over interleaved "
               f"rounds (at least {MIN_SPREAD:.0%}); a gain inside the spread is neutral")


def quartiles(xs: Sequence[float]) -> tuple[float, float, float]:
    """``(Q1, median, Q3)`` of ``xs`` (linear interpolation, :func:`statistics.quantiles` "inclusive").

    Raises:
        ValueError: ``xs`` is empty.
    """
    if not xs:
        raise ValueError("quartiles of no samples")
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, q2, q3


def relative_iqr(xs: Sequence[float]) -> float:
    """``(Q3 - Q1) / median`` of the samples ``xs`` (a fraction; 0.01 = 1 %).

    Raises:
        ValueError: ``xs`` is empty or its median is not positive.
    """
    q1, med, q3 = quartiles(xs)
    if med <= 0:
        raise ValueError(f"relative IQR needs a positive median, got {med!r}")
    return (q3 - q1) / med


def spread_pct(a: float, b: float) -> float:
    """Relative difference of two medians in percent: ``|a - b| / min(a, b) * 100`` (run-to-run spread)."""
    return abs(a - b) / max(min(a, b), 1e-12) * 100.0


def launch_bound(kernel_ms: float | None) -> bool:
    """``True`` when a kernel time (ms) is under :data:`LAUNCH_BOUND_MS`; ``False`` for ``None``."""
    return kernel_ms is not None and kernel_ms < LAUNCH_BOUND_MS


def bootstrap_median_ci(xs: Sequence[float], *, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the median of ``xs`` (Efron & Tibshirani 1993, ch. 13).

    Args:
        xs: samples (at least one). level: coverage (0.95). resamples: bootstrap draws. seed: RNG seed.

    Returns:
        ``(low, high)``.

    Raises:
        ValueError: ``xs`` is empty or ``level`` is not in (0, 1).
    """
    if not xs:
        raise ValueError("bootstrap of no samples")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if len(xs) == 1:
        return xs[0], xs[0]
    rng = random.Random(seed)
    n = len(xs)
    meds = sorted(statistics.median(rng.choices(xs, k=n)) for _ in range(resamples))
    lo_i = int(math.floor((1 - level) / 2 * (resamples - 1)))
    hi_i = int(math.ceil((1 + level) / 2 * (resamples - 1)))
    return meds[lo_i], meds[hi_i]


def ratio_spread(ratios: Sequence[float], *, seed: int = 0) -> tuple[float, float]:
    """``(median ratio, spread)`` of per-round ratios: the spread is the CI half-width of the median over the
    median, at least :data:`MIN_SPREAD` (see the module docstring).

    Raises:
        ValueError: no ratios, or a ratio that is not a finite positive number.
    """
    if not ratios:
        raise ValueError("no ratios")
    if any(not (math.isfinite(r) and r > 0) for r in ratios):
        raise ValueError(f"ratios must be finite and positive, got {list(ratios)!r}")
    med = statistics.median(ratios)
    lo, hi = bootstrap_median_ci(ratios, seed=seed)
    return med, max(MIN_SPREAD, (hi - lo) / 2 / med)


def classify_gain(speedup: float | None, spread: float | None) -> str:
    """``"win"``, ``"loss"`` or ``"neutral"`` by the win rule (see module docstring).

    Args:
        speedup: parent time / candidate time, or ``None`` (not measured: ``"neutral"``).
        spread: the comparison's relative spread; ``None`` is taken as :data:`MIN_SPREAD`.
    """
    if speedup is None:
        return "neutral"
    s = max(MIN_SPREAD, spread if spread is not None else MIN_SPREAD)
    if speedup > 1 + s:
        return "win"
    if speedup < 1 / (1 + s):
        return "loss"
    return "neutral"


def geomean(xs: Sequence[float]) -> float | None:
    """Geometric mean of positive numbers, or ``None`` for none."""
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


@dataclass
class Headline:
    """A headline geomean speedup over input sets.

    Attributes:
        speedup: the geomean of the counted sets' speedups, or ``None`` without a pair.
        counted: indices of the sets in the geomean.
        launch_bound: indices of the sets left out as launch-bound.
        note: what was left out and why (empty when nothing was).
    """

    speedup: float | None
    counted: list[int] = field(default_factory=list)
    launch_bound: list[int] = field(default_factory=list)
    note: str = ""


def headline_geomean(parent_ms: Sequence[float | None], child_ms: Sequence[float | None]) -> Headline:
    """Geomean of ``parent_ms[i] / child_ms[i]`` over the input sets that are not launch-bound.

    A set is launch-bound when both times are under :data:`LAUNCH_BOUND_MS` (its kernel time stays under
    10 µs either way). When every set is launch-bound, all are counted (``counted`` lists them and
    ``launch_bound`` still flags them) and the note says so.

    Args:
        parent_ms, child_ms: median times per input set, ms (``None`` = not measured; such pairs are skipped).
    """
    pairs = [(i, p, c) for i, (p, c) in enumerate(zip(parent_ms, child_ms, strict=False))
             if p and c and p > 0 and c > 0]
    if not pairs:
        return Headline(None)
    lb = [i for i, p, c in pairs if launch_bound(p) and launch_bound(c)]
    kept = [(i, p, c) for i, p, c in pairs if i not in lb]
    note = ""
    if lb and kept:
        note = (f"input set(s) {', '.join(str(i) for i in lb)} launch-bound (kernel time < "
                f"{LAUNCH_BOUND_MS * 1000:.0f} µs): left out of the headline geomean")
    elif lb:
        kept = pairs
        note = (f"every input set is launch-bound (kernel time < {LAUNCH_BOUND_MS * 1000:.0f} µs): the geomean "
                "covers them all, but in a pipeline without CUDA graphs the launch, not the kernel, sets the time")
    return Headline(geomean([p / c for _, p, c in kept]), [i for i, _, _ in kept], lb, note)
