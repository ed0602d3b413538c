"""The kernel's ``__launch_bounds__`` as one fact in every spelling nvcc reads
(``htam_core.source.analysis.launch_bounds``): literal, named constant, template parameter, function-like and
object-like macros; the literal to rewrite where the kernel's own text holds it."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.launch_bounds import LaunchBounds, launch_bounds
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.api import parse_text

BODY = """(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
void run(float *x, int n) { k<<<(n + 255) / 256, 256>>>(x, n); }
"""


def _fact(text: str) -> tuple[LaunchBounds | None, str]:
    model = parse_text(text, "cuda")
    source = cuda_source(model, model.kernel("k"))
    assert isinstance(source, CudaSource)
    return launch_bounds(source), text


def _at(fact: LaunchBounds, text: str) -> str:
    assert fact.literal_span is not None
    return text.encode()[fact.literal_span[0] : fact.literal_span[1]].decode()


def test_no_bounds() -> None:
    assert _fact("__global__ void k" + BODY)[0] is None


@pytest.mark.parametrize("head", [
    "__global__ void __launch_bounds__(256) k",
    "__launch_bounds__(256) __global__ void k",
    "__global__ void __launch_bounds__( 256 , 2 ) k",
])
def test_literal_anywhere_in_the_head(head: str) -> None:
    fact, text = _fact(head + BODY)
    assert fact is not None and fact.max_threads == 256 and not fact.template and fact.macro is None
    assert _at(fact, text) == "256"
    assert fact.min_blocks == ("2" if ", 2" in head else None)


def test_named_constant_is_read_but_not_rewritten() -> None:
    fact, _ = _fact("#define THREADS 128\n__global__ void __launch_bounds__(THREADS * 2) k" + BODY)
    assert fact is not None and fact.max_threads == 256 and fact.literal_span is None


def test_template_parameter_follows_the_instantiation() -> None:
    fact, _ = _fact("template <int BLOCK>\n__global__ void __launch_bounds__(BLOCK) k" + BODY.replace(
        "k<<<", "k<256><<<"))
    assert fact is not None and fact.template and fact.max_threads is None


def test_aten_style_function_macro() -> None:
    text = ("#define C10_LAUNCH_BOUNDS_1(max_threads_per_block) __launch_bounds__((max_threads_per_block))\n"
            "__global__ void C10_LAUNCH_BOUNDS_1(512)\nk" + BODY)
    fact, text = _fact(text)
    assert fact is not None and fact.max_threads == 512 and fact.macro == "C10_LAUNCH_BOUNDS_1"
    assert _at(fact, text) == "512" and text.index("(512)") + 1 == fact.literal_span[0]  # type: ignore[index]


def test_macro_with_min_blocks_and_computed_limit() -> None:
    text = ("#define LB2(t, b) __launch_bounds__(t, b)\n#define SCALE(t) LB2((t) * 2, 4)\n"
            "__global__ void SCALE(64) k" + BODY)
    fact, _ = _fact(text)
    assert fact is not None and fact.max_threads == 128 and fact.min_blocks == "4"
    assert fact.literal_span is None  # the limit is computed, not one literal of the kernel


def test_object_like_macro_is_read_only() -> None:
    fact, _ = _fact("#define LB __launch_bounds__(128)\n__global__ void LB k" + BODY)
    assert fact is not None and fact.max_threads == 128 and fact.literal_span is None and fact.macro == "LB"


def test_half_typed_specifier_gives_an_unknown_limit() -> None:
    fact, _ = _fact("__global__ void __launch_bounds__(UNKNOWN_NAME) k" + BODY)
    assert fact is not None and fact.max_threads is None and not fact.template
