"""``const __restrict__`` and ``__ldg`` leave out an input that a call of the launch's host wrapper passes as the
same buffer as a written parameter, the call in another file of the workspace (``main.cu``) or in the launching
file; a wrapper whose every call passes distinct buffers keeps the step. Kernels written for these tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.workspace_fixtures import workspace

KERNEL = """#include <cuda_runtime.h>
__global__ void axpy(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
WRAPPER = "void run(float *out, const float *in, int n) { axpy<<<(n + 255) / 256, 256>>>(in, out, 2.0f, n); }\n"
PROTO = "__global__ void axpy(const float *x, float *y, float a, int n);\n"
MAIN = """#include <cuda_runtime.h>
void run(float *out, const float *in, int n);
int main() {
    float *d, *e;
    cudaMalloc(&d, 4096);
    cudaMalloc(&e, 4096);
    CALLS
    return 0;
}
"""


def _propose(ws: Path, tid: str):
    model = load(ws / "k.cu")
    return registry.propose(tid, model, model.kernel("axpy"))


@pytest.mark.parametrize("tid", ["cuda.restrict_const", "cuda.ldg"])
@pytest.mark.parametrize("launcher", ["k.cu", "host.cu"])
def test_an_in_place_call_in_another_file_keeps_the_input_plain(tmp_path: Path, tid: str, launcher: str) -> None:
    files = {"k.cu": KERNEL + WRAPPER} if launcher == "k.cu" else {"k.cu": KERNEL, "host.cu": PROTO + WRAPPER}
    ws = workspace(tmp_path / "ws", {**files, "main.cu": MAIN.replace("CALLS", "run(d, e, 1024);\n    run(d, d, 1024);")})
    r = _propose(ws, tid)
    assert isinstance(r, NotApplicable)
    assert "passes the same buffer (d) as y through run() called at main.cu:8" in r.reason
    (ws / "main.cu").write_text(MAIN.replace("CALLS", "run(d, e, 1024);\n    run(e, d, 1024);"))
    made = _propose(ws, tid)
    assert isinstance(made, list) and made[0].params["params"] == ["x"]


def test_an_in_place_call_in_the_launching_file(tmp_path: Path) -> None:
    host = PROTO + WRAPPER + "void twice(float *d) { run(d, d, 1024); }\n"
    ws = workspace(tmp_path / "ws", {"k.cu": KERNEL, "host.cu": host})
    r = _propose(ws, "cuda.restrict_const")
    assert isinstance(r, NotApplicable)
    assert "the launch on line 2 of host.cu passes the same buffer (d) as y through run() called on line 3 of host.cu" \
        in r.reason
