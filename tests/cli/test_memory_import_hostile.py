"""``htam memory import`` of hostile or oversized export files: one line naming ``file:line``, exit 2, and the
store left exactly as it was.

Each case is a file a probe built by hand: a record nested 100,000 levels deep (it raised ``RecursionError``,
exit 70), a lone surrogate written as the JSON escape ``\\ud800`` (``UnicodeEncodeError`` inside SQLite,
exit 70), a 10 MB note and a 10 MB step (accepted: three such records grew a 53 KB store to 115 MB), and steps,
directions and prefixes the knowledge base does not have (accepted and stored under names nothing reads).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.memory import Outcome, Record, open_store
from htam_core.memory.records import MAX_ID_CHARS, MAX_NOTE_CHARS

STATE = {"class=memory-bound": 1.0}

pytestmark = pytest.mark.usefixtures("private_htam_env")


def _store(path: Path) -> Path:
    with open_store(path) as st:
        st.record([], STATE, "vectorize_loads", Outcome(1.2, True, True, "win"), "k0", "H200", time=1.0)
    return path


def _count(store: Path) -> int:
    conn = sqlite3.connect(store.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
    finally:
        conn.close()


def _record_text(**change: object) -> str:
    rec = Record((), dict(STATE), "vectorize_loads", "memory_access", Outcome(1.1, True, True, "win"), "kx", "H200",
                 5.0, uuid.uuid4().hex).to_json()
    rec.update(change)
    return json.dumps(rec)


def _export(path: Path, bad_record: str) -> Path:
    """A valid record on line 2 and ``bad_record`` on line 3."""
    path.write_text('{"format": "htam-memory", "schema": 1, "records": [\n' + _record_text() + ",\n" + bad_record
                    + "\n]}\n", encoding="utf-8")
    return path


def _import_refused(tmp_path: Path, bad_record: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Import a file whose line 3 is ``bad_record``; check exit 2, one line naming file:3 and an unchanged store;
    return the line."""
    store = _store(tmp_path / "m.sqlite3")
    src = _export(tmp_path / "hostile.json", bad_record)
    before = store.stat().st_size
    assert main(["memory", "--memory", str(store), "import", str(src)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and len(lines[0]) < 1000, err[:2000]
    assert lines[0].startswith("htam: error: ") and f"{src}:3: " in lines[0]
    assert _count(store) == 1 and store.stat().st_size == before
    return lines[0]


def test_a_record_nested_100000_levels_deep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _import_refused(tmp_path, "[" * 100_000 + "]" * 100_000, capsys)
    assert "nested too deeply" in line


def test_a_deep_value_outside_the_records_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path / "m.sqlite3")
    src = tmp_path / "deep.json"
    src.write_text('{"format": "htam-memory", "schema": 1,\n"nodes": ' + "[" * 100_000 + "]" * 100_000
                   + ',\n"records": []}\n', encoding="utf-8")
    assert main(["memory", "--memory", str(store), "import", str(src)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"htam: error: {src}:2: this value is nested too deeply") and err.count("\n") == 1


@pytest.mark.parametrize("field", ["fingerprint", "note", "state key", "host"])
def test_a_lone_surrogate_is_refused_not_an_internal_error(field: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    marker = "k\ud800x"
    if field == "note":
        rec = _record_text(outcome={"speedup": 1.1, "correct": True, "measured": True, "status": "win", "note": marker})
    elif field == "state key":
        rec = _record_text(state={marker: 1.0})
    else:
        rec = _record_text(**{field: marker})
    assert "\\ud800" in rec  # json.dumps writes the escape, as the probe's file had it
    assert "lone UTF-16 surrogate" in _import_refused(tmp_path, rec, capsys)


@pytest.mark.parametrize("field", ["note", "step", "fingerprint", "device", "variant", "uid"])
def test_a_10_mb_string_is_refused(field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = "A" * 10_000_000
    if field == "note":
        rec = _record_text(outcome={"speedup": 1.1, "correct": True, "measured": True, "status": "win", "note": big})
    else:
        rec = _record_text(**{field: big})
    line = _import_refused(tmp_path, rec, capsys)
    limit = MAX_NOTE_CHARS if field == "note" else MAX_ID_CHARS
    assert f"is 10,000,000 characters long, more than {limit:,}" in line


def test_many_state_keys_and_a_long_prefix_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "more than" in _import_refused(tmp_path, _record_text(state={f"f{i}": 1.0 for i in range(5000)}), capsys)
    (tmp_path / "m.sqlite3").unlink()
    assert "more than" in _import_refused(tmp_path, _record_text(prefix=["vectorize_loads"] * 1000), capsys)


@pytest.mark.parametrize("change, words", [
    ({"step": "rm_rf_everything"}, "step 'rm_rf_everything' is not a strategy of the knowledge base"),
    ({"direction": "nowhere"}, "direction 'nowhere' is not a direction of the knowledge base"),
    ({"prefix": ["vectorize_loads", "made_up"]}, "prefix step 'made_up' is not a strategy of the knowledge base"),
])
def test_names_the_knowledge_base_does_not_have_are_refused(change: dict, words: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert words in _import_refused(tmp_path, _record_text(**change), capsys)


def test_skip_invalid_imports_the_good_record_and_lists_the_hostile_one(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path / "m.sqlite3")
    src = _export(tmp_path / "hostile.json", _record_text(step="S" * 10_000_000))
    assert main(["memory", "--memory", str(store), "import", str(src), "--skip-invalid"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("imported 1 records")
    assert captured.err.startswith(f"htam: warning: skipped 1 invalid record(s) of {src}: {src}:3: step is ")
    assert len(captured.err) < 1000 and _count(store) == 2


def test_store_import_json_checks_the_names_too(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.sqlite3") as st:
        data = {"format": "htam-memory", "schema": 1, "records": [json.loads(_record_text(step="nope"))]}
        with pytest.raises(ValueError, match="record 0 of the export is malformed: step 'nope' is not a strategy"):
            st.import_json(data)
        assert st.count() == 0


def test_merge_checks_store_and_export_sources_like_an_import(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A teammate's store is a file from elsewhere too: a 10 MB step written into it directly is refused."""
    src = _store(tmp_path / "theirs.sqlite3")
    conn = sqlite3.connect(src)
    conn.execute("UPDATE records SET step = ?", ("S" * 10_000_000,))
    conn.commit()
    conn.close()
    team = tmp_path / "team.sqlite3"
    assert main(["memory", "merge", str(src), "--into", str(team)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"htam: error: {src}: record 1 (uid ") and "step is 10,000,000 characters long" in err
    assert err.count("\n") == 1 and len(err) < 1000 and not team.exists()
    bad = _export(tmp_path / "hostile.json", _record_text(direction="nowhere"))
    assert main(["memory", "merge", str(bad), "--into", str(team)]) == 2
    err = capsys.readouterr().err
    assert f"e.g. {bad}:3: direction 'nowhere' is not a direction" in err and not team.exists()
