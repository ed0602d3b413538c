"""Shared checks of an optimization's output directory (used by tests/optimize and tests/cli/test_optimize.py).

Import as ``from tests.optimize.report_checks import ...`` (the repository root is on ``pythonpath``).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SUITE = REPO / "bench" / "suite"
CORPUS = REPO / "tests" / "fixtures" / "corpus"

#: Keys that hold a time or a speedup anywhere in report.json; all must be null when nothing was timed.
TIMING_KEYS = frozenset({"time_ms", "speedup", "speedup_vs_start", "best_speedup", "start_ms", "best_ms",
                         "bandwidth_bytes_per_s", "flops_per_s", "roofline_fraction", "achieved_occupancy",
                         "sol"})
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_ROW = re.compile(r"^\| (\d+) \| ")


def copy_example(dst: Path) -> Path:
    """Copy examples/ (vector_add.py + htam.toml) into ``dst``; returns the copied ``vector_add.py``."""
    shutil.copytree(EXAMPLES, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "htam-out"))
    return dst / "vector_add.py"


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes), to prove a run left the user's files alone."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def md_rows(md: str) -> list[list[str]]:
    """The data rows of report.md's step table, split into cells."""
    return [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in md.splitlines()
            if _ROW.match(line)]


def row_of(rows: list[list[str]], index: int) -> list[str]:
    """The report.md table row of step ``index``."""
    return next(r for r in rows if r[0] == str(index))


def timing_values(obj: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every ``(json path, value)`` under a :data:`TIMING_KEYS` key whose value is not null."""
    found: list[tuple[str, Any]] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in TIMING_KEYS and v is not None and v != {} and v != []:
                found.append((f"{path}.{k}", v))
            found += timing_values(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found += timing_values(v, f"{path}[{i}]")
    return found


def check_report(out: Path, start_text: str, ext: str = ".py") -> dict[str, Any]:
    """Assert that report.json, report.md, best<ext> and (when something was timed) speedup.png exist and agree;
    return report.json.

    Agreement: one report.md row per report.json step (same index, direction → strategy, kept: ``yes`` only for
    a measured step, ``not measured`` for every unmeasured one that is not incorrect or failed), steps
    numbered 1..n, every evaluated candidate's file exists, and best<ext> is the last accepted candidate's
    text (the start text when none was accepted), with ``changed`` saying whether it differs from the start.
    """
    for name in ("report.json", "report.md", f"best{ext}"):
        assert (out / name).is_file(), f"{name} missing in {out}"
    data = json.loads((out / "report.json").read_text("utf-8"))
    md = (out / "report.md").read_text("utf-8")
    if data["measured"]:
        assert (out / "speedup.png").read_bytes()[:8] == _PNG_MAGIC and data["plot"] and data["plot_note"] is None
    else:  # nothing timed: no plot, and the report says why
        assert not (out / "speedup.png").exists() and data["plot"] is None
        assert data["plot_note"].startswith("not written: ") and f"no `speedup.png` ({data['plot_note']})" in md
    steps = data["steps"]
    assert [s["index"] for s in steps] == list(range(1, len(steps) + 1))
    rows = md_rows(md)
    assert len(rows) == len(steps), (len(rows), len(steps))
    for row, s in zip(rows, steps, strict=True):
        assert row[0] == str(s["index"])
        assert row[1] == f"{s['direction']} → {s['strategy']}"
        assert row[7] == s["kept"]
        if s["speedup"] is None:
            assert s["kept"] == ("no" if s["status"] in ("incorrect", "failed") else "not measured"), s
        else:
            assert s["kept"] == ("yes" if s["accepted"] else "no"), s
        if s["status"] in ("incorrect", "failed"):
            assert s["reason"] and row[9] == s["reason"].replace("|", "\\|"), s
        if s["candidate_path"]:
            assert Path(s["candidate_path"]).is_file()
    by_index = {s["index"]: s for s in steps}
    for s in steps:  # every step names what it was made from: the start or an earlier accepted candidate
        assert s["parent"] == "start" or (s["parent"] < s["index"] and by_index[s["parent"]]["accepted"]), s
        assert row_of(rows, s["index"])[10] == str(s["parent"])
    walk, at = [], data["best_step"]
    while at not in (None, "start"):  # the best's lineage is its parents back to the start
        walk.append(at)
        at = by_index[at]["parent"]
    assert data["best_lineage"] == walk[::-1]
    best = (out / f"best{ext}").read_text("utf-8")
    if data["best_step"] is not None:
        assert best == Path(by_index[data["best_step"]]["candidate_path"]).read_text("utf-8")
    accepted = [s for s in steps if s["accepted"]]
    if data["mode"] == "static" and accepted:  # nothing timed: the end of the longest followed chain, the latest
        depth: dict[int, int] = {}
        for s in accepted:  # parents come before their children
            depth[s["index"]] = 1 + (0 if s["parent"] == "start" else depth[s["parent"]])
        accepted = [s for s in accepted if depth[s["index"]] == max(depth.values())]
    expected = Path(accepted[-1]["candidate_path"]).read_text("utf-8") if accepted else start_text
    assert best == expected
    assert data["changed"] == (best != start_text)
    assert data["summary"] and data["summary"] in md
    return data
