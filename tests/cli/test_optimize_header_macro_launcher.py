"""``htam optimize --out`` on a kernel launched from ``host.cu`` through a launch macro ``#define``d in
``include/launch.cuh``: ``--out`` holds ``best.cu`` and ``host.cu`` as the best kernel's steps left it (the use's
arguments edited, its prototype of the kernel qualified once), the header is left as it is, and the launcher
compiles against the workspace's header (static mode, so the test means the same with or without a GPU). Kernel
and macro written for this test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.cli.main import main
from tests.support.nvcc_check import assert_compiles
from tests.support.workspace_fixtures import workspace

pytestmark = [pytest.mark.usefixtures("private_htam_env"),
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")]

KERNEL = """#include <cuda_runtime.h>
__global__ void scale(const float *x, float *y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = s * x[i];
}
"""
HEADER = "#pragma once\n#define LAUNCH_KERNEL(kernel, g, b, s, st, ...) kernel<<<g, b, s, st>>>(__VA_ARGS__)\n"
HOST = """#include <cuda_runtime.h>
#include "include/launch.cuh"
__global__ void scale(const float *x, float *y, float s, int n);
void run(const float *x, float *y, int n) {
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    LAUNCH_KERNEL(scale, blocks, threads, 0, 0, x, y, 2.0f, n);
}
"""
HARNESS = """[kernel.scale]
version = 1
file = "k.cu"
block = "256"
grid = "(cdiv(N, 256),)"
args = ["x", "y", "s", "n"]
outputs = ["y"]
inputs = [
  { name = "x", shape = ["N"], dtype = "float32", init = "randn" },
  { name = "y", shape = ["N"], dtype = "float32", init = "empty" },
  { name = "s", dtype = "float32", value = "2.0" },
  { name = "n", dtype = "int32", value = "N" },
]
sizes = [{ N = 4096 }]
reference = "2.0 * x"
"""


def test_out_holds_the_launcher_whose_macro_use_was_edited(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = workspace(tmp_path / "ws", {"k.cu": KERNEL, "include/launch.cuh": HEADER, "host.cu": HOST,
                                     "htam.toml": HARNESS})
    out = tmp_path / "out"
    code = main(["optimize", str(ws / "k.cu"), "--kernel", "scale", "--static", "--budget", "3", "--out", str(out),
                 "--memory", str(tmp_path / "mem.sqlite3")])
    assert code == 0
    assert f"its launcher: {out / 'host.cu'}" in capsys.readouterr().out
    best, launcher = (out / "best.cu").read_text(), (out / "host.cu").read_text()
    assert "float4" in best  # the static chain's first step divides the grid by 4 at the use
    assert "LAUNCH_KERNEL(scale, ((blocks) + 3) / 4, threads, 0, 0, x, y, 2.0f, n);" in launcher
    assert launcher.count("__restrict__") == ("__restrict__" in best)
    assert (ws / "host.cu").read_text() == HOST and (ws / "include/launch.cuh").read_text() == HEADER
    for name in ("best.cu", "host.cu"):
        assert_compiles(out / name, flags=("-x", "cu"), includes=(ws,), tmp=tmp_path, context=name)
