"""The segment prefix loop in normal form (``htam_core.source.analysis.prefix_loop``): every spelling of "each
thread sums its block's segment up to its own element, then stores the sum at its own element" reads as one
:class:`PrefixLoop` with the loop, the accumulator and its type, inclusive or exclusive, the element expression
split at the loop variable, the bounds check's form and the launches' block; a prefix over the whole array, a
start that is not the block's first element, a recurrence that is not a sum, a summand that differs between
threads and extra work beside the loop are not one, and a block a warp scan cannot run on is named."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import analyze
from htam_core.source.analysis.forms import KernelText
from htam_core.source.analysis.prefix_loop import PrefixLoop, segment_prefix_loop
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.api import parse_text

KERNEL = """#include <cstddef>
#include <cstdint>
#define BLOCK 256
HEAD
__global__ void k(const T *in, T *out, T w, IDX n) {
BODY
}
void run(const T *in, T *out, T w, IDX n) { LAUNCH }
"""

LAUNCH = "k<<<(n + 255) / 256, 256>>>(in, out, w, n);"

#: spelling -> (body, type, index type, inclusive, element for `e`, guard form)
SPELLINGS = {
    "local seg, early return": ("""    int seg = blockIdx.x * blockDim.x;
    int i = seg + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = seg; j <= i; ++j) s += in[j];
    out[i] = s;""", "float", "int", True, "in[e]", "return"),
    "inline start, guarded body": ("""    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double acc = 0.0;
        for (int j = blockIdx.x * blockDim.x; j <= i; j++) { acc = acc + in[j] * w; }
        out[i] = acc;
    }""", "double", "int", True, "in[e] * w", "if"),
    "size_t exclusive": ("""    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (n <= i) return;
    float s = 0;
    for (size_t j = (size_t)blockIdx.x * blockDim.x; j < i; ++j) s += fabsf(in[j]);
    out[i] = s;""", "float", "size_t", False, "fabsf(in[e])", "return"),
    "int accumulator declared first": ("""    int s = 0;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x; j <= i; ++j) s = in[j] + s;
    out[i] = s;""", "int", "int64_t", True, "in[e]", "return"),
    "macro block": ("""    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = blockIdx.x * BLOCK; j <= i; ++j) s += in[j];
    out[i] = s;""", "float", "int", True, "in[e]", "return"),
}


def _read(body: str, typ: str, idx: str, launch: str = LAUNCH, head: str = "") -> PrefixLoop | str:
    text = KERNEL.replace("HEAD", head or f"typedef {typ} T;").replace("BODY", body).replace("IDX", idx)
    text = text.replace("LAUNCH", launch)
    model = parse_text(text, "cuda")
    k = model.kernel("k")
    src = cuda_source(model, k)
    assert isinstance(src, CudaSource)
    return segment_prefix_loop(KernelText(src, analyze(model, k)))


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_reads_as_one_prefix_loop(name):
    body, typ, idx, inclusive, element, guard = SPELLINGS[name]
    p = _read(body, typ, idx)
    assert isinstance(p, PrefixLoop), p
    assert p.acc_type == typ and p.inclusive is inclusive and p.element_at("e") == element
    assert p.guard == guard and p.index == "i" and p.condition == "i < n"
    assert p.accumulator.op == "sum" and p.loop.var == "j"
    assert p.block == 256 and p.block_problem is None


@pytest.mark.parametrize("summand,integer", [("in[j] * 2", True), ("in[j] * 0.5f", False), ("(int)fl[j]", False)])
def test_an_integer_sum_takes_integer_elements_only(summand, integer):
    body = SPELLINGS["int accumulator declared first"][0].replace("s = in[j] + s", f"s += {summand}")
    body = body.replace("    int s = 0;", "    int s = 0;\n    const float *fl = (const float *)in;")
    p = _read(body, "int", "int")
    assert isinstance(p, PrefixLoop) is integer, p
    assert integer or "converted at every step" in p or "differs" in p


def test_a_template_type_is_a_shuffle_type():
    body = SPELLINGS["local seg, early return"][0].replace("float s = 0.0f", "T s = T(0)")
    p = _read(body, "T", "int", head="template <typename T>")
    assert isinstance(p, PrefixLoop) and p.acc_type == "T"


NOT_PREFIX = {
    "from zero": ("for (int j = seg;", "for (int j = 0;"),
    "warp segment": ("for (int j = seg;", "for (int j = i - (threadIdx.x & 31);"),
    "start past the block": ("for (int j = seg;", "for (int j = seg + 1;"),
    "not a sum": ("s += in[j];", "s = s * 0.5f + in[j];"),
    "a product": ("s += in[j];", "s *= in[j];"),
    "summand per thread": ("s += in[j];", "s += in[j] * i;"),
    "second pointer at the thread": ("s += in[j];", "s += in[j] * out[i];"),
    "work beside the loop": ("    out[i] = s;", "    out[i + 1] = 0.0f;\n    out[i] = s;"),
    "not zero first": ("float s = 0.0f;", "float s = 1.0f;"),
    "a store elsewhere": ("out[i] = s;", "out[i + 1] = s;"),
}


@pytest.mark.parametrize("name", sorted(NOT_PREFIX))
def test_other_loops_are_not_prefix_loops(name):
    body = SPELLINGS["local seg, early return"][0]
    old, new = NOT_PREFIX[name]
    assert old in body
    got = _read(body.replace(old, new), "float", "int")
    assert isinstance(got, str) and "\n" not in got


@pytest.mark.parametrize("launch,word", [
    ("k<<<(n + 99) / 100, 100>>>(in, out, w, n);", "multiple of 32"),
    ("k<<<1, 2048>>>(in, out, w, n);", "at most 1024"),
    ("k<<<n / 8, dim3(32, 8)>>>(in, out, w, n);", "1-D"),
    ("int b = n % 7 + 32; k<<<(n + b - 1) / b, b>>>(in, out, w, n);", "not a constant"),
    ("k<<<n / 128, 128>>>(in, out, w, n); k<<<n / 256, 256>>>(in, out, w, n);", "different blocks"),
])
def test_a_block_a_warp_scan_cannot_run_on_is_named(launch, word):
    body, typ, idx = SPELLINGS["local seg, early return"][:3]
    p = _read(body, typ, idx, launch)
    assert isinstance(p, PrefixLoop) and p.block_problem is not None and word in p.block_problem


def test_a_macro_segment_other_than_the_block_is_named():
    body, typ, idx = SPELLINGS["macro block"][:3]
    p = _read(body, typ, idx, "k<<<(n + 127) / 128, 128>>>(in, out, w, n);")
    assert isinstance(p, PrefixLoop) and p.block_problem is not None and "segment is 256" in p.block_problem


def test_a_bound_with_an_operator_is_kept_whole():
    body = SPELLINGS["local seg, early return"][0].replace("if (i >= n) return;", "if (i >= n - 1) return;")
    p = _read(body, "float", "int")
    assert isinstance(p, PrefixLoop) and p.condition == "i < (n - 1)"
