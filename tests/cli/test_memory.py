"""``htam memory stats|export|import|reset``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.memory import Outcome, open_store

STATE = {"class=memory-bound": 1.0}


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    path = tmp_path / "m.sqlite3"
    with open_store(path) as st:
        st.record([], STATE, "vectorize_loads", Outcome(1.4, True, True, "win"), "k1", "H200", time=1.0)
        st.record(["vectorize_loads"], STATE, "cuda_block_size", Outcome(None, False, False, "failed", "ptxas"),
                  "k1", "H200", time=2.0)
    return path


def test_stats(filled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "--memory", str(filled), "stats"]) == 0
    out = capsys.readouterr().out
    assert "records: 2" in out and "vectorize_loads 1/1 wins" in out
    assert main(["memory", "stats", "--json", "--memory", str(filled)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["records"] == 2 and info["failures"] == 1 and info["strategies"]["cuda_block_size"]["trials"] == 1


def test_stats_do_not_count_static_records_as_losses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # regression (new-user trial): static runs' records read "triton_cache_hints 0/1 wins", a measured loss
    path = tmp_path / "m.sqlite3"
    with open_store(path) as st:
        st.record([], STATE, "triton_cache_hints", Outcome(None, True, False, "neutral"), "k1", "none", time=1.0)
        st.record([], STATE, "vectorize_loads", Outcome(1.4, True, True, "win"), "k1", "H200", time=2.0)
        st.record([], STATE, "vectorize_loads", Outcome(None, True, False, "neutral"), "k2", "none", time=3.0)
    assert main(["memory", "--memory", str(path), "stats"]) == 0
    out = capsys.readouterr().out
    assert "triton_cache_hints 1 not measured" in out and "0/1" not in out
    assert "vectorize_loads 1/1 wins (+1 not measured)" in out


def test_export_import_round_trip(filled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "mem.json"
    assert main(["memory", "--memory", str(filled), "export", str(out_file)]) == 0
    other = tmp_path / "other.sqlite3"
    assert main(["memory", "--memory", str(other), "import", str(out_file)]) == 0
    assert "imported 2 records (0 already present)" in capsys.readouterr().out
    assert main(["memory", "--memory", str(other), "export"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(out_file.read_text())
    assert main(["memory", "--memory", str(other), "import", str(out_file)]) == 0
    assert "imported 0 records (2 already present)" in capsys.readouterr().out


def test_import_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mem = str(tmp_path / "m.sqlite3")
    assert main(["memory", "--memory", mem, "import", str(tmp_path / "missing.json")]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["memory", "--memory", mem, "import", str(bad)]) == 2
    bad.write_text('{"format": "something-else"}')
    assert main(["memory", "--memory", mem, "import", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("htam: error:") == 3 and "not an HTAM memory export" in err


def test_reset_needs_yes(filled: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    assert main(["memory", "--memory", str(filled), "reset"]) == 2
    assert "--yes" in capsys.readouterr().err
    assert main(["memory", "--memory", str(filled), "reset", "--yes"]) == 0
    with open_store(filled) as st:
        assert st.count() == 0 and not st.node_stats("strategy")


def test_corrupt_store_says_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.sqlite3"
    with open_store(path) as st:
        for i in range(300):
            st.record([], STATE, "vectorize_loads", Outcome(1.4, True, True, "win"), f"k{i}", "H200")
        st.dbs[0].conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[2 * 4096:6 * 4096] = b"\xa5" * (4 * 4096)  # damaged b-tree pages, intact SQLite header
    path.write_bytes(bytes(data))
    assert main(["memory", "--memory", str(path), "stats"]) == 3
    err = capsys.readouterr().err
    assert "corrupt" in err and "reset --move-aside" in err
    assert path.read_bytes() == bytes(data)
    assert main(["memory", "--memory", str(path), "reset", "--move-aside", "--yes"]) == 0
    assert main(["memory", "--memory", str(path), "stats"]) == 0
    assert any(".corrupt-" in p.name for p in tmp_path.iterdir())


def test_garbage_file_is_not_a_store_and_is_never_moved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.sqlite3"
    path.write_bytes(b"garbage" * 500)
    assert main(["memory", "--memory", str(path), "stats"]) == 3
    assert "is not an SQLite database" in capsys.readouterr().err
    assert main(["memory", "--memory", str(path), "reset", "--move-aside", "--yes"]) == 3
    assert "refusing to move" in capsys.readouterr().err
    assert path.read_bytes() == b"garbage" * 500 and [p.name for p in tmp_path.iterdir()] == ["m.sqlite3"]


def test_env_variable_selects_the_store(filled: Path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HTAM_MEMORY", str(filled))
    assert main(["memory", "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == str(filled)


def test_stats_on_a_missing_store_is_an_error_and_creates_nothing(tmp_path, capsys):
    """Regression (new-user trial): a mistyped --memory made an empty store and its folders, and said 0 records."""
    from htam_core.cli.main import main

    missing = tmp_path / "no" / "such" / "m.sqlite3"
    for action in ("stats", "export"):
        assert main(["memory", action, "--memory", str(missing)]) == 2
        assert "no memory store at" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
