"""Name-resolution chains never recurse forever: a launch's template argument read through the block-scope aliases
around it (``k<scalar_t>`` where ``main`` says ``using scalar_t = float;``, the ATen dispatch shape), and every
resolver of type names bounded on a cycle or a self-mapping (the kernel's own parameter name as its argument)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.math_precision import generic_math_calls
from htam_core.source.analysis.structs import struct_definition
from htam_core.source.analysis.syntax import parse_cuda
from htam_core.source.analysis.unit import cuda_source
from htam_core.transforms.registry import resolve_step

REPRO = Path(__file__).parents[3] / "bench/results/textbook-trial12-static-2026-12-07/repro/self_named_instantiation.cu"

KERNEL = """
template <typename scalar_t, typename accscalar_t>
__global__ void k(scalar_t* out, const scalar_t* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (scalar_t)exp((accscalar_t)in[i]);
}
"""

#: The ATen shape: a dispatch macro whose cases (another macro) declare ``scalar_t``, a lambda that aliases
#: ``accscalar_t`` to it and launches ``k<scalar_t, accscalar_t>``.
DISPATCH = KERNEL + """
#define CASE_TYPE(enum_type, type, ...) case enum_type: { using scalar_t = type; __VA_ARGS__(); break; }
#define DISPATCH_FLOATING(TYPE, NAME, ...) [&] { switch (TYPE) { \\
    CASE_TYPE(0, float, __VA_ARGS__) CASE_TYPE(1, double, __VA_ARGS__) default: break; } }()
void run(void* out, const void* in, int n, int dtype) {
    DISPATCH_FLOATING(dtype, "k", [&] {
        using accscalar_t = scalar_t;
        k<scalar_t, accscalar_t><<<(n + 255) / 256, 256>>>((scalar_t*)out, (const scalar_t*)in, n);
    });
}
"""

#: Shadowing aliases in nested blocks: ``A`` is ``B`` is the outer ``A``, ``float``.
SHADOWED = KERNEL + """
void run(float* out, const float* in, int n) {
    using A = float;
    {
        using B = A;
        using A = B;
        k<A, B><<<(n + 255) / 256, 256>>>(out, in, n);
    }
}
"""

#: A launch in a member of a class template: ``scalar_t`` stays the launch's own name (unresolved), the
#: self-mapping that made the math typer recurse forever.
MEMBER = KERNEL + """
template <typename scalar_t>
struct Launcher {
    void run(scalar_t* b, const scalar_t* a, int n) { k<scalar_t, scalar_t><<<(n + 255) / 256, 256>>>(b, a, n); }
};
void go(float* b, const float* a, int n) { Launcher<float>().run(b, a, n); }
"""


def _inst(text: str) -> dict[str, tuple[str, ...]]:
    model = parse_text(text, "cuda", "k.cu")
    return dict(analyze(model, model.kernel("k")).type_instantiations)


def test_host_alias_of_the_parameter_name_is_resolved() -> None:
    if not REPRO.exists():
        pytest.skip("the trial's reproducer is not in this checkout")
    model = parse_text(REPRO.read_text(), "cuda", str(REPRO))
    assert dict(analyze(model, model.kernel("k")).type_instantiations) == {"scalar_t": ("float",)}


def test_dispatch_lambda_alias_through_a_nested_case_macro() -> None:
    assert _inst(DISPATCH) == {"scalar_t": ("double", "float"), "accscalar_t": ("double", "float")}


def test_shadowing_block_aliases_read_where_each_is_declared() -> None:
    assert _inst(SHADOWED) == {"scalar_t": ("float",), "accscalar_t": ("float",)}


def test_math_typer_stops_on_a_self_mapping() -> None:
    model = parse_text(MEMBER, "cuda", "k.cu")
    kernel = model.kernel("k")
    facts = analyze(model, kernel)
    assert dict(facts.type_instantiations)["scalar_t"] == ("scalar_t",)  # unresolved: the self-mapping
    src = cuda_source(model, kernel)
    assert not isinstance(src, str)
    # the typer on the map as the fact gives it, and on a raw cycle between two parameters
    assert generic_math_calls(src, facts.type_instantiations) == ()  # unknown type, not a RecursionError
    assert generic_math_calls(src, (("scalar_t", ("accscalar_t",)), ("accscalar_t", ("scalar_t",)))) == ()


def test_suggest_on_the_self_mapping_does_not_crash() -> None:
    model = parse_text(MEMBER, "cuda", "k.cu")
    res = resolve_step("fast math", "cuda.fast_math", "", model, model.kernel("k"), None, llm_hint="-")
    assert not isinstance(res, list) and "internal error" not in res.reason


def test_struct_typedef_cycle_ends() -> None:
    src = b"typedef struct A B;\ntypedef struct B A;\n"
    assert struct_definition([parse_cuda(src).root_node], "A") is None


def test_a_failing_transform_is_one_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A transform that raises (a bug) refuses its step in one line; ``HTAM_DEBUG`` raises it instead."""
    from htam_core.transforms import registry

    def boom(*_a: object, **_k: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    model = parse_text(MEMBER, "cuda", "k.cu")
    monkeypatch.setattr(registry, "propose", boom)
    monkeypatch.delenv("HTAM_DEBUG", raising=False)
    res = resolve_step("fast math", "cuda.fast_math", "", model, model.kernel("k"), None, llm_hint="-")
    assert not isinstance(res, list)
    assert "internal error in cuda.fast_math (RecursionError" in res.reason and "\n" not in res.reason
    monkeypatch.setenv("HTAM_DEBUG", "1")
    with pytest.raises(RecursionError):
        resolve_step("fast math", "cuda.fast_math", "", model, model.kernel("k"), None, llm_hint="-")
