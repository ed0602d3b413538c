"""A kernel whose stores are in a device function it calls, chosen by a template argument (the shape of
llm.c's ``trimul_global<matmul_tri>``; written here, no llm.c file is read): its non-const pointer is an
output, the version dispatch keeps the launcher's template arguments, and every version builds with nvcc."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.bench import llmc
from htam_core.harness.base import HarnessError
from htam_core.harness.build_check import check_build
from htam_core.harness.cu_main import find_nvcc
from htam_core.harness.infer_cuda import infer_cuda_harness, output_params
from htam_core.source.api import parse_text

TRI = r"""
#include <cuda_runtime.h>
using row_fn = void(*)(float* p, const float* x, int n, float alpha);

__device__ void scale_naive(float* p, const float* x, int n, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { p[i] = x[i] * alpha; }
}

__device__ void scale_fast(float* p, const float* x, int n, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { p[i] = __fmul_rn(x[i], alpha); }
}

template<row_fn fn>
__global__ void __launch_bounds__(128) rows_global(float* out, const float* inp, int n) {
    float* r = out + 0;
    fn(r, inp, n, 0.5f);
}

template<row_fn fn>
void rows_launcher(float* out, const float* inp, int n) {
    rows_global<fn><<<dim3((n + 127) / 128, 1, 1), dim3(128)>>>(out, inp, n);
}

void rows_gpu(int kernel_num, float* out, const float* inp, int n) {
    switch (kernel_num) {
        case 1:
            rows_launcher<scale_naive>(out, inp, n);
            break;
        case 2:
            rows_launcher< scale_fast >(out, inp, n);
            break;
    }
}

int main(int argc, char** argv) {
    int n = 4096;
    float *d_out, *d_inp;
    cudaMalloc(&d_out, n * sizeof(float));
    cudaMalloc(&d_inp, n * sizeof(float));
    int kernel_num = 1;
    rows_gpu(kernel_num, d_out, d_inp, n);
    return 0;
}
"""


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """An llm.c-layout folder holding the one file (no common.h: the file needs none)."""
    (tmp_path / "llmc").mkdir()
    (tmp_path / "llmc" / "rows.cu").write_text(TRI, encoding="utf-8")
    return tmp_path / "llmc"


def test_a_pointer_passed_on_to_a_callee_is_an_output(folder: Path) -> None:
    path = folder / "rows.cu"
    model = parse_text(path.read_text(), "cuda", str(path))
    outs, note = output_params(model, model.kernel("rows_global"))
    assert outs == {"out"} and note and "passes out on" in note  # inp is const: never an output
    h = infer_cuda_harness(path, "rows_global")
    assert h.outputs == ["out"] and h.launcher == "rows_launcher<scale_naive>"
    assert {i.name: i.init for i in h.inputs if not i.is_scalar} == {"out": "empty", "inp": "randn"}
    assert any("passes out on" in n for n in h.notes)


def test_a_kernel_that_writes_nothing_is_still_refused(tmp_path: Path) -> None:
    # every pointer const: nothing may be written, so there is still no output to compare
    text = TRI.replace("template<row_fn fn>\n__global__ void __launch_bounds__(128) rows_global(float* out,",
                       "template<row_fn fn>\n__global__ void __launch_bounds__(128) rows_global(const float* out,")
    text = text.replace("float* r = out + 0;\n    fn(r,", "const float* r = out + 0;\n    fn((float*)0,")
    path = tmp_path / "none.cu"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HarnessError, match="writes through none of its pointer arguments"):
        infer_cuda_harness(path, "rows_global")


def test_versions_that_differ_by_template_arguments_keep_them(folder: Path, tmp_path: Path) -> None:
    (entry,) = llmc.discover(folder)
    assert [(v.number, v.launcher, v.kernels) for v in entry.versions] == [
        (1, "rows_launcher<scale_naive>", ["rows_global"]), (2, "rows_launcher<scale_fast>", ["rows_global"])]
    naive = llmc.build_harness(entry, entry.naive, tmp_path / "w")
    assert naive.harness is not None, naive.reason
    expert = llmc.build_harness(entry, entry.experts[0], tmp_path / "w", like=naive.harness)
    assert expert.unchecked is None and expert.harness is not None
    assert expert.harness.launcher == "rows_launcher<scale_fast>"
    assert expert.harness.oracle_launcher == "rows_launcher<scale_naive>"  # checked against the naive version


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found")
def test_each_version_builds_with_nvcc(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Needs nvcc, not a GPU: the naive shim, and the expert's with its oracle's, build for sm_90."""
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    (entry,) = llmc.discover(folder)
    naive = llmc.build_harness(entry, entry.naive, tmp_path / "w")
    first = check_build(naive.harness)
    assert len(first.built) == 1 and not first.oracle_checked
    expert = llmc.build_harness(entry, entry.experts[0], tmp_path / "w", like=naive.harness)
    both = check_build(expert.harness)
    assert both.oracle_checked and len(both.built) == 2
    assert "rows_launcher<scale_fast>" in both.built[0] and "rows_launcher<scale_naive>" in both.built[1]


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found")
def test_a_build_failure_names_the_build(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    (entry,) = llmc.discover(folder)
    naive = llmc.build_harness(entry, entry.naive, tmp_path / "w")
    bad = Path(naive.harness.path)
    bad.write_text(bad.read_text().replace("p[i] = x[i] * alpha;", "p[i] = x[i] * alpha"), encoding="utf-8")
    with pytest.raises(HarnessError, match="the build of rows_launcher<scale_naive> failed: nvcc could not build"):
        check_build(naive.harness)
