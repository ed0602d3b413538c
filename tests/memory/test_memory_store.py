"""The SQLite store: statistics, export/import, overlay, crashes, concurrency, corrupt and newer files."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from htam_core.memory import MemoryStoreError, Outcome, open_store
from htam_core.memory.store import SCHEMA_VERSION

STATE = {"class=memory-bound": 1.0, "sol_memory": 0.4}
WIN = Outcome(1.5, True, True, "win", "coalesced")
LOSS = Outcome(0.8, True, True, "loss")
BAD = Outcome(None, False, True, "incorrect", "wrong edge tile")


def test_record_updates_nodes_and_edges_on_both_levels(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.sqlite3") as st:
        st.record([], STATE, "vectorize_loads", WIN, "k1", "H200", time=10.0)
        st.record(["vectorize_loads"], STATE, "cuda_block_size", LOSS, "k1", "H200", time=11.0)
        st.record(["vectorize_loads"], STATE, "cuda_block_size", BAD, "k2", "H200", time=12.0)
        nodes = st.node_stats("strategy")
        assert nodes["vectorize_loads"].count == 1 and nodes["vectorize_loads"].wins == 1
        bs = nodes["cuda_block_size"]
        assert (bs.count, bs.wins, bs.failures, bs.n_values) == (2, 0, 1, 2)
        values = [math.log(0.8), math.log(0.5)]  # incorrect -> penalty ln(0.5)
        assert bs.mean == pytest.approx(sum(values) / 2)
        assert bs.variance == pytest.approx((values[0] - values[1]) ** 2 / 2)
        assert bs.last_seen == 12.0 and bs.note_risk == "wrong edge tile"
        edges = st.edge_stats("strategy")
        assert edges[("vectorize_loads", "cuda_block_size")].count == 2
        assert edges[("<start>", "vectorize_loads")].wins == 1
        dedges = st.edge_stats("direction")
        assert dedges[("memory_access", "launch_configuration")].failures == 1
        assert st.node_stats("direction")["launch_configuration"].count == 2
        assert st.count() == 3


def test_unknown_step_is_refused(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.sqlite3") as st, pytest.raises(ValueError, match="unknown step"):
        st.record([], STATE, "make_it_fast", WIN, "k", "d")


def test_outcome_validation() -> None:
    with pytest.raises(ValueError):
        Outcome(1.0, True, True, "great")
    with pytest.raises(ValueError):
        Outcome(-1.0, True, True, "win")


def test_export_import_round_trip_and_merge(tmp_path: Path) -> None:
    a = open_store(tmp_path / "a.sqlite3")
    a.record([], STATE, "vectorize_loads", WIN, "k1", "H200", time=1.0)
    a.record(["vectorize_loads"], STATE, "cuda_block_size", Outcome(1.1, True, True, "win"), "k1", "H200", time=2.5)
    a.record(["vectorize_loads", "cuda_block_size"], STATE, "launch_bounds", BAD, "k1", "H200", time=3.25)
    exported = a.export()
    text = json.dumps(exported)
    b = open_store(tmp_path / "b.sqlite3")
    assert b.import_json(json.loads(text)).added == 3
    assert b.export() == exported  # exact round trip
    assert b.import_json(json.loads(text)).added == 0  # idempotent
    # merging: a second store with its own records
    c = open_store(tmp_path / "c.sqlite3")
    c.record([], STATE, "vectorize_loads", LOSS, "k9", "A100", time=5.0)
    c.import_json(exported)
    merged = c.node_stats("strategy")["vectorize_loads"]
    assert (merged.count, merged.wins) == (2, 1)
    assert merged.mean == pytest.approx((math.log(0.8) + math.log(1.5)) / 2)
    for s in (a, b, c):
        s.close()


def test_import_refuses_bad_files(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.sqlite3") as st:
        with pytest.raises(ValueError, match="not an HTAM memory export"):
            st.import_json({"records": []})
        with pytest.raises(ValueError, match="schema"):
            st.import_json({"format": "htam-memory", "schema": SCHEMA_VERSION + 1, "records": []})
        with pytest.raises(ValueError, match="record 0"):
            st.import_json({"format": "htam-memory", "schema": 1, "records": [{"uid": "x"}]})
        assert st.count() == 0


def test_workspace_overlays_user_store(tmp_path: Path) -> None:
    user = open_store(tmp_path / "user.sqlite3")
    user.record([], STATE, "vectorize_loads", WIN, "k1", "H200")
    user.close()
    ws_dir = tmp_path / "proj"
    ws_dir.mkdir()
    with open_store(tmp_path / "user.sqlite3", workspace=ws_dir) as st:
        assert st.path == ws_dir / ".htam" / "memory.sqlite3"
        st.record([], STATE, "vectorize_loads", LOSS, "k2", "H200")
        assert st.count() == 2  # reads merge
        assert st.node_stats("strategy")["vectorize_loads"].count == 2
    with open_store(tmp_path / "user.sqlite3") as only_user:
        assert only_user.count() == 1  # writes went to the workspace


def test_non_sqlite_file_is_never_overwritten_nor_moved(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    junk = b"this is not a database" * 100
    path.write_bytes(junk)
    with pytest.raises(MemoryStoreError, match="not an SQLite database") as info:
        open_store(path)
    assert info.value.kind == "corrupt"
    with pytest.raises(MemoryStoreError, match="refusing to move") as info:
        open_store(path, on_corrupt="move-aside")  # only SQLite files are ever renamed
    assert info.value.kind == "not-a-store"
    assert path.read_bytes() == junk and sorted(p.name for p in tmp_path.iterdir()) == ["m.sqlite3"]


def _damage(path: Path) -> bytes:
    """Write 300 records, then scribble over b-tree pages (keeping the SQLite header); return the bytes."""
    with open_store(path) as st:
        for i in range(300):
            st.record([], STATE, "vectorize_loads", WIN, f"k{i}", "H200")
        st.dbs[0].conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    for off in range(2 * 4096, min(len(data), 6 * 4096)):
        data[off] = 0xA5
    path.write_bytes(bytes(data))
    return bytes(data)


def test_corrupt_sqlite_file_is_moved_aside_on_request(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    damaged = _damage(path)
    with pytest.raises(MemoryStoreError, match="corrupt") as info:
        open_store(path)
    assert info.value.kind == "corrupt" and "--move-aside" in str(info.value)
    assert path.read_bytes() == damaged
    st = open_store(path, on_corrupt="move-aside")
    assert st.count() == 0 and st.warnings
    st.close()
    moved = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    assert len(moved) == 1 and moved[0].read_bytes() == damaged


def test_damaged_pages_are_detected(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    _damage(path)
    with pytest.raises(MemoryStoreError) as info:
        open_store(path)
    assert info.value.kind == "corrupt"


def test_newer_schema_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    open_store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(MemoryStoreError, match="newer") as info:
        open_store(path, on_corrupt="move-aside")
    assert info.value.kind == "newer"
    assert path.read_bytes() == before


def test_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(MemoryStoreError, match="not an HTAM memory") as info:
        open_store(path)
    assert info.value.kind == "foreign"


def test_schema_version_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    open_store(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


_WRITER = textwrap.dedent("""
    import sys
    from htam_core.memory import Outcome, open_store
    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    st = open_store(path)
    i = 0
    while n < 0 or i < n:
        st.record(["vectorize_loads"], {"class=memory-bound": 1.0}, "cuda_block_size",
                  Outcome(1.0 + (i % 7) / 10, True, True, "win"), f"{tag}-{i}", "H200")
        print(i, flush=True)
        i += 1
""")


def _writer(path: Path, tag: str, n: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag, str(n)], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_survives_sigkill_mid_write(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    open_store(path).close()
    proc = _writer(path, "w", -1)
    committed = -1
    assert proc.stdout is not None
    for line in proc.stdout:
        committed = int(line)
        if committed >= 150:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with open_store(path) as st:
        fps = {r.fingerprint for r in st.records()}
        assert {f"w-{i}" for i in range(committed + 1)} <= fps  # every committed record is there
        n = st.count()
        assert st.node_stats("strategy")["cuda_block_size"].count == n  # stats consistent with records
        assert st.edge_stats("strategy")[("vectorize_loads", "cuda_block_size")].count == n


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    open_store(path).close()
    n = 120
    procs = [_writer(path, tag, n) for tag in ("a", "b")]
    for p in procs:
        p.communicate(timeout=120)
        assert p.returncode == 0
    with open_store(path) as st:
        assert st.count() == 2 * n
        assert {r.fingerprint for r in st.records()} == {f"{t}-{i}" for t in "ab" for i in range(n)}
        assert st.node_stats("strategy")["cuda_block_size"].count == 2 * n
        assert st.node_stats("direction")["launch_configuration"].count == 2 * n
