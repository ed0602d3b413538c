"""The forms htam's own steps write do not block the steps that follow them (a new user's trial: after the float4
edit, ``restrict_pointers`` and ``readonly_cache_loads`` were refused, the first saying ``restrict_missing =
True`` and then "no read-only pointer parameter lacks const __restrict__ (their use could not be read: a)").

An alignment test (``(reinterpret_cast<unsigned long long>(a + (i * 4)) & 15ull) == 0ull``, or the user's own
``(uintptr_t)(a + 4 * i) % 16 == 0``) is no use of the data, so ``a`` stays a read-only input: the ranking's
``restrict_missing`` and the step that adds ``const __restrict__`` agree, and ``__ldg`` wraps the ``const float4``
view's element. A guard that ``cuda.ldg`` rewrote (``__ldg(&v[i]) != 0``) is still a per-element test the
grid-stride loop keeps. Fixture kernels written for these tests.
"""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles, fixture_path

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

FILE = "own_forms_follow_up.cu"
VIEWS = ["scale2", "scale2_user"]


def _propose(text: str, tid: str, kernel: str):
    model = parse_text(text, "cuda")
    return registry.propose(tid, model, model.kernel(kernel))


def _text() -> str:
    return fixture_path(FILE).read_text()


@pytest.mark.parametrize("kernel", VIEWS)
def test_restrict_is_ranked_and_made_alike(kernel):
    model = parse_text(_text(), "cuda")
    k = model.kernel(kernel)
    facts = compute_facts(k.features, k.language, None, k, model)
    assert facts["restrict_missing"] is True
    assert load_knowledge().strategy("restrict_pointers").applies.evaluate(facts) is True
    res = registry.propose("cuda.restrict_const", model, k)
    assert not isinstance(res, NotApplicable), res.reason
    assert f"__global__ void {kernel}(const float *__restrict__ a, float *out, int n)" in res[0].new_text


@pytest.mark.parametrize("kernel", VIEWS)
def test_ldg_wraps_the_float4_view_and_leaves_the_alignment_test(kernel):
    res = _propose(_text(), "cuda.ldg", kernel)
    assert not isinstance(res, NotApplicable), res.reason
    body = res[0].new_text[res[0].new_text.index(f"void {kernel}("):]
    body = body[: body.index("\n}\n")]
    assert body.count("__ldg(&reinterpret_cast<const float4 *>(a + ") == 1
    assert "__ldg" not in body[: body.index("{\n    float4")]  # the alignment test is no load


def test_the_float4_step_output_gets_ldg_and_restrict():
    (vec,) = registry.propose("cuda.vectorize_float4", m := parse_text(
        fixture_path("own_forms_elementwise.cu").read_text(), "cuda"), m.kernel("scale_f"))
    res = _propose(vec.new_text, "cuda.ldg", "scale_f")
    assert not isinstance(res, NotApplicable), res.reason
    assert "__ldg(&reinterpret_cast<const float4 *>(x)[htam_v])" in res[0].new_text
    assert "reinterpret_cast<unsigned long long>(x)" in res[0].new_text  # the alignment test as it was
    assert not isinstance(_propose(vec.new_text, "cuda.restrict_const", "scale_f"), NotApplicable)


def test_a_guard_with_ldg_is_still_a_bound_and_an_element_test():
    """The fixture's guard is the one ``cuda.ldg`` writes for ``if (i < n && v[i] != 0)``."""
    res = _propose(_text(), "cuda.grid_stride", "count_nonzero")
    assert not isinstance(res, NotApplicable), res.reason
    # a 64-bit counter, the int index declared from it, then the element's test inside the loop
    assert ("htam_gi < n; htam_gi += (long long)blockDim.x * gridDim.x) { int i = (int)htam_gi; "
            "if (__ldg(&v[i]) != 0) atomicAdd(count, 1); }") in " ".join(res[0].new_text.split())


def test_loads_already_through_ldg_are_named_so():
    res = _propose(_text(), "cuda.ldg", "count_nonzero")
    assert isinstance(res, NotApplicable)
    assert "the loads of v already go through __ldg" in res.reason


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_follow_up_edits_compile(tmp_path):
    for kernel in VIEWS:
        for tid in ("cuda.ldg", "cuda.restrict_const"):
            res = _propose(_text(), tid, kernel)
            assert not isinstance(res, NotApplicable)
            assert_nvcc_compiles(res[0].new_text, tmp_path, f"{kernel}_{tid.split('.')[1]}.cu")
