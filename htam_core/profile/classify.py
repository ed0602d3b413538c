"""Bottleneck classification: the HTAM *state* of a kernel (issue 3 part 6).

A profile maps to one primary class of :data:`htam_core.profile.result.BOTTLENECK_CLASSES` plus
secondary classes, each with evidence naming its metric or ncu rule. Measured counters win; with
no GPU only the static rules apply, and a kernel they cannot place is ``"unknown"`` with the
evidence ``"static: no counters"``. Nothing is guessed: every class names the numbers behind it.

Thresholds and where they come from:

* :data:`LAUNCH_OVERHEAD_US` = 5 us. A kernel launch costs a few microseconds of CPU/driver time
  (CUDA C++ Best Practices Guide, "Kernel launch overhead"; about 2-5 us on current GPUs), so a
  kernel whose median time is below it is dominated by launch overhead, not by its own work.
* :data:`SOL_HIGH_PCT` = 60 %. Nsight Compute's ``SOLBottleneck`` rule (SpeedOfLight section)
  reads compute or memory throughput above 60 % of peak as the unit that limits the kernel and
  "below 60.0% of peak typically indicate latency issues"; the higher of the two names the class.
* Without ncu, a measured profile whose harness gives its fewest bytes/FLOPs carries a roofline estimate
  of the SOL percentages (:func:`htam_core.profile.gpu.roofline_sol`, a lower bound of ncu's): the same
  rule reads it, and the evidence says it is an estimate.
* :data:`SOL_VERY_HIGH_PCT` = 80 %: the same rule's "the workload is utilizing greater than
  80.0% of the available compute or memory performance"; only reported as evidence.
* :data:`LOW_OCCUPANCY` = 0.25. Below a quarter of the warp slots an SM has too few warps to hide
  memory latency (Nsight Compute ``Occupancy``/``AchievedOccupancy`` guidance; CUDA C++ Best
  Practices Guide, "Occupancy"). Achieved occupancy is used when measured, else theoretical.
* spills: any spill store or load (ptxas) is local-memory traffic the kernel did not ask for:
  ``register-spill``.
* static roofline estimate: a kernel with no loop, no dot product and no atomics touches each
  element it loads a constant number of times, so its arithmetic intensity is O(1) FLOP/byte,
  far below the ridge point of every supported target (:data:`RIDGE_FLOP_PER_BYTE`, peak fp32
  FLOP/s over peak DRAM bytes/s from NVIDIA's datasheets). It is classed ``memory-bound`` with
  evidence marked as a static estimate.
"""

from __future__ import annotations

from typing import Any

from htam_core.profile.result import BOTTLENECK_CLASSES, Bottleneck, Profile

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
    if features is not None:
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
    fired: list[tuple[str, str]] = []
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
        fired.extend(static)

    rule_evidence = []
    for r in profile.ncu_rules or []:
        sp = r.get("estimated_speedup_pct")
        sp_txt = f" (est. speedup {sp}%)" if sp not in (None, "") else ""
        rule_evidence.append(f"ncu rule {r.get('rule')}: {r.get('message', '')}{sp_txt}".strip())

    if not fired:
        ev = ["static: no counters"] if not measured else ["no SOL counters and no static rule fired"]
        if profile.registers is None and not measured:
            ev.append("static: the kernel was not compiled")
        return Bottleneck("unknown", ev + rule_evidence, [])
    classes: list[str] = []
    for c, _ in fired:
        if c not in classes:
            classes.append(c)
    return Bottleneck(classes[0], [e for _, e in fired] + rule_evidence, classes[1:])


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
