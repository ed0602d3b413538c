"""Bottleneck classification: the HTAM *state* of a kernel.

A profile maps to one primary class of :data:`htam_core.types.profile.BOTTLENECK_CLASSES` plus
secondary classes, each with evidence naming its metric or ncu rule. Measured counters win; with
no GPU only the static rules apply, and a kernel they cannot place is ``"unknown"`` with the
evidence ``"static: no counters"``. Nothing is guessed: every class names the numbers behind it.

A launch that cannot run at all (``extra["launch"]["fits"] is False``: more threads, registers or shared
memory per block than the target allows, or more threads than the kernel's ``__launch_bounds__``) is
``cannot-launch``, alone: its spills and its zero occupancy describe no run, so no other rule is read.

Thresholds and where they come from:

* :data:`LAUNCH_OVERHEAD_US` = 5 us. A kernel launch costs a few microseconds of CPU/driver time
  (CUDA C++ Best Practices Guide, "Kernel launch overhead"; about 2-5 us on current GPUs), so a
  kernel whose median time is below it is dominated by launch overhead, not by its own work.
* :data:`SOL_HIGH_PCT` = 60 %. Nsight Compute's ``SOLBottleneck`` rule (SpeedOfLight section)
  reads compute or memory throughput above 60 % of peak as the unit that limits the kernel and
  "below 60.0% of peak typically indicate latency issues"; the higher of the two names the class.
* Without ncu, a measured profile whose harness gives its fewest bytes/FLOPs carries a roofline estimate
  of the SOL percentages (:func:`htam_core.measure.gpu.roofline_sol`, a lower bound of ncu's): the same
  rule reads it, and the evidence says it is an estimate.
* :data:`SOL_VERY_HIGH_PCT` = 80 %: the same rule's "the workload is utilizing greater than
  80.0% of the available compute or memory performance"; only reported as evidence.
* :data:`LOW_OCCUPANCY` = 0.25. Below a quarter of the warp slots an SM has too few warps to hide
  memory latency (Nsight Compute ``Occupancy``/``AchievedOccupancy`` guidance; CUDA C++ Best
  Practices Guide, "Occupancy"). Achieved occupancy is used when measured, else theoretical.
* spills: any spill store or load (ptxas) is local-memory traffic the kernel did not ask for:
  ``register-spill``.
* static roofline estimate: the static profile carries ``extra["static_roofline"]``
  (:func:`htam_core.profile.static_roofline.estimate_work`: FLOPs and issued bytes per thread or program,
  loops weighted by their trip counts from constants, constexprs, launch sites and harness sizes). When its
  arithmetic-intensity range lies below the ridge point of the target (:data:`RIDGE_FLOP_PER_BYTE`, peak
  fp32 FLOP/s over peak DRAM bytes/s from NVIDIA's datasheets) the kernel is ``memory-bound``, above it
  ``compute-bound``, each with evidence marked as a static estimate; a range across the ridge leaves the
  class ``unknown`` with evidence naming the unknown quantity (a loop's trip count, the dot tile sizes).
  Without the estimate (features only), a kernel with no loop, no dot product and no atomics touches each
  element it loads a constant number of times: O(1) FLOP/byte, classed ``memory-bound``.
"""

from __future__ import annotations

from typing import Any

from htam_core.types.profile import BOTTLENECK_CLASSES, Bottleneck, Profile

#: Median kernel time below which launch overhead dominates, microseconds.
LAUNCH_OVERHEAD_US = 5.0
#: Speed-of-light percentage at which a unit counts as the bottleneck (ncu SOLBottleneck).
SOL_HIGH_PCT = 60.0
#: Speed-of-light percentage that ncu calls very high.
SOL_VERY_HIGH_PCT = 80.0
#: Occupancy (0..1) under which latency cannot be hidden.
LOW_OCCUPANCY = 0.25
#: Ridge point of the fp32 roofline, FLOP per DRAM byte: peak non-tensor fp32 FLOP/s / peak DRAM
#: bandwidth. A100 SXM 19.5 TFLOP/s / 2.04 TB/s; RTX A6000-class 38.7 / 0.77; L40-class
#: 90.5 / 0.86; sm_90 uses the H200 (the project's device): 67 / 4.8 = 14 (H100 SXM: 67 / 3.35 = 20).
RIDGE_FLOP_PER_BYTE: dict[str, float] = {"sm_80": 9.6, "sm_86": 50.0, "sm_89": 105.0, "sm_90": 14.0}
#: Shared memory per SM on sm_90, bytes: the scale of the ``shared`` state feature.
SHARED_SCALE_BYTES = 228 * 1024


