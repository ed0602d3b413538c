"""``--kernel`` is optional when the file defines one kernel; several get one line listing them; a device
function's name says it is one (a new user's trial: argparse's "the following arguments are required:
--kernel" and "no kernel named '_helper'" did not say what to pass)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.cli.errors import UsageError
from htam_core.cli.kernel_arg import resolve_kernel
from htam_core.cli.main import main

TPL = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "template"

TWO = """import triton
import triton.language as tl


@triton.jit
def _helper(x):
    return x * 2.0


@triton.jit
def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, _helper(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
"""


def test_the_only_kernel_is_taken():
    assert resolve_kernel(str(TPL / "host_2d.cu"), None) == "matmul_kernel"
    assert resolve_kernel(str(TPL / "host_2d.cu"), "other") == "other"  # a given name is checked later


@pytest.mark.parametrize("cmd", ["profile", "suggest", "optimize", "harness"])
def test_several_kernels_are_listed(tmp_path, capsys, cmd):
    (tmp_path / "two.py").write_text(TWO)
    argv = ["harness", "infer", str(tmp_path / "two.py")] if cmd == "harness" else [cmd, str(tmp_path / "two.py")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["htam: error: two.py defines 2 kernels (double_kernel, add_kernel); pass --kernel NAME"]


def test_no_kernel_at_all(tmp_path):
    (tmp_path / "none.cu").write_text("void f(int n) {}\n")
    with pytest.raises(UsageError, match="none.cu defines no kernel"):
        resolve_kernel(str(tmp_path / "none.cu"), None)


@pytest.mark.parametrize("cmd", ["profile", "suggest", "harness"])
def test_a_device_function_says_so(tmp_path, capsys, cmd):
    (tmp_path / "two.py").write_text(TWO)
    path = str(tmp_path / "two.py")
    argv = {"harness": ["harness", "infer", path, "--kernel", "_helper"],
            "profile": ["profile", path, "--kernel", "_helper", "--static"],
            "suggest": ["suggest", path, "--kernel", "_helper", "--static", "--memory", str(tmp_path / "m.sqlite3")]}[cmd]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'_helper' in" in err[0], err
    assert "is a device function (lines 5-7), not a kernel: pass a kernel instead (double_kernel, add_kernel)" \
        in err[0], err
