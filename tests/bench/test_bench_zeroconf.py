"""bench/bench_zeroconf.py ends inside its budget with what it has: rows streamed to rows.jsonl, md + json
written, exit 0, kernels not reached marked as such, and --resume keeps finished rows."""

from __future__ import annotations

import importlib.util
import json
import shutil
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ZC = REPO / "tests" / "fixtures" / "zeroconf"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_zeroconf", REPO / "bench" / "bench_zeroconf.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    c = tmp_path / "corpus"
    c.mkdir()
    shutil.copy(ZC / "cu_saxpy_define.cu", c)
    (c / "no_kernel.py").write_text("def f(x):\n    return x + 1\n")
    return c


def test_a_budget_too_small_still_writes_every_row_and_exits_0(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    t0 = time.monotonic()
    assert _bench().main(["--corpus", str(corpus), "--out", str(out), "--max-seconds", "6"]) == 0
    assert time.monotonic() - t0 < 30
    rows = [json.loads(ln) for ln in (out / "rows.jsonl").read_text().splitlines()]
    by_file = {r["file"]: r for r in rows}
    assert by_file["no_kernel.py"]["kernel"] is None and by_file["no_kernel.py"]["error"]
    saxpy = by_file["cu_saxpy_define.cu"]
    assert saxpy["status"] == "not run (budget)" and saxpy["profile_error"] == "not run (budget)"
    md = (out / "zeroconf.md").read_text()
    assert "not reached inside the budget" in md and "Device:" in md
    assert json.loads((out / "zeroconf.json").read_text())["rows"]


def test_runs_to_completion_on_the_cpu_and_resumes(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    bench = _bench()
    assert bench.main(["--corpus", str(corpus), "--out", str(out), "--max-seconds", "120", "--timeout", "50"]) == 0
    rows = {r["file"]: r for r in (json.loads(ln) for ln in (out / "rows.jsonl").read_text().splitlines())}
    saxpy = rows["cu_saxpy_define.cu"]
    assert saxpy["profile_rc"] == 0 and saxpy["mode"] in ("static", "gpu")
    assert "inferred from main()" in (saxpy["harness"] or ""), saxpy
    assert saxpy["verify_summary"]
    # --resume keeps the finished row: nothing runs again, so it is quick
    t0 = time.monotonic()
    assert bench.main(["--corpus", str(corpus), "--out", str(out), "--resume", "--max-seconds", "120"]) == 0
    assert time.monotonic() - t0 < 10
    again = {r["file"]: r for r in (json.loads(ln) for ln in (out / "rows.jsonl").read_text().splitlines())}
    assert again["cu_saxpy_define.cu"] == saxpy


def test_the_last_message_is_the_errors_first_line_never_the_template() -> None:
    """A missing-harness error prints a template under its first line: the column shows the first line."""
    err = ("htam: error: no harness for kernel 'neg_kernel' in direct_launch.py: htam does not know how to call it.\n"
           "\n# Profiling harness for neg_kernel (htam harness format, version 1).\n[kernel.neg_kernel]\n"
           '# flops = "..."  # FLOPs per call\n')
    bench = _bench()
    assert bench.error_line(err) == "no harness for kernel 'neg_kernel' in direct_launch.py: htam does not know how " \
                                    "to call it."
    assert bench.error_line("timed out after 11 s (killed)") == "timed out after 11 s (killed)"
    assert bench.error_line("") == ""
    long = "htam: error: " + "a b c. " * 80 + "\n# template"
    assert bench.error_line(long).endswith(".") and len(bench.error_line(long)) <= 400
    row = bench._verify_row(2, "", err, 1.0)
    assert row["verify_summary"].startswith("no harness for kernel") and "flops" not in row["verify_summary"]


def test_verify_then_profile_in_one_process_records_the_file_once(tmp_path: Path, monkeypatch) -> None:
    """The pair child runs both commands in one process; the verify records gelu.py's __main__ (cached: false),
    and a second verify in a fresh process reads the recording back (cached: true) in well under the
    recording's time: the inference was skipped."""
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")
    bench = _bench()
    item = {"file": "gelu.py", "kernel": "gelu_kernel"}
    v, p = bench._htam_pair([bench._verify_args(ZC, item, 200), bench._profile_args(ZC, item, False)], 300)
    vrow, prow = bench._verify_row(*v), bench._profile_row(*p)
    assert vrow["accepted"] and vrow["harness_cached"] is False and vrow["inference_s"] > 0, vrow
    assert prow["profile_rc"] == 0 and prow["mode"] in ("static", "gpu"), prow
    rc, out, _, _ = bench._htam(bench._verify_args(ZC, item, 200), 300)
    again = json.loads(out)["harness_inference"]
    assert rc == 0 and again["cached"] is True and again["seconds"] < vrow["inference_s"] / 5, (again, vrow)
