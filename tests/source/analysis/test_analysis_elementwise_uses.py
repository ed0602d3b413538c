"""The uses of an elementwise kernel's index and pointers (``htam_core.source.analysis.elementwise_uses``): which
pointers a vector form loads and stores, which read-only tables stay per-lane reads, which uses of the index a lane
evaluates with its own index, and the uses that have no per-lane form."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import analyze
from htam_core.source.analysis.elementwise_uses import ElementwiseUses, elementwise_uses
from htam_core.source.analysis.forms import Elementwise, KernelText, elementwise
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.api import parse_text


def _uses(body: str, params: str) -> ElementwiseUses | str:
    """The facts of ``__global__ void k(params) { int i = <global index>; body }`` over its pointer params."""
    text = f"__global__ void k({params}) {{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n{body}\n}}\n"
    model = parse_text(text, "cuda")
    kernel = model.kernel("k")
    source = cuda_source(model, kernel)
    assert isinstance(source, CudaSource)
    view = KernelText(source, analyze(model, kernel))
    ew = elementwise(view)
    assert isinstance(ew, Elementwise), ew
    names = [p.split("*")[-1].strip() for p in params.split(",") if "*" in p]
    return elementwise_uses(view, ew, names)


def _texts(uses: ElementwiseUses) -> list[str]:
    """The index uses as one-line texts."""
    return [" ".join((u.text or b"").decode().split()) for u in uses.index_uses]


DEQ = ("    if (i < rows * cols) { int r = i / cols; out[i] = (float)q[i] * scale[r]; }",
       "const signed char *q, const float *scale, float *out, int rows, int cols")


def test_a_row_from_the_index_is_a_per_lane_use_and_the_table_a_gather():
    u = _uses(*DEQ)
    assert isinstance(u, ElementwiseUses)
    assert u.vectorized == ["out", "q"] and u.writes == {"out"} and u.reads == {"q"} and not u.cond_writes
    assert u.gathers == ["scale"]
    assert _texts(u) == ["r = i / cols"]
    assert sorted(name for _, name in u.subs) == ["out", "q"]


def test_only_subscripts_leave_no_index_use():
    u = _uses("    if (i < n) { y[i] = 2.0f * x[i]; }", "const float *x, float *y, int n")
    assert isinstance(u, ElementwiseUses) and u.index_uses == [] and u.gathers == []


@pytest.mark.parametrize("body", [
    "    if (i < n) { y[i] = x[i] - x[i - 1]; }",          # a read-only input also read beside the index
    "    if (i >= n) return;\n    y[i] = x[i] + x[(i + 1) % n];",
])
def test_a_read_only_pointer_may_be_read_at_other_addresses_too(body):
    u = _uses(body, "const float *x, float *y, int n")
    assert isinstance(u, ElementwiseUses) and u.gathers == ["x"] and "x" in u.reads and u.index_uses


def test_the_index_in_a_condition_makes_the_writes_conditional():
    u = _uses("    if (i < n) { if (i % cols == 0) y[i] = 0.0f; else y[i] = x[i]; }",
              "const float *x, float *y, int n, int cols")
    assert isinstance(u, ElementwiseUses) and u.cond_writes == {"y"}
    assert len(u.index_uses) == 1


@pytest.mark.parametrize("body,params,words", [
    ("    if (i < n) { if (x[i] < 0.0f) flag[i / cols] = 1; }", "const float *x, int *flag, int n, int cols",
     "flag is written or escapes at an address other than flag[i]"),
    ("    if (i < n) { atomicAdd(&hist[i % 16], x[i]); }", "const float *x, float *hist, int n",
     "hist is written or escapes"),
    ("    if (i < n - 1) { y[i] = y[i + 1]; }", "float *y, int n",
     "y is written as y[i] and also used at another address"),
    ("    if (i < n) { float *o = out + (n - 1 - i); *o = x[i]; }", "const float *x, float *out, int n",
     "out is written or escapes"),
    ("    if (i < n) { float *o = out + i; o[1] = x[i]; }", "const float *x, float *out, int n",
     "out is written or escapes"),
    ("    float acc = 0.0f;\n    if (i < n) { acc += x[i]; y[i] = acc; }", "const float *x, float *y, int n",
     "writes acc, declared outside it"),
    ("    if (i < n) { y[i] = x[i]; k += 1; }", "const float *x, float *y, int n, int k",
     "writes k, declared outside it"),
])
def test_uses_without_a_per_lane_form_are_refused(body, params, words):
    why = _uses(body, params)
    assert isinstance(why, str) and words in why, why


def test_names_declared_in_the_guarded_code_may_be_written():
    u = _uses("    if (i < n) { float v = x[i]; v *= 2.0f; const float *row = x + (i / 4) * 4; v += row[0]; "
              "y[i] = v; }", "const float *x, float *y, int n")
    assert isinstance(u, ElementwiseUses) and u.gathers == ["x"]


@pytest.mark.parametrize("body", [
    "    if (i < n) { float *o = out + i; *o = x[i]; }",
    "    if (i < n) { *(out + i) = x[i]; }",
    "    if (i < n) { int r = i / cols, c = i % cols; out[r * cols + c] = x[i]; }",
    "    if (i < n) { int c = i % cols; float *row = out + (i / cols) * cols; row[c] = x[i]; }",
])
def test_a_store_spelled_through_the_split_index_is_at_the_index(body):
    """``r * cols + c`` with ``r = i / cols`` and ``c = i % cols`` is ``i`` (``%`` read as ``i - cols * (i /
    cols)``); so is ``*(out + i)``: ``out`` is vectorized and each access becomes the lane's element."""
    u = _uses(body, "const float *x, float *out, int n, int cols")
    assert isinstance(u, ElementwiseUses), u
    assert u.writes == {"out"} and [name for _, name in u.subs].count("out") == 1


def test_a_store_one_row_off_is_not_at_the_index():
    why = _uses("    if (i < n) { int r = i / cols, c = i % cols; out[(r + 1) * cols + c] = x[i]; }",
                "const float *x, float *out, int n, int cols")
    assert isinstance(why, str) and "out is written or escapes" in why


def test_a_thread_per_row_loop_is_left_to_the_loop_form():
    """A row loop that uses the index as its row: lanes would each run the loop; the loop is what to vectorize."""
    why = _uses("    if (i < rows) { float s = 0.0f; for (int j = 0; j < n; ++j) s += x[i * n + j]; y[i] = s; }",
                "const float *x, float *y, int rows, int n")
    assert isinstance(why, str) and "in code with a loop" in why


def test_a_loop_that_leaves_the_index_alone_keeps_the_elementwise_form():
    u = _uses("    if (i < n) { float v = x[i]; for (int k = 0; k < 3; ++k) v = v * v; y[i] = v; }",
              "const float *x, float *y, int n")
    assert isinstance(u, ElementwiseUses) and not u.index_uses
