"""A shared-memory scan is not a reduction tree (the analysis layer's ``scan_loops``): Hillis-Steele (single or
double buffered) and Blelloch sweeps write each element from the one a stride *below* it, so ``shared_tree_loops``
leaves them out, the ranking does not offer the tree steps, and the tree steps refuse with "this is a scan, not a
reduction". A reduction tree (reads a stride above) stays one. Also: the float4 refusal of a loop-free kernel gives
one reason. Kernels written here."""

from __future__ import annotations

import pytest
from transform_helpers import facts_of_text

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

SCANS = {
    "hillis_steele_temp": """#define B 256
__global__ void k(const float* in, float* out, int n) {
    __shared__ float s[B];
    int tid = threadIdx.x;
    int i = blockIdx.x * B + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < B; offset *= 2) {
        float t = (tid >= offset) ? s[tid - offset] : 0.0f;
        __syncthreads();
        s[tid] += t;
        __syncthreads();
    }
    if (i < n) out[i] = s[tid];
}""",
    "double_buffered": """#define B 512
__global__ void k(const float* in, float* out, int n) {
    __shared__ float buf[2][B];
    int tid = threadIdx.x, gid = blockIdx.x * B + tid, pout = 0, pin = 1;
    buf[pout][tid] = (gid < n) ? in[gid] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < B; offset <<= 1) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (tid >= offset) buf[pout][tid] = buf[pin][tid] + buf[pin][tid - offset];
        else buf[pout][tid] = buf[pin][tid];
        __syncthreads();
    }
    if (gid < n) out[gid] = buf[pout][tid];
}""",
    "blelloch": """#define B 256
__global__ void k(const float* in, float* out) {
    __shared__ float temp[B];
    int t = threadIdx.x;
    temp[t] = in[blockIdx.x * B + t];
    int offset = 1;
    for (int d = B >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    if (t == 0) temp[B - 1] = 0.0f;
    for (int d = 1; d < B; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
            float v = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += v;
        }
    }
    __syncthreads();
    out[blockIdx.x * B + t] = temp[t];
}""",
    "suffix_mirrored": """#define B 256
__global__ void k(const float* in, float* out) {
    __shared__ float s[B];
    int tid = threadIdx.x;
    s[tid] = in[blockIdx.x * B + tid];
    __syncthreads();
    for (int d = 1; d < blockDim.x; d *= 2) {
        if (tid % (2 * d) == 0) s[tid] += s[tid + d];
        __syncthreads();
    }
    if (tid == 0) s[0] = 0.0f;
    __syncthreads();
    for (int d = blockDim.x / 2; d >= 1; d /= 2) {
        if (tid % (2 * d) == 0) { float t = s[tid + d]; s[tid + d] = s[tid]; s[tid] += t; }
        __syncthreads();
    }
    out[blockIdx.x * B + tid] = s[tid];
}""",
}

TREE = """#define B 256
__global__ void k(const float* in, float* out) {
    __shared__ float sdata[B];
    unsigned int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * B + tid];
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}"""


@pytest.mark.parametrize("name", sorted(SCANS))
def test_a_scan_is_no_reduction_tree(name):
    f = facts_of_text(SCANS[name], "k")
    assert f.scan_loops(), name
    assert f.shared_tree_loops() == () and f.interleaved_tree_loops() == ()
    assert f.no_shared_tree().startswith("this is a scan, not a reduction")


def test_a_reduction_tree_is_no_scan():
    f = facts_of_text(TREE, "k")
    assert f.scan_loops() == () and len(f.shared_tree_loops()) == 1 and f.no_shared_tree() is None


@pytest.mark.parametrize("name", sorted(SCANS))
def test_the_tree_steps_are_not_ranked_and_refuse_as_a_scan(name):
    model = parse_text(SCANS[name], "cuda")
    k = model.kernel("k")
    facts = compute_facts(k.features, k.language, None, k, model)
    kb = load_knowledge()
    assert facts["interleaved_tree"] is False and facts["shared_tree"] is False
    assert kb.strategy("sequential_addressing").applies.evaluate(facts) is False
    for tid in ("cuda.sequential_addressing", "cuda.warp_shuffle_finish"):
        res = registry.propose(tid, model, k)
        assert isinstance(res, NotApplicable)
        assert "this is a scan, not a reduction" in res.reason, res.reason


def test_the_float4_refusal_of_a_loop_free_kernel_is_one_reason():
    """A loop-free kernel the elementwise form refuses (a reversed store) gives that one reason, not also "no float4
    loop" (it has no loop to vectorize)."""
    text = """#include <cuda_fp16.h>
__global__ void flip(const __half* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[n - 1 - i] = x[i];
}
void go(const __half* x, __half* y, int n) { flip<<<(n + 255) / 256, 256>>>(x, y, n); }
"""
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.vectorize_float4", model, model.kernel("flip"))
    assert isinstance(res, NotApplicable)
    assert "y is written or escapes at an address other than y[i]" in res.reason, res.reason
    assert "no float4 loop" not in res.reason, res.reason


def test_a_tree_that_also_writes_a_mirrored_slot_is_no_scan():
    text = TREE.replace("if (tid == 0) out[blockIdx.x] = sdata[0];",
                        "if (tid == 0) out[blockIdx.x] = sdata[0];\n}\n__global__ void m(float* out, int n) {\n"
                        "    __shared__ float t[256];\n    t[threadIdx.x] = 1.0f;\n    __syncthreads();\n"
                        "    for (int s = 1; s < 256; s *= 2) {\n"
                        "        if (threadIdx.x < s) t[n - 1 - threadIdx.x] = t[threadIdx.x + s];\n"
                        "        __syncthreads();\n    }\n    out[0] = t[0];")
    f = facts_of_text(text, "m")
    assert f.scan_loops() == ()
