"""``htam kernels`` lists the launches of a kernel launched only from other files of its workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.cli.main import main
from tests.support.workspace_fixtures import MAIN_CPP, VADD, workspace


def test_json_lists_the_launch_in_the_host_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = workspace(tmp_path, {"k.cu": VADD, "main.cpp": MAIN_CPP})
    assert main(["kernels", str(ws / "k.cu"), "--json"]) == 0
    (k,) = json.loads(capsys.readouterr().out)
    assert k["launch_sites"] == []
    (la,) = k["launches_elsewhere"]
    assert la["path"] == str(ws / "main.cpp") and la["line"] == 5 and la["style"] == "cuda"
    assert la["block"] == "threads" and la["block_value"] == [256] and la["known"] and la["editable"]


def test_table_names_the_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = workspace(tmp_path, {"k.cu": VADD, "main.cpp": MAIN_CPP})
    assert main(["kernels", str(ws / "k.cu")]) == 0
    assert "main.cpp:5 (cuda)" in capsys.readouterr().out


def test_a_kernel_launched_nowhere_has_no_extra_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = workspace(tmp_path, {"k.cu": VADD})
    assert main(["kernels", str(ws / "k.cu"), "--json"]) == 0
    (k,) = json.loads(capsys.readouterr().out)
    assert "launches_elsewhere" not in k
