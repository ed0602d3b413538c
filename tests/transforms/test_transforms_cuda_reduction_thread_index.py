"""The thread index of a shared-memory tree is one normal form (the analysis layer's ``is_thread_x``): a tree that
indexes with ``threadIdx.x`` directly, a local copy of any declared type, ``cta.thread_rank()``,
``block.thread_index().x`` or ``cg::this_thread_block().thread_rank()`` gets sequential addressing and the warp
finish like the textbook ``int tid = threadIdx.x;``; another index is still refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import assert_nvcc_compiles, facts_of_text

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

SEQ = "cuda.sequential_addressing"
FINISH = "cuda.warp_shuffle_finish"

# DECL declares what the kernel needs (a copy of the index, a group); T is how the tree spells the index.
KERNEL = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define THREADS 256
__global__ void dot(const float* a, const float* b, float* out, int n) {
    __shared__ float cache[THREADS];
    DECL
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    cache[T] = (i < n) ? a[i] * b[i] : 0.0f;
    __syncthreads();
    for (int s = 1; s < blockDim.x; s *= 2) {
        if (GUARD_T % (2 * s) == 0)
            cache[T] += cache[T + s];
        __syncthreads();
    }
    if (T == 0) atomicAdd(out, cache[0]);
}
"""

SPELLINGS = [
    ("", "threadIdx.x"),
    ("int tid = threadIdx.x;", "tid"),
    ("unsigned tid = threadIdx.x;", "tid"),
    ("const unsigned int tid = threadIdx.x;", "tid"),
    ("auto tid = threadIdx.x;", "tid"),
    ("const int tid = (int)threadIdx.x;", "tid"),
    ("cg::thread_block cta = cg::this_thread_block();", "cta.thread_rank()"),
    ("cg::thread_block block = cg::this_thread_block();", "block.thread_index().x"),
    ("", "cg::this_thread_block().thread_rank()"),
    ("auto cta = cg::this_thread_block(); int tid = cta.thread_rank();", "tid"),
]


def _text(decl: str, t: str, guard_t: str | None = None) -> str:
    return KERNEL.replace("DECL", decl).replace("GUARD_T", guard_t or t).replace("T]", f"{t}]").replace(
        "[T ", f"[{t} ").replace("(T ", f"({t} ")


def _propose(tid: str, text: str):
    model = parse_text(text, "cuda")
    return registry.propose(tid, model, model.kernel("dot"))


@pytest.mark.parametrize("decl,t", SPELLINGS)
def test_every_spelling_of_the_thread_index_gets_sequential_addressing(decl, t):
    res = _propose(SEQ, _text(decl, t))
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    assert f"if ({t} < s)" in c.new_text  # the guard keeps the kernel's own spelling
    assert "s = blockDim.x / 2; s > 0; s >>= 1" in c.new_text
    assert f"cache[{t}] += cache[{t} + s];" in c.new_text


@pytest.mark.parametrize("decl,t", SPELLINGS)
def test_every_spelling_of_the_thread_index_gets_the_warp_finish(decl, t):
    res = _propose(FINISH, _text(decl, t))
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    assert f"if ({t} < 32)" in c.new_text and "__shfl_down_sync" in c.new_text


def test_the_guard_and_the_combine_may_spell_the_index_differently():
    text = _text("int tid = threadIdx.x;", "threadIdx.x", guard_t="tid")
    res = _propose(SEQ, text)
    assert not isinstance(res, NotApplicable), res.reason
    assert "if (tid < s)" in res[0].new_text


def test_the_fact_marks_each_spelling_and_nothing_else():
    text = _text("cg::thread_block cta = cg::this_thread_block(); int tid = cta.thread_rank(); int u = tid + 1;",
                 "tid")
    f = facts_of_text(text, "dot")
    marked = {text.encode()[a:b].decode() for a, b in f.thread_x_spans}
    assert marked == {"tid", "threadIdx.x", "cta.thread_rank()"}
    assert not any(text.encode()[a:b].decode() in ("u", "tid + 1", "blockIdx.x") for a, b in f.thread_x_spans)


@pytest.mark.parametrize(
    "decl,t,needle",
    [
        ("int tid = threadIdx.x + 1;", "tid", "not threadIdx.x"),
        ("", "threadIdx.y", "indexes with threadIdx.y, not with the thread's index along x"),
        ("int tid = threadIdx.x; tid = tid ^ 1;", "tid", "tid is modified"),
    ],
)
def test_another_index_is_still_refused(decl, t, needle):
    res = _propose(SEQ, _text(decl, t))
    assert isinstance(res, NotApplicable)
    assert needle in res.reason, res.reason


def test_a_two_dimensional_launch_keeps_thread_rank_apart_from_threadidx_x():
    text = _text("cg::thread_block cta = cg::this_thread_block();", "cta.thread_rank()") + (
        "void go(const float* a, const float* b, float* o, int n) { dot<<<8, dim3(16, 16)>>>(a, b, o, n); }\n")
    f = facts_of_text(text, "dot")
    marked = {text.encode()[a:b].decode() for a, b in f.thread_x_spans}
    assert "cta.thread_rank()" not in marked and "threadIdx.x" in marked


@pytest.mark.parametrize("decl,t", [SPELLINGS[0], SPELLINGS[6], SPELLINGS[7]])
def test_the_results_compile(decl, t, tmp_path: Path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    for tid in (SEQ, FINISH):
        res = _propose(tid, _text(decl, t))
        assert not isinstance(res, NotApplicable), res.reason
        assert_nvcc_compiles(res[0].new_text, tmp_path, f"{tid.split('.')[1]}.cu")


STRIDED = """#define THREADS 256
__global__ void dot(const float* a, float* out) {
    __shared__ float cache[THREADS];
    cache[threadIdx.x] = a[blockIdx.x * THREADS + threadIdx.x];
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        int index = 2 * s * threadIdx.x;
        if (index < blockDim.x)
            cache[index] += cache[index + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = cache[0];
}
"""

SEQUENTIAL_FLIPPED = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void dot(const float* a, float* out) {
    __shared__ float cache[256];
    cg::thread_block cta = cg::this_thread_block();
    cache[cta.thread_rank()] = a[blockIdx.x * 256 + cta.thread_rank()];
    cg::sync(cta);
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (s > cta.thread_rank()) cache[cta.thread_rank()] = fmaxf(cache[cta.thread_rank()], cache[s + cta.thread_rank()]);
        cg::sync(cta);
    }
    if (cta.thread_rank() == 0) out[blockIdx.x] = cache[0];
}
"""


def test_the_strided_index_form_with_threadidx_x():
    res = _propose(SEQ, STRIDED)
    assert not isinstance(res, NotApplicable), res.reason
    text = res[0].new_text
    assert "int index" not in text and "if (threadIdx.x < s)" in text
    assert "cache[threadIdx.x] += cache[threadIdx.x + s];" in text


def test_the_warp_finish_reads_a_flipped_guard_on_thread_rank():
    res = _propose(FINISH, SEQUENTIAL_FLIPPED)
    assert not isinstance(res, NotApplicable), res.reason
    assert "if (cta.thread_rank() < 32)" in res[0].new_text
