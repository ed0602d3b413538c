"""Loops that walk groups of ``S`` consecutive elements (``x[2 * p]``, ``x[2 * p + 1]``: a rotary embedding's
pairs; ``px[4 * q + k]``: RGBA pixels): the analysis layer's :meth:`KernelFacts.element_groups`, the group form
of ``cuda.vectorize_float4`` (one ``S``-element vector per group) and ``cuda.thread_per_element`` (one thread per
group). Results are compiled with nvcc and run on the CPU (:mod:`cpu_emulation`) against the original.
"""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import fixture_path

from htam_core.source import load, parse_text
from htam_core.source.analysis import analyze
from tests.support.nvcc_check import assert_compiles

FILE = "group_loops.cu"
VEC = "cuda.vectorize_float4"
TPE = "cuda.thread_per_element"


@pytest.mark.parametrize("kernel,width", [("rope_rows", 2), ("rope_inline", 2), ("rgba_gain", 4), ("cscale", 2),
                                          ("even_only", None)])
def test_group_width_of_the_fixture_loops(kernel, width):
    m = load(str(fixture_path(FILE)))
    f = analyze(m, m.kernel(kernel))
    (lp,) = f.loops
    assert f.group_width(lp) == width
    assert f.is_row_loop(lp, groups=True) == (width is not None)
    assert not f.is_row_loop(lp)  # the plain row walk (stride 1) stays what it was


_ONE = ("__global__ void k(float* y, const float* x, int n) {{\n  int r = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  for (int p = 0; p < n; p++) {{ {body} }}\n}}\n")


@pytest.mark.parametrize("body,width", [
    ("y[r * 3 * n + 3 * p] = x[3 * p]; y[r * 3 * n + 3 * p + 1] = x[3 * p + 1]; y[r * 3 * n + 3 * p + 2] = x[3 * p + 2];", 3),
    ("y[r * n + 2 * p] = x[2 * p + 1]; y[r * n + 2 * p + 1] = x[2 * p];", 2),       # a swap: reads and writes
    ("y[r * n + 2 * p] = x[2 * p + 2];", None),                                       # the next group's element
    ("y[r * n + 2 * p] = x[2 * p]; y[r * n + 2 * p + 1] = x[p];", None),              # strides 2 and 1
    ("y[r * n + 2 * p] = x[2 * p] + x[2 * p + 1];", None),                            # half the group stored
])
def test_group_facts_of_other_spellings(body, width):
    m = parse_text(_ONE.format(body=body), "cuda")
    f = analyze(m, m.kernel("k"))
    assert f.group_width(f.loops[0]) == width


def test_rope_pairs_move_as_float2(cand):
    (c,) = cand(VEC, FILE, "rope_rows")
    t = c.new_text
    assert "const float2 htam_g0 = *reinterpret_cast<const float2 *>(&f[2 * p]);" in t
    assert "*reinterpret_cast<float2 *>(&o[2 * p]) = htam_g2;" in t
    assert "(alignof(float2) - 1)" in t and "&x[2 * (0)]" in t  # each thread's first pair decides the alignment
    assert "float x0 = htam_g1.x, x1 = htam_g1.y;" in t


def test_rgba_quads_move_as_float4_and_doubles_as_a_struct(cand):
    (c,) = cand(VEC, FILE, "rgba_gain")
    assert "float4 htam_g0 = *reinterpret_cast<const float4 *>(&px[(r * w + q) * 4 + 0]);" in c.new_text
    assert "htam_g0.w = 1.0f;" in c.new_text
    (d,) = cand(VEC, FILE, "cscale")
    assert "struct alignas(2 * sizeof(double)) htam_g0_t { double v[2]; };" in d.new_text
    assert "z[(size_t)r * 2 * n + 2 * k]" in d.new_text  # the loop as written stays, for unaligned rows


