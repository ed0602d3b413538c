"""The .cu host-launcher harness path: build as a shared library on the CPU; run the suite's CUDA kernels on a GPU."""

from __future__ import annotations

import ctypes
import shutil
from pathlib import Path

import pytest

from htam_core.harness import find_harness
from htam_core.harness.base import HarnessError
from htam_core.harness.cu_launcher import build_shared_library, host_launcher

SUITE = Path(__file__).resolve().parents[2] / "bench" / "suite"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc not found")


@needs_nvcc
def test_suite_launcher_builds_and_exports_its_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    lib = build_shared_library(SUITE / "axpy_tiny_block.cu", "sm_90")
    assert lib.is_file() and build_shared_library(SUITE / "axpy_tiny_block.cu", "sm_90") == lib  # cached
    assert hasattr(ctypes.CDLL(str(lib)), "launch_axpy")


@needs_nvcc
def test_cpp_launcher_binds_through_a_shim_and_a_missing_one_is_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    cu = tmp_path / "k.cu"
    cu.write_text("__global__ void k(float* x) { x[0] = 1.f; }\nvoid launch_k(float* x) { k<<<1, 1>>>(x); }\n")
    assert callable(host_launcher(cu, "launch_k", "sm_90", [None]))  # no extern "C": called through the shim
    with pytest.raises(HarnessError, match="defines no host function 'launch_q'"):
        host_launcher(cu, "launch_q", "sm_90", [None])
    bad = tmp_path / "bad.cu"
    bad.write_text("extern \"C\" void f() { nope; }\n")
    with pytest.raises(HarnessError, match="could not build"):
        build_shared_library(bad, "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("kernel,file", [("axpy_tiny_block", "axpy_tiny_block.cu"),
                                         ("transpose_naive", "transpose_naive.cu"),
                                         ("block_sum_interleaved", "reduce_sum_smem.cu")])
def test_suite_cuda_kernels_are_correct_on_the_gpu(kernel: str, file: str) -> None:
    from htam_core.harness.runner import verify_in_worker

    h = find_harness(SUITE / file, kernel)
    v = verify_in_worker(h, interpret=False)
    assert v.status == "correct" and v.correct, v.messages
