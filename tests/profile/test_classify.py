"""Bottleneck classification rules and the HTAM state vector."""

from __future__ import annotations

import pytest

from htam_core.profile.classify import (
    LAUNCH_OVERHEAD_US,
    LOW_OCCUPANCY,
    SOL_HIGH_PCT,
    classify,
    state_vector,
)
from htam_core.source.model import KernelFeatures, Loop
from htam_core.types.profile import BOTTLENECK_CLASSES, Bottleneck, Profile, TimeStats


def gpu(median_ms=1.0, mem=None, comp=None, **kw) -> Profile:
    sol = None if mem is None else {"memory_pct": mem, "compute_pct": comp}
    return Profile(kernel="k", mode="gpu", device="NVIDIA H200", time_ms=TimeStats(median_ms, median_ms, median_ms),
                   sol=sol, **kw)


def static(**kw) -> Profile:
    return Profile(kernel="k", mode="static", device="sm_90 (static)", **kw)


def test_memory_and_compute_bound_from_sol():
    b = classify(gpu(mem=85.0, comp=20.0, registers=32, theoretical_occupancy=1.0))
    assert b.cls == "memory-bound" and "SOL memory 85.0%" in b.evidence[0] and "SOLBottleneck" in b.evidence[0]
    b = classify(gpu(mem=30.0, comp=SOL_HIGH_PCT, registers=32))
    assert b.cls == "compute-bound"


def test_latency_and_occupancy_when_sol_low():
    b = classify(gpu(mem=20.0, comp=10.0, achieved_occupancy=0.5))
    assert b.cls == "latency-bound" and not b.secondary
    b = classify(gpu(mem=20.0, comp=10.0, achieved_occupancy=LOW_OCCUPANCY - 0.01, theoretical_occupancy=1.0))
    assert b.cls == "occupancy-limited" and b.secondary == ["latency-bound"]
    assert "achieved occupancy" in b.evidence[0]


def test_spills_and_launch_overhead():
    b = classify(gpu(mem=20.0, comp=10.0, spill_bytes=64))
    assert b.cls == "register-spill" and "latency-bound" in b.secondary
    b = classify(gpu(median_ms=(LAUNCH_OVERHEAD_US - 1) / 1000, mem=5.0, comp=3.0))
    assert b.cls == "launch-overhead-bound" and b.secondary == ["latency-bound"]
    # a memory-bound kernel with spills keeps memory-bound first
    b = classify(gpu(mem=90.0, comp=10.0, spill_bytes=8))
    assert b.cls == "memory-bound" and b.secondary == ["register-spill"]


def test_ncu_rules_become_evidence():
    p = gpu(mem=70.0, comp=10.0, ncu_rules=[{"rule": "SOLBottleneck", "message": "memory is busy",
                                               "estimated_speedup_pct": 12.5}])
    b = classify(p)
    assert any("ncu rule SOLBottleneck" in e and "12.5%" in e for e in b.evidence)


def test_static_rules():
    assert classify(static(registers=32, spill_bytes=0, theoretical_occupancy=1.0)).evidence == ["static: no counters"]
    b = classify(static(registers=255, spill_bytes=40, theoretical_occupancy=0.125, block_size=256,
                        extra={"occupancy": {"limiter": "registers"}}))
    assert b.cls == "register-spill" and b.secondary == ["occupancy-limited"]
    assert "limited by registers" in b.evidence[1]
    elementwise = KernelFeatures(loads=2, stores=1)
    b = classify(static(registers=16, spill_bytes=0, theoretical_occupancy=1.0), elementwise)
    assert b.cls == "memory-bound" and b.evidence[0].startswith("static estimate (roofline)")
    looped = KernelFeatures(loads=2, stores=1, loops=[Loop(line=3, kind="for")])
    assert classify(static(registers=16, theoretical_occupancy=1.0), looped).cls == "unknown"
    dot = KernelFeatures(loads=2, uses_dot=True)
    assert classify(static(registers=16, theoretical_occupancy=1.0), dot).cls == "unknown"


def test_measured_without_counters_uses_static_rules():
    b = classify(gpu(median_ms=1.0, spill_bytes=16))
    assert b.cls == "register-spill" and "no ncu counters" in b.evidence[0]


def test_state_vector():
    p = gpu(mem=80.0, comp=40.0, registers=128, spill_bytes=4, shared_bytes=114 * 1024,
            theoretical_occupancy=0.5, achieved_occupancy=0.4)
    p.bottleneck = Bottleneck("memory-bound", ["x"], ["register-spill"])
    v = state_vector(p)
    assert [k for k in v if k.startswith("class=")] == [f"class={c}" for c in BOTTLENECK_CLASSES]
    assert v["class=memory-bound"] == 1.0 and v["class=register-spill"] == 0.5 and v["class=unknown"] == 0.0
    assert v["sol_memory"] == pytest.approx(0.8) and v["sol_compute"] == pytest.approx(0.4)
    assert v["registers"] == pytest.approx(128 / 255) and v["spill"] == 1.0
    assert v["shared"] == pytest.approx(0.5) and v["measured"] == 1.0
    assert all(0.0 <= x <= 1.0 for x in v.values())
    s = state_vector(static())
    assert s["measured"] == 0.0 and s["sol_memory"] == 0.0 and s["class=unknown"] == 1.0


def test_roofline_sol_estimate_feeds_the_sol_rule_and_says_so():
    from htam_core.measure.gpu import ROOFLINE_SOL_SOURCE, roofline_sol
    from htam_core.measure.peaks import Peaks

    pk = Peaks(device="H200", uuid="0", dram_bytes_per_s=4.0e12, fp32_flops_per_s=50e12, bf16_flops_per_s=700e12,
               measured_at="2026-11-29")
    # 0.8 GB in 1 ms = 0.8 TB/s = 20% of a 4 TB/s peak; 1 GFLOP in 1 ms = 1 TFLOP/s = 2% of fp32
    sol = roofline_sol(1e-3, 0.8e9, 1e9, pk, "float32")
    assert sol == pytest.approx({"memory_pct": 20.0, "compute_pct": 2.0})
    assert roofline_sol(1e-3, None, None, pk) is None and roofline_sol(0.0, 1.0, None, pk) is None
    p = gpu(mem=sol["memory_pct"], comp=sol["compute_pct"])
    p.extra["sol_source"] = ROOFLINE_SOL_SOURCE
    b = classify(p)
    assert b.cls == "latency-bound" and "roofline estimate" in b.evidence[0]
    p = gpu(mem=90.0, comp=2.0)
    p.extra["sol_source"] = ROOFLINE_SOL_SOURCE
    b = classify(p)
    assert b.cls == "memory-bound" and "roofline estimate" in b.evidence[0] and "ncu SpeedOfLight" not in b.evidence[0]
