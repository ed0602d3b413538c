"""``transpose_like`` comes from the index strides, not from the kernel's name."""

from __future__ import annotations

from htam_core.memory.facts import compute_facts
from htam_core.source.api import parse_text

SRC = """
__global__ void {name}(float *out, const float *in, int rows, int cols)
{{
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    if (x < cols && y < rows)
        out[{store}] = in[y * cols + x];
}}
"""


def _transpose_like(name: str, store: str) -> bool | None:
    model = parse_text(SRC.format(name=name, store=store), "cuda")
    k = model.kernel(name)
    return compute_facts(k.features, k.language, kernel=k)["transpose_like"]


def test_a_transpose_by_any_name_is_transpose_like():
    assert _transpose_like("flip_kernel", "x * rows + y") is True


def test_a_copy_named_transpose_is_not():
    assert _transpose_like("transpose_but_copy", "y * cols + x") is False


LOOPED = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void rows4(const float *in, float *out, int rows, int cols)
{
    cg::thread_block b = cg::this_thread_block();
    int x = b.group_index().x * b.group_dim().x + b.thread_index().x;
    for (int k = 0; k < 4; ++k) {
        int y = (b.group_index().y * b.group_dim().y + b.thread_index().y) * 4 + k;
        if (x < cols && y < rows)
            out[x * rows + y] = in[y * cols + x];
    }
}
"""


def test_a_transpose_in_a_loop_over_rows_through_cooperative_groups_is_transpose_like():
    model = parse_text(LOOPED, "cuda")
    k = model.kernel("rows4")
    assert compute_facts(k.features, k.language, None, k, model)["transpose_like"] is True
    copy = parse_text(LOOPED.replace("out[x * rows + y]", "out[y * cols + x]"), "cuda")
    kc = copy.kernel("rows4")
    assert compute_facts(kc.features, kc.language, None, kc, copy)["transpose_like"] is False


TEMPLATED = """
template <int TILE_DIM>
__global__ void rot(float *out, const float *in, int w, int h)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    if (x < w && y < h) out[STORE] = in[y * w + x];
}
"""


def test_a_rotation_by_90_degrees_is_transpose_like_even_with_the_tile_unbound():
    # the kernel read alone: TILE_DIM is unknown, so the strides decide; the reversed coordinate has stride -1
    for store in ("x * h + (h - 1 - y)", "(w - 1 - x) * h + y"):
        model = parse_text(TEMPLATED.replace("STORE", store), "cuda")
        k = model.kernel("rot")
        assert compute_facts(k.features, k.language, None, k, model)["transpose_like"] is True, store
    # a flip along the rows is a copy, not a transpose
    model = parse_text(TEMPLATED.replace("STORE", "(h - 1 - y) * w + x"), "cuda")
    k = model.kernel("rot")
    assert compute_facts(k.features, k.language, None, k, model)["transpose_like"] is False
