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
