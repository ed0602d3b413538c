"""Which arguments of a launch macro's use are the launch's grid, block, shared bytes, stream and kernel arguments
(:mod:`htam_core.source.analysis.launch_slots`): the slots of several ``#define`` spellings, the one-line reason
for a body that computes a slot, and the launch facts and site spans read at the use. Kernels written for these
tests."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import analyze
from htam_core.source.analysis.launch_macros import launch_macros
from htam_core.source.analysis.launch_slots import macro_slots, macro_use_refusal, use_slots
from htam_core.source.api import parse_text


def _slots(define: str):
    (m,) = launch_macros(define.encode() + b"\n")
    return m, macro_slots(m)


@pytest.mark.parametrize(("define", "kernel", "config", "args"), [
    ("#define A(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)", "k", ["g", "b"], ["__VA_ARGS__"]),
    ("#define B(kernel, g, b, s, st, ...) kernel<<<g, b, s, st>>>(__VA_ARGS__)", "kernel", ["g", "b", "s", "st"],
     ["__VA_ARGS__"]),
    ("#define C(k, g, b, args...) k<<<g, b>>>(args)", "k", ["g", "b"], ["args"]),
    ("#define D(grid, k, block, ...) k<<<(grid), (block)>>>(__VA_ARGS__)", "k", ["grid", "block"], ["__VA_ARGS__"]),
    ("#define E(f, grid, block, a, b) \\\n    f<<<grid, block, 0, 0>>>(a, b)", "f", ["grid", "block"], ["a", "b"]),
    ("#define F(k, g, b, st, ...) do { k<<<g, b, 0, st>>>(__VA_ARGS__); check(); } while (0)", "k", ["g", "b"],
     ["__VA_ARGS__"]),
])
def test_each_slot_is_a_parameter(define: str, kernel: str, config: list[str], args: list[str]) -> None:
    m, s = _slots(define)
    assert not isinstance(s, str), s
    assert m.params[s.kernel] == kernel
    assert [m.params[k] for k in s.config] == config
    assert [m.params[k] for k in s.args] == args


@pytest.mark.parametrize(("define", "needle"), [
    ("#define L(k, n, ...) k<<<((n) + 255) / 256, 256>>>(__VA_ARGS__)", "computes the grid (`((n) + 255) / 256`)"),
    ("#define L(k, g, ...) k<<<g, 128>>>(__VA_ARGS__)", "computes the block (`128`)"),
    ("#define L(k, g, b, ...) k<<<g, b, 1024>>>(__VA_ARGS__)", "computes the dynamic shared-memory size (`1024`)"),
    ("#define L(k, n, ...) k<<<n, n>>>(__VA_ARGS__)", "reads its parameter n more than once"),
    ("#define L(k, g, b, x) k<<<g, b>>>(x + 1)", "computes the kernel's arguments"),
])
def test_a_computed_slot_is_one_line(define: str, needle: str) -> None:
    _, s = _slots(define)
    assert isinstance(s, str) and needle in s and "\n" not in s


def test_the_variadic_parameter_takes_the_remaining_arguments() -> None:
    m, _ = _slots("#define R(g, k, b, ...) k<<<g, b>>>(__VA_ARGS__)")
    u = use_slots(m, 7)
    assert not isinstance(u, str)
    assert (u.kernel, u.config, u.args) == (1, (0, 2), (3, 4, 5, 6))


KERNEL = """__global__ void axpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
void run(const float *x, float *y, int n, cudaStream_t st)
{
    const int threads = 128;
    USE;
}
"""


@pytest.mark.parametrize(("define", "use", "grid", "block"), [
    ("#define GO(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)", "GO(axpy, (n + 127) / 128, threads, 2.0f, x, y, n)",
     "(n + 127) / 128", "threads"),
    ("#define GO(kernel, g, b, s, st, ...) kernel<<<g, b, s, st>>>(__VA_ARGS__)",
     "GO(axpy,\n       dim3((n + 127) / 128),\n       dim3(threads), 0, st,\n       2.0f, x, y, n)",
     "dim3((n + 127) / 128)", "dim3(threads)"),
    ("#define GO(g, k, b, args...) k<<<g, b>>>(args)", "GO((n + 127) / 128, axpy, threads, 2.0f, x, y, n)",
     "(n + 127) / 128", "threads"),
])
def test_the_site_and_the_facts_are_read_at_the_use(define: str, use: str, grid: str, block: str) -> None:
    text = define + "\n" + KERNEL.replace("USE", use)
    model = parse_text(text, "cuda", "m.cu")
    k = model.kernel("axpy")
    (site,) = k.launch_sites
    data = text.encode()
    spans = {key: data[s.start:s.end].decode() for key, s in site.config_spans.items()}
    assert spans["grid"] == grid and spans["block"] == block
    assert data.index(use.encode()) <= site.config_spans["grid"].start < site.span.end
    (la,) = analyze(model, k).launches
    assert la.threads == 128 and la.line == text[: text.index(use)].count("\n") + 1
    assert [str(e) for e in la.arg_exprs[-1:]] == ["n"]  # the kernel's arguments, not the macro's


def test_a_computed_grid_is_named_at_the_use() -> None:
    define = "#define L(k, n, ...) k<<<((n) + 127) / 128, 128>>>(__VA_ARGS__)"
    text = define + "\n" + KERNEL.replace("USE", "L(axpy, n, 2.0f, x, y, n)")
    model = parse_text(text, "cuda", "m.cu")
    (site,) = model.kernel("axpy").launch_sites
    assert site.macro == "L" and not site.config_spans
    assert not analyze(model, model.kernel("axpy")).launches  # no launch a step could edit
    why = macro_use_refusal(text.encode(), site.span.start)
    assert why is not None and "computes the grid" in why