def test_a_partial_store_and_a_twelve_byte_group_are_refused(refuse, tmp_path):
    assert "not a stride-1 access" in refuse(VEC, FILE, "even_only")
    from htam_core.transforms import registry
    from htam_core.transforms.base import NotApplicable

    src = _ONE.format(body="y[r * 3 * n + 3 * p] = x[3 * p]; y[r * 3 * n + 3 * p + 1] = x[3 * p + 1]; "
                           "y[r * 3 * n + 3 * p + 2] = x[3 * p + 2];") + "void g(float* y, const float* x, int n) { k<<<4, 32>>>(y, x, n); }\n"
    m = parse_text(src, "cuda", str(tmp_path / "a.cu"))
    res = registry.propose(VEC, m, m.kernel("k"))
    assert isinstance(res, NotApplicable) and "not a vector of 2, 4, 8 or 16 bytes" in res.reason


@pytest.mark.parametrize("kernel", ["rope_rows", "rope_inline", "cscale", "rgba_gain"])
def test_one_thread_per_group_is_offered(cand, kernel):
    (c,) = cand(TPE, FILE, kernel)
    assert "htam_e" in c.new_text


def test_candidates_compile():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    from transform_helpers import candidates

    for tid, k in [(VEC, "rope_rows"), (VEC, "rope_inline"), (VEC, "rgba_gain"), (VEC, "cscale"),
                   (TPE, "rope_rows")]:
        (c,) = candidates(tid, FILE, k)
        assert_compiles(c.new_text, name=f"{k}.cu", context=(tid, k))


def _rope_main(grid: str, hs: int, offset: int) -> str:
    """A main running rope_rows over 2 x 3 x 2 heads of ``hs`` elements, the buffers ``offset`` floats into
    their allocation (an odd offset misaligns every pair: the loop as written runs)."""
    return f"""
int main() {{
    const int B = 2, T = 3, NH = 2, HS = {hs};
    std::vector<float> in((size_t)B * T * NH * HS + 2), out(in.size(), -7.0f), fr((size_t)T * HS + 2);
    for (size_t i = 0; i < in.size(); ++i) in[i] = 0.25f * (float)((i * 7) % 13) - 1.5f;
    for (size_t i = 0; i < fr.size(); ++i) fr[i] = 0.125f * (float)((i * 5) % 11) - 0.5f;
    HTAM_LAUNCH({grid}, 1, 4, 1, rope_rows(out.data() + {offset}, in.data() + {offset}, fr.data() + {offset},
                                            B, T, NH, HS));
    for (float v : out) std::printf("%.9g\\n", v);
    return 0;
}}
"""


@pytest.mark.parametrize("hs,offset", [(8, 0), (6, 0), (8, 1), (7, 0)])
def test_rope_same_numbers_on_the_cpu(hs, offset, tmp_path, cand):
    from cpu_emulation import compiler, run_main

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text = fixture_path(FILE).read_text()
    before = run_main(text, "rope_rows", _rope_main("3", hs, offset), tmp_path)
    (v,) = cand(VEC, FILE, "rope_rows")
    assert run_main(v.new_text, "rope_rows", _rope_main("3", hs, offset), tmp_path) == before
    (e,) = cand(TPE, FILE, "rope_rows")
    assert run_main(e.new_text, "rope_rows", _rope_main(f"3 * ({hs} / 2)", hs, offset), tmp_path) == before


def test_a_loop_variable_declared_before_the_loop_starts_the_alignment_check(tmp_path):
    from htam_core.transforms import registry

    src = ("__global__ void k(float* y, const float* x, int rows, int n) {\n"
           "  int r = blockIdx.x * blockDim.x + threadIdx.x;\n  if (r >= rows) return;\n  int p;\n"
           "  for (p = 1; p < n; p++) { y[(size_t)r * 2 * n + 2 * p] = x[2 * p + 1]; "
           "y[(size_t)r * 2 * n + 2 * p + 1] = x[2 * p]; }\n}\n"
           "void g(float* y, const float* x, int rows, int n) { k<<<4, 32>>>(y, x, rows, n); }\n")
    m = parse_text(src, "cuda", str(tmp_path / "a.cu"))
    (c,) = registry.propose(VEC, m, m.kernel("k"))
    assert "&x[2 * (1)]" in c.new_text and "{ htam_g0.x = htam_g1.y; htam_g0.y = htam_g1.x; }" in c.new_text
