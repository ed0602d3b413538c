"""bench/bench_importtime.py reads ``python -X importtime`` output: nesting, totals, the heavy packages."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_importtime", REPO / "bench" / "bench_importtime.py")
assert _spec and _spec.loader
bi = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bi)

STDERR = """import time: self [us] | cumulative | imported package
import time:       100 |        100 |     sympy.core
import time:       400 |        500 |   sympy
import time:        50 |        550 | htam_core.source
a line the program wrote
import time:        30 |         30 | json
"""


def test_parse_and_summarize() -> None:
    rows = bi.parse_importtime(STDERR)
    assert [(r["module"], r["level"]) for r in rows] == [("sympy.core", 2), ("sympy", 1),
                                                         ("htam_core.source", 0), ("json", 0)]
    s = bi.summarize_imports(rows, top=1)
    assert s["total_import_ms"] == 0.6 and s["modules"] == 4
    assert s["top_cumulative"] == [{"module": "htam_core.source", "cumulative_ms": 0.6}]
    assert "sympy" in s["heavy_loaded"] and "torch" not in s["heavy_loaded"]


def test_real_output_of_python() -> None:
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "import json"], capture_output=True, text=True,
                       check=True)
    rows = bi.parse_importtime(p.stderr)
    assert any(r["module"] == "json" and r["level"] == 0 for r in rows)
    assert any(r["level"] > 0 for r in rows)
