"""A launch macro defined in a header (``include/launch.cuh``) and used in another file (``host.cu``, or
``src/host.cu`` with ``#include "../include/launch.cuh"``) than the kernel's (``k.cu``): the launch-changing steps
(block size, grid-stride loop with a capped grid, dynamic shared memory) are offered and made by editing the use's
arguments in the launching file; the kernel's file and the header keep their text where the step does not change
them, and both ``.cu`` files compile with nvcc. A header macro whose body computes the grid keeps refusing in one
line. Kernels and macros written for these tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate, NotApplicable, apply_edits
from tests.support.nvcc_check import assert_compiles
from tests.support.workspace_fixtures import workspace

KERNELS = """#include <cuda_runtime.h>
__global__ void scale(const float *x, float *y, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = s * x[i];
}

__global__ void hist(const int *data, int *h, int n, int nb)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&h[data[i] % nb], 1);
}
"""

HOST = """#include <cuda_runtime.h>
#include "INCLUDE"

__global__ void scale(const float *x, float *y, float s, int n);
__global__ void hist(const int *data, int *h, int n, int nb);

void run(const float *x, float *y, const int *d, int *h, int n, int nb, cudaStream_t st)
{
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    USE_SCALE;
    USE_HIST;
}
"""

#: name -> (#define in the header, scale's use, hist's use)
SPELLINGS = {
    "two slots": ("#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)",
                  "LAUNCH(scale, blocks, threads, x, y, 2.0f, n)", "LAUNCH(hist, blocks, 256, d, h, n, nb)"),
    "four slots": ("#define LAUNCH_KERNEL(kernel, g, b, s, st, ...) \\\n    kernel<<<g, b, s, st>>>(__VA_ARGS__)",
                   "LAUNCH_KERNEL(scale, blocks, threads, 0, st, x, y, 2.0f, n)",
                   "LAUNCH_KERNEL(hist, blocks, 256, 0, st, d, h, n, nb)"),
    "gnu args": ("#define LAUNCH_G(k, g, b, args...) k<<<g, b>>>(args)",
                 "LAUNCH_G(scale, blocks, threads, x, y, 2.0f, n)", "LAUNCH_G(hist, blocks, 256, d, h, n, nb)"),
    "checked statement": ("#define CHECKED(k, g, b, ...) \\\n    do { k<<<g, b>>>(__VA_ARGS__); cudaGetLastError(); } while (0)",
                          "CHECKED(scale,\n            blocks, threads, x, y, 2.0f, n)",
                          "CHECKED(hist, blocks, 256, d, h, n, nb)"),
}

#: where the launching file sits -> how it includes the header (the last one through the workspace root, an -I
#: folder of the build)
LAYOUTS = {"host.cu": "include/launch.cuh", "src/host.cu": "../include/launch.cuh", "app/host.cu": "include/launch.cuh"}

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def _workspace(tmp: Path, name: str, host: str) -> Path:
    define, s, h = SPELLINGS[name]
    text = HOST.replace("INCLUDE", LAYOUTS[host]).replace("USE_SCALE", s).replace("USE_HIST", h)
    return workspace(tmp / "ws", {"k.cu": KERNELS, "include/launch.cuh": f"#pragma once\n{define}\n", host: text})


def _propose(ws: Path, tid: str, kernel: str) -> list[Candidate] | NotApplicable:
    model = load(ws / "k.cu")
    return registry.propose(tid, model, model.kernel(kernel))


def _written(ws: Path, cand: Candidate) -> dict[str, str]:
    """Every file of the workspace as the candidate leaves it, by path relative to ``ws``."""
    out = {str(p.relative_to(ws)): p.read_text() for p in ws.rglob("*") if p.is_file()}
    out["k.cu"] = cand.new_text
    for p, edits in cand.file_edits.items():
        out[str(Path(p).relative_to(ws))] = apply_edits(Path(p).read_text(), edits)
    return out


def _compile(tmp: Path, files: dict[str, str], host: str) -> None:
    """Write ``files`` into a fresh folder and compile ``k.cu`` and the launching file with nvcc (sm_90)."""
    out = tmp / "built"
    shutil.rmtree(out, ignore_errors=True)
    workspace(out, files)
    for name in ("k.cu", host):
        assert_compiles(out / name, includes=(out,), context=name)


@pytest.mark.parametrize("host", list(LAYOUTS))
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_block_size_and_grid_stride_edit_the_use(tmp_path: Path, name: str, host: str) -> None:
    ws = _workspace(tmp_path, name, host)
    use = SPELLINGS[name][1]
    block = _propose(ws, "cuda.block_size", "scale")
    assert isinstance(block, list), block.reason
    c = next(c for c in block if c.params.get("block") == [128])
    assert list(c.file_edits) == [str(ws / host)] and c.title_note == "launch in host.cu edited too"
    files = _written(ws, c)
    assert "int threads = 128;" in files[host] and use in files[host]
    assert files["k.cu"] == KERNELS and files["include/launch.cuh"] == (ws / "include/launch.cuh").read_text()
    stride = _propose(ws, "cuda.grid_stride", "scale")
    assert isinstance(stride, list), stride.reason
    g = next(c for c in stride if c.params.get("blocks_per_sm") == 8)
    gfiles = _written(ws, g)
    assert use.replace("blocks", "htam_sm_grid(blocks, 8)", 1) in gfiles[host]
    assert "gridDim.x" in gfiles["k.cu"]


@needs_nvcc
@pytest.mark.parametrize("host", list(LAYOUTS))
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_the_edited_files_compile(tmp_path: Path, name: str, host: str) -> None:
    ws = _workspace(tmp_path, name, host)
    for tid in ("cuda.block_size", "cuda.grid_stride"):
        cands = _propose(ws, tid, "scale")
        assert isinstance(cands, list) and cands[0].file_edits, cands
        _compile(tmp_path, _written(ws, cands[0]), host)


@needs_nvcc
def test_dynamic_shared_memory_goes_into_the_use(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "four slots", "src/host.cu")
    cands = _propose(ws, "cuda.smem_histogram", "hist")
    assert isinstance(cands, list), cands.reason
    (c,) = cands
    assert c.params["shared"] == "dynamic"
    files = _written(ws, c)
    # the dynamic shared memory goes into the use's fourth slot; the privatized histogram also caps the grid
    assert ("LAUNCH_KERNEL(hist, htam_sm_grid(blocks, 8), 256, (nb) * sizeof(int), st, d, h, n, nb)"
            in files["src/host.cu"])
    _compile(tmp_path, files, "src/host.cu")


def test_a_header_macro_that_computes_the_grid_keeps_refusing(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws", {
        "k.cu": KERNELS,
        "include/launch.cuh": "#define LAUNCH1D(k, n, ...) k<<<((n) + 255) / 256, 256>>>(__VA_ARGS__)\n",
        "host.cu": HOST.replace("INCLUDE", "include/launch.cuh").replace(
            "USE_SCALE", "LAUNCH1D(scale, n, x, y, 2.0f, n)").replace("USE_HIST", "(void)0")})
    r = _propose(ws, "cuda.block_size", "scale")
    assert isinstance(r, NotApplicable)
    assert "LAUNCH1D" in r.reason and "computes the grid" in r.reason and "\n" not in r.reason


def test_the_launching_files_prototype_is_edited_once(tmp_path: Path) -> None:
    """The launching file holds a prototype of the kernel; it is read in the joint unit, not a second time as a
    header that only declares the kernel."""
    ws = _workspace(tmp_path, "two slots", "host.cu")
    cands = _propose(ws, "cuda.restrict_const", "scale")
    assert isinstance(cands, list), cands.reason
    host = _written(ws, cands[0])["host.cu"]
    assert "__global__ void scale(const float *__restrict__ x, float *y, float s, int n);" in host
    assert host.count("__restrict__") == 1
