"""bench/memory_subset_replay.py reproduces the full replay on a subset of kernels; bench/memory_config_cli.py
refuses an unknown RankerConfig field in one line.

The environment is the synthetic transition family (``tests/memory/test_synthetic_transition.py``): a full
replay of ``htam`` builds the teachers' exports, then the subset script runs ``htam`` on two kernels with those
exports and must give each kernel the trials-to-90 and the strategies of the full replay. A ``--config`` that
changes the method (no transition credit, no start token) must change what it finds, so the test can fail.
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import chdir
from pathlib import Path

import pytest

from htam_core.bench.replay import ReplayConfig, run_replay
from htam_core.bench.space import synthesize_table
from tests.memory.test_synthetic_transition import FIXTURE, speedup

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import memory_subset_replay  # noqa: E402


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("subset")
    table = tmp / "synthetic.jsonl"
    with chdir(ROOT):
        synthesize_table(FIXTURE, table, speedup, note="subset test")
        doc = run_replay(ReplayConfig(table=str(table), work=str(tmp / "work"), policies=["htam"], budget=8,
                                      seeds=1, warm_leave_out="kernel"), log=lambda m: None)
    return tmp, table, doc


def _subset(tmp: Path, table: Path, kernels: list[str], name: str) -> list[dict]:
    with chdir(ROOT):
        return memory_subset_replay.run(str(table), str(tmp / "work" / "exports"), kernels, ["htam"],
                                        str(tmp / name), str(tmp / f"{name}.jsonl"), 1e9)


def test_the_subset_reproduces_the_full_replay(full) -> None:
    tmp, table, doc = full
    rows = {r["kernel"]: r for r in doc["rows"] if r["policy"] == "htam"}
    picked = sorted(rows)[:2]
    got = _subset(tmp, table, picked, "same")
    assert [r["kernel"] for r in got] == picked
    for r in got:
        assert r["trials_to_90"] == rows[r["kernel"]]["trials_to_90"], r
        assert r["strategies"] == rows[r["kernel"]]["strategies"], r
        assert r["first_ranking"] and r["first_ranking"][0]["top"], r
    streamed = (tmp / "same.jsonl").read_text().splitlines()
    assert len(streamed) == len(got)


def test_a_config_override_changes_what_it_finds(full) -> None:
    tmp, table, doc = full
    rows = {r["kernel"]: r for r in doc["rows"] if r["policy"] == "htam"}
    memory_subset_replay._set_defaults({"credit": "0.0", "start_token": "false"})
    try:
        got = _subset(tmp, table, sorted(rows), "changed")
    finally:
        memory_subset_replay._set_defaults({"credit": "0.9", "start_token": "true"})
    assert any(r["strategies"] != rows[r["kernel"]]["strategies"] for r in got)


def test_config_cli_refuses_an_unknown_field() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "memory_config_cli.py"), "no_such_field=1", "--help"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode != 0
    assert "RankerConfig has no field 'no_such_field'" in r.stderr


def test_an_optional_field_is_switched_off_and_on_again() -> None:
    from htam_core.memory.ranker import RankerConfig

    memory_subset_replay._set_defaults({"quantile": "none"})
    try:
        assert RankerConfig().quantile is None
        memory_subset_replay._set_defaults({"quantile": "0.5"})
        assert RankerConfig().quantile == 0.5
    finally:
        memory_subset_replay._set_defaults({"quantile": "0.75"})
    assert RankerConfig().quantile == 0.75
