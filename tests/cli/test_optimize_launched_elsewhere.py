"""``htam optimize FILE --kernel K`` on a kernel file with no main() and no htam.toml: the harness is read from
the program of its folder that launches it (static mode: the checks and the nvcc build run on this machine; the
GPU stages say there is no GPU)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.cli.main import main

pytestmark = [pytest.mark.usefixtures("private_htam_env"),
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")]

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "launched_elsewhere"


def test_optimize_runs_with_the_program_of_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: the refusal "no harness for kernel 'vectorAdd' in vectorAdd.cu" although main.cu launches it."""
    ws = tmp_path / "ws"
    shutil.copytree(FIX / "proto", ws)
    out = tmp_path / "out"
    code = main(["optimize", str(ws / "vectorAdd.cu"), "--kernel", "vectorAdd", "--static", "--budget", "1",
                 "--out", str(out), "--memory", str(tmp_path / "mem.sqlite3")])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "note: harness: inferred from main() of main.cu" in printed.err
    assert f"program: main() of {ws / 'main.cu'} (launches vectorAdd)" in printed.err
    assert "no harness" not in printed.err and "Static mode: 1 candidates" in printed.out
    assert (out / "best.cu").is_file() and (ws / "main.cu").read_text() == (FIX / "proto" / "main.cu").read_text()


def test_its_output_folder_is_never_read_as_a_launcher(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (a new user's trial): after `optimize --out` inside the workspace, `kernels` listed the copy of
    the launcher in the output folder as a second launch site."""
    from htam_core.source import load
    from htam_core.source import workspace as wsmod

    ws = tmp_path / "ws"
    shutil.copytree(FIX / "proto", ws)
    out = ws / "out" / "run"
    assert main(["optimize", str(ws / "vectorAdd.cu"), "--kernel", "vectorAdd", "--static", "--budget", "1",
                 "--out", str(out), "--memory", str(tmp_path / "mem.sqlite3")]) == 0
    capsys.readouterr()
    assert (out / wsmod.OUTPUT_MARKER).is_file()
    wsmod._LISTINGS.clear()
    model = load(ws / "vectorAdd.cu")
    assert {la.path for la in wsmod.find_launches(model, model.kernel("vectorAdd"))} == {str(ws / "main.cu")}
