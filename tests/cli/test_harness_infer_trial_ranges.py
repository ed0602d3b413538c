"""``htam harness infer`` on two programs a user wrote (a CSR SpMV and a nonzero counter): the row pointer is an
offsets array bounded by the nonzeros (not random integers up to a million, which runs ~10^11 loop steps), and the
counted values get a range in which the count depends on them (not ``[0, 1)``: all zeros, a check that cannot
fail), with main()'s one-byte fill noted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.cli.main import main

TRIAL = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "trial"


def _infer(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> str:
    f = tmp_path / name
    shutil.copy(TRIAL / name, f)
    assert main(["harness", "infer", str(f)]) == 0
    return capsys.readouterr().out


def test_csr_row_pointer_is_inferred_as_offsets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _infer(tmp_path, "csr_spmv.cu", capsys)
    assert '{ name = "row_ptr", shape = [1048577], dtype = "int32", init = "offsets", low = 0, high = 33554432 }' in out
    assert "`row_ptr` is an offsets array (the loop on line 6 runs from `row_ptr[row]` to `row_ptr[row + 1]`)" in out
    assert "`row_ptr`: randint" not in out


def test_counted_values_get_a_range_that_can_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _infer(tmp_path, "count_nonzero.cu", capsys)
    assert '{ name = "v", shape = [16777216], dtype = "int32", init = "randint", low = -8, high = 8 }' in out
    assert "high = 1 }" not in out
    assert "`v`: main() sets every byte to 1 (cudaMemset)" in out
