"""bench/compare_executors.py: two suite runs agree within the noise threshold, and disagree outside it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("compare_executors", REPO / "bench" / "compare_executors.py")
assert _spec is not None and _spec.loader is not None
ce = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ce)


def _doc(rows: list[tuple[str, float | None, float | None, list[str]]], spread: float | None = None) -> dict:
    res: list[dict[str, Any]] = []
    for kernel, start, best, kept in rows:
        res.append({"kernel": kernel, "policy": "htam", "status": "ok", "start_ms": start, "best_ms": best,
                    "steps": [{"transform": t, "accepted": True} for t in kept]
                    + [{"transform": "x.rejected", "accepted": False}]})
    rep = {"per_kernel_pct": {r[0]: spread for r in rows}} if spread is not None else {}
    return {"results": res, "repeatability": rep}


def test_agree_inside_noise_and_disagree_outside() -> None:
    a = _doc([("k1", 1.00, 0.50, ["t.a"]), ("k2", 2.0, 1.0, ["t.b"])], spread=1.0)
    b = _doc([("k1", 1.02, 0.51, ["t.a"]), ("k2", 2.0, 1.3, ["t.c"])], spread=1.0)
    res = ce.compare(a, b, min_noise_pct=3.0)
    by = {p["kernel"]: p for p in res["pairs"]}
    assert by["k1"]["agrees"] and by["k1"]["same_steps"]
    assert not by["k2"]["agrees"] and not by["k2"]["same_steps"]
    assert by["k2"]["best_diff_pct"] > 29
    assert res["agree"] == 1 and res["compared"] == 2 and res["steps_differ"] == 1


def test_threshold_follows_measured_spread() -> None:
    a = _doc([("k", 1.0, 0.5, [])], spread=4.0)
    b = _doc([("k", 1.1, 0.55, [])], spread=4.0)
    p = ce.compare(a, b)["pairs"][0]
    assert p["threshold_pct"] == 12.0 and p["agrees"]


def test_static_runs_compare_steps_and_cli(tmp_path: Path) -> None:
    a = _doc([("k", None, None, ["t.a"]), ("only_a", None, None, [])])
    b = _doc([("k", None, None, ["t.a"])])
    for name, d in (("a.json", a), ("b.json", b)):
        (tmp_path / name).write_text(json.dumps(d))
    assert ce.main([str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path / "cmp")]) == 0
    res = json.loads((tmp_path / "cmp.json").read_text())
    assert res["agree"] == 1 and res["only_in_first"] == ["only_a/htam"]
    assert "not measured" in (tmp_path / "cmp.md").read_text()


def test_unreadable_input_is_one_line(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    assert ce.main([str(tmp_path / "bad.json"), str(tmp_path / "bad.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_published_speedups_must_agree_too() -> None:
    a = _doc([("k", 1.0, 0.5, ["t.a"])])
    b = _doc([("k", 1.0, 0.5, ["t.a"])])
    a["results"][0]["reproduction"] = {"fresh": 2.0}
    b["results"][0]["reproduction"] = {"fresh": 1.5}
    p = ce.compare(a, b)["pairs"][0]
    assert p["fresh_diff_pct"] > 30 and not p["agrees"]
    b["results"][0]["reproduction"] = {"fresh": 2.02}
    assert ce.compare(a, b)["pairs"][0]["agrees"]
