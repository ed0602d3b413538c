"""The one-element guarded load into a shared slot before a block tree, in normal form
(``htam_core.source.analysis.block_load``): every spelling of "the slot gets ``src[i]`` when ``i < n``, else the
identity" reads as the same :class:`GuardedLoad`, with the statements it spans, the register and its type, the
bound, the index, the source pointer, the value as written and the identity; a load that is not at the global
index, or whose guard differs between threads, is named."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import analyze
from htam_core.source.analysis.block_load import NO_LOAD, GuardedLoad, guarded_block_load
from htam_core.source.analysis.forms import KernelText
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.api import parse_text

KERNEL = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
template <typename T>
__global__ void k(const T *src_ptr, T *out, int n) {
    __shared__ T sdata[256];
    const int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lim = n / 2;
LOAD
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, sdata[0]);
AFTER}
void run(const float *x, float *y, int n) { k<float><<<(n + 255) / 256, 256>>>(x, y, n); }
"""

#: spelling -> (the load's statements, how many statements it spans, its register)
SPELLINGS = {
    "conditional": ("sdata[tid] = (i < n) ? src_ptr[i] : T(0);", 1, None),
    "conditional flipped": ("sdata[tid] = (i >= n) ? T(0) : src_ptr[i];", 1, None),
    "conditional with casts": ("sdata[tid] = ((n > i)) ? static_cast<T>((T)src_ptr[i]) : T(0);", 1, None),
    "negated guard": ("sdata[tid] = !(i >= n) ? src_ptr[i] : T(0);", 1, None),
    "register, braces": ("T v = T(0);\nif (i < n) {\n    v = src_ptr[i];\n}\nsdata[tid] = v;", 3, "v"),
    "register, no braces": ("T acc = T(0);\nif (i < n) acc = src_ptr[i];\nsdata[tid] = acc;", 3, "acc"),
    "register from a conditional": ("const T v = (i < n) ? src_ptr[i] : T(0);\nsdata[tid] = v;", 2, "v"),
    "register set in both branches": ("T v;\nif (i < n) v = src_ptr[i];\nelse { v = T(0); }\nsdata[tid] = v;",
                                      3, "v"),
    "if/else store": ("if (i < n) sdata[tid] = src_ptr[i];\nelse sdata[tid] = T(0);", 1, None),
    "if/else store, load in the else branch": ("if (i >= n) { sdata[tid] = T(0); } else { sdata[tid] = src_ptr[i]; }",
                                               1, None),
    "identity then load": ("sdata[tid] = T(0);\nif (i < n) sdata[tid] = src_ptr[i];", 2, None),
}


def _view(text: str, name: str = "k") -> KernelText:
    model = parse_text(text, "cuda")
    kernel = model.kernel(name)
    source = cuda_source(model, kernel)
    assert isinstance(source, CudaSource)
    return KernelText(source, analyze(model, kernel))


def _kernel(load: str, after: str = "") -> str:
    indent = lambda s: "".join(f"    {ln}\n" for ln in s.splitlines())  # noqa: E731
    return KERNEL.replace("LOAD\n", indent(load)).replace("AFTER", indent(after))


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_every_spelling_is_the_same_guarded_load(spelling: str) -> None:
    load, count, register = SPELLINGS[spelling]
    view = _view(_kernel(load))
    g = guarded_block_load(view)
    assert isinstance(g, GuardedLoad), g
    assert (g.array, g.slot, g.index, g.bound, g.src, g.identity) == ("sdata", "tid", "i", "n", "src_ptr", "T(0)")
    assert g.register == register and not g.register_read_after and not g.index_read_after and g.extra == ()
    assert len(g.stmts) == count and g.store == g.stmts[-1]
    # the statements it spans are exactly the load's: from its first line to the store
    spanned = view.src[g.stmts[0].start_byte:g.store.end_byte].decode()
    assert [ln.strip() for ln in spanned.splitlines()] == [ln.strip() for ln in load.splitlines()]
    assert g.load.pointer == "src_ptr" and g.load.space == "global" and g.write.space == "shared"
    assert g.register_type == ("T" if register else None)
    # the value as written, for another index
    assert g.value_at("j") == ("static_cast<T>((T)src_ptr[j])" if "casts" in spelling else "src_ptr[j]")


