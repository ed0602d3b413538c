"""bench/profiler_slowdown_probe.py: without a GPU it says so in one line and exits 2; on a GPU it writes its table."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "profiler_slowdown_probe.py"


def _has_gpu() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available()) and importlib.util.find_spec("cupy") is not None
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.skipif(_has_gpu(), reason="this checks the no-GPU path")
def test_without_gpu_one_line_exit_2(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "o")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("profiler_slowdown_probe: not run:"), r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "o").exists()


@pytest.mark.gpu
def test_on_gpu_writes_every_variant(tmp_path: Path) -> None:
    if not _has_gpu():
        pytest.skip("needs a CUDA GPU and CuPy")
    r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--n", str(1 << 22), "--reps", "5"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    import json
    doc = json.loads((tmp_path / "probe.json").read_text())
    assert len(doc["rows"]) == 5 and all(row["events_before_ms"] > 0 for row in doc["rows"])
