"""Launches written through a generic function-like launch macro: the launch site, its grid/block and arguments,
the harness inference from main(), and steps that would edit the launch (refused in one line)."""

from __future__ import annotations

import shutil

import pytest

from htam_core.harness.infer_cuda import infer_cuda_harness
from htam_core.source.analysis.launch_macros import launch_macro_uses, launch_view
from htam_core.source.api import parse_text
from htam_core.transforms.registry import propose
from tests.support.nvcc_check import assert_compiles

KERNEL = """__global__ void scale(const float *x, float *y, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = s * x[i];
}
"""

MAIN = """int main()
{
    const int n = 1 << 20;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMemset(x, 0, n * sizeof(float));
    USE;
    cudaDeviceSynchronize();
    return 0;
}
"""

#: (define, use, grid as expanded, block as expanded): several spellings of a launch macro whose kernel is a parameter
SPELLINGS = [
    ("#define LAUNCH(k, n, ...) k<<<((n) + 255) / 256, 256>>>(__VA_ARGS__)", "LAUNCH(scale, n, x, y, 2.0f, n)",
     "((n) + 255) / 256", "256"),
    ("#define RUN(kern, g, b, ...) kern<<<g, b>>>(__VA_ARGS__)", "RUN(scale, (n + 127) / 128, 128, x, y, 2.0f, n)",
     "(n + 127) / 128", "128"),
    ("#define GO(f, grid, block, a, b, c, d) \\\n    f<<<grid, block, 0, 0>>>(a, b, c, d)",
     "GO(scale, dim3((n + 63) / 64), dim3(64),\n       x, y, 2.0f, n)", "dim3((n + 63) / 64)", "dim3(64)"),
    ("#define CDIV(a, b) (((a) + (b) - 1) / (b))\n#define LAUNCH1D(k, n, bs, ...) k<<<CDIV(n, bs), bs>>>(__VA_ARGS__)",
     "LAUNCH1D(scale, n, 512, x, y, 2.0f, n)", "(((n) + (512) - 1) / (512))", "512"),
]


def _file(define: str, use: str) -> str:
    return "#include <cuda_runtime.h>\n" + define + "\n" + KERNEL + MAIN.replace("USE", use)


@pytest.mark.parametrize(("define", "use", "grid", "block"), SPELLINGS)
def test_the_launch_through_the_macro_is_a_launch_site(define: str, use: str, grid: str, block: str) -> None:
    text = _file(define, use)
    k = parse_text(text, "cuda", "m.cu").kernel("scale")
    assert len(k.launch_sites) == 1
    site = k.launch_sites[0]
    assert site.kernel_name == "scale" and site.macro
    assert site.config["grid"] == grid and site.config["block"] == block
    assert site.args == ["x", "y", "2.0f", "n"]
    assert site.line == text[: text.index(use)].count("\n") + 1
    assert site.span is not None and text.encode()[site.span.start:site.span.end].decode() == use
    assert bool(site.config_spans) == use.startswith(("RUN", "GO"))  # the #define passes the grid and block


@pytest.mark.parametrize(("define", "use", "grid", "block"), SPELLINGS)
def test_the_harness_is_inferred_through_the_macro(tmp_path, define: str, use: str, grid: str, block: str) -> None:
    p = tmp_path / "m.cu"
    p.write_text(_file(define, use))
    h = infer_cuda_harness(p, "scale")
    n = 1 << 20
    bs = eval(block.replace("dim3", ""))  # noqa: S307 - our own literal test spellings
    assert h.block == f"({bs}, 1, 1)" and h.grid == f"({(n + bs - 1) // bs}, 1, 1)"
    assert {i.name for i in h.inputs} >= {"x", "y", "s", "n"}


def test_the_launch_view_keeps_lines() -> None:
    define, use = SPELLINGS[2][0], SPELLINGS[2][1]
    src = _file(define, use).encode()
    view = launch_view(src)
    assert view.count(b"\n") == src.count(b"\n")
    assert b"scale<<<dim3((n + 63) / 64), dim3(64), 0, 0>>>(x, y, 2.0f, n)" in view


def test_forms_given_up_stay_calls() -> None:
    src = b"""#define A(k, ...) k<<<1, 1>>>(__VA_ARGS__)
#define B(k, x) k<<<1, 1>>>(#x)
#define C(k) named<<<1, 1>>>(k)
void h() { A(f, 1, 2); B(f, 3); C(4); A(); }
#undef A
void g() { A(f, 5); }
"""
    uses = launch_macro_uses(src)
    assert [(u.macro.name, u.text) for u in uses] == [("A", "f<<<1, 1>>>(1, 2)")]


def test_variadic_without_variadic_arguments() -> None:
    uses = launch_macro_uses(b"#define L0(k, ...) k<<<1, 32>>>(__VA_ARGS__)\nvoid h() { L0(init); }\n")
    assert [u.text for u in uses] == ["init<<<1, 32>>>()"]


def test_launch_edits_are_refused_in_one_line() -> None:
    text = _file(*SPELLINGS[0][:2])
    model = parse_text(text, "cuda", "m.cu")
    r = propose("cuda.block_size", model, model.kernel("scale"))
    assert not isinstance(r, list)
    assert "through the macro LAUNCH" in r.reason and "\n" not in r.reason


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize(("define", "use", "grid", "block"), SPELLINGS[:2])
def test_steps_offered_through_the_macro_compile(tmp_path, define: str, use: str, grid: str, block: str) -> None:
    text = _file(define, use)
    model = parse_text(text, "cuda", str(tmp_path / "m.cu"))
    cands = propose("cuda.grid_stride", model, model.kernel("scale"))
    assert isinstance(cands, list) and cands
    for k, c in enumerate(cands):
        # a #define that computes the grid keeps the use as written; one that passes it gets its grid argument capped
        assert use in c.new_text if use.startswith("LAUNCH") else f"htam_sm_grid({grid}, " in c.new_text
        assert_compiles(c.new_text, tmp=tmp_path, name=f"c{k}.cu")


def test_the_site_says_it_is_written_through_the_macro() -> None:
    k = parse_text(_file(*SPELLINGS[1][:2]), "cuda", "m.cu").kernel("scale")
    assert k.launch_sites[0].macro == "RUN"
    assert k.to_json()["launch_sites"][0]["through_macro"] == "RUN"


def test_gnu_named_variadic_and_statement_bodies_are_launches() -> None:
    src = b"""#define GL(k, args...) k<<<1, 64>>>(args)
#define SL(k, n, ...) do { k<<<(n + 31) / 32, 32>>>(__VA_ARGS__); } while (0)
void h() { GL(f, a, b); SL(g, n, a); GL(f); }
"""
    uses = launch_macro_uses(src)
    assert [(u.macro.name, u.kernel, u.text) for u in uses] == [
        ("GL", "f", "f<<<1, 64>>>(a, b)"), ("SL", "g", "do { g<<<(n + 31) / 32, 32>>>(a); } while (0)"),
        ("GL", "f", "f<<<1, 64>>>()")]


def test_a_redefinition_or_undef_ends_a_launch_macro() -> None:
    src = b"""#define L(k, ...) k<<<1, 1>>>(__VA_ARGS__)
void a() { L(f, 1); }
#define L 0
void b() { L(f, 2); }
#define M(k) k<<<2, 2>>>()
#undef M
void c() { M(f); }
"""
    assert [u.text for u in launch_macro_uses(src)] == ["f<<<1, 1>>>(1)"]
