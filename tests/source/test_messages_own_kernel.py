"""A message about a half-typed kernel names only that kernel: nothing of the kernel or host code after it
(a half-typed definition's error node runs on into the next kernel), and the next, complete kernel is
neither refused nor told about the half-typed one's parameters."""

from __future__ import annotations

from pathlib import Path

from htam_core.source import incomplete_reason, load, parse_text, without_incomplete

CUDA = """\
__global__ void gather(const float* src, const int* index, float* dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[index[i]

__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

int main() {
    float *x, *src, *dst;
    int* index;
    gather<<<4, 256>>>(src, index, dst, 1024);
    scale<<<4, 256>>>(x, 2.0f, 1024);
    return 0;
}
"""

TRITON = """\
import triton
import triton.language as tl

@triton.jit
def gather(src, index, dst

@triton.jit
def scale(x_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * a, mask=offs < n)
"""


def _check(model, half: str, whole: str, half_lines: range) -> None:
    ks = {k.name: k for k in model.kernels}
    assert incomplete_reason(ks[whole]) is None
    reason = incomplete_reason(ks[half])
    assert reason is not None and reason.startswith(half)
    p = ks[half].parse_problem
    assert p is not None and p.line in half_lines
    for later in ("scale", "x_ptr", "mask=", "main", "return 0"):
        assert later not in reason, reason
    for line in range(half_lines.stop, model.text.count("\n") + 2):
        assert f"line {line})" not in reason, reason


def test_half_typed_cuda_kernel_then_a_complete_one() -> None:
    _check(parse_text(CUDA, "cuda", "g.cu"), "gather", "scale", range(1, 4))


def test_half_typed_triton_kernel_then_a_complete_one() -> None:
    _check(parse_text(TRITON, "python", "g.py"), "gather", "scale", range(4, 6))


def test_compiling_the_complete_kernel_drops_the_half_typed_ones_launches() -> None:
    model = parse_text(CUDA, "cuda", "g.cu")
    scale = next(k for k in model.kernels if k.name == "scale")
    new, same, blanked = without_incomplete(model, scale)
    assert [k.name for k in blanked] == ["gather"] and same.name == "scale"
    assert "gather" not in new.text and "(src, index, dst, 1024)" not in new.text
    assert "scale<<<4, 256>>>(x, 2.0f, 1024);" in new.text


def test_corpus_half_typed_kernel_message_stays_in_it() -> None:
    path = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "broken_partial_kernels.cu"
    model = load(path)
    ks = {k.name: k for k in model.kernels}
    assert [n for n, k in ks.items() if k.incomplete] == ["row_l2_normalize"]
    reason = incomplete_reason(ks["row_l2_normalize"]) or ""
    assert "line 29, column 38" in reason and "line 58" not in reason and "axpby" not in reason
