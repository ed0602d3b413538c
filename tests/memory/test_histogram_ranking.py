"""A kernel whose time is its data-indexed atomics ranks the shared-memory privatization first.

The memory-access direction's "straight-line streaming kernel" signal and float4's "streaming kernel" signal read a
loop-free kernel's time as its traffic; a scatter-add's time is its scattered read-modify-writes on a few bins,
which 16-byte loads of its inputs do not touch. Kernels written for this test, one spelling per bin bound.
"""

from __future__ import annotations

import pytest

from htam_core.memory import Ranker, state_from_profile
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import parse_text
from htam_core.types.profile import Bottleneck, Profile

_GUARDED = """__global__ void scatter(const int* idx, const float* val, float* bins, int n, int nbins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { int b = idx[i]; if (b >= 0 && b < nbins) atomicAdd(&bins[b], val[i]); }
}
"""
_MODULO = """#define NB 128
__global__ void scatter(const int* key, const unsigned* w, unsigned* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[key[i] % NB], w[i]);
}
"""
_STREAM = """__global__ void scatter(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def _names(text: str, bottleneck: str) -> list[str]:
    k = parse_text(text, "cuda", "r.cu").kernel("scatter")
    profile = Profile("scatter", bottleneck=Bottleneck(bottleneck))
    steps = Ranker(load_knowledge(), None).rank(state_from_profile(profile), [], k.features, k.language, profile,
                                                top=10, kernel=k)
    return [s.strategy for s in steps]


@pytest.mark.parametrize("text", [_GUARDED, _MODULO])
@pytest.mark.parametrize("bottleneck", ["memory-bound", "latency-bound"])
def test_privatization_ranks_first(text, bottleneck):
    names = _names(text, bottleneck)
    assert names[0] == "smem_histogram", names
    assert names.index("vectorize_loads") > 0


def test_a_streaming_kernel_still_vectorizes_first():
    names = _names(_STREAM, "memory-bound")
    assert "smem_histogram" not in names and names.index("vectorize_loads") < 2, names
