"""Heavy optional packages load only where they are used: listing kernels (``htam kernels``) and importing the
language server never import torch, openai, httpx/httpx2, matplotlib or dask.

Each check runs in a fresh interpreter (a subprocess), since this test process has imported them for other tests.
The figures behind the rule: ``bench/bench_importtime.py`` and ``bench/results/importtime-2026-12-05/``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "openai", "httpx", "httpx2", "matplotlib", "dask", "distributed")

_LIST_KERNELS = """
import json, sys
from htam_core.cli.main import main
rc = main(["kernels", "examples/vector_add.py"])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""
_IMPORT_SERVER = """
import json, sys
import htam_server.server
print(json.dumps({"rc": 0, "modules": sorted(sys.modules)}))
"""


def _loaded(code: str, tmp_path: Path) -> set[str]:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "htam_server").symlink_to(REPO / "server", target_is_directory=True)  # this checkout's server
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim), str(REPO)])}
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    assert doc["rc"] == 0
    return {m.split(".")[0] for m in doc["modules"]}


@pytest.mark.parametrize("code", [_LIST_KERNELS, _IMPORT_SERVER], ids=["htam-kernels", "server-import"])
def test_no_heavy_optional_package_at_start_up(code: str, tmp_path: Path) -> None:
    loaded = _loaded(code, tmp_path)
    assert "htam_core" in loaded  # the check ran the engine
    assert not [h for h in HEAVY if h in loaded], f"imported at start-up: {[h for h in HEAVY if h in loaded]}"
