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


HEADER_KERNEL = """#pragma once
__global__ void dwconv3x3(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}
"""


@pytest.mark.parametrize("include, quote", [("dwconv.cuh", '"'), ("ops/dwconv.cuh", '"'), ("inner.h", '"')])
@pytest.mark.parametrize("cmd", ["kernels", "suggest", "optimize", "profile", "harness"])
def test_a_kernel_in_an_included_header_is_named_with_its_file(tmp_path, capsys, monkeypatch, include, quote, cmd):
    """``naive.cu`` with ``#include "dwconv.cuh"`` and only ``main()``: every command says which header defines the
    kernel and what to run (the header in a sub-folder, or reached through another header, alike)."""
    monkeypatch.chdir(tmp_path)
    header = "ops/dwconv.cuh" if include == "ops/dwconv.cuh" else "dwconv.cuh"
    (tmp_path / header).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / header).write_text(HEADER_KERNEL)
    if include == "inner.h":  # reached through a header that defines no kernel
        (tmp_path / "inner.h").write_text('#pragma once\n#include "dwconv.cuh"\n')
    (tmp_path / "naive.cu").write_text(f"#include {quote}{include}{quote}\nint main() {{ return 0; }}\n")
    argv = ["harness", "infer", "naive.cu"] if cmd == "harness" else [cmd, "naive.cu"]
    rc = main(argv)
    out = capsys.readouterr()
    text = (out.out + out.err).strip()
    assert rc == (0 if cmd == "kernels" else 2)
    run = "suggest" if cmd == "kernels" else "harness infer" if cmd == "harness" else cmd
    assert f"naive.cu defines no kernel; it includes {header}, which defines dwconv3x3: run htam {run} {header}" in text
    assert "\n" not in text


def test_a_given_kernel_defined_in_an_included_header_names_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "k.cuh").write_text(HEADER_KERNEL)
    (tmp_path / "sub" / "naive.cu").write_text('#include "k.cuh"\n__global__ void other(float *x) { x[0] = 1; }\n')
    assert main(["suggest", "sub/naive.cu", "--kernel", "dwconv3x3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("htam: error: naive.cu does not define dwconv3x3; it includes k.cuh, which defines dwconv3x3: "
                   "run htam suggest sub/k.cuh")


def test_a_system_include_is_not_followed(tmp_path):
    (tmp_path / "dwconv.cuh").write_text(HEADER_KERNEL)
    (tmp_path / "naive.cu").write_text("#include <dwconv.cuh>\nint main() { return 0; }\n")
    with pytest.raises(UsageError, match="open the file that defines it"):
        resolve_kernel(str(tmp_path / "naive.cu"), None)