def test_a_compound_guard_keeps_its_other_terms_for_any_index() -> None:
    g = guarded_block_load(_view(_kernel("sdata[tid] = (i < n && i % 4 != 3 && n > 7) ? src_ptr[i] : T(0);")))
    assert isinstance(g, GuardedLoad) and g.bound == "n"
    assert g.extra_at("j") == "(j % 4 != 3) && (n > 7)"
    g = guarded_block_load(_view(_kernel("sdata[tid] = (i >= n || i % 4 == 3) ? T(0) : src_ptr[i];")))
    assert isinstance(g, GuardedLoad) and g.extra_at("j") == "j % 4 != 3"  # the else branch: De Morgan


def test_a_uniform_local_bound_is_accepted() -> None:
    g = guarded_block_load(_view(_kernel("sdata[tid] = (i < lim) ? src_ptr[i] : T(0);")))
    assert isinstance(g, GuardedLoad) and g.bound == "lim"


def test_reads_after_the_store_are_named() -> None:
    load = "T v = T(0);\nif (i < n) v = src_ptr[i];\nsdata[tid] = v;"
    g = guarded_block_load(_view(_kernel(load, "if (v > T(0)) out[1] = v;")))
    assert isinstance(g, GuardedLoad) and g.register_read_after and not g.index_read_after
    g = guarded_block_load(_view(_kernel(load, "if (i == 0) out[1] = T(1);")))
    assert isinstance(g, GuardedLoad) and g.index_read_after and not g.register_read_after


def test_cooperative_groups_spelling() -> None:
    text = (KERNEL.replace("const int tid = threadIdx.x;", "cg::thread_block b = cg::this_thread_block();\n"
                           "    const int tid = b.thread_rank();")
            .replace("__syncthreads();", "b.sync();"))
    g = guarded_block_load(_view(_kernel_from(text, "T v;\nif (i < n) v = src_ptr[i]; else v = T(0);\nsdata[tid] = v;")))
    assert isinstance(g, GuardedLoad) and g.register == "v" and len(g.stmts) == 3


def _kernel_from(template: str, load: str) -> str:
    return template.replace("LOAD\n", "".join(f"    {ln}\n" for ln in load.splitlines())).replace("AFTER", "")


@pytest.mark.parametrize(("load", "needle"), [
    ("sdata[tid] = (tid < n) ? src_ptr[tid] : T(0);", "tid is not the global thread index along x"),
    ("sdata[tid] = (i < n) ? src_ptr[2 * i] : T(0);", "is not src_ptr[i]"),
    ("sdata[tid] = (i < n && blockIdx.x > 0) ? src_ptr[i] : T(0);", "`blockIdx.x > 0` reads a value that differs"),
    ("sdata[tid] = (i < n - blockIdx.x) ? src_ptr[i] : T(0);", "the bound `n - blockIdx.x` of the load differs"),
    ("sdata[tid] = (n % 2 == 0) ? src_ptr[i] : T(0);", "is not guarded by `i < bound`"),
])
def test_why_a_guarded_load_is_not_the_form(load: str, needle: str) -> None:
    why = guarded_block_load(_view(_kernel(load)))
    assert isinstance(why, str) and needle in why


@pytest.mark.parametrize("load", [
    "sdata[tid] = src_ptr[i];",  # no guard: not the form
    "T v = T(0);\nif (i < n) v = src_ptr[i];\nv = v * T(2);\nsdata[tid] = v;",  # the value changes before the store
    "if (i < n) out[i] = src_ptr[i]; else out[i] = T(0);",  # not into shared memory
    "sdata[tid] = T(0);\nif (i < n) sdata[tid] += src_ptr[i];",  # an update, not a load
])
def test_other_code_is_no_guarded_load(load: str) -> None:
    assert guarded_block_load(_view(_kernel(load))) == NO_LOAD


