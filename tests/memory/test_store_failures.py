"""The store's failure modes: locks (backoff, timeout, pending records), move-aside refusals, validation."""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from pathlib import Path

import pytest

from htam_core.memory import MemoryStoreError, Outcome, Record, open_store
from htam_core.memory.export_file import ExportFileError, read_export
from htam_core.memory.store import EXPORT_FORMAT, SCHEMA_VERSION, lock_timeout_s, move_aside, pending_paths

STATE = {"class=memory-bound": 1.0}
WIN = Outcome(1.5, True, True, "win")


@pytest.fixture(autouse=True)
def _private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def _hold(path: Path) -> sqlite3.Connection:
    """Another connection that holds the write lock until it is rolled back."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    return conn


@pytest.mark.parametrize(("raw", "expected"), [(None, 60.0), ("0.5", 0.5), ("0", 0.0)])
def test_lock_timeout_from_the_environment(monkeypatch: pytest.MonkeyPatch, raw: str | None, expected: float) -> None:
    if raw is None:
        monkeypatch.delenv("HTAM_MEMORY_LOCK_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("HTAM_MEMORY_LOCK_TIMEOUT", raw)
    assert lock_timeout_s() == expected


@pytest.mark.parametrize("raw", ["soon", "-1", "nan"])
def test_bad_lock_timeout_is_an_error(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("HTAM_MEMORY_LOCK_TIMEOUT", raw)
    with pytest.raises(MemoryStoreError, match="HTAM_MEMORY_LOCK_TIMEOUT") as info:
        lock_timeout_s()
    assert info.value.kind == "config"


def test_a_lock_released_during_the_backoff_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTAM_MEMORY_LOCK_TIMEOUT", "20")
    path = tmp_path / "m.sqlite3"
    with open_store(path) as st:
        holder = _hold(path)
        threading.Timer(0.3, holder.rollback).start()
        st.record([], STATE, "vectorize_loads", WIN, "k", "H200")  # waits, then writes
        assert st.count() == 1 and not any(p.exists() for p in pending_paths(path))
        holder.close()


def test_a_locked_record_is_kept_and_added_later(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTAM_MEMORY_LOCK_TIMEOUT", "0.2")
    path = tmp_path / "m.sqlite3"
    with open_store(path) as st:
        holder = _hold(path)
        with pytest.raises(MemoryStoreError, match="locked by another writer") as info:
            st.record([], STATE, "vectorize_loads", WIN, "k1", "H200")
        assert info.value.kind == "locked" and info.value.pending == pending_paths(path)[0]
        assert f"The record was kept in {info.value.pending}" in str(info.value)
        assert st._lock_gave_up  # later records of this store do not wait the whole timeout again
        with pytest.raises(MemoryStoreError):
            st.record([], STATE, "vectorize_loads", WIN, "k2", "H200")
        assert len(info.value.pending.read_text().splitlines()) == 2 and st.count() == 0
        holder.rollback()
        holder.close()
        st.record([], STATE, "vectorize_loads", WIN, "k3", "H200")  # succeeds, then adds the pending two
        assert st.count() == 3 and not info.value.pending.exists()
        assert sorted(r.fingerprint for r in st.records()) == ["k1", "k2", "k3"]
        assert st.node_stats("strategy")["vectorize_loads"].count == 3


def test_pending_records_are_added_once_on_the_next_open(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    open_store(path).close()
    rec = Record((), dict(STATE), "vectorize_loads", "memory_access", WIN, "k", "H200", 1.0)
    pending = pending_paths(path)[0]
    pending.write_text((json.dumps(rec.to_json()) + "\n") * 2 + "not json\n")  # a duplicate and a bad line
    with open_store(path) as st:
        assert st.count() == 1
        assert any("1 malformed line(s) left" in w for w in st.warnings)
    assert pending.read_text() == "not json\n"  # the bad line is kept, never thrown away


@pytest.mark.parametrize("what", ["folder", "text", "missing"])
def test_move_aside_only_renames_sqlite_files(tmp_path: Path, what: str) -> None:
    target = tmp_path / "x"
    if what == "folder":
        target.mkdir()
        (target / "keep.txt").write_text("mine")
    elif what == "text":
        target.write_text("SQLite format 2 but not really")
    with pytest.raises(MemoryStoreError, match="refusing to move") as info:
        move_aside(target)
    assert info.value.kind == "not-a-store"
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if what == "missing" else ["x"])


def test_record_refuses_non_finite_numbers(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.sqlite3") as st:
        with pytest.raises(ValueError, match="not finite: time"):
            st.record([], STATE, "vectorize_loads", WIN, "k", "H200", time=math.nan)
        with pytest.raises(ValueError, match="not finite: class=memory-bound"):
            st.record([], {"class=memory-bound": math.inf}, "vectorize_loads", WIN, "k", "H200")
        assert st.count() == 0


GOOD = Record((), dict(STATE), "vectorize_loads", "memory_access", WIN, "k", "H200", 1.0, "u1").to_json()


@pytest.mark.parametrize(("change", "message"), [
    ({"time": float("nan")}, "time is NaN: numbers must be finite"),
    ({"time": "yesterday"}, "time must be a number"),
    ({"state": {"x": float("inf")}}, "state.x is Infinity"),
    ({"uid": None}, "uid must be a string"),
    ({"prefix": "a,b"}, "prefix must be a list"),
    ({"outcome": {"correct": 1, "measured": True, "status": "win"}}, "outcome.correct must be true or false"),
    ({"outcome": {"speedup": -2.0, "correct": True, "measured": True, "status": "win"}}, "finite positive"),
])
def test_record_from_json_validates_every_field(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        Record.from_json({**GOOD, **change})
    missing = dict(GOOD)
    del missing["fingerprint"]
    with pytest.raises(ValueError, match="missing field fingerprint"):
        Record.from_json(missing)
    assert Record.from_json(GOOD).to_json() == GOOD


def test_export_file_reports_lines_of_a_real_export(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.sqlite3") as st:
        for i in range(3):
            st.record([], STATE, "vectorize_loads", WIN, f"k{i}", "H200", time=float(i + 1))
        data = st.export()
    data["records"][1]["time"] = float("nan")
    text = json.dumps(data, indent=1, sort_keys=True)  # the layout `htam memory export` writes
    f = tmp_path / "e.json"
    f.write_text(text)
    got = read_export(f, export_format=EXPORT_FORMAT, schema=SCHEMA_VERSION)
    lines = text.splitlines()
    starts = [i + 1 for i, line in enumerate(lines) if line == "  {" and '"records"' in "".join(lines[:i])]
    assert [line for line, _ in got.records] == [starts[0], starts[2]]
    assert got.errors == [(starts[1], "time is NaN: numbers must be finite")]


@pytest.mark.parametrize(("content", "message"), [
    (b'{"format": "htam-memory", "schema": 1, "records": [\n{"a": 1},\n', "is not valid JSON (line 3, column 1"),
    (b'{"format": "other", "schema": 1, "records": []}', "is not an HTAM memory export"),
    (b'{"format": "htam-memory", "schema": 99, "records": []}', "has export schema 99"),
    (b'{"format": "htam-memory", "schema": 1}', 'has no "records" list'),
    (b'[1, 2]', "expected a JSON object"),
    (b'{"format": "htam-memory", "schema": 1, "records": []} trailing', "extra data"),
])
def test_export_file_errors(tmp_path: Path, content: bytes, message: str) -> None:
    f = tmp_path / "e.json"
    f.write_bytes(content)
    with pytest.raises(ExportFileError, match=message.replace("(", r"\(")):
        read_export(f, export_format=EXPORT_FORMAT, schema=SCHEMA_VERSION)
