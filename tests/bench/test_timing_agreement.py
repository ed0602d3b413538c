"""bench/timing_agreement.py without a GPU: the summary, the same-trials comparison and the diagnostic table
from synthetic rows (the GPU run itself is the bench), and a clean exit when there is no GPU."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "timing_agreement.py"


def _module():
    spec = importlib.util.spec_from_file_location("timing_agreement_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(timer: float, cupti: float, prof: float | None = None, same: float | None = None) -> dict:
    return {"timer_ms": timer, "timer_raw_ms": timer + 0.00272, "event_overhead_ms": 0.00272, "method": "cuda-graph",
            "cupti_ms": cupti, "refused": False, "raw_plain_ms": timer + 0.00272 if prof else None,
            "raw_under_profiler_ms": prof, "cupti_same_trials_ms": same}


def test_same_trials_column_and_diagnostic_table(tmp_path: Path) -> None:
    ta = _module()
    ks = [{"name": "cuda saxpy 67108864 fp32 (cupy)", "language": "cuda", "launcher": "cupy", "allocates": False}]
    # the v2 figures: the timer 6.4% below CUPTI, but like for like (both under the profiler) within 1%
    runs = {ks[0]["name"]: [_row(0.2357, 0.2517, 0.2532, 0.2517), _row(0.2357, 0.2516), _row(0.2356, 0.2517)]}
    doc = {"device": "Fake", "date": "d", "command": "c", "torch": "t", "triton": "t", "probe": None,
           "diagnostic": [{"kernel": ks[0]["name"], "graph_flush_outside": 0.2384, "graph_flush_inside": 0.2383,
                           "graph_no_flush": 0.236, "do_bench": None, "do_bench_error": "RuntimeError: x",
                           "cupti_flush": 0.2517}]}
    md = ta.write(doc, ks, runs, {}, tmp_path)
    k = json.loads((tmp_path / "timing_agreement.json").read_text())["kernels"][0]
    assert k["within_target"] is False and abs(k["timer_vs_cupti"] + 0.0636) < 0.001
    assert abs(k["same_trials_vs_cupti"] - ((0.2532 - 0.00272) / 0.2517 - 1)) < 1e-9
    assert "| -0.5% |" in md and "same trials (timer and CUPTI on the same trials, profiler attached): 1 of 1" in md
    assert "## Diagnostic of the kernels that missed the target" in md
    assert "| 238.40 | 238.30 | 236.00 | n/a | err | n/a | 251.70 |" in md and "do_bench: RuntimeError: x" in md


def test_without_a_gpu_it_says_so_and_exits_0(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the bench itself measures")
    p = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--max-seconds", "5"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "nothing measured" in p.stdout