def _static_rules(p: Profile, features: Any, target: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if p.spill_bytes:
        found.append(("register-spill", f"static: ptxas reports {p.spill_bytes} bytes of spill stores+loads "
                                        f"per thread ({p.registers} registers)"))
    if p.theoretical_occupancy is not None and p.theoretical_occupancy < LOW_OCCUPANCY:
        lim = (p.extra.get("occupancy") or {}).get("limiter")
        found.append(("occupancy-limited", f"static: theoretical occupancy {p.theoretical_occupancy:.2f} < "
                                           f"{LOW_OCCUPANCY} (limited by {lim or 'unknown'}; block "
                                           f"{p.block_size}, {p.registers} registers, {p.shared_bytes} B shared)"))
    est = p.extra.get("static_roofline") if isinstance(p.extra, dict) else None
    if est:
        found.extend(_roofline_estimate(est, target, bool(getattr(features, "uses_dot", False))))
    elif features is not None:
        loops = list(getattr(features, "loops", []) or [])
        dot = bool(getattr(features, "uses_dot", False))
        atomics = list(getattr(features, "atomics", []) or [])
        loads = int(getattr(features, "loads", 0) or 0)
        if not loops and not dot and not atomics and loads > 0:
            ridge = RIDGE_FLOP_PER_BYTE.get(target.rstrip("af"), RIDGE_FLOP_PER_BYTE["sm_90"])
            found.append(("memory-bound", f"static estimate (roofline): no loop, no dot product, {loads} load(s): "
                                          f"O(1) FLOP/byte, far below the {target} fp32 ridge point "
                                          f"~{ridge:g} FLOP/byte"))
    return found


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _roofline_estimate(est: dict[str, Any], target: str, dot: bool) -> list[tuple[str, str]]:
    """Rules over :func:`htam_core.profile.static_roofline.estimate_work`'s result.

    A class is given when the whole intensity range lies on one side of the ridge; otherwise a note
    (class ``""``) names the unknown quantities the class depends on.
    """
    ridge = RIDGE_FLOP_PER_BYTE.get(target.rstrip("af"), RIDGE_FLOP_PER_BYTE["sm_90"])
    unknown = list(est.get("unknown") or [])
    rng = est.get("intensity_range")
    unit = est.get("unit", "per thread")
    tc = "; fp32 SIMT ridge: tensor cores raise it several times" if dot else ""
    if not rng:
        return [("", f"static estimate (roofline) not made: {'; '.join(unknown) or 'no work sites'}")]
    lo, hi = float(rng[0]), (float(rng[1]) if rng[1] is not None else float("inf"))
    if est.get("intensity") is not None:
        what = (f"{_fmt(est['flops'])} FLOP / {_fmt(est['bytes'])} B issued {unit} = "
                f"{_fmt(est['intensity'])} FLOP/byte")
    else:
        what = f"{_fmt(lo)} to {'unbounded' if hi == float('inf') else _fmt(hi)} FLOP/byte {unit} for any " \
               f"value of the unknown ({'; '.join(unknown)})"
    loops = [f"line {lp['line']}: {lp['trip_count']} ({lp['source']})" for lp in est.get("loops", [])
             if lp.get("trip_count") is not None]
    trips = f"; trip counts {', '.join(loops)}" if loops else ""
    if hi < ridge:
        return [("memory-bound", f"static estimate (roofline): {what}, below the {target} fp32 ridge point "
                                 f"~{ridge:g} FLOP/byte{trips}{tc}")]
    if lo >= ridge:
        return [("compute-bound", f"static estimate (roofline): {what}, at or above the {target} fp32 ridge "
                                  f"point ~{ridge:g} FLOP/byte{trips}{tc}")]
    return [("", f"static estimate (roofline): {what}; the {target} ridge point ~{ridge:g} FLOP/byte lies "
                 f"inside, so the class depends on {'; '.join(unknown) or 'the unknown quantities'}{tc}")]


def classify(profile: Profile, features: Any = None, *, target: str | None = None) -> Bottleneck:
    """Classify ``profile``'s bottleneck.

    Args:
        profile: a static or measured profile (its ``bottleneck`` is not read).
        features: the kernel's :class:`htam_core.source.model.KernelFeatures`, for the static
            roofline estimate; ``None`` skips it.
        target: compute capability for the ridge point; default from ``profile.device``.

    Returns:
        A :class:`Bottleneck` with the primary class, its evidence (every rule that fired, primary
        first) and the secondary classes.
    """
    tgt = target or (profile.device.split()[0] if profile.mode == "static" else "sm_90")
    launch = profile.extra.get("launch") if isinstance(profile.extra, dict) else None
    if isinstance(launch, dict) and launch.get("fits") is False and launch.get("reasons"):
        # a launch that cannot run says so first and alone: its spills and zero occupancy describe no run
        ev = [f"cannot launch on {launch.get('target') or tgt}: {r}" for r in launch["reasons"]]
        if profile.spill_bytes:
            ev.append(f"ptxas also reports {profile.spill_bytes} bytes of spill stores+loads per thread "
                      f"({profile.registers} registers); they matter once the launch fits")
        return Bottleneck("cannot-launch", ev, [])
    fired: list[tuple[str, str]] = []
    notes: list[str] = []
    measured = profile.mode == "gpu"
    median_us = profile.time_ms.median * 1000.0 if profile.time_ms is not None else None

    if measured and median_us is not None and median_us < LAUNCH_OVERHEAD_US:
        fired.append(("launch-overhead-bound", f"median time {median_us:.2f} us < {LAUNCH_OVERHEAD_US:g} us "
                                               "(launch overhead dominates)"))
    if measured and profile.sol is not None:
        src = "roofline estimate from the harness bytes/FLOPs, no ncu" if str(
            profile.extra.get("sol_source", "")).startswith("roofline") else "ncu SpeedOfLight"
        mem = float(profile.sol.get("memory_pct") or 0.0)
        comp = float(profile.sol.get("compute_pct") or 0.0)
        occ = profile.achieved_occupancy if profile.achieved_occupancy is not None else profile.theoretical_occupancy
        occ_name = "achieved" if profile.achieved_occupancy is not None else "theoretical"
        if max(mem, comp) >= SOL_HIGH_PCT:
            unit = "memory" if mem >= comp else "compute"
            cls = "memory-bound" if unit == "memory" else "compute-bound"
            level = "very high" if max(mem, comp) >= SOL_VERY_HIGH_PCT else "high"
            fired.append((cls, f"SOL {unit} {max(mem, comp):.1f}% >= {SOL_HIGH_PCT:g}% of peak ({level}; "
                               f"compute {comp:.1f}%, memory {mem:.1f}%; {src}, SOLBottleneck rule)"))
            if profile.spill_bytes:
                fired.append(("register-spill", f"ptxas: {profile.spill_bytes} bytes spilled per thread"))
            if occ is not None and occ < LOW_OCCUPANCY:
                fired.append(("occupancy-limited", f"{occ_name} occupancy {occ:.2f} < {LOW_OCCUPANCY}"))
        else:
            if profile.spill_bytes:
                fired.append(("register-spill", f"ptxas: {profile.spill_bytes} bytes spilled per thread while "
                                                f"SOL is low"))
            if occ is not None and occ < LOW_OCCUPANCY:
                fired.append(("occupancy-limited", f"{occ_name} occupancy {occ:.2f} < {LOW_OCCUPANCY} while SOL "
                                                   "is low: too few warps to hide latency"))
            fired.append(("latency-bound", f"SOL compute {comp:.1f}% and memory {mem:.1f}% both < "
                                           f"{SOL_HIGH_PCT:g}% of peak ({src}; ncu SOLBottleneck rule: latency "
                                           "issues)"))
    else:
        static = _static_rules(profile, features, tgt)
        if measured:
            static = [(c, e + " (no ncu counters)") for c, e in static]
        notes = [e for c, e in static if not c]
        fired.extend((c, e) for c, e in static if c)

    rule_evidence = []
    for r in profile.ncu_rules or []:
        sp = r.get("estimated_speedup_pct")
        sp_txt = f" (est. speedup {sp}%)" if sp not in (None, "") else ""
        rule_evidence.append(f"ncu rule {r.get('rule')}: {r.get('message', '')}{sp_txt}".strip())

    if not fired:
        ev = ["static: no counters"] if not measured else ["no SOL counters and no static rule fired"]
        if profile.registers is None and not measured:
            ev.append("static: the kernel was not compiled")
        return Bottleneck("unknown", ev + notes + rule_evidence, [])
    classes: list[str] = []
    for c, _ in fired:
        if c not in classes:
            classes.append(c)
    return Bottleneck(classes[0], [e for _, e in fired] + notes + rule_evidence, classes[1:])


def state_vector(profile: Profile) -> dict[str, float]:
    """Normalized features of the profile for the HTAM ranker (transition attention).

    Keys, in a fixed order: ``class=<c>`` one-hot over :data:`BOTTLENECK_CLASSES` (primary class
    1.0, secondary classes 0.5); ``measured`` (1.0 for a GPU profile); ``sol_memory`` and
    ``sol_compute`` (percent / 100); ``theoretical_occupancy`` and ``achieved_occupancy`` (0..1);
    ``registers`` (per thread / 255); ``spill`` (1.0 when any bytes spill); ``shared`` (bytes per
    block / 228 KiB, capped at 1). Missing values are 0.0 (``measured`` tells them apart).
    """
    b = profile.bottleneck
    vec: dict[str, float] = {}
    for c in BOTTLENECK_CLASSES:
        vec[f"class={c}"] = 1.0 if b.cls == c else (0.5 if c in b.secondary else 0.0)
    sol = profile.sol or {}
    vec["measured"] = 1.0 if profile.mode == "gpu" else 0.0
    vec["sol_memory"] = float(sol.get("memory_pct") or 0.0) / 100.0
    vec["sol_compute"] = float(sol.get("compute_pct") or 0.0) / 100.0
    vec["theoretical_occupancy"] = float(profile.theoretical_occupancy or 0.0)
    vec["achieved_occupancy"] = float(profile.achieved_occupancy or 0.0)
    vec["registers"] = min(1.0, float(profile.registers or 0) / 255.0)
    vec["spill"] = 1.0 if (profile.spill_bytes or 0) > 0 else 0.0
    vec["shared"] = min(1.0, float(profile.shared_bytes or 0) / SHARED_SCALE_BYTES)
    return vec
