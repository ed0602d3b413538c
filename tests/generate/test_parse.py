"""Code extraction from LLM replies (htam_core.generate.parse)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htam_core.generate.errors import GenerationError, ParseError
from htam_core.generate.parse import extract_code

TRITON = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
"""

CUDA = """__global__ void scale(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""


def test_single_fenced_python_block() -> None:
    reply = f"Here is the kernel:\n\n```python\n{TRITON}```\n\nI raised BLOCK."
    ex = extract_code(reply, "triton", "add_kernel")
    assert ex.code == TRITON and ex.method == "fence" and ex.tag == "python" and not ex.truncated


def test_cuda_and_cpp_tags() -> None:
    for tag in ("cuda", "cpp", "c++", "cu"):
        ex = extract_code(f"```{tag}\n{CUDA}```", "cuda", "scale")
        assert ex.code == CUDA and ex.tag == tag


def test_several_blocks_prefers_the_one_with_the_kernel() -> None:
    usage = "```python\nout = torch.empty_like(x)\nadd_kernel[grid](x, y, out, n, BLOCK=1024)\n" \
            "# a long usage example that is longer than nothing at all ..........................\n```"
    bash = "```bash\npip install triton\n```"
    reply = f"{bash}\n\n{usage}\n\nand the kernel:\n\n```py\n{TRITON}```"
    ex = extract_code(reply, "triton", "add_kernel")
    assert ex.code == TRITON and ex.n_blocks == 3


def test_several_blocks_prefers_model_new() -> None:
    ref = "```python\nclass Model(nn.Module):\n    def forward(self, x):\n        return x * 2 + 1 + 3 + 4\n```"
    new = "```python\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return k(x)\n```"
    ex = extract_code(ref + "\n" + new, "cuda-in-python")
    assert "ModelNew" in ex.code


def test_largest_block_wins_on_a_tie() -> None:
    small, big = "```python\nx = 1\n```", "```python\nx = 1\ny = 2\nz = 3\n```"
    assert extract_code(f"{small}\n{big}", "python").code == "x = 1\ny = 2\nz = 3\n"


def test_cuda_language_skips_python_blocks() -> None:
    reply = f"```python\nimport torch\nprint('launch it')\n```\n```cuda\n{CUDA}```"
    assert extract_code(reply, "cuda").code == CUDA


def test_untagged_fence_is_accepted() -> None:
    assert extract_code(f"```\n{CUDA}```", "cuda").code == CUDA


def test_partial_reply_unclosed_fence_is_marked_truncated() -> None:
    cut = TRITON[: len(TRITON) // 2]
    ex = extract_code(f"Sure.\n```python\n{cut}", "triton")
    assert ex.truncated and ex.code.startswith("import triton") and ex.code.rstrip() == cut.rstrip()


def test_bare_python_code_with_trailing_prose() -> None:
    ex = extract_code(TRITON + "\nThis version uses a bigger block, which helps.", "triton")
    assert ex.method == "bare" and "def add_kernel" in ex.code and "bigger block" not in ex.code


def test_bare_cuda_code() -> None:
    ex = extract_code("Here you go:\n" + CUDA, "cuda")
    assert ex.method == "bare" and ex.code.strip() == CUDA.strip()


@pytest.mark.parametrize("reply", ["", "   \n", "I cannot help with that.",
                                   "Sure! Increase the block size and use vector loads. Good luck.",
                                   '{"choices": "???"} <html>', "\x00\x01\x02 garbage ]]]"])
def test_garbage_raises_parse_error(reply: str) -> None:
    with pytest.raises(ParseError) as ei:
        extract_code(reply, "triton")
    assert isinstance(ei.value, GenerationError)
    assert "code" in str(ei.value)


def test_code_in_the_wrong_language_is_refused_clearly() -> None:
    with pytest.raises(ParseError, match=r"only in bash"):
        extract_code("```bash\nnvcc -O3 k.cu\n```", "cuda")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.sampled_from(["python", "triton", "cuda", "cuda-in-python"]))
def test_any_reply_gives_code_or_a_parse_error(reply: str, language: str) -> None:
    try:
        ex = extract_code(reply, language)
    except ParseError:
        return
    assert ex.code.strip() and ex.code.endswith("\n")
