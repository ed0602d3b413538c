"""Type aliases resolved through the build's preprocessor branch (``htam_core.source.analysis.types``), against
hand-written expectations, and the ``value_type`` of pointer facts that reads them."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.syntax import parse
from htam_core.source.analysis.types import TypeEnv, resolve_type
from tests.source.analysis.conftest import facts_of_text

ALIASES = """
#if defined(ENABLE_BF16)
typedef __nv_bfloat16 floatX;
#elif defined(ENABLE_FP16)
typedef half floatX;
#else
typedef float floatX;
#endif
#ifndef NO_ACC
using acc_t = floatX;
#endif
#if WIDTH > 3
typedef double undecided_t;
#endif
#if !defined(ENABLE_BF16) && !defined(ENABLE_FP16)
typedef float narrow_t;
#else
typedef int narrow_t;
#endif
typedef unsigned int u32;
"""


def _resolve(prefix: str, *names: str) -> list[str]:
    text = (prefix + ALIASES).encode()
    env = ConstEnv(text, parse(text, "cuda").root_node)
    return [resolve_type(env, n) for n in names]


@pytest.mark.parametrize(("prefix", "expected"), [
    ("", ["float", "float", "float", "undecided_t", "unsigned int", "int"]),
    ("#define ENABLE_BF16\n", ["__nv_bfloat16", "__nv_bfloat16", "int", "undecided_t", "unsigned int", "int"]),
    ("#define ENABLE_FP16 1\n", ["half", "half", "int", "undecided_t", "unsigned int", "int"]),
    ("#define NO_ACC\n", ["float", "acc_t", "float", "undecided_t", "unsigned int", "int"]),
])
def test_aliases_follow_the_branch_the_build_takes(prefix, expected):
    # a condition other than defined() tests (WIDTH > 3) is undecided: the name stays as written
    assert _resolve(prefix, "floatX", "acc_t", "narrow_t", "undecided_t", "u32", "int") == expected


def test_pointer_facts_carry_the_written_and_the_resolved_type():
    f = facts_of_text(ALIASES + """
__global__ void k(floatX* out, const acc_t* __restrict__ a, const int* idx, const undecided_t* u) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = a[idx[i]] + (float)u[i];
}
""", "k")
    assert [(p.name, p.element_type, p.value_type) for p in f.pointers] == [
        ("out", "floatX", "float"), ("a", "acc_t", "float"), ("idx", "int", "int"),
        ("u", "undecided_t", "undecided_t")]


def test_a_type_parameter_bound_at_every_launch_is_the_pointee_type():
    """``add<float>(...)`` calls a templated host function that launches ``add_kernel<T, kBlock>``: the kernel's
    ``T`` is ``float`` (followed through the host's template parameter), so ``const T *a`` points to float (written
    ``T``). A caller that deduces the host's arguments, or two instantiations with different types, bind nothing;
    a launch with the type written in place binds it directly."""
    text = """
template <typename T, int BLOCK>
__global__ void add_kernel(const T *a, const T *b, T *c, int n) {
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
template <typename T>
void add(const T *a, const T *b, T *c, int n) {
    constexpr int kBlock = 256;
    add_kernel<T, kBlock><<<(n + kBlock - 1) / kBlock, kBlock>>>(a, b, c, n);
}
void launch_add(const float *a, const float *b, float *c, int n) { CALLS }
"""
    def types(calls: str) -> list[tuple[str, str | None, str | None]]:
        f = facts_of_text(text.replace("CALLS", calls), "add_kernel")
        return [(p.name, p.element_type, p.value_type) for p in f.pointers]

    assert types("add<float>(a, b, c, n);") == [("a", "T", "float"), ("b", "T", "float"), ("c", "T", "float")]
    assert types("add(a, b, c, n);")[0] == ("a", "T", "T")
    assert types("add<float>(a, b, c, n); add<double>((const double*)a, (const double*)b, (double*)c, n);")[0] == (
        "a", "T", "T")
    direct = text.replace("add_kernel<T, kBlock>", "add_kernel<float, kBlock>").replace("CALLS", "add(a, b, c, n);")
    f = facts_of_text(direct, "add_kernel")
    assert f.pointers[0].value_type == "float"


WIDE_ALIASES = b"""
typedef int64_t I;
using J = std::size_t;
typedef unsigned U;
typedef I K;
"""


@pytest.mark.parametrize(("written", "wide"), [
    ("long long", True), ("unsigned long long int", True), ("const long long", True), ("long", True),
    ("unsigned long", True), ("long int", True), ("int64_t", True), ("std::int64_t", True), ("size_t", True),
    ("ptrdiff_t", True), ("uint64_t", True), ("I", True), ("J", True), ("K", True),
    ("int", False), ("unsigned", False), ("unsigned int", False), ("const int", False), ("U", False),
    ("int32_t", False), ("short", False), ("auto", False), ("T", False), ("", False), (None, False),
])
def test_is_wide_integer_reads_64_bit_integers_through_aliases(written, wide):
    """The fact a grid-stride loop's writer asks (a 32-bit counter wraps near the top of its type): 64-bit integer
    types in any spelling and through ``typedef``/``using``; 32-bit ones, ``auto`` and template parameters are not."""
    env = TypeEnv(ConstEnv(WIDE_ALIASES, parse(WIDE_ALIASES, "cuda").root_node), frozenset({"T"}))
    assert env.is_wide_integer(written) is wide
