"""The analysis fact "atomic accumulation into a thread-uniform address" (:class:`UniformAtomic`,
:func:`htam_core.source.analysis.atomics.uniform_atomics`): the op, the scope (grid or block), the address as written,
the contribution, the guard and whether the address can be read again at the body's end. Kernels written for these
tests."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze

_BASE = """
#define TARGET 0
__global__ void k(const float *x, float *out, int *cnt, int n, int k2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    BODY
}
"""


def _facts(body: str):
    model = parse_text(_BASE.replace("BODY", body), "cuda")
    return analyze(model, model.kernel("k")).uniform_atomics


@pytest.mark.parametrize(("body", "op", "scope", "address", "value", "guarded"), [
    ("if (i < n) atomicAdd(out, x[i]);", "add", "grid", "out", "x[i]", True),
    ("atomicAdd(&out[0], i < n ? x[i] : 0.0f);", "add", "grid", "&out[0]", "i < n ? x[i] : 0.0f", False),
    ("if (i >= n) return; atomicAdd(&(out[TARGET]), x[i]);", "add", "grid", "&(out[TARGET])", "x[i]", True),
    ("atomicAdd(out + k2, 1.0f);", "add", "grid", "out + k2", "1.0f", False),
    ("if (!(i >= n)) atomicAdd(out, x[i]);", "add", "grid", "out", "x[i]", True),
    ("const int row = blockIdx.y; if (i < n) atomicAdd(&out[row], x[i]);", "add", "block", "&out[row]", "x[i]",
     True),
    ("if (i < n) atomicMax(cnt, (int)x[i]);", "max", "grid", "cnt", "(int)x[i]", True),
    ("for (int j = i; j < n; j += blockDim.x * gridDim.x) atomicMin(&cnt[1], j);", "min", "grid", "&cnt[1]", "j",
     True),
])
def test_the_spellings_of_a_uniform_accumulation(body, op, scope, address, value, guarded):
    (u,) = _facts(body)
    text = _BASE.replace("BODY", body).encode()
    assert (u.op, u.scope, u.address_text, u.guarded) == (op, scope, address, guarded)
    assert text[u.value_span[0]:u.value_span[1]].decode() == value
    assert u.stable


@pytest.mark.parametrize("body", [
    "if (i < n) atomicAdd(&out[i % 4], x[i]);",  # varies by thread
    "if (i < n) atomicAdd(&out[(int)x[i]], 1.0f);",  # a histogram
    "__shared__ float s; if (i < n) atomicAdd(&s, x[i]);",  # shared memory
    "if (threadIdx.x == 0) atomicAdd(out, x[blockIdx.x]);",  # one thread per block: the block combined already
    "if ((threadIdx.x & 31) == 0) atomicAdd(out, x[i]);",  # one thread per warp
    "if (!threadIdx.x) atomicAdd(out, x[blockIdx.x]);",
    "if (i < n) { float old = atomicAdd(out, x[i]); cnt[i] = (int)old; }",  # the old value is used
    "if (i < n) atomicAdd((int *)out, 1);",  # another element type through a cast
    "if (i < n) atomicExch(out, x[i]);",  # not a reduction
])
def test_what_is_not_a_uniform_accumulation(body):
    assert _facts(body) == ()


def test_an_address_local_that_changes_is_not_stable():
    (u,) = _facts("int r = 0; if (n > 4) r = 1; if (i < n) atomicAdd(&out[r], x[i]);")
    assert u.address_locals == ("r",) and not u.stable
    (v,) = _facts("const int r = k2 * 2; if (i < n) atomicAdd(&out[r], x[i]);")
    assert v.address_locals == ("r",) and v.stable


def _both(body: str):
    model = parse_text(_BASE.replace("BODY", body), "cuda")
    f = analyze(model, model.kernel("k"))
    return [u.address_text for u in f.uniform_atomics], [u.address_text for u in f.result_atomics]


@pytest.mark.parametrize("body", [
    "if (i < n && x[i] == 1.0f) atomicAdd(cnt, 1);",  # a per-element equality selects elements, not threads
    "if (i < n) { if (x[i] == (float)k2) atomicAdd(cnt, 1); }",
    "bool skip = i >= n || x[i] < 0.0f; if (!skip) atomicAdd(cnt, 1);",  # `!` of a data flag
    "if (i < n && !cnt[i]) atomicAdd(out, x[i]);",
    "if (i < n && i % 2 == 0) atomicAdd(out, x[i]);",  # the global index, not a position tested against uniform
    "if (i < n && (int)x[i] == threadIdx.x) atomicAdd(out, x[i]);",  # data on one side
])
def test_a_data_dependent_guard_keeps_a_uniform_accumulation(body):
    """Regression (probe2 c06b): ``if (i < n && keys[i] == key) atomicAdd(count, 1u);`` was read as a block's
    result sent by one thread (``if (tid == 0)``), so the count was a result atomic, not a uniform one."""
    assert _both(body) == (["cnt" if "cnt, 1" in body else "out"], [])


@pytest.mark.parametrize("body", [
    "if (threadIdx.x == 0) atomicAdd(out, x[blockIdx.x]);",
    "int tid = threadIdx.x; if (tid == 0) atomicAdd(out, x[blockIdx.x]);",
    "if (0 == threadIdx.x && n > 0) atomicAdd(out, x[blockIdx.x]);",
    "const int lane = threadIdx.x % 32; if (lane == 0) atomicAdd(out, x[i]);",
    "if ((threadIdx.x & 31) == 0) atomicAdd(out, x[i]);",
    "if (!threadIdx.x) atomicAdd(out, x[blockIdx.x]);",
    "unsigned t = threadIdx.y * blockDim.x + threadIdx.x; if (!t) atomicAdd(out, x[blockIdx.x]);",
    "if (threadIdx.x == blockDim.x - 1) atomicAdd(out, x[i]);",
    "auto block = cooperative_groups::this_thread_block(); if (block.thread_rank() == 0) atomicAdd(out, x[i]);",
    "if (cooperative_groups::this_thread_block().thread_rank() == 0) atomicAdd(out, x[i]);",
])
def test_a_thread_position_guard_is_a_block_result(body):
    """The other direction: a guard that picks threads by their position in the block or warp keeps the atomic a
    block's result (``result_atomics``), not a uniform accumulation to privatize."""
    assert _both(body) == ([], ["out"])
