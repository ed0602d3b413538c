"""The benchmark reports' wording: every header sentence matches what was measured; cells are never cut
mid-word; per-set times reconcile the geomean speedup with the first set's ms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from htam_core.bench import suite
from htam_core.bench.kernelbench import progress_line
from htam_core.bench.report import cell_text, kernelbench_markdown, suite_markdown

_SKIP = ("no GPU: KernelBench sizes (GBs of input) are not run on the CPU interpreter; for a CPU smoke run pass "
         "--size-overrides FILE with small sizes for 1/19 (e.g. bench/kernelbench_small_sizes.json)")


def test_cell_text_never_cuts_mid_word() -> None:
    text = "skipped: " + _SKIP
    short = cell_text(text, 60)
    assert short.endswith(" …") and len(short) <= 62
    kept = short[:-2]
    assert text.startswith(kept) and text[len(kept)] == " "  # cut at a word boundary
    assert cell_text("a | b\nc") == "a \\| b c"
    assert cell_text(text) == text  # a 200-character limit keeps this status whole


def _kb_doc(measured: bool, overridden: bool, rec: dict[str, Any]) -> dict[str, Any]:
    return {"environment": {"date": "d", "gpu_count": 1 if measured else 0},
            "config": {"engine": "rules", "steps": 1, "timing_trials": 100}, "measured": measured,
            "sizes_overridden": overridden, "problems": [rec],
            "summary": {"level1": {"problems": 1, "correct": None, "fast_p": {}, "geomean_speedup": None}}}


def _kb_rec(**kw: Any) -> dict[str, Any]:
    base = {"level": 1, "problem_id": 19, "name": "19_ReLU", "start": "19_ReLU.py", "status": "ok", "error": None,
            "mode": "static", "correct": None, "eager_ms": None, "new_ms": None, "speedup": None,
            "start_speedup": None, "steps": [{"correct": True}]}
    return {**base, **kw}


def test_kernelbench_static_report_claims_no_timing() -> None:
    md = kernelbench_markdown(_kb_doc(False, True, _kb_rec()))
    assert "timed here" not in md and "nothing was timed" in md and "1 HTAM step per problem" in md
    assert "| not verified |" in md and "| None |" not in md
    skipped = kernelbench_markdown(_kb_doc(False, False, _kb_rec(status="skipped", error=_SKIP, steps=[])))
    assert "CPU sm |" not in skipped and "bench/kernelbench_small_sizes.json)" in skipped
    gpu = kernelbench_markdown(_kb_doc(True, False, _kb_rec(mode="gpu", correct=True, eager_ms=2.0, new_ms=1.0,
                                                            speedup=2.0)))
    assert "eager reference timed here" in gpu and "| yes |" in gpu


def test_progress_line_words_the_verdict() -> None:
    line = progress_line(_kb_rec())
    assert "None" not in line and "not verified" in line and "1 of 1 loop candidates verified" in line
    assert ", correct, 2x over eager" in progress_line(_kb_rec(mode="gpu", correct=True, speedup=2.0))
    assert "incorrect" in progress_line(_kb_rec(mode="gpu", correct=False))
    skipped = progress_line(_kb_rec(status="skipped", error="no GPU", steps=[]))
    assert "verified" not in skipped and "skipped (no GPU)" in skipped


def _suite_doc(measured: bool, reuse: bool, per_set: bool = False) -> dict[str, Any]:
    ks = [suite.SuiteKernel("a", "a.py", "triton", 4e9, None)]
    res = []
    for p in ("htam", "exhaustive"):
        r: dict[str, Any] = {"kernel": "a", "policy": p, "status": "ok", "mode": "gpu" if measured else "static",
                             "measured": measured, "start_ms": 1.0 if measured else None,
                             "best_ms": 1.0 if measured else None, "best_speedup": 1.81 if measured else None,
                             "steps": [{"speedup_vs_start": 1.81 if measured else None}],
                             "measurements_reused": 0}
        if per_set:
            r |= {"start_per_set_ms": [1.0, 4.0, 9.0], "best_per_set_ms": [1.0, 2.0, 3.0]}
        res.append(r)
    doc = suite.summarize(ks, ["htam", "exhaustive"], res, {"dram_bytes_per_s": 4e12} if measured else None)
    doc["environment"] = {"date": "d", "gpu_count": 1 if measured else 0}
    doc["config"] = {"budget": 8, "exhaustive_budget": 16, "trials": 100, "seed": 0, "reuse_measurements": reuse}
    return doc


@pytest.mark.parametrize("reuse", [True, False])
def test_static_suite_header_says_nothing_was_timed(reuse: bool) -> None:
    md = suite_markdown(_suite_doc(False, reuse))
    assert "timed trials per candidate" not in md and "measured afresh" not in md
    assert "nothing was timed (static mode)" in md


def test_measured_suite_header_keeps_trials_and_fresh_measurements() -> None:
    md = suite_markdown(_suite_doc(True, False))
    assert "100 timed trials per candidate" in md and "Every candidate was measured afresh (`--no-reuse`)" in md


def test_exhaustive_is_the_reference_not_the_best_reachable() -> None:
    md = suite_markdown(_suite_doc(True, True))
    assert "`exhaustive` (knowledge-base order, budget 16): the reference for trials-to-90%" in md
    assert "best reachable" not in md.replace("It is not the best reachable", "")
    assert "best reachable here" not in (suite.__doc__ or "")


def test_per_kernel_table_reconciles_geomean_and_first_set() -> None:
    md = suite_markdown(_suite_doc(True, True, per_set=True))
    assert "speedup: geomean over the input sets; ms: first input set" in md
    assert "| 1 -> 1; 4 -> 2; 9 -> 3 |" in md
    row = next(r for r in _suite_doc(True, True, per_set=True)["rows"] if r["policy"] == "htam")
    assert row["start_per_set_ms"] == [1.0, 4.0, 9.0] and row["best_per_set_ms"] == [1.0, 2.0, 3.0]
    assert "| - |" in suite_markdown(_suite_doc(True, True))  # one set or no per-set data: no column text


def test_per_set_medians_from_report_json(tmp_path: Path) -> None:
    def prof(ms: list[float]) -> dict[str, Any]:
        return {"extra": {"timing": {"per_set": [{"sizes": {"N": i}, "median": m} for i, m in enumerate(ms)]}}}

    rep = tmp_path / "report.json"
    rep.write_text(json.dumps({"start_profile": prof([1.0, 4.0]), "best_profile": prof([0.5, 1.0])}))
    assert suite.per_set_medians(rep) == ([1.0, 4.0], [0.5, 1.0])
    rep.write_text(json.dumps({"start_profile": {"extra": {}}, "best_profile": None}))
    assert suite.per_set_medians(rep) == (None, None)
    assert suite.per_set_medians(tmp_path / "missing.json") == (None, None)


def test_write_json_says_when_it_overwrites_an_earlier_report(tmp_path: Path) -> None:
    from htam_core.bench.report import overwrite_line, write_json

    jp = tmp_path / "sub" / "r-replay.json"
    said: list[str] = []
    write_json({"a": float("inf")}, jp, log=said.append)
    assert said == [] and json.loads(jp.read_text()) == {"a": "inf"} and overwrite_line(tmp_path / "x.json") is None
    write_json({"a": 1}, jp, log=said.append)
    assert said == [f"overwrote {jp}"]  # no Markdown beside it yet
    jp.with_suffix(".md").write_text("# earlier\n")
    write_json({"a": 2}, jp, log=said.append)
    assert said[-1] == f"overwrote {jp} and r-replay.md" and json.loads(jp.read_text()) == {"a": 2}
