"""Harness inference through a templated host call chain (htam_core.harness.cu_eval, infer_cuda, infer_host):
the ``T`` of ``runTest<T>`` bound by ``main``'s ``runTest<float>(...)`` and followed down the chain, block and
grid counts set through by-reference parameters of a host helper (``int &blocks``), and a ``switch`` on a
kernel number reaching the case that launches the kernel asked for.

Two programs: the look-alike of a teaching sample's reduction project (tests/fixtures/sample_projects/reduction,
kernel file and ``main()`` in separate files), and small ones written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.harness.cu_eval import Program, Scope
from htam_core.harness.infer_cuda import infer_cuda_harness
from htam_core.harness.infer_host import infer_cuda

REDUCTION = (Path(__file__).resolve().parents[1] / "fixtures" / "sample_projects" / "reduction" / "Samples"
             / "reduction" / "reduction_kernel.cu")


def _sizes(h) -> dict:
    return h.sizes[0]


@pytest.mark.parametrize("kernel,which,blocks", [("reduce0", 0, 65536), ("reduce1", 1, 65536),
                                                  ("reduce2", 2, 65536), ("reduce3", 3, 32768),
                                                  ("reduce4", 4, 32768)])
def test_reduction_sample_each_kernel_gets_its_own_case(kernel: str, which: int, blocks: int) -> None:
    h = infer_cuda(REDUCTION, kernel)
    assert h.launcher == "reduce<float>"  # runTest<float> -> benchmarkReduce<T> -> reduce<T>: T is float
    ins = {i.name: i for i in h.inputs}
    assert ins["d_in"].dtype == "float32" and ins["d_in"].shape == [1 << 24]  # size * sizeof(T), T = float
    assert ins["d_out"].shape == [blocks]
    # getNumBlocksAndThreads(..., numBlocks, numThreads) sets both through `int &`: kernels 3 and up halve the grid
    assert _sizes(h)["threads"] == 256 and _sizes(h)["blocks"] == blocks
    assert _sizes(h)["whichKernel"] == which
    forced = [n for n in h.notes if "`whichKernel` of main() is set to" in n]
    assert bool(forced) == (which != 0)  # main's default (0) already selects reduce0
    assert any("main() -> runTest -> benchmarkReduce" in n for n in h.notes)  # where the launcher is called


HOST = r"""
#include <cuda_runtime.h>

template <typename T>
__global__ void scale(T *out, const T *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2 * in[i];
}

static void plan(int n, int perBlock, int &grid, int &block) {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  block = perBlock;
  grid = GRID_EXPR;
}

template <typename T>
void run(int n) {
  T *d_in = nullptr, *d_out = nullptr;
  cudaMalloc((void **)&d_in, n * sizeof(T));
  cudaMalloc((void **)&d_out, n * sizeof(T));
  int grid = 0, block = 0;
  plan(n, 128, grid, block);
  scale<T><<<grid, block>>>(d_out, d_in, n);
}

int main() {
  run<double>(1000);
  return 0;
}
"""


def _host(tmp_path: Path, grid: str) -> Path:
    p = tmp_path / "scale.cu"
    p.write_text(HOST.replace("GRID_EXPR", grid), encoding="utf-8")
    return p


def test_template_type_and_reference_outputs_are_followed(tmp_path: Path) -> None:
    h = infer_cuda_harness(_host(tmp_path, "(n + block - 1) / block"), "scale")
    ins = {i.name: i for i in h.inputs}
    assert ins["in_"].dtype == "float64" and ins["in_"].shape == [1000]  # run<double>: sizeof(T) is 8
    assert h.grid == "(8, 1, 1)" and h.block == "(128, 1, 1)"  # (1000 + 127) / 128, both set through `int &`


def test_a_reference_output_from_the_device_stays_a_device_quantity(tmp_path: Path) -> None:
    h = infer_cuda_harness(_host(tmp_path, "prop.multiProcessorCount * 4"), "scale")
    assert h.grid.startswith("(sm_count * 4")  # read again on the harness's device, never a number from here
    assert h.block == "(128, 1, 1)"


def test_a_reference_output_htam_cannot_evaluate_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(_host(tmp_path, "pickGrid(n)"), "scale")
    msg = e.value.message
    assert "\n" not in msg
    assert "`grid` is set through the reference parameter `grid` of plan()" in msg and "pickGrid" in msg


def test_sizeof_of_an_unbound_template_type_is_named() -> None:
    prog = Program("template <class T> void f(T *p) {}\n")
    s = Scope(parent=prog.globals)
    s.types["T"] = "double"
    assert prog.resolve("T", s) == "double" and prog.resolve("T") == "T"

