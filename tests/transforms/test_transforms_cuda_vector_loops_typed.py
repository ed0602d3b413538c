"""``cuda.vectorize_float4``'s generic 16-byte form: loops over ``__nv_bfloat16``, template ``T`` and ``double``
elements get ``htam_V = 16 / sizeof(widest)`` elements per step through an ``alignas`` struct, with the body in
an unrolled lane loop; accesses through an element's address (``__ldcs(&x[c])``, ``atomicAdd(&s[c], v)``) stay
scalar at the lane's element index.

Structural tests read the facts of the result; the double kernel runs on the CPU (:mod:`cpu_emulation`) against
the original on aligned, ragged and misaligned rows; the compile test (``test_transforms_cuda_compile``) builds
every candidate of this fixture with nvcc.
"""

from __future__ import annotations

import pytest
from transform_helpers import facts_of_text as _facts
from transform_helpers import fixture_path

from tests.support.nvcc_check import assert_compiles

TID = "cuda.vectorize_float4"
FILE = "vector_loop_typed.cu"


def test_template_grid_stride_sum_takes_sixteen_bytes_of_t(cand):
    (c,) = cand(TID, FILE, "sumsq_grid_stride")
    # a template T may be a 12- or 32-byte struct: one element per step then, aligned as T
    assert "constexpr int htam_V = (16 % sizeof(T) == 0 ? 16 / sizeof(T) : 1);" in c.new_text
    assert ("struct alignas((htam_V > 1 && (htam_V * sizeof(T) & (htam_V * sizeof(T) - 1)) == 0 ? "
            "htam_V * sizeof(T) : alignof(T))) htam_q0_t { T v[htam_V]; };") in c.new_text
    assert c.changes_numerics  # the sum visits a thread's elements in another order
    f = _facts(c.new_text, "sumsq_grid_stride")
    (main,) = [lp for lp in f.loops if lp.var == "htam_v4"]
    (tail,) = [lp for lp in f.loops if lp.var == "i"]
    assert main.grid_stride and tail.grid_stride and str(main.bound) == "div(count, expr(16 % sizeof(T) == 0 ? 16 / sizeof(T) : 1))"
    assert [a.vector for a in f.accesses_in(main) if a.space == "global"] == [True]


def test_warp_row_keeps_address_taken_accesses_scalar(cand):
    (c,) = cand(TID, FILE, "warp_row_scale")
    t = c.new_text
    assert "16 / (sizeof(Tx) > sizeof(Tw) ? sizeof(Tx) : sizeof(Tw))" in t  # the widest element sets the width
    assert "__ldcs(&xr[((int)(htam_v4 * htam_V + htam_l))])" in t
    assert "atomicAdd(&colsum[((int)(htam_v4 * htam_V + htam_l))], v)" in t
    f = _facts(t, "warp_row_scale")
    (main,) = [lp for lp in f.loops if lp.var == "htam_v4"]
    assert main.step == 32
    moved = {a.pointer for a in f.accesses_in(main) if a.space == "global" and a.vector}
    assert moved == {"y", "w"}  # x goes through its address (__ldcs): not moved into a vector copy


def test_a_loop_whose_only_access_is_through_its_address_is_refused(tmp_path):
    from htam_core.source import load
    from htam_core.transforms import registry
    from htam_core.transforms.base import NotApplicable

    p = tmp_path / "a.cu"
    p.write_text("__global__ void f(float *s, int n) {\n"
                 "    for (int i = threadIdx.x; i < n; i += blockDim.x) atomicAdd(&s[i], 1.0f);\n}\n"
                 "void g(float *s, int n) { f<<<1, 256>>>(s, n); }\n")
    m = load(str(p))
    res = registry.propose(TID, m, m.kernel("f"))
    assert isinstance(res, NotApplicable) and "other than through its address" in res.reason


