"""``htam optimize --out`` on a kernel launched from another file writes both files: ``best.cu`` and the launcher
as the best kernel's steps left it, its prototype of the kernel included (static mode, so the test means the same
with or without a GPU)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.cli.main import main
from tests.support.nvcc_check import assert_compiles
from tests.support.workspace_fixtures import MAIN_CPP, VADD, workspace

pytestmark = [pytest.mark.usefixtures("private_htam_env"),
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")]

HARNESS = """[kernel.vadd]
version = 1
file = "k.cu"
block = "256"
grid = "(cdiv(N, 256),)"
args = ["a", "b", "c", "n"]
outputs = ["c"]
inputs = [
  { name = "a", shape = ["N"], dtype = "float32", init = "randn" },
  { name = "b", shape = ["N"], dtype = "float32", init = "randn" },
  { name = "c", shape = ["N"], dtype = "float32", init = "empty" },
  { name = "n", dtype = "int32", value = "N" },
]
sizes = [{ N = 4096 }]
reference = "a + b"
"""


def test_out_holds_the_kernel_and_its_launcher(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = workspace(tmp_path / "ws", {"k.cu": VADD, "main.cpp": MAIN_CPP, "htam.toml": HARNESS})
    out = tmp_path / "out"
    # budget 3: the static chain vectorize -> restrict -> launch bounds (a 4th step backtracks to the start, and
    # static mode takes the latest accepted kernel as its best)
    code = main(["optimize", str(ws / "k.cu"), "--kernel", "vadd", "--static", "--budget", "3", "--out", str(out),
                 "--memory", str(tmp_path / "mem.sqlite3")])
    assert code == 0
    printed = capsys.readouterr().out
    best = (out / "best.cu").read_text()
    launcher = (out / "main.cpp").read_text()
    # the best kernel's path makes its pointers const __restrict__: the launcher's prototype of vadd says the same
    # (the declaration is edited with the definition), and any launch-changing step on the path is written there
    assert "vadd(const float *__restrict__ a, const float *__restrict__ b, float *c, int n) {" in best
    assert "__global__ void vadd(const float *__restrict__ a, const float *__restrict__ b, float *c, int n);" \
        in launcher
    # the float4 step divides the grid by 4 at the launch, in the launcher
    assert ("float4" in best) == ("+ 3) / 4, threads>>>" in launcher)
    assert "float4" in best
    assert f"its launcher: {out / 'main.cpp'}" in printed
    assert (ws / "main.cpp").read_text() == MAIN_CPP  # the user's files are untouched
    for name in ("best.cu", "main.cpp"):
        assert_compiles(out / name, flags=("-x", "cu"), tmp=tmp_path, context=name)



def test_a_header_kernel_and_the_launcher_that_includes_it_build_in_out(tmp_path: Path) -> None:
    """Regression (a new user's trial): the kernel in ``k.cuh``, its launch rewritten in ``run.cu`` that includes
    it; `--out` held ``best.cuh`` and ``run.cu``, whose ``#include "k.cuh"`` did not build there. The best kernel is
    now also written as ``k.cuh`` (only when a launcher is written), and the pair builds as it is in ``out``."""
    from htam_core.optimize.report import _write_kernel_files

    launcher = '#include "k.cuh"\n' + MAIN_CPP.split("\n", 2)[2]
    out = tmp_path / "out"
    out.mkdir()
    best, launchers, copy = _write_kernel_files(out, ".cuh", VADD, {str(tmp_path / "ws" / "run.cu"): launcher},
                                                "k.cuh")
    assert best == out / "best.cuh" and launchers == [out / "run.cu"] and copy == out / "k.cuh"
    assert copy.read_text() == VADD
    assert_compiles(out / "run.cu", tmp=tmp_path)
    alone = tmp_path / "alone"
    alone.mkdir()
    assert _write_kernel_files(alone, ".cuh", VADD, {}, "k.cuh")[2] is None  # no launcher: best.cuh alone
    assert sorted(x.name for x in alone.iterdir()) == ["best.cuh"]
