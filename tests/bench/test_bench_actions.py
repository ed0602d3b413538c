"""``bench/bench_actions.py`` runs to completion on the CPU: it counts a folder, skips a missing one, streams its
JSON and writes the Markdown table, naming files by name only."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "corpus"


def _script():
    spec = importlib.util.spec_from_file_location("bench_actions", ROOT / "bench" / "bench_actions.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_counts_a_folder_and_skips_a_missing_one(tmp_path: Path, capsys) -> None:
    src = tmp_path / "kernels" / "corpus"
    src.mkdir(parents=True)
    shutil.copy(CORPUS / "transpose_naive.cu", src)
    out = tmp_path / "res" / "actions-test"
    assert _script().main([str(src), str(tmp_path / "absent"), "--out", str(out), "--top", "3"]) == 0
    data = json.loads(out.with_suffix(".json").read_text())
    folders = data["folders"]
    absent = f"external {tmp_path.name}/absent"  # a folder outside the repository: its last two components
    assert folders[absent]["skipped"] and f"skip {absent}: not found" in capsys.readouterr().out
    counted = folders["external kernels/corpus"]
    assert {k["kernel"] for k in counted["kernels"]} == {"copy_rowmajor", "transpose_naive"}
    assert all(k["file"] == "transpose_naive.cu" for k in counted["kernels"])  # no machine paths
    s = counted["summary"]
    assert s["kernels"] == 2 and 0 < s["listed"] <= 6 and s["made"] == s["listed"]
    tr = next(k for k in counted["kernels"] if k["kernel"] == "transpose_naive")
    assert tr["pattern"] == "transpose" and "transpose_smem_tile" in tr["structural"]
    md = out.with_suffix(".md").read_text()
    assert "## external kernels/corpus" in md and "| transpose_naive.cu | transpose_naive | transpose |" in md
    assert str(tmp_path) not in md and str(tmp_path) not in out.with_suffix(".json").read_text()
