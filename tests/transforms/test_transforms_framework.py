"""Framework: text edits, the registry, and validation that rejects broken candidates."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit, Transform, apply_edits

EXPECTED_IDS = {
    "triton.block_size", "triton.warps_stages", "triton.autotune", "triton.grouped_ordering",
    "triton.cache_hints", "triton.divisibility_hints", "triton.multi_row", "triton.online_softmax",
    "triton.single_pass_moments", "triton.row_in_registers", "cuda.stencil_smem_tile",
    "cuda.block_size", "cuda.restrict_const", "cuda.launch_bounds", "cuda.unroll", "cuda.ldg",
    "cuda.grid_stride", "cuda.vectorize_float4", "cuda.smem_tiling_matmul", "cuda.flat_index_2d", "cuda.transpose_smem_tile",
    "cuda.fast_math", "cuda.sequential_addressing", "cuda.warp_per_row", "cuda.register_tile_matmul", "cuda.smem_panel_tiling",
    "cuda.online_softmax", "cuda.coalesce_remap", "cuda.thread_per_element", "cuda.warp_shuffle_finish", "cuda.coarsen_reduction",
    "cuda.row_in_registers", "cuda.lane_columns", "cuda.vector_columns", "cuda.smem_histogram", "cuda.grid_size",
    "cuda.privatize_atomic", "cuda.block_per_row", "cuda.block_scan", "cuda.row_scan",
}

KERNEL = """__global__ void k(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2.0f * x[i];
}
"""


def test_apply_edits_on_utf8_bytes():
    text = "// héllo\nint a = 1;\n"
    start = text.encode().index(b"1")
    assert apply_edits(text, [TextEdit(start, start + 1, "42")]) == "// héllo\nint a = 42;\n"


def test_apply_edits_orders_and_keeps_same_offset_inserts_in_order():
    edits = [TextEdit(3, 3, "b"), TextEdit(0, 1, "X"), TextEdit(3, 3, "c")]
    assert apply_edits("abcdef", edits) == "X" + "bc" + "bc" + "def"


def test_apply_edits_rejects_overlap_and_range():
    with pytest.raises(ValueError, match="overlaps"):
        apply_edits("abcdef", [TextEdit(0, 3, ""), TextEdit(2, 4, "")])
    with pytest.raises(ValueError, match="outside"):
        apply_edits("abc", [TextEdit(2, 9, "")])


def test_registry_lists_every_transform_id():
    ids = {t.id for t in registry.all_transforms()}
    assert EXPECTED_IDS <= ids
    assert all(t.strategy in ("", t.id) for t in registry.all_transforms())
    assert {t.id for t in registry.for_language("triton")} == {i for i in EXPECTED_IDS if i.startswith("triton.")}
    cuda = {t.id for t in registry.for_language("cuda-in-python")}
    assert cuda == {i for i in EXPECTED_IDS if i.startswith("cuda.")}
    with pytest.raises(KeyError, match="known"):
        registry.get("cuda.nope")


def test_language_mismatch_is_not_applicable():
    model = parse_text(KERNEL, "cuda")
    res = registry.propose("triton.block_size", model, model.kernel("k"))
    assert isinstance(res, NotApplicable) and "triton" in res.reason


class _Broken(Transform):
    id = "test.broken"
    languages = ("cuda",)

    def __init__(self, new: str, drop_kernel: bool = False) -> None:
        self.new, self.drop = new, drop_kernel

    def propose(self, model, kernel, profile=None):
        b = kernel.body_span
        if self.drop:
            return [self.candidate(model, "delete", {}, [TextEdit(kernel.span.start, kernel.span.end, "")])]
        return [self.candidate(model, "break", {}, [TextEdit(b.start + 1, b.start + 1, self.new)])]


@pytest.mark.parametrize("junk", ["\n    int x = ;\n", "\n    if (n { \n", "\n    x[0] = (1 + ;\n"])
def test_validate_rejects_candidates_that_break_the_parse(junk):
    model = parse_text(KERNEL, "cuda")
    k = model.kernel("k")
    (cand,) = _Broken(junk).propose(model, k)
    assert "syntax error" in (registry.validate(model, k, cand) or "")


def test_validate_rejects_candidates_that_lose_the_kernel():
    model = parse_text(KERNEL, "cuda")
    k = model.kernel("k")
    (cand,) = _Broken("", drop_kernel=True).propose(model, k)
    assert "no longer found" in (registry.validate(model, k, cand) or "")


def test_validate_accepts_a_sound_edit_and_checks_new_text():
    model = parse_text(KERNEL, "cuda")
    k = model.kernel("k")
    (good,) = _Broken("\n    int unused = 0;\n").propose(model, k)
    assert registry.validate(model, k, good) is None
    tampered = Candidate(**{**good.__dict__, "new_text": good.new_text + "\n"})
    assert "does not match" in registry.validate(model, k, tampered)


def test_candidate_json_has_edits_and_flags(cand):
    (c,) = cand("cuda.fast_math", "elementwise_variants.cu", "sigmoid_poly")
    j = c.to_json()
    assert j["transform_id"] == "cuda.fast_math" and j["changes_numerics"] is True
    assert j["edits"] and all({"start_byte", "end_byte", "new_text"} <= set(e) for e in j["edits"])
