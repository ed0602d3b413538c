"""Two valid spellings the steps read as their plain forms. (1) A bounds guard whose ``else`` changes nothing
(``if (i < n) { ... } else { return; }`` ending the kernel, ``else return;``, ``else {}``): ``grid_stride_loop``,
``vectorize_float4``, ``warp_per_row`` and ``block_per_row`` are made, the candidates compile, and the CPU runs
give the start's outputs. (2) A row loop with an inclusive bound (``for (k = 0; k <= q; ++k)``, a causal row) or
written ``n > k`` / ``k != n``: the row steps split it over the lanes with the same elements. Kernels written here."""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_block_main, run_main
from transform_helpers import assert_nvcc_compiles

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

ELSES = ["else {\n        return;\n    }", "else return;", "else {}"]

EW = """__global__ void sq(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v * v + 1.0f;
    } ELSE
}
void go(const float* x, float* y, int n) { sq<<<(n + 255) / 256, 256>>>(x, y, n); }
"""
_EW_MAIN = """
int main() {
    const int n = 1001;
    std::vector<float> x(n), y(n, 0.0f);
    for (int k = 0; k < n; ++k) x[k] = (float)(k % 17) - 8.0f;
    HTAM_LAUNCH(GRID, 1, 256, 1, sq(x.data(), y.data(), n));
    for (float v : y) std::printf("%.6g\\n", v);
    return 0;
}
"""

ROW = """__global__ void rms(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f;
        for (int j = 0; j < cols; ++j) s += x[r * cols + j] * x[r * cols + j];
        float inv = 1.0f / (s + 1.0f);
        for (int j = 0; j < cols; ++j) y[r * cols + j] = x[r * cols + j] * inv;
    } ELSE
}
void go(const float* x, float* y, int rows, int cols) { rms<<<(rows + 127) / 128, 128>>>(x, y, rows, cols); }
"""
_ROW_MAIN = """
int main() {
    const int rows = 37, cols = 75;
    std::vector<float> x(rows * cols), o(rows * cols, 0.f);
    for (int k = 0; k < rows * cols; ++k) x[k] = (float)((k * 29 + k / 11) % 97) * 0.25f - 7.0f;
    htam_launch((rows + 127) / 128 * GROW, 128, 1, [&] { KERNEL(x.data(), o.data(), rows, cols); });
    for (float v : o) std::printf("%.6g\\n", v);
    return 0;
}
"""

# a causal row: row q of a (rows x rows) score matrix is summed over k = 0 .. q, the bound included
CAUSAL = """__global__ void causal(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q < rows) {
        float s = 0.0f;
        for (int k = 0; HEAD) s += x[q * cols + k];
        y[q] = s;
    }
}
void go(const float* x, float* y, int rows, int cols) { causal<<<(rows + 127) / 128, 128>>>(x, y, rows, cols); }
"""
HEADS = ["k <= q; ++k", "q >= k; k++", "k < q + 1; ++k", "cols > k; ++k", "k != cols; k += 1"]


def _propose(tid: str, text: str, kernel: str):
    model = parse_text(text, "cuda")
    return registry.propose(tid, model, model.kernel(kernel))


def _made(tid: str, text: str, kernel: str):
    cs = _propose(tid, text, kernel)
    assert not isinstance(cs, NotApplicable), cs.reason
    return cs


@pytest.mark.parametrize("alt", ELSES)
@pytest.mark.parametrize("tid", ["cuda.grid_stride", "cuda.vectorize_float4"])
def test_an_elementwise_step_reads_through_a_noop_else(tid, alt, tmp_path):
    text = EW.replace("ELSE", alt)
    cs = _made(tid, text, "sq")
    for c in cs:
        body = c.new_text[c.new_text.index("__global__ void sq"):c.new_text.index("\nvoid go")]
        assert body.count("{") == body.count("}")
        if tid == "cuda.grid_stride":  # the else went with the if: nothing dangles after the loop
            assert "else" not in body and "htam_gi += " in body
    if shutil.which("nvcc"):
        for k, c in enumerate(cs):
            assert_nvcc_compiles(c.new_text, tmp_path, f"c{k}.cu")


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("alt", ELSES[:2])
def test_the_grid_stride_loop_gives_the_same_outputs_on_the_cpu(alt, tmp_path):
    text = EW.replace("ELSE", alt)
    want = run_main(text, "sq", _EW_MAIN.replace("GRID", "4"), tmp_path)
    (c, *_) = _made("cuda.grid_stride", text, "sq")
    got = run_main(c.new_text, "sq", _EW_MAIN.replace("GRID", "2"), tmp_path)  # fewer blocks: each thread loops
    assert got == want and len(set(want)) > 5


