"""A launch that cannot fit one block on an SM is profiled as ``cannot-launch``, first and alone, never as
spills with occupancy 0 (the case: a Triton fp32 matmul config needing 294,912 B of shared memory per block,
more than sm_90's 227 KB, that ptxas also spills)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.profile.api import source_profile, static_profile
from htam_core.profile.classify import classify
from htam_core.profile.occupancy import theoretical_occupancy
from htam_core.profile.static_kinds import occupancy as _occupancy
from htam_core.runtime.cache import CompileCache
from htam_core.source import load, parse_text
from htam_core.types.profile import BOTTLENECK_CLASSES, Profile

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "matmul_too_much_shared.py"


def _static(**kw) -> Profile:
    return Profile(kernel="matmul_kernel", mode="static", device="sm_90 (static)", **kw)


@pytest.mark.parametrize(("regs", "block", "smem", "what"), [
    (255, 128, 294_912, "shared memory per block"),  # the reported Triton config
    (32, 2048, 0, "threads per block"),
    (128, 1024, 0, "registers per block"),
])
def test_a_launch_over_a_per_block_limit_is_cannot_launch_not_spills(regs, block, smem, what):
    occ = theoretical_occupancy(regs, block, smem, target="sm_90")
    assert occ.active_blocks_per_sm == 0 and any(what in r for r in occ.cannot_launch)
    p = _static(registers=regs, spill_bytes=65212, shared_bytes=smem, block_size=block)
    _occupancy(p, "sm_90")
    assert p.theoretical_occupancy is None
    assert p.warnings[0].startswith("cannot launch on sm_90:") and what in p.warnings[0]
    b = classify(p, target="sm_90")
    assert b.cls == "cannot-launch" and b.secondary == [] and "cannot-launch" in BOTTLENECK_CLASSES
    assert what in b.evidence[0] and not any("occupancy 0" in e for e in b.evidence)


def test_a_launch_that_fits_keeps_its_occupancy_and_spills():
    p = _static(registers=255, spill_bytes=64, shared_bytes=98_304, block_size=128)
    _occupancy(p, "sm_90")
    assert p.theoretical_occupancy and "launch" not in p.extra
    assert classify(p, target="sm_90").cls == "register-spill"


_CUDA = """
#define THREADS 256
__global__ void __launch_bounds__(THREADS) scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
__global__ void big(float *x, int n) {
    extern __shared__ float buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = x[i];
    __syncthreads();
    if (i < n) x[i] = buf[blockDim.x - 1 - threadIdx.x];
}
void run(float *x, int n) {
    scale<<<(n + 511) / 512, 512>>>(x, n);
    big<<<(n + 255) / 256, 256, 240 * 1024>>>(x, n);
}
"""


def test_cuda_block_over_launch_bounds_cannot_launch_from_the_source():
    model = parse_text(_CUDA, "cuda", "k.cu")
    p = source_profile(model, "scale", harness=None)
    assert p.bottleneck.cls == "cannot-launch"
    assert "512 threads > __launch_bounds__(256)" in p.bottleneck.evidence[0]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_cuda_dynamic_shared_memory_over_the_limit_cannot_launch(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(_CUDA)
    model = load(str(src))
    cache = CompileCache(tmp_path / "cache")
    p = static_profile(model, "big", harness=None, cache=cache)
    assert p.bottleneck.cls == "cannot-launch" and "shared memory per block" in p.bottleneck.evidence[0]
    assert p.theoretical_occupancy is None
    p = static_profile(model, "scale", harness=None, cache=cache)
    assert p.bottleneck.cls == "cannot-launch" and "__launch_bounds__(256)" in p.bottleneck.evidence[0]


@pytest.mark.slow
def test_the_reported_triton_config_is_cannot_launch(tmp_path):
    pytest.importorskip("triton")
    model = load(str(FIXTURE))
    p = static_profile(model, "matmul_kernel", harness=None, cache=CompileCache(tmp_path / "cache"))
    assert p.shared_bytes == 294_912
    assert p.bottleneck.cls == "cannot-launch" and p.theoretical_occupancy is None
    assert "294,912 B of shared memory per block" in p.bottleneck.evidence[0]
