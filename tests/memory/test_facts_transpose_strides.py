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