@pytest.mark.parametrize("alt", ELSES)
@pytest.mark.parametrize("tid", ["cuda.warp_per_row", "cuda.block_per_row"])
def test_a_row_step_reads_through_a_noop_else(tid, alt, tmp_path):
    cs = _made(tid, ROW.replace("ELSE", alt), "rms")
    if shutil.which("nvcc"):
        for k, c in enumerate(cs):
            assert_nvcc_compiles(c.new_text, tmp_path, f"c{k}.cu")


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("alt", ELSES[:2])
def test_the_warp_per_row_gives_the_same_outputs_on_the_cpu(alt, tmp_path):
    text = ROW.replace("ELSE", alt)
    main = _ROW_MAIN.replace("KERNEL", "rms")
    want = run_block_main(text, "rms", main.replace("GROW", "1"), tmp_path)
    (c,) = _made("cuda.warp_per_row", text, "rms")
    got = run_block_main(c.new_text, "rms", main.replace("GROW", "32"), tmp_path)
    assert got == pytest.approx(want, rel=1e-5, abs=1e-4) and len(set(want)) > 5


def test_an_else_that_does_work_is_refused_in_one_line():
    text = ROW.replace("ELSE", "else { y[0] = 0.0f; }")
    for tid in ("cuda.warp_per_row", "cuda.block_per_row"):
        r = _propose(tid, text, "rms")
        assert isinstance(r, NotApplicable) and "else branch that does work" in r.reason, r


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("tid", ["cuda.warp_per_row", "cuda.block_per_row"])
def test_an_inclusive_or_flipped_row_loop_is_split_over_the_lanes(tid, head, tmp_path):
    (c,) = _made(tid, CAUSAL.replace("HEAD", head), "causal")
    if head.startswith("k != cols"):  # a lane stepping by 32 would pass cols: the rewrite stops it with `<`
        assert "k < cols;" in c.new_text and "!=" not in c.new_text
    else:
        assert head.split(";")[0] + ";" in c.new_text  # the condition as written: lanes stop at the same bound
    if shutil.which("nvcc"):
        assert_nvcc_compiles(c.new_text, tmp_path)


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("head", HEADS)
def test_the_causal_row_gives_the_same_sums_on_the_cpu(head, tmp_path):
    text = CAUSAL.replace("HEAD", head)
    main = _ROW_MAIN.replace("KERNEL", "causal").replace("rows = 37, cols = 75", "rows = 45, cols = 45") \
        .replace("o(rows * cols", "o(rows")
    want = run_block_main(text, "causal", main.replace("GROW", "1"), tmp_path)
    (c,) = _made("cuda.warp_per_row", text, "causal")
    got = run_block_main(c.new_text, "causal", main.replace("GROW", "32"), tmp_path)
    assert got == pytest.approx(want, rel=1e-5, abs=1e-3) and len(set(want)) > 5


def test_a_nest_with_an_inclusive_bound_counts_the_bound_in():
    text = """__global__ void nest(const float* __restrict__ x, float* __restrict__ y, int rows, int h, int w) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f;
        for (int a = 0; a <= h; ++a)
            for (int b = 0; b < w; ++b) s += x[(r * (h + 1) + a) * w + b];
        y[r] = s;
    }
}
void go(const float* x, float* y, int rows, int h, int w) { nest<<<(rows + 127) / 128, 128>>>(x, y, rows, h, w); }
"""
    (c,) = _made("cuda.warp_per_row", text, "nest")
    assert "((h) + 1) > 0 && (w) > 0 ? (long long)((h) + 1) * (w)" in c.new_text
