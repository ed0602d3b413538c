"""The guidance benchmark's summary: Wilson intervals, step-made from the candidates' facts, reply accounting."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("llm_guidance_summary", REPO / "bench" / "llm_guidance_summary.py")
assert _spec and _spec.loader
summary = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(summary)

START = (REPO / "examples" / "vector_add.py").read_text()


def test_wilson_interval_matches_the_formula() -> None:
    lo, hi = summary.wilson(0, 5)
    assert lo == 0.0 and hi == pytest.approx(0.4345, abs=1e-3)
    lo, hi = summary.wilson(7, 10)
    assert lo == pytest.approx(0.3968, abs=1e-3) and hi == pytest.approx(0.8922, abs=1e-3)
    assert summary.wilson(0, 0) is None


def _line(policy: str, steps: list[dict], **kw: object) -> dict:
    base = {"kernel": "ex/vector_add.py", "kernel_name": "add_kernel", "policy": policy, "status": "ok",
            "model": "m", "start": "start.py", "steps": steps,
            "candidates": sum(1 for s in steps if s["status"] != "endpoint_fault"),
            "correct": sum(1 for s in steps if s["correct"]), "endpoint_faults": sum(
                1 for s in steps if s["status"] == "endpoint_fault"), "already_evaluated": 1,
            "replies": {"requests": 4, "replies": 3, "checked": 2, "no_code": 1, "errors": 0, "unaccounted": 0,
                        "prompt_tokens": 3000, "completion_tokens": 600, "reply_s": 60.0}, "wall_s": 70.0}
    return {**base, **kw}


def test_summary_counts_steps_made_from_the_candidate_files(tmp_path: Path) -> None:
    (tmp_path / "start.py").write_text(START)
    made = START.replace("@triton.jit", "@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['n_elements'])"
                         "\n@triton.jit")
    (tmp_path / "c1.py").write_text(made)
    (tmp_path / "c2.py").write_text(START)  # the start given back: not the step asked
    steps = [{"strategy": "triton_autotune", "status": "neutral", "correct": True, "candidate": "c1.py"},
             {"strategy": "triton_autotune", "status": "neutral", "correct": True, "candidate": "c2.py"},
             {"strategy": "triton_block_size", "status": "endpoint_fault", "correct": None, "candidate": None}]
    (tmp_path / "results.jsonl").write_text(json.dumps(_line("htam", steps)) + "\n")
    s = summary.summarize(tmp_path)["policies"]["htam"]
    assert (s["candidates"], s["correct"], s["endpoint_faults"], s["repeats"]) == (2, 2, 1, 1)
    assert (s["step_made"], s["step_checked"]) == (1, 2)
    assert s["tokens_in"] == 3000 and s["tokens_out"] == 600 and s["tokens_per_s"] == 10.0
    assert s["correct_ci95"][0] > 0 and s["correct_ci95"][1] == 100.0


def test_fault_only_line_is_run_again_and_the_last_line_counts(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_llm_guidance", REPO / "bench" / "bench_llm_guidance.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    fault = _line("htam", [{"strategy": "triton_autotune", "status": "endpoint_fault", "correct": None,
                            "candidate": None}], engine="llm",
                  replies={"requests": 2, "replies": 0, "errors": 2, "prompt_tokens": 0, "completion_tokens": 0,
                           "reply_s": 0.0})
    ok = _line("htam", [{"strategy": "triton_autotune", "status": "neutral", "correct": True, "candidate": None}],
               engine="llm")
    rules = _line("rules", [], engine="rules", replies={})
    assert bench.fault_only(fault) and not bench.fault_only(ok) and not bench.fault_only(rules)
    (tmp_path / "results.jsonl").write_text(json.dumps(fault) + "\n" + json.dumps(rules) + "\n")
    assert bench._done(tmp_path / "results.jsonl") == {("ex/vector_add.py", "rules")}
    with (tmp_path / "results.jsonl").open("a") as fh:
        fh.write(json.dumps(ok) + "\n")
    s = summary.summarize(tmp_path)
    assert s["lines"] == 2 and s["policies"]["htam"]["correct"] == 1 and s["policies"]["htam"]["endpoint_faults"] == 0
