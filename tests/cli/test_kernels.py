"""`htam kernels`: JSON output, table output, usage errors (exit 2, one line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from htam_core.cli.main import main

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


def test_json_schema(capsys) -> None:
    assert main(["kernels", str(CORPUS / "softmax_rows.py"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [k["name"] for k in out] == ["row_softmax_kernel"]
    k = out[0]
    assert set(k) == {"name", "language", "start_line", "end_line", "params", "constexpr_params", "launch_sites"}
    assert k["language"] == "triton" and k["constexpr_params"] == ["BLOCK_SIZE"]
    assert k["launch_sites"][0]["line"] == 37
    assert k["launch_sites"][0]["config"]["num_warps"] == "1"


def test_table(capsys) -> None:
    assert main(["kernels", str(CORPUS / "transpose_naive.cu")]) == 0
    out = capsys.readouterr().out
    assert "copy_rowmajor" in out and "transpose_naive" in out and "25-31" in out


def test_python_file_without_kernels(capsys) -> None:
    assert main(["kernels", str(CORPUS / "kb_swish_ref.py"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_usage_errors(tmp_path, capsys) -> None:
    assert main(["kernels", str(tmp_path / "missing.cu")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("htam: error:") and "missing.cu does not exist" in err and err.count("\n") == 1
    other = tmp_path / "notes.txt"
    other.write_text("hi")
    assert main(["kernels", str(other), "--json"]) == 2
    assert "unsupported file type" in capsys.readouterr().err


def test_console_script_exit_code(tmp_path) -> None:
    script = Path(sys.executable).parent / "htam"
    if not script.exists():
        pytest.skip("the htam console script is not installed next to this interpreter")
    proc = subprocess.run([str(script), "kernels", str(tmp_path / "x.cuh")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
