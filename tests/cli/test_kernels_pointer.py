"""`htam kernels` on a sample that launches its kernels through one function pointer: each kernel lists the
pointer launch, says it goes through the pointer, and the JSON names every kernel the pointer runs."""

from __future__ import annotations

import json
from pathlib import Path

from htam_core.cli.main import main

TRANSPOSE = (Path(__file__).resolve().parents[1] / "fixtures" / "sample_projects" / "transpose" / "Samples"
             / "transpose" / "transpose.cu")


def test_json_names_the_pointer_and_its_kernels(capsys) -> None:
    assert main(["kernels", str(TRANSPOSE), "--json"]) == 0
    naive = next(k for k in json.loads(capsys.readouterr().out) if k["name"] == "transposeNaive")
    first = naive["launch_sites"][0]
    assert first["line"] == 84 and first["through_pointer"] == "kernel"
    assert "transposeCoalesced" in first["pointer_kernels"]
    assert first["config"]["block"] == "dim3(32, 8)"


def test_table_says_through_the_pointer(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line
    assert main(["kernels", str(TRANSPOSE)]) == 0
    assert "line 84 (through the pointer kernel): grid=grid, block=threads" in capsys.readouterr().out
