"""bench/probe_timing_refusals.py without a GPU: the job syntax, the candidate it makes, the checks and the report
from a synthetic probe (the GPU run itself is the probe), ``--help``, and a clean exit without a GPU."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "probe_timing_refusals.py"
COUNT = REPO / "bench" / "results" / "textbook-trial5-h100-2026-12-06" / "pairs" / "count_nz"


def _module():
    spec = importlib.util.spec_from_file_location("probe_timing_refusals_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass reads its own module
    spec.loader.exec_module(mod)
    return mod


def test_job_syntax():
    m = _module()
    j = m.parse_job(f"{COUNT}:step=cuda.privatize_atomic")
    assert j.folder == COUNT and j.step == "cuda.privatize_atomic" and j.label == "count_nz:step=cuda.privatize_atomic"
    assert m.parse_job(str(COUNT)).file == "naive.cu"
    assert m.parse_job(f"{COUNT}:expert.cu", "count_nonzero").kernel == "count_nonzero"
    assert m.kernel_of(m.parse_job(str(COUNT))) == "count_nonzero"  # from pair.json
    rel = m.parse_job("bench/results/textbook-trial5-h100-2026-12-06/pairs/count_nz")  # from the repository root
    assert rel.folder.is_dir()
    for bad in (":naive.cu", f"{COUNT}:step="):
        with pytest.raises(ValueError):
            m.parse_job(bad)
    assert all(m.parse_job(s).folder.is_dir() for s in m.DEFAULT_JOBS)


def test_a_step_job_times_the_transformed_naive_file(tmp_path):
    m = _module()
    src = m.source_for(m.parse_job(f"{COUNT}:step=cuda.privatize_atomic"), "count_nonzero", tmp_path)
    text = src.read_text()
    assert src.name == "candidate.cu" and "atomicAdd(count, htam_acc);" in text and "int main()" in text
    assert (src.parent / "naive.cu").read_text() == (COUNT / "naive.cu").read_text()
    with pytest.raises(ValueError, match="does not apply"):
        m.source_for(m.parse_job(f"{COUNT}:step=cuda.privatize_atomic"), "init_vals", tmp_path)


def _raw(plain_us: float, profiled_us: float, calls: int = 4, overhead_us: float = 2.5) -> dict:
    """A synthetic probe: the timer's trials without the profiler, and a CUPTI pass whose kernel the profiler slowed."""
    ops, t = [], 0.0
    for _ in range(calls):
        for name, d in (("fill", 60.0), ("count_nonzero", profiled_us)):
            ops.append({"name": name, "start_us": t, "dur_us": d})
            t += d + 1.0
    return {"job": "count_nz:step=cuda.privatize_atomic", "launch": {"grid": "(262144, 1, 1)", "block": "(256, 1, 1)",
                                                                   "sizes": {"n": 2 ** 26}},
            "method": "cuda-graph", "method_reason": "", "overhead_ms": overhead_us / 1000.0, "calibration": {},
            "timer_raw_ms": [(plain_us + overhead_us) / 1000.0] * 20,
            "cupti": {"ops": ops, "calls": calls, "flush_names": ["fill"],
                      "event_ms": [(profiled_us + overhead_us) / 1000.0] * calls},
            "published": {"median": plain_us / 1000.0, "refused": None}}


@pytest.mark.parametrize("plain_us,profiled_us", [(62.0, 78.0), (75.0, 91.0), (1600.0, 1616.0)])
def test_analysis_shows_the_old_refusal_and_the_same_trials_check(plain_us, profiled_us):
    m = _module()
    a = m.analyse(_raw(plain_us, profiled_us))
    assert a["timer_ms"] == pytest.approx(plain_us / 1000.0) and a["cupti_ms"] == pytest.approx(profiled_us / 1000.0)
    assert a["profiler_slowdown"] == pytest.approx(profiled_us / plain_us - 1.0)
    assert (a["old_check"]["ok"] is False) == (profiled_us / plain_us - 1.0 > 0.10)
    assert a["same_trials_check"]["ok"] is True
    assert [o["name"] for o in a["calls_ops"][0]] == ["fill", "count_nonzero"]


def test_report_from_a_synthetic_probe():
    m = _module()
    good = _raw(62.0, 78.0)
    good["analysis"] = m.analyse(good)
    bad = {"job": "sigmoid_half:naive.cu", "error": "HarnessError: no harness"}
    md = m.markdown({"device": "GPU X", "date": "2026-12-06", "command": "python bench/probe_timing_refusals.py",
                     "jobs": [good, bad]})
    row = next(line for line in md.splitlines() if line.startswith("| count_nz:step"))
    assert "| 62.0 | 78.0 | 78.0 | +25.8% |" in row and "REFUSED" in row and row.count("|") == 12
    assert "error: HarnessError: no harness" in md
    assert "- call 0: fill 60.0 µs; count_nonzero 78.0 µs" in md and "old check: not measured:" in md


def test_help_without_a_gpu():
    r = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "FOLDER:step=TRANSFORM_ID" in r.stdout
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--out" in r.stderr


def test_no_gpu_exits_2_before_writing(tmp_path):
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a GPU is present: the probe would run")
    except ImportError:
        pass
    m = _module()
    assert m.main(["--out", str(tmp_path / "o")]) == 2 and not (tmp_path / "o").exists()
