"""``cuda.ldg`` and ``cuda.restrict_const`` on read-only inputs (a new user's trial): a ``const __restrict__``
input already takes the read-only path, so ``__ldg`` is refused there (also for loads through a local pointer
derived from it) and the ranking predicate is false; the refusal for a plain ``const T *`` points at
``cuda.restrict_const``, and after that step the refusal is the read-only one, not a dead end; a cast to a
pointer to ``const`` that is indexed for reads is a read of the pointer, not an escape."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source.analysis import analyze
from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import assert_compiles

DEQUANT = """
#include <cstdint>
__global__ void deq(const int8_t* __restrict__ q, SCALE_DECL, float* __restrict__ out, int cols, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (float)q[i] * scale[i / cols];
}
"""

POOL = """
__global__ void pool2(IN_DECL, float* out, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (2 * x + 1 >= W) return;
    const float* p = in + (size_t)(2 * y) * W + 2 * x;
    out[y * (W / 2) + x] = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[W], p[W + 1]));
}
"""

VIEW = """
__global__ void add4(const float* a, const float* b, float* c, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = READ_A;
        float4 y = reinterpret_cast<const float4*>(b)[i];
        WRITE_C = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
"""


def _propose(text: str, tid: str, name: str) -> object:
    model = parse_text(text, "cuda")
    return registry.propose(tid, model, model.kernel(name))


@pytest.mark.parametrize("scale", ["const float* __restrict__ scale", "float const *__restrict__ scale",
                                   "const float * __restrict scale"])
def test_ldg_is_refused_where_the_inputs_are_already_const_restrict(scale: str) -> None:
    text = DEQUANT.replace("SCALE_DECL", scale)
    res = _propose(text, "cuda.ldg", "deq")
    assert isinstance(res, NotApplicable)
    for name in ("q", "scale"):
        assert f"the loads of {name} already take the read-only path: its pointer is const __restrict__" in res.reason
    model = parse_text(text, "cuda")
    k = model.kernel("deq")
    facts = compute_facts(k.features, k.language, None, k, model)
    assert facts["inputs_restrict"] is True
    assert load_knowledge().strategy("readonly_cache_loads").applies.evaluate(facts) is False


def test_the_ranking_predicate_holds_while_an_input_lacks_restrict() -> None:
    model = parse_text(DEQUANT.replace("SCALE_DECL", "const float* scale"), "cuda")
    k = model.kernel("deq")
    facts = compute_facts(k.features, k.language, None, k, model)
    assert facts["inputs_restrict"] is False
    assert load_knowledge().strategy("readonly_cache_loads").applies.evaluate(facts) is True


def test_the_restrict_advice_leads_to_the_read_only_refusal_through_a_derived_pointer() -> None:
    plain = POOL.replace("IN_DECL", "const float* in")
    res = _propose(plain, "cuda.ldg", "pool2")
    assert isinstance(res, NotApplicable) and "in is not const __restrict__ (cuda.restrict_const" in res.reason
    model = parse_text(plain, "cuda")
    (cand,) = registry.propose("cuda.restrict_const", model, model.kernel("pool2"))  # type: ignore[misc]
    after = cand.new_text
    assert "const float *__restrict__ in" in after or "const float* __restrict__ in" in after
    res = _propose(after, "cuda.ldg", "pool2")
    assert isinstance(res, NotApplicable)
    assert "the loads of in already take the read-only path" in res.reason
    assert "no indexed loads" not in res.reason


@pytest.mark.parametrize("read_a", ["reinterpret_cast<const float4*>(a)[i]", "((const float4 *)a)[i]",
                                    "*reinterpret_cast<const float4 *>(a + 4 * i)",
                                    "static_cast<const float4*>(static_cast<const void*>(a))[i]"])
def test_a_cast_to_pointer_to_const_is_a_read(read_a: str) -> None:
    text = VIEW.replace("READ_A", read_a).replace("WRITE_C", "reinterpret_cast<float4*>(c)[i]")
    model = parse_text(text, "cuda")
    f = analyze(model, model.kernel("add4"))
    assert {p.name: p.mode for p in f.pointers} == {"a": "read", "b": "read", "c": "write"}
    res = _propose(text, "cuda.ldg", "add4")
    assert not isinstance(res, NotApplicable), res.reason  # b's const float4 view: __ldg has that overload
    assert "__ldg(&reinterpret_cast<const float4*>(b)[i])" in res[0].new_text
    # a's read is wrapped where it is a const view's element; a dereference or a view through another cast is no
    # form __ldg wraps (restrict covers it), and a is then left out whole
    wrapped = read_a.endswith("[i]") and "void" not in read_a
    assert (f"__ldg(&{read_a})" in res[0].new_text) is wrapped
    assert ("a, b" in res[0].description) is wrapped
    cands = registry.propose("cuda.restrict_const", model, model.kernel("add4"))
    assert not isinstance(cands, NotApplicable)
    assert "a, b" in cands[0].description


def test_a_cast_to_a_mutable_pointer_read_through_is_not_made_const() -> None:
    text = VIEW.replace("READ_A", "reinterpret_cast<float4*>(const_cast<float*>(a))[i]").replace(
        "WRITE_C", "reinterpret_cast<float4*>(c)[i]")
    model = parse_text(text, "cuda")
    modes = {p.name: p.mode for p in analyze(model, model.kernel("add4")).pointers}
    assert modes["b"] == "read" and modes["c"] == "write"
    plain = VIEW.replace("const float* a", "float* a").replace("READ_A", "reinterpret_cast<float4*>(a)[i]") \
        .replace("WRITE_C", "reinterpret_cast<float4*>(c)[i]")
    model = parse_text(plain, "cuda")
    assert {p.name: p.mode for p in analyze(model, model.kernel("add4")).pointers}["a"] == "unknown"
    cands = registry.propose("cuda.restrict_const", model, model.kernel("add4"))
    assert isinstance(cands, NotApplicable) or all(" a," not in c.description for c in cands)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_restrict_const_on_the_float4_view_compiles(tmp_path: Path) -> None:
    text = VIEW.replace("READ_A", "reinterpret_cast<const float4*>(a)[i]").replace(
        "WRITE_C", "reinterpret_cast<float4*>(c)[i]")
    model = parse_text(text, "cuda")
    (cand,) = registry.propose("cuda.restrict_const", model, model.kernel("add4"))  # type: ignore[misc]
    assert_compiles(cand.new_text, tmp=tmp_path, name="add4.cu")


def test_restrict_const_reads_the_short_restrict_spelling() -> None:
    text = DEQUANT.replace("SCALE_DECL", "const float * __restrict scale")
    res = _propose(text, "cuda.restrict_const", "deq")
    assert isinstance(res, NotApplicable) and "already const __restrict__: q, scale" in res.reason