@pytest.mark.parametrize("cols", [8, 6, 7, 1])
def test_double_rows_same_numbers_on_the_cpu(cols, tmp_path, cand):
    """Two doubles per step; odd ``cols`` misaligns every other row, which then runs the scalar loop."""
    from cpu_emulation import compiler, run_main

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    rows = 9
    main = f"""
int main() {{
    const int rows = {rows}, cols = {cols};
    std::vector<double> x((size_t)rows * cols), y(rows, 0.0);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25 * (double)((i * 7) % 13) - 1.0;
    HTAM_LAUNCH(1, 1, 4, 1, row_sumsq_f64(x.data(), y.data(), rows, cols));
    for (double v : y) std::printf("%.17g\\n", v);
    return 0;
}}
"""
    (c,) = cand(TID, FILE, "row_sumsq_f64")
    assert "constexpr int htam_V = 16 / sizeof(double);" in c.new_text
    before = run_main(fixture_path(FILE).read_text(), "row_sumsq_f64", main, tmp_path)
    after = run_main(c.new_text, "row_sumsq_f64", main, tmp_path)
    assert len(after) == len(before) == rows
    assert max(abs(a - b) for a, b in zip(after, before, strict=True)) < 1e-12


@pytest.mark.gpu
@pytest.mark.parametrize("cols", [1000, 1001, 8, 3])
def test_bf16_loops_same_numbers_on_gpu(cols, tmp_path, cand):
    """The bf16 grid-stride sum and the warp-per-row bf16 scale (aligned rows, misaligned rows when ``cols`` is
    odd, rows shorter than one vector) give the original's outputs."""
    from gpu_equivalence import call_host, torch_cuda

    torch = torch_cuda()
    rows = 37
    g = torch.Generator(device="cuda").manual_seed(cols)
    xb = torch.randn(rows * cols, device="cuda", generator=g).to(torch.bfloat16)
    w = torch.randn(cols, device="cuda", generator=g)
    texts = [fixture_path(FILE).read_text(), cand(TID, FILE, "sumsq_grid_stride")[0].new_text]
    texts.append(cand(TID, FILE, "warp_row_scale")[0].new_text)
    outs = []
    for i, text in enumerate(texts):
        out, colsum = torch.zeros(1, device="cuda"), torch.zeros(cols, device="cuda")
        y = torch.zeros(rows * cols, device="cuda", dtype=torch.bfloat16)
        call_host(text, "float *out, const __nv_bfloat16 *xb, int n, __nv_bfloat16 *y, const float *w, "
                  "float *colsum, int rows, int cols",
                  "sumsq_grid_stride<<<264, 256>>>(out, xb, (size_t)n); "
                  "warp_row_scale<<<(rows + WARPS - 1) / WARPS, 32 * WARPS>>>(y, xb, w, colsum, rows, cols)",
                  [out, xb, rows * cols, y, w, colsum, rows, cols], tmp_path, f"t{i}")
        outs.append((out, y.float(), colsum))
    for k in (1, 2):
        for got, want in zip(outs[k], outs[0], strict=True):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-3)


_ODD_SIZES = """struct Rgb { float r, g, b; };
struct Wide { double v[4]; };

template <typename T>
__global__ void copy_t(const T *a, T *b, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) b[i] = a[i];
}

void run(const Rgb *a, Rgb *b, const Wide *c, Wide *d, const float *e, float *f, int n) {
    copy_t<Rgb><<<120, 256>>>(a, b, n);
    copy_t<Wide><<<120, 256>>>(c, d, n);
    copy_t<float><<<120, 256>>>(e, f, n);
}
"""


def test_template_elements_of_12_and_32_bytes_compile(tmp_path):
    # the generic form wrote 16 / sizeof(T) and alignas(htam_V * sizeof(T)): 1 element and alignas(12) for a
    # 12-byte struct, 0 elements for a 32-byte one; neither compiled
    import shutil

    from htam_core.source import parse_text
    from htam_core.transforms import registry

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    m = parse_text(_ODD_SIZES, "cuda", str(tmp_path / "odd.cu"))
    cands = registry.propose(TID, m, m.kernel("copy_t"))
    assert isinstance(cands, list) and cands, cands
    assert_compiles(cands[0].new_text, tmp=tmp_path, name="odd_v.cu")
