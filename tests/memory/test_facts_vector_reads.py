"""``scalar_contiguous_reads`` counts the reads a 16-byte vectorization would widen, not vector types anywhere.

Regression (llm.c ``layernorm_backward_kernel4`` shape): a kernel whose row loops read scalars but whose
write-back uses ``__nv_bfloat162`` was refused ``vectorize_loads`` because any vector type made
``uses_vector_types`` true.
"""

from __future__ import annotations

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source.api import parse_text

MIXED = """
#include <cuda_bf16.h>
__global__ void row_then_pairs(__nv_bfloat16 *out, const float *x, const float *w, int rows, int n)
{
    int r = blockIdx.x;
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        acc += x[r * n + i] * w[i];
    }
    __nv_bfloat162 *o2 = reinterpret_cast<__nv_bfloat162 *>(out);
    for (int i = threadIdx.x; i < n / 2; i += blockDim.x) {
        __nv_bfloat162 v = o2[i];
        o2[i] = __floats2bfloat162_rn(__low2float(v) + acc, __high2float(v) + acc);
    }
}
"""

ALL_VECTOR = """
__global__ void copy4(float4 *out, const float4 *in, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        const float4 *p = reinterpret_cast<const float4 *>(in);
        out[i] = p[i];
    }
}
"""

STRIDED = """
__global__ void col_walk(float *out, const float *x, int rows, int n)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int i = 0; i < rows; i++) {
        acc += x[i * n * 7 + r * 3];
    }
    out[r] = acc;
}
"""


def _facts(src: str, name: str) -> dict:
    k = parse_text(src, "cuda").kernel(name)
    return compute_facts(k.features, k.language, kernel=k)


def _vectorize_applies(facts: dict) -> bool | None:
    strat = next(s for s in load_knowledge().strategies if s.id == "vectorize_loads")
    return strat.applies.evaluate(facts)


def test_scalar_row_reads_count_beside_a_vector_write_back():
    f = _facts(MIXED, "row_then_pairs")
    assert f["uses_vector_types"] is True
    assert f["scalar_contiguous_reads"] == 2  # x[r * n + i] and w[i]; the bfloat162 reads are vectors
    assert _vectorize_applies(f) is True


def test_only_vector_reads_count_none():
    f = _facts(ALL_VECTOR, "copy4")
    assert f["scalar_contiguous_reads"] == 0
    assert _vectorize_applies(f) is False


def test_strided_reads_count_none():
    f = _facts(STRIDED, "col_walk")
    assert f["scalar_contiguous_reads"] == 0
    assert _vectorize_applies(f) is False


def test_unknown_without_the_kernel_and_zero_for_triton():
    k = parse_text(MIXED, "cuda").kernel("row_then_pairs")
    assert compute_facts(k.features, k.language)["scalar_contiguous_reads"] is None
    assert compute_facts(k.features, "triton")["scalar_contiguous_reads"] == 0


VECTOR_WITH_TAIL = """__global__ void scale4(const float *x, float *y, int n, float a) {
    const int n4 = n / 4;
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n4; v += blockDim.x * gridDim.x) {
        float4 q = reinterpret_cast<const float4 *>(x)[v];
        q.x *= a; q.y *= a; q.z *= a; q.w *= a;
        reinterpret_cast<float4 *>(y)[v] = q;
    }
    for (int i = n4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i];
}
"""


def test_the_scalar_tail_of_a_vectorized_loop_counts_none():
    """Regression (a new user's trial): float4 was still ranked first on its own result, whose scalar tail
    reads ``x[i]``; the tail of a pointer already read as vectors is not a read to widen."""
    f = _facts(VECTOR_WITH_TAIL, "scale4")
    assert f["scalar_contiguous_reads"] == 0
    assert _vectorize_applies(f) is False


EMBED = """
__global__ void embed(float *out, const int *tok, const float *wte, const float *wpe, int B, int T, int C)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * T * C) {
        int bt = idx / C, t = bt % T, c = idx % C;
        float *o = out + (bt / T) * T * C + t * C + c;
        *o = wte[tok[bt] * C + c] + wpe[t * C + c];
    }
}
"""


def test_an_embedding_whose_reads_are_gathers_counts_its_element_store():
    """One thread per element of out[b, t, c]: no read moves by 1 along threadIdx.x (they go through ``%``), but the
    store is at the element of the thread index once split and rejoined, so the vector form has a store to widen."""
    f = _facts(EMBED, "embed")
    assert f["scalar_contiguous_reads"] == 0 and f["scalar_element_writes"] == 1
    assert _vectorize_applies(f) is True


def test_a_store_one_row_off_or_in_a_loop_counts_none():
    off = _facts(EMBED.replace("(bt / T) * T * C", "(bt / T + 1) * T * C"), "embed")
    assert off["scalar_element_writes"] == 0 and _vectorize_applies(off) is False
    assert _facts(STRIDED, "col_walk")["scalar_element_writes"] == 0