#: a per-element expression stored into the slot -> (value for index j, what the slot gets for element E, identity
#: kept past the bound)
EXPRESSIONS = {
    "T v = (i < n) ? src_ptr[i] : T(0);\nsdata[tid] = v * v;": ("src_ptr[j]", "(E) * (E)", True),
    "T v = T(0);\nif (i < n) v = src_ptr[i];\nsdata[tid] = fabsf(-v) / (T)lim;": ("src_ptr[j]", "fabsf(-(E)) / (T)lim",
                                                                              True),
    "T v = (i < n) ? src_ptr[i] : T(0);\nsdata[tid] = v - (T)1;": ("src_ptr[j]", "(E) - (T)1", False),
    "T v = (i < n) ? src_ptr[i] : T(0);\nsdata[tid] = v * T(2);": ("src_ptr[j]", "(E) * T(2)", True),
    "sdata[tid] = (i < n) ? src_ptr[i] * src_ptr[i] : T(0);": ("src_ptr[j] * src_ptr[j]", "E", True),
    "sdata[tid] = (i < n) ? sqrtf(src_ptr[i]) * (T)lim : T(0);": ("sqrtf(src_ptr[j]) * (T)lim", "E", True),
}


@pytest.mark.parametrize("load", list(EXPRESSIONS))
def test_a_per_element_expression_of_the_load_is_read(load: str) -> None:
    value, stored, kept = EXPRESSIONS[load]
    g = guarded_block_load(_view(_kernel(load)))
    assert isinstance(g, GuardedLoad), g
    assert (g.index, g.bound, g.identity, g.src) == ("i", "n", "T(0)", "src_ptr")
    assert g.value_at("j") == value and g.stored_at("E") == stored and g.identity_kept is kept


@pytest.mark.parametrize("load", [
    "T v = (i < n) ? src_ptr[i] : T(0);\nsdata[tid] = v * T(tid);",  # a factor that differs between threads
    "sdata[tid] = (i < n) ? src_ptr[i] * src_ptr[i + 1] : T(0);",  # reads at two indices
    "sdata[tid] = (i < n) ? src_ptr[i] * out[0]++ : T(0);",  # an effect
])
def test_an_expression_that_is_not_per_element_is_no_guarded_load(load: str) -> None:
    assert not isinstance(guarded_block_load(_view(_kernel(load))), GuardedLoad)


#: a guard term that reads the element, the branch a value the same for every element -> (value for index j, the
#: guard's other terms for index j)
IN_GUARD = {
    "sdata[tid] = (i < n && src_ptr[i] > T(0)) ? T(1) : T(0);": ("T(1)", "src_ptr[j] > T(0)"),
    "sdata[tid] = (src_ptr[i] != T(0) && i < n) ? T(1) : T(0);": ("T(1)", "src_ptr[j] != T(0)"),
    "sdata[tid] = (i >= n || src_ptr[i] <= T(n)) ? T(0) : T(n);": ("T(n)", "src_ptr[j] > T(n)"),
    "T c = (i < n && fabsf(src_ptr[i]) > T(1)) ? T(1) : T(0);\nsdata[tid] = c;": ("T(1)", "fabsf(src_ptr[j]) > T(1)"),
}


@pytest.mark.parametrize("load", list(IN_GUARD))
def test_an_element_read_in_the_guard_is_an_extra_term(load: str) -> None:
    """A count or selection (`(i < n && x[i] > t) ? 1 : 0`) is the load of a constant under a per-element test."""
    value, extra = IN_GUARD[load]
    g = guarded_block_load(_view(_kernel(load)))
    assert isinstance(g, GuardedLoad), g
    assert (g.index, g.bound, g.identity, g.src) == ("i", "n", "T(0)", "src_ptr")
    assert g.value_at("j") == value and g.extra_at("j").replace(" ", "") == extra.replace(" ", "")


@pytest.mark.parametrize("load", [
    "sdata[tid] = (i < n && src_ptr[i] > T(0)) ? T(tid) : T(0);",  # the branch differs between threads
    "sdata[tid] = (i < n && src_ptr[i + 1] > src_ptr[i]) ? T(1) : T(0);",  # the test reads two indices
    "sdata[tid] = (i < n && out[0] > T(0)) ? T(1) : T(0);",  # no element at the index: ...
])
def test_a_guard_read_that_is_not_per_element_is_no_guarded_load(load: str) -> None:
    g = guarded_block_load(_view(_kernel(load)))
    assert not isinstance(g, GuardedLoad) or g.load.index_text == "i" and "out" not in g.src, g
