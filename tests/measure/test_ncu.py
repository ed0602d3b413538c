"""ncu CSV parsing (on a sample in ncu's --csv --page details format) and the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.measure.ncu import kernel_filter, ncu_command, parse_ncu_csv, summarize

SAMPLE = (Path(__file__).resolve().parents[1] / "fixtures" / "ncu" / "vadd_details.csv").read_text()


def test_parse_launches_metrics_and_rules():
    launches = parse_ncu_csv(SAMPLE)
    assert [la.id for la in launches] == ["0", "1"]
    a = launches[0]
    assert a.kernel_name == "vadd_kernel" and a.block_size == "(128, 1, 1)"
    assert a.duration_ms == pytest.approx(2.53184)
    assert a.sol_memory_pct == pytest.approx(58.21) and a.sol_compute_pct == pytest.approx(21.37)
    assert a.dram_throughput_pct == pytest.approx(58.21)
    assert a.dram_bytes_per_s == pytest.approx(2.543e12)
    assert a.achieved_occupancy == pytest.approx(0.625) and a.theoretical_occupancy == pytest.approx(1.0)
    assert a.registers == 26
    rules = {r.rule: r for r in a.rules}
    assert rules["SOLBottleneck"].estimated_speedup_pct == pytest.approx(41.79)
    assert rules["SOLBottleneck"].type == "OPT" and "latency" in rules["SOLBottleneck"].message
    assert rules["AchievedOccupancy"].speedup_type == "local"
    assert launches[1].duration_ms == pytest.approx(2.4983)  # usecond unit converted


def test_summary_medians_and_rule_union():
    s = summarize(parse_ncu_csv(SAMPLE))
    assert s["launches"] == 2
    assert s["duration_ms_stats"]["min"] == pytest.approx(2.4983)
    assert s["sol_memory_pct"] == pytest.approx((58.21 + 60.01) / 2)
    assert s["achieved_occupancy"] == pytest.approx(0.635)
    names = [r["rule"] for r in s["rules"]]
    assert names == ["SOLBottleneck", "AchievedOccupancy"]  # sorted by estimated speedup
    assert s["rules"][1]["estimated_speedup_pct"] == pytest.approx(37.5)  # highest kept


def test_no_csv_is_a_clear_error():
    with pytest.raises(ValueError, match="no ncu CSV"):
        parse_ncu_csv("==ERROR== The application returned an error code (1).\n")


def test_command_line():
    cmd = ncu_command(["./prog", "1024"], "sgemm_naive", launch_count=3, log_file="/tmp/x.csv")
    assert cmd[:3] == ["ncu", "--clock-control", "none"]
    for s in ("SpeedOfLight", "Occupancy", "MemoryWorkloadAnalysis", "LaunchStats", "SourceCounters"):
        assert s in cmd
    assert "--csv" in cmd and cmd[cmd.index("--page") + 1] == "details"
    assert cmd[cmd.index("-k") + 1] == kernel_filter("sgemm_naive") and cmd[-2:] == ["./prog", "1024"]
    import re

    pat = kernel_filter("k")[len("regex:"):]
    assert re.match(pat, "k") and re.match(pat, "k<256>") and not re.match(pat, "k2")
