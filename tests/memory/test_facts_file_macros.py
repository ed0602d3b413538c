"""The predicate facts read a kernel after the ``#define`` lines of its file before it: an index spelled through a
macro (``int gid = GLOBAL_ID;``) is a contiguous read, so float4 vectorization is offered on it; the same kernel
without the file (its text alone) cannot know the macro."""

from __future__ import annotations

from htam_core.memory.facts import compute_facts
from htam_core.source.api import parse_text

TEXT = """
#define THREADS 256
#define GLOBAL_ID (blockIdx.x * blockDim.x + threadIdx.x)
__global__ void add(const float *a, const float *b, float *c, int n) {
    int gid = GLOBAL_ID;
    if (gid < n) c[gid] = a[gid] + b[gid];
}
#define AFTER 1
"""


def test_a_macro_index_is_contiguous_with_the_file():
    model = parse_text(TEXT, "cuda")
    k = model.kernel("add")
    assert compute_facts(k.features, k.language, None, k, model)["scalar_contiguous_reads"] == 2
    assert compute_facts(k.features, k.language, None, k, None)["scalar_contiguous_reads"] == 0
