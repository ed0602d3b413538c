"""The measured spread stored with each outcome, and the migration that keeps schema-1 stores readable."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from htam_core.memory import Outcome, open_store
from htam_core.memory.records import value_of
from htam_core.memory.store import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

STEP = "coalesce_thread_mapping"


def _v1_store(path: Path) -> None:
    """A store as schema 1 wrote it, with one record (no spread column)."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    for statement in MIGRATIONS[0].split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO records (uid, time, prefix, state, step, direction, speedup, correct, measured, "
                 "status, note, fingerprint, device) VALUES ('old1', 1.0, '[]', '{}', ?, 'memory_access', 1.3, 1, 1, "
                 "'win', 'old', 'fp', 'H200')", (STEP,))
    conn.close()


def test_schema_1_store_is_migrated_and_keeps_its_records(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    _v1_store(path)
    with open_store(path) as store:
        old = list(store.records())
        assert [r.uid for r in old] == ["old1"] and old[0].outcome.spread is None
        assert old[0].outcome.speedup == pytest.approx(1.3)
        store.record([], {"memory_bound": 1.0}, STEP, Outcome(1.01, True, True, "neutral", "noise", spread=0.02),
                     "fp", "H200")
    conn = sqlite3.connect(str(path))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    conn.close()
    with open_store(path) as store:
        recs = list(store.records())
        assert [r.outcome.spread for r in recs] == [None, pytest.approx(0.02)]


def test_spread_survives_export_and_import_and_old_exports_load(tmp_path: Path) -> None:
    with open_store(tmp_path / "a.sqlite3") as a:
        a.record([], {}, STEP, Outcome(1.2, True, True, "win", spread=0.015), "fp", "H200")
        data = a.export()
    assert data["records"][0]["outcome"]["spread"] == pytest.approx(0.015)
    old = dict(data, schema=1)
    old["records"] = [dict(data["records"][0], uid="v1", outcome={k: v for k, v in
                                                                  data["records"][0]["outcome"].items()
                                                                  if k != "spread"})]
    with open_store(tmp_path / "b.sqlite3") as b:
        assert b.import_json(data).added == 1 and b.import_json(old).added == 1
        spreads = sorted((r.uid, r.outcome.spread) for r in b.records())
    assert dict(spreads)["v1"] is None and dict(spreads)[data["records"][0]["uid"]] == pytest.approx(0.015)


def test_bad_spread_is_refused_and_neutral_learns_no_gain() -> None:
    with pytest.raises(ValueError):
        Outcome(1.0, True, True, "neutral", spread=-0.1)
    assert value_of(1.015, True, True, "neutral") == 0.0  # a gain inside the noise is no evidence
    assert value_of(1.2, True, True, "win") == pytest.approx(0.18232, rel=1e-4)
