"""Regression tests: the one line a new user gets for a half-typed ``.cu`` given to ``htam harness infer``
(exit 2 with the parse position, like ``htam suggest``), a file without kernels given to ``htam kernels`` (the
"defines no kernel" line, not an empty table) and a binary file (what to do, not only what happened)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.cli.main import main

HALF = ("__global__ void k(float* out, const float* in, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) out[i] = in[\n")


def test_harness_infer_refuses_a_half_typed_cu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "half.cu"
    f.write_text(HALF)
    assert main(["harness", "infer", str(f)]) == 2
    err = capsys.readouterr().err
    assert "k is incomplete (it does not parse at line 3, column" in err
    assert "no main()" not in err and "[kernel.k]" not in err
    assert main(["suggest", str(f)]) == 2  # the same position as suggest gives
    assert "does not parse at line 3, column" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "text"), [("empty.cu", ""), ("plain.py", "x = 1\n")])
def test_kernels_of_a_file_without_kernels_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   name: str, text: str) -> None:
    f = tmp_path / name
    f.write_text(text)
    assert main(["kernels", str(f)]) == 0
    out = capsys.readouterr().out
    assert out.strip() == (f"{name} defines no kernel (a CUDA `__global__` function or a Triton `@triton.jit` "
                           "function); open the file that defines it")
    assert main(["kernels", "--json", str(f)]) == 0
    assert capsys.readouterr().out.strip() == "[]"


def test_kernels_of_a_binary_file_says_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "junk.cu"
    f.write_bytes(b"\x80\x81\xff\x00")
    assert main(["kernels", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"htam: error: {f} is not UTF-8 text (byte 0x80 at line 1: a binary file, or text in another "
                   "encoding such as latin-1), so htam cannot read it; save it as UTF-8 and pass it again, or pass "
                   "another kernel file (.cu, .cuh or .py)")
