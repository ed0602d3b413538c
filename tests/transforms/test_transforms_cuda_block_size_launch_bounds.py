"""``cuda.block_size`` keeps within the kernel's ``__launch_bounds__``: a block with more threads than the declared
limit cannot launch (CUDA C++ Programming Guide, "Launch Bounds"), so no candidate offers one, whatever the spelling
of the limit (a literal, with a minimum of blocks, before ``__global__``, a ``constexpr`` or ``#define`` constant,
a function-like or object-like macro), nor after the engine's own ``cuda.launch_bounds`` step wrote it. Blocks at or
below the limit are still offered; a limit that is a template parameter follows the launch."""

from __future__ import annotations

import pytest

from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

BODY = ("(const float* x, float* y, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) y[i] = 2.0f * x[i];\n}\n")
HOST = "void run(const float* x, float* y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n); }\n"

SPELLINGS = {
    "literal": "__global__ void __launch_bounds__(256) scale",
    "min_blocks": "__global__ void __launch_bounds__(256, 2) scale",
    "before_global": "__launch_bounds__(256) __global__ void scale",
    "constexpr": "constexpr int kMaxThreads = 256;\n__global__ void __launch_bounds__(kMaxThreads) scale",
    "define": "#define MAX_THREADS 256\n__global__ void __launch_bounds__(MAX_THREADS) scale",
    "fn_macro": "#define C10_LAUNCH_BOUNDS_1(n) __launch_bounds__((n))\n__global__ void C10_LAUNCH_BOUNDS_1(256) scale",
    "obj_macro": "#define LB __launch_bounds__(256)\n__global__ void LB scale",
}


def _blocks(text: str) -> list[int] | str:
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.block_size", model, model.kernel("scale"))
    if isinstance(res, NotApplicable):
        return res.reason
    return [c.params["block"][0] for c in res]


@pytest.mark.parametrize("head", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_no_block_above_the_declared_limit(head):
    blocks = _blocks(head + BODY + HOST)
    assert isinstance(blocks, list), blocks
    assert blocks and all(b <= 256 for b in blocks)
    assert 128 in blocks  # a smaller block still fits the limit


def test_without_bounds_larger_blocks_are_offered():
    """The cap comes from the bounds: the same kernel without them is offered 512 and 1024 threads."""
    blocks = _blocks("__global__ void scale" + BODY + HOST)
    assert isinstance(blocks, list) and max(blocks) > 256


def test_a_limit_above_the_block_allows_blocks_up_to_it():
    blocks = _blocks("__global__ void __launch_bounds__(512) scale" + BODY + HOST)
    assert isinstance(blocks, list) and 512 in blocks and all(b <= 512 for b in blocks)


def test_a_limit_at_the_block_with_no_smaller_option_says_why():
    """A 128-thread launch under ``__launch_bounds__(128)``: every other block is larger; the refusal names the
    bound in one line."""
    text = ("__global__ void __launch_bounds__(128) scale" + BODY
            + "void run(const float* x, float* y, int n) { scale<<<(n + 127) / 128, 128>>>(x, y, n); }\n")
    reason = _blocks(text)
    assert isinstance(reason, str) and "__launch_bounds__(128)" in reason and "\n" not in reason


def test_after_the_engines_own_launch_bounds_step():
    model = parse_text("__global__ void scale" + BODY + HOST, "cuda")
    (lb,) = registry.propose("cuda.launch_bounds", model, model.kernel("scale"))
    assert "__launch_bounds__(256)" in lb.new_text
    blocks = _blocks(lb.new_text)
    assert isinstance(blocks, list) and blocks and all(b <= 256 for b in blocks)


def test_a_2d_block_keeps_within_the_limit():
    text = ("__global__ void __launch_bounds__(256) scale(float* y, int w, int h) {\n"
            "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n    int r = blockIdx.y * blockDim.y + threadIdx.y;\n"
            "    if (x < w && r < h) y[r * w + x] *= 2.0f;\n}\n"
            "void run(float* y, int w, int h) { dim3 b(16, 16); dim3 g((w + 15) / 16, (h + 15) / 16);\n"
            "  scale<<<g, b>>>(y, w, h); }\n")
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.block_size", model, model.kernel("scale"))
    kept = [] if isinstance(res, NotApplicable) else res
    assert all(c.params["block"][0] * c.params["block"][1] <= 256 for c in kept)
