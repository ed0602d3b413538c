"""The source-only static profile (the editor's first stage without a GPU): no compile, honest about it."""

from __future__ import annotations

import pytest

from htam_core.profile.api import source_profile
from htam_core.source import parse_text
from htam_core.types.errors import ProfileError

CUDA = """
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
void launch(const float* x, float* y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n); }
"""

TRITON = """
import triton
import triton.language as tl

@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

def launch(x, y, out, n):
    add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=8)
"""


def test_cuda_source_profile_reads_the_launch_and_compiles_nothing():
    m = parse_text(CUDA, "cuda", "/nonexistent/k.cu")
    p = source_profile(m, "scale", "sm_90")
    assert (p.mode, p.device, p.extra["stage"]) == ("static", "sm_90 (source only)", "source")
    assert p.block_size == 256 and p.registers is None and p.spill_bytes is None
    assert p.theoretical_occupancy is None and "compile" not in p.extra
    assert any(w.startswith("source-only profile: not compiled yet") for w in p.warnings)
    assert p.bottleneck is not None


def test_triton_source_profile_takes_num_warps_and_constexprs_from_the_launch_site():
    m = parse_text(TRITON, "python", "/nonexistent/k.py")
    p = source_profile(m, "add")
    assert p.block_size == 256 and p.extra["num_warps"] == 8 and p.extra["constexprs"] == {"BLOCK": 1024}
    assert p.registers is None


def test_triton_without_num_warps_says_it_assumed_the_default():
    m = parse_text(TRITON.replace(", num_warps=8", ""), "python", "/nonexistent/k.py")
    p = source_profile(m, "add")
    assert p.block_size == 128 and "Triton's default" in p.extra["block_size_source"]


def test_unknown_kernel_is_one_clear_error():
    with pytest.raises(ProfileError, match="nope"):
        source_profile(parse_text(CUDA, "cuda"), "nope")
