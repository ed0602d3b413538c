"""``htam profile``'s readable output shows CUPTI's device time next to the timer (no GPU: a built profile)."""

from __future__ import annotations

from htam_core.cli.profile import format_profile
from htam_core.profile.result import Profile, TimeStats


def test_cupti_line_next_to_the_timer():
    p = Profile(kernel="k", mode="gpu", device="NVIDIA H200")
    p.time_ms = TimeStats(0.050, 0.052, 0.060)
    p.extra["timing"] = {"method": "cuda-graph", "cupti_ms": 0.0501, "agreement": 0.038}
    text = format_profile(p)
    assert "median 0.0520" in text
    assert "CUPTI         0.0501 ms device time per call (timer +3.8%), timed by cuda-graph" in text


def test_refused_time_reads_not_measured():
    p = Profile(kernel="k", mode="gpu", device="NVIDIA H200")
    p.extra["timing"] = {"method": "cuda-graph", "cupti_ms": 0.020, "agreement": 0.5,
                         "refused": "not measured: timer and CUPTI disagree (0.03 ms vs 0.02 ms, +50%)"}
    p.warnings.append(p.extra["timing"]["refused"])
    text = format_profile(p)
    assert "time          not measured" in text and "CUPTI         0.0200 ms" in text
