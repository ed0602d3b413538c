"""bench/memory_compare_replays.py: two replays compared row by row."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("memory_compare_replays", REPO / "bench" / "memory_compare_replays.py")
assert _spec and _spec.loader
mcr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mcr)


def _doc(path: Path, t90: int | None, status: str = "ok") -> Path:
    row = {"kernel": "k.cu::k", "policy": "htam", "seed": 0, "trials_to_90": t90, "strategies": ["a"],
           "curve": [1.0], "status": status, "error": None}
    path.write_text(json.dumps({"rows": [row], "aggregates": {"htam": {"mean_trials_to_90": t90}}}))
    return path


def test_same_rows_exit_0_and_a_difference_exits_1(tmp_path, capsys):
    a = _doc(tmp_path / "a.json", 1)
    assert mcr.main([str(a), str(_doc(tmp_path / "b.json", 1))]) == 0
    assert "0 of 1 rows differ" in capsys.readouterr().out
    assert mcr.main([str(a), str(_doc(tmp_path / "c.json", 2))]) == 1
    assert "1 of 1 rows differ" in capsys.readouterr().out


def test_ignored_fields_and_an_unreadable_file(tmp_path, capsys):
    a = _doc(tmp_path / "a.json", 1)
    err = _doc(tmp_path / "e.json", 1, status="error")
    assert mcr.main([str(a), str(err)]) == 1
    assert mcr.main([str(a), str(err), "--ignore", "status,error"]) == 0
    assert mcr.main([str(a), str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
