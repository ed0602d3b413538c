"""``scalar_element_writes`` (the ``vectorize_loads`` predicate) and ``cuda.vectorize_float4`` agree on 2-D/3-D
one-output-per-thread kernels. A store ``out[((size_t)c * H + r) * W + q]`` that moves by 1 with the global x index
counts when the data comes from broadcast or gathered reads, and the row form widens it. A pooling kernel whose data
comes only from a window strided along x (``in[2 * q + k]``) counts none and the transform refuses (widening the
store alone moves none of the traffic that matters), in every spelling of the window read through a pointer-offset
local ``p = in + ...`` (``p[1]``, ``*(p + 1)``, ``__ldg(p + 1)``, ``__ldg(&p[1])``): the analysis sees them all as
the same accesses."""

from __future__ import annotations

import pytest

from htam_core.memory.facts import compute_facts
from htam_core.source.analysis import analyze
from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

READS = {
    "subscript": "float a = p[0], b = p[1], d = p[W], e = p[W + 1];",
    "deref": "float a = *p, b = *(p + 1), d = *(p + W), e = *(p + W + 1);",
    "ldg": "float a = __ldg(p), b = __ldg(p + 1), d = __ldg(p + W), e = __ldg(p + W + 1);",
    "ldg_address": "float a = __ldg(&p[0]), b = __ldg(&p[1]), d = __ldg(&p[W]), e = __ldg(&p[W + 1]);",
}
GRIDS = {
    "plane": ("int c = blockIdx.z;\n", "((size_t)c * H + 2 * r) * W + 2 * q", "((size_t)c * Ho + r) * Wo + q",
              "dim3 g((W / 2 + 31) / 32, (H / 2 + 7) / 8, C);"),
    "two_d": ("", "(size_t)(2 * r) * W + 2 * q", "(size_t)r * Wo + q", "dim3 g((W / 2 + 31) / 32, (H / 2 + 7) / 8);"),
}


def _text(grid: str, reads: str) -> str:
    decl, src, dst, launch = GRIDS[grid]
    return ("__global__ void pool(const float* __restrict__ in, float* __restrict__ out, int C, int H, int W) {\n"
            "    int q = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    int r = blockIdx.y * blockDim.y + threadIdx.y;\n    " + decl +
            "    int Ho = H / 2, Wo = W / 2;\n    if (q >= Wo || r >= Ho) return;\n"
            f"    const float* p = in + {src};\n    {READS[reads]}\n"
            f"    out[{dst}] = fmaxf(fmaxf(a, b), fmaxf(d, e));\n}}\n"
            "void run(const float* in, float* out, int C, int H, int W) {\n"
            f"    dim3 b(32, 8); {launch}\n    pool<<<g, b>>>(in, out, C, H, W);\n}}\n")


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("reads", READS)
def test_predicate_and_transform_agree_on_a_pooling_store(grid, reads):
    model = parse_text(_text(grid, reads), "cuda")
    k = model.kernel("pool")
    f = analyze(model, k)
    window = [a for a in f.global_accesses() if a.pointer == "in"]
    assert len(window) == 4 and {a.stride("threadIdx.x") for a in window} == {2}  # seen in every spelling
    facts = compute_facts(k.features, k.language, None, k, model)
    assert facts["scalar_element_writes"] == 0
    res = registry.propose("cuda.vectorize_float4", model, k)
    assert isinstance(res, NotApplicable) and "moves by 2" in res.reason and "\n" not in res.reason


GATHERS = {
    "broadcast_3d": ("int c = blockIdx.z;\n", "bias[c] * scale[r]", "((size_t)c * H + r) * W + q",
                     "dim3 g((W + 31) / 32, (H + 7) / 8, C);"),
    "gather_2d": ("", "table[ids[r]]", "(size_t)r * W + q", "dim3 g((W + 31) / 32, (H + 7) / 8);"),
}


