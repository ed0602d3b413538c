"""What htam writes must read back as what it is: the facts the other steps need are derived from htam's own
output forms the same as from a hand-written kernel.

The vectorized elementwise form (``cuda.vectorize_float4``: a grid-stride vector loop under an alignment test of
the pointers, then a grid-stride scalar tail from ``htam_tail``) keeps each thread's coverage launch-free, so
``cuda.grid_size`` may still size its grid; an alignment test (a pointer cast to an integer and compared) neither
reads memory nor lets the pointer escape, so the pointer's read/write mode is still known. Negative spellings: an
integer made back into a pointer, and a tail start that each thread reads from memory at its own index.
"""

from __future__ import annotations

import pytest
from transform_helpers import candidates, facts_of_text, fixture_path

from htam_core.source import load, parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

FILE = "own_forms_elementwise.cu"


@pytest.mark.parametrize("kernel", ["scale_f", "clamp_d", "axpy_gs"])
def test_vectorized_form_is_still_grid_stride_and_resizable(kernel):
    (c,) = candidates("cuda.vectorize_float4", FILE, kernel)
    f = facts_of_text(c.new_text, kernel)
    assert "x" in f.launch_free_dims, f.grid_stride_loops
    assert len(f.grid_stride_loops) == 2  # the vector loop and the scalar tail
    model = parse_text(c.new_text, "cuda")
    res = registry.propose("cuda.grid_size", model, model.kernel(kernel))
    assert not isinstance(res, NotApplicable), res.reason


@pytest.mark.parametrize("kernel", ["scale_f", "clamp_d"])
def test_vectorized_form_with_a_c_style_alignment_cast_is_still_grid_stride(kernel):
    """The same form with the alignment test spelled ``(unsigned long long)x`` (the tail start then depends on
    the pointers' addresses, which every thread reads the same)."""
    (c,) = candidates("cuda.vectorize_float4", FILE, kernel)
    text = c.new_text
    assert "reinterpret_cast<unsigned long long>(x)" in text  # the form under test
    model = parse_text(text.replace("reinterpret_cast<unsigned long long>", "(unsigned long long)"), "cuda")
    assert analyze(model, model.kernel(kernel)).launch_free_dims == ("x",)


def _modes(kernel: str) -> dict[str, str]:
    model = load(str(fixture_path(FILE)))
    return {p.name: p.mode for p in analyze(model, model.kernel(kernel)).pointers}


def test_alignment_tests_are_no_unread_use():
    assert _modes("aligned_copy") == {"src": "read", "dst": "write"}
    f = analyze(m := load(str(fixture_path(FILE))), m.kernel("aligned_copy"))
    assert f.launch_free_dims == ("x",)  # the tail start is decided by the addresses: the same in every thread


def test_integer_back_to_pointer_is_not_an_address_test():
    assert _modes("shifted_copy")["src"] == "unknown"


def test_tail_start_read_per_thread_is_no_grid_stride_base():
    model = load(str(fixture_path(FILE)))
    f = analyze(model, model.kernel("data_tail"))
    assert "x" not in f.launch_free_dims
