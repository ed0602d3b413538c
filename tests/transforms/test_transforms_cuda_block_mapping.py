"""``cuda.block_size`` retunes a launch's block only where the kernel's thread mapping scales with ``blockDim``.

A kernel whose index hard-codes the block's extent (``i_base = 128 * blockIdx.x + 8 * threadIdx.x`` launched as
16 x 16 threads with a grid of ``n / 128``, or ``blockIdx.x * 256 + threadIdx.x``) covers other elements with any
other block shape (on a GPU: illegal addresses or wrong values), so the step is refused with the index named; so
is a kernel whose mapping is in a function it calls (a template parameter or a ``__device__`` function), where the
check cannot see it. A block-size constant shared by the index and the launch (``#define BS 256``) is edited at
its definition, so both follow; the CPU run checks that such a candidate computes the same outputs.
"""

from __future__ import annotations

import pytest
from transform_helpers import facts_of_text, fixture_path

FILE = "fixed_extent_variants.cu"
TID = "cuda.block_size"


@pytest.mark.parametrize(("kernel", "index"), [
    ("tile_fixed_extent", "int i_base = 128 * blockIdx.x + 8 * threadIdx.x;"),
    ("literal_extent", "int i = blockIdx.x * 256 + threadIdx.x;"),
])
def test_an_index_with_a_fixed_tile_is_refused_and_named(refuse, kernel, index):
    why = refuse(TID, FILE, kernel)
    assert f"the index `{index}`" in why and "not blockDim.x" in why


@pytest.mark.parametrize(("kernel", "callee"), [("via_template_fn", "body"), ("via_device_fn", "tile8_device")])
def test_a_mapping_in_a_called_function_is_refused(refuse, kernel, callee):
    why = refuse(TID, FILE, kernel)
    assert f"does not read threadIdx.x itself: its thread mapping is in {callee}" in why


def test_the_facts_behind_the_rule():
    f = facts_of_text(fixture_path(FILE).read_text(), "tile_fixed_extent")
    ((what, line, _),) = f.fixed_block_extents("x", 16)
    assert what.startswith("i_base = ") and line == 10
    assert f.fixed_block_extents("x", 32) == ()  # 128 is 8 x 16 threads, not 8 x 32
    g = facts_of_text(fixture_path(FILE).read_text(), "via_template_fn")
    assert g.device_calls == ("body",) and "threadIdx.x" not in g.builtins_read
    s = facts_of_text(fixture_path(FILE).read_text(), "scaled_extent")
    assert s.fixed_block_extents("x", 128) == () and s.device_calls == ()


@pytest.mark.parametrize("kernel", ["shared_constant_extent", "scaled_extent"])
def test_a_mapping_that_scales_is_retuned(cand, kernel):
    assert {tuple(c.params["block"]) for c in cand(TID, FILE, kernel)} >= {(256,), (512,)} - {
        (256,) if kernel == "shared_constant_extent" else ()}


def test_the_launch_bounds_hint_keeps_the_block_and_still_applies(cand):
    (c,) = cand("cuda.launch_bounds", FILE, "tile_fixed_extent")
    assert c.params["max_threads"] == 256


def test_a_shared_constant_is_retuned_at_its_definition(cand):
    """The index and the launch both read ``BS``: the candidate changes its definition, so the kernel's tile and
    the grid's ceil-division follow together (the facts of the result: stride in blockIdx.x = the new block)."""
    for c in cand(TID, FILE, "shared_constant_extent"):
        (new,) = c.params["block"]
        assert f"#define BS {new}" in c.new_text
        f = facts_of_text(c.new_text, "shared_constant_extent")
        (la,) = f.launches
        assert la.block[0].value == new and la.grid[0].text == "(n + BS - 1) / BS"
        assert str(f.thread_indices[0].expr) == f"{new}*blockIdx.x + threadIdx.x"