@pytest.mark.parametrize("case", GATHERS)
def test_a_2d_or_3d_contiguous_store_counts_and_is_made(case):
    decl, value, dst, launch = GATHERS[case]
    text = ("__global__ void fill(const float* __restrict__ bias, const float* __restrict__ scale,\n"
            "    const float* __restrict__ table, const int* __restrict__ ids, float* __restrict__ out,"
            " int C, int H, int W) {\n"
            "    int q = blockIdx.x * blockDim.x + threadIdx.x;\n    int r = blockIdx.y * blockDim.y + threadIdx.y;\n"
            f"    {decl}    if (q >= W || r >= H) return;\n    out[{dst}] = {value};\n}}\n"
            "void run(const float* bias, const float* scale, const float* table, const int* ids, float* out,"
            " int C, int H, int W) {\n"
            f"    dim3 b(32, 8); {launch}\n    fill<<<g, b>>>(bias, scale, table, ids, out, C, H, W);\n}}\n")
    model = parse_text(text, "cuda")
    k = model.kernel("fill")
    facts = compute_facts(k.features, k.language, None, k, model)
    assert facts["scalar_contiguous_reads"] == 0 and facts["scalar_element_writes"] == 1
    res = registry.propose("cuda.vectorize_float4", model, k)
    assert not isinstance(res, NotApplicable), res.reason
    assert "float4" in res[0].new_text and "out" in res[0].params["pointers"]


def test_a_column_walk_is_still_refused():
    """A read moving by a symbolic step (a column, ``in[q * H + r]``) is not a window: the row form still refuses."""
    text = ("__global__ void tcopy(const float* in, float* out, int H, int W) {\n"
            "    int q = blockIdx.x * blockDim.x + threadIdx.x;\n    int r = blockIdx.y * blockDim.y + threadIdx.y;\n"
            "    if (q >= W || r >= H) return;\n    out[r * W + q] = in[q * H + r];\n}\n"
            "void run(const float* in, float* out, int H, int W) {\n"
            "    dim3 b(32, 8); dim3 g((W + 31) / 32, (H + 7) / 8);\n    tcopy<<<g, b>>>(in, out, H, W);\n}\n")
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.vectorize_float4", model, model.kernel("tcopy"))
    assert isinstance(res, NotApplicable) and "moves by" in res.reason


def test_a_store_not_along_the_global_x_is_not_counted():
    """``out[r * W + threadIdx.x]`` in a one-block-wide launch moves by 1 with threadIdx.x but not with the global
    x index: no 16-byte row form takes it, so it is not counted."""
    text = ("__global__ void k(const float* in, float* out, int W) {\n    int r = blockIdx.x;\n"
            "    out[r * W + threadIdx.x] = 2.0f * in[r];\n}\n")
    model = parse_text(text, "cuda")
    k = model.kernel("k")
    assert compute_facts(k.features, k.language, None, k, model)["scalar_element_writes"] == 0


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("reads", READS)
def test_a_whole_window_group_is_not_strided_along_x(grid, reads):
    """Each thread reads its own 2 consecutive elements of two rows: the threads together read consecutive
    elements, so no remap of threadIdx.x is ranked for them (``strided_along_x`` false), in every spelling."""
    model = parse_text(_text(grid, reads), "cuda")
    k = model.kernel("pool")
    assert analyze(model, k).uncoalesced("x")  # each read alone moves by 2
    assert compute_facts(k.features, k.language, None, k, model)["strided_along_x"] is False


@pytest.mark.parametrize("body", [
    "out[i] = in[2 * i];",  # every other element: half of each sector unread
    "out[i] = in[3 * i] + in[3 * i + 1];",  # 2 of 3 offsets
    "out[i] = in[i * n];",  # a column walk
])
def test_a_partial_group_or_a_column_walk_stays_strided(body):
    text = ("__global__ void k(const float* in, float* out, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) " + body + "\n}\n")
    model = parse_text(text, "cuda")
    k = model.kernel("k")
    assert compute_facts(k.features, k.language, None, k, model)["strided_along_x"] is True
