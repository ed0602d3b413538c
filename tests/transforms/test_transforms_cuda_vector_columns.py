"""``cuda.vector_columns``: a thread-per-column sum with scalar reads gets 16 bytes of adjacent columns per thread
(one vector load per row when aligned and in range, a scalar path otherwise) and a grid x divided to match; a
column sum whose warps split the rows (lanes on columns) gets 16 bytes of adjacent columns per lane and row, the
lanes' partials put back on their columns by shuffles before the kernel's own combine.

Structure from the result's text and facts, the refusals by reason, and CPU runs: the thread-per-column kernel
has no thread cooperation, so :mod:`cpu_emulation` runs it one thread at a time, on column counts that are and are
not multiples of 4 (the unaligned rows take the scalar path); the warp-rows kernel runs with a host thread per CUDA
thread (:func:`cpu_emulation.run_block_main`: barriers, shared memory, shuffles), on aligned and unaligned rows. The nvcc compile test
(``test_transforms_cuda_compile``) builds every candidate of the fixture.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_block_main, run_lane_columns, run_main
from gpu_equivalence import call_host, torch_cuda
from transform_helpers import facts_of_text as _facts
from transform_helpers import fixture_path

TID = "cuda.vector_columns"
FILE = "column_sum_variants.cu"


def test_thread_per_column_gets_vector_rows(cand):
    (c,) = cand(TID, FILE, "colsum_thread_scaled")
    body = c.new_text.split("void colsum_thread_scaled", 1)[1].split("void colsum_thread_noguard", 1)[0]
    assert "constexpr int htam_V = (16 / sizeof(float));" in body
    assert "int c = (blockIdx.x * blockDim.x + threadIdx.x) * htam_V;" in body
    assert "htam_x.v[htam_k] * w[(c + htam_k)]" in body  # the column's own value stays a scalar read
    assert "out[(c + htam_k)] = out[(c + htam_k)] + htam_acc[htam_k];" in body
    launch = "colsum_thread_scaled<<<(((cols + 127) / 128) + (16 / sizeof(float)) - 1) / (16 / sizeof(float)), 128>>>"
    assert launch in c.new_text
    f = _facts(c.new_text, "colsum_thread_scaled")
    assert any(a.vector and a.pointer == "x" for a in f.accesses)
    assert not f.thread_column_loops()  # nothing left to widen


@pytest.mark.parametrize("kernel,needle", [
    ("colsum_thread_noguard", "no column guard"),
    ("colsum_thread_t", "is a template parameter"),
    ("colsum_warp", "no thread-per-column sum with scalar reads"),
    ("colsum_warp_rows_guard", "may return; every lane of a warp must reach the shuffles"),
    ("colsum_warp_rows_partials", "other than summing it with the other warps'"),
])
def test_refusals_name_the_missing_shape(refuse, kernel, needle):
    assert needle in refuse(TID, FILE, kernel)


MAIN = """
int main() {
    const int rows = ROWS, cols = COLS;
    std::vector<float> x((size_t)rows * cols), w(cols), out(cols, 0.5f);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) x[(size_t)r * cols + c] = (float)((r * 7 + c * 3) % 13) - 6.0f;
    for (int c = 0; c < cols; ++c) w[c] = 0.25f * (float)(c % 5);
    HTAM_LAUNCH(GRID, 1, 32, 1, colsum_thread_scaled(out.data(), x.data(), w.data(), rows, cols));
    for (float v : out) std::printf("%.9g\\n", v);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("rows,cols", [(9, 64), (14, 45), (3, 2)])
def test_same_sums_as_before_on_the_cpu(cand, tmp_path, rows, cols):
    (c,) = cand(TID, FILE, "colsum_thread_scaled")
    before_text = fixture_path(FILE).read_text()

    def main(grid: str) -> str:
        return MAIN.replace("ROWS", str(rows)).replace("COLS", str(cols)).replace("GRID", grid)

    before = run_main(before_text, "colsum_thread_scaled", main("(cols + 31) / 32"), tmp_path)
    after = run_main(c.new_text, "colsum_thread_scaled", main("((cols + 31) / 32 + 3) / 4"), tmp_path)
    assert after == before  # same rows in the same order per column: bit for bit
    assert len(after) == cols and any(v != 0.5 for v in after)


def test_warp_rows_get_vector_rows_per_lane(cand):
    (c,) = cand(TID, FILE, "colsum_warp_rows")
    body = c.new_text.split("void colsum_warp_rows", 1)[1].split("void colsum_warp_rows_guard", 1)[0]
    assert "constexpr int htam_V = 16 / sizeof(float), htam_G = 32 / htam_V;" in body
    assert "for (int r = (warp) * htam_V + htam_l / htam_G; r < rows; r += (warps) * htam_V)" in body
    assert "reinterpret_cast<const htam_pack_x *>(&col[r * cols] + htam_off)" in body
    assert "__shfl_down_sync(0xffffffffu, htam_acc[htam_k], htam_o)" in body
    assert "if (htam_l % htam_V == htam_k) s += htam_t;" in body
    assert "part[lane + warp * warpSize] = s;" in body  # the kernel's own combine stays
    assert "colsum_warp_rows<<<cols / 32, block_size, block_size * sizeof(float)>>>" in c.new_text  # launch stays
    f = _facts(c.new_text, "colsum_warp_rows")
    assert any(a.vector and a.pointer == "x" for a in f.accesses)
    assert not f.thread_column_loops()


def test_warp_rows_fact_needs_the_warp_split():
    f = _facts(fixture_path(FILE).read_text(), "colsum_warp_rows")
    (split,) = f.thread_column_loops()
    assert split.warp == 32 and str(split.stride) == "cols"  # warpSize reads as the constant 32
    assert not _facts(fixture_path(FILE).read_text(), "colsum_warp").thread_column_loops()  # lanes on rows


WARP_MAIN = """
int main() {
    const int rows = ROWS, cols = COLS, block = BLOCK;
    std::vector<float> buf((size_t)rows * cols + 1), out(cols, 0.5f);
    float *x = buf.data() + SHIFT;  // SHIFT 1: no row is 16-byte aligned, the scalar path
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) x[(size_t)r * cols + c] = (float)((r * 7 + c * 3) % 13) - 6.0f;
    htam_launch(cols / 32, block, 1, [&] { colsum_warp_rows(out.data(), x, rows, cols); });
    for (float v : out) std::printf("%.9g\\n", v);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("rows,cols,block", [(37, 64, 128), (5, 32, 256), (70, 96, 32)])
@pytest.mark.parametrize("shift", [0, 1])
def test_warp_rows_same_sums_on_the_cpu(cand, tmp_path, rows, cols, block, shift):
    """Fewer rows than the block's rows per step, one warp, aligned and unaligned rows: every column's total
    (small integers, so exact in any order) as before the rewrite and as computed in Python."""
    (c,) = cand(TID, FILE, "colsum_warp_rows")
    main = WARP_MAIN.replace("ROWS", str(rows)).replace("COLS", str(cols)).replace("BLOCK", str(block)).replace(
        "SHIFT", str(shift))
    before = run_block_main(fixture_path(FILE).read_text(), "colsum_warp_rows", main, tmp_path)
    after = run_block_main(c.new_text, "colsum_warp_rows", main, tmp_path)
    want = [0.5 + sum(float((r * 7 + col * 3) % 13) - 6.0 for r in range(rows)) for col in range(cols)]
    assert after == before == want


@pytest.mark.gpu
@pytest.mark.parametrize("block", [32, 128, 1024])
@pytest.mark.parametrize("shift", [0, 1])
def test_warp_rows_equivalence_on_gpu(cand, tmp_path, block, shift):
    """On the GPU: the column sums of random rows (aligned, and one element off so every row takes the scalar
    path) as before the rewrite and as torch's, up to the float rounding of another summation order."""
    torch = torch_cuda()
    rows, cols = 4099, 768
    g = torch.Generator(device="cuda").manual_seed(block + shift)
    buf = torch.randn(rows * cols + 1, device="cuda", generator=g)
    x = buf[shift:shift + rows * cols]
    (c,) = cand(TID, FILE, "colsum_warp_rows")
    outs = []
    for i, text in enumerate((fixture_path(FILE).read_text(), c.new_text)):
        out = torch.full((cols,), 0.5, device="cuda")
        call_host(text, "float *out, const float *x, int rows, int cols, int block",
                  "launch_warp_rows(out, x, rows, cols, block)", [out, x, rows, cols, block], tmp_path, f"wr{i}")
        outs.append(out)
    want = 0.5 + x.view(rows, cols).double().sum(0).float()
    assert torch.allclose(outs[0], want, atol=1e-3) and torch.allclose(outs[1], want, atol=1e-3)
    assert torch.allclose(outs[1], outs[0], atol=1e-3)


def _after_lane_columns(cand) -> str:
    """``colsum_warp`` after ``cuda.lane_columns`` (lanes on columns, warps on the threadIdx.y rows, guarded)."""
    (lc,) = cand("cuda.lane_columns", FILE, "colsum_warp")
    return lc.new_text


def _vector_columns(text: str):
    from htam_core.source import parse_text
    from htam_core.transforms import registry

    m = parse_text(text, "cuda")
    return registry.propose(TID, m, m.kernel("colsum_warp"))


def test_lane_columns_output_gets_vector_rows(cand):
    """The form ``cuda.lane_columns`` writes (rows from threadIdx.y, the loop under `if (c < cols)`, block x 32):
    the guard moves onto each element, the shuffles run on every lane."""
    (c,) = _vector_columns(_after_lane_columns(cand))
    body = c.new_text.split("void colsum_warp(", 1)[1].split("void colsum_block(", 1)[0]
    assert "for (int r = (threadIdx.y) * htam_V + htam_l / htam_G; r < rows; r += (blockDim.y) * htam_V)" in body
    assert "&& c + htam_off + htam_V <= cols) {" in body
    assert "if (c + htam_off + htam_k < cols) { htam_acc[htam_k] += (&x[r * cols + c])[htam_off + htam_k]; }" in body
    assert "if (c < cols) {\n        for" not in body  # the loop left the guard
    assert not _facts(c.new_text, "colsum_warp").thread_column_loops()


def test_lane_columns_output_needs_a_warp_wide_block(cand):
    text = _after_lane_columns(cand).replace("dim3(32, ((block_size) + 31) / 32)", "dim3(64, ((block_size) + 63) / 64)")
    got = _vector_columns(text)
    assert not isinstance(got, list) and "the block's x on line" in got.reason and "is not 32" in got.reason


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("rows,cols,block", [(37, 45, 96), (5, 32, 256), (70, 3, 40), (9, 66, 64)])
def test_lane_columns_output_same_sums_on_the_cpu(cand, tmp_path, rows, cols, block):
    """Columns not a multiple of 32 or 4 (unaligned rows, the guard per element), fewer rows than warps."""
    (c,) = _vector_columns(_after_lane_columns(cand))
    got = run_lane_columns(c.new_text, "colsum_warp", rows, cols, block, tmp_path)
    assert got == [sum(float((r * 7 + col * 3) % 13) - 6.0 for r in range(rows)) for col in range(cols)]


#: A^T x: a column walk weighted by a value of the row (``x[i]``, the same element for every thread), in three
#: spellings (early return and size_t rows; a guarded block and an index variable; a template-free scalar_t alias)
ATX = {
    "early": """__global__ void atx(const float *A, const float *x, float *y, int m, int n) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float acc = 0.0f;
    for (int i = 0; i < m; ++i) {
        acc += A[(size_t)i * n + j] * x[i];
    }
    y[j] = acc;
}
void go(const float *A, const float *x, float *y, int m, int n) { atx<<<(n + 255) / 256, 256>>>(A, x, y, m, n); }
""",
    "guarded": """__global__ void atx(const float* __restrict__ A, const float* __restrict__ x, float* y, int m, int n) {
    const int col = threadIdx.x + blockIdx.x * blockDim.x;
    if (col < n) {
        float s = 0.f;
        for (int r = 0; r < m; r++) {
            const int at = r * n + col;
            s += x[r] * A[at];
        }
        y[col] = 2.0f * s;
    }
}
void go(const float *A, const float *x, float *y, int m, int n) { atx<<<(n + 127) / 128, 128>>>(A, x, y, m, n); }
""",
    "scaled": """typedef float real;
__global__ void atx(const real *A, const real *x, real *y, int m, int n) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    real acc = 0;
    for (int i = 0; i < m; i += 1) acc = acc + x[i] * A[i * n + j] * x[0];
    y[j] = acc;
}
void go(const real *A, const real *x, real *y, int m, int n) { atx<<<(n + 63) / 64, 64>>>(A, x, y, m, n); }
""",
}

ATX_MAIN = """
int main() {
    const int m = ROWS, n = COLS;
    std::vector<float> A((size_t)m * n), x(m), y(n, -1.0f);
    for (int r = 0; r < m; ++r)
        for (int c = 0; c < n; ++c) A[(size_t)r * n + c] = (float)((r * 5 + c * 3) % 11) - 5.0f;
    for (int r = 0; r < m; ++r) x[r] = 0.5f * (float)(r % 7) - 1.0f;
    HTAM_LAUNCH(GRID, 1, 32, 1, atx(A.data(), x.data(), y.data(), m, n));
    for (float v : y) std::printf("%.9g\\n", v);
    return 0;
}
"""


@pytest.mark.parametrize("spelling", sorted(ATX))
def test_a_weighted_column_walk_is_a_column_sum_and_is_widened(spelling):
    """Regression (a new user's A^T x): a column walk that also reads a value of the row (``x[i]``) was not a
    column sum, so the 16-byte step was not offered; the row's value stays a scalar read in the vector body."""
    from htam_core.source import parse_text
    from htam_core.transforms.registry import propose

    text = ATX[spelling]
    f = _facts(text, "atx")
    (split,) = f.thread_column_loops()
    assert {a.pointer for a in f.column_reads(split)} == {"A"}
    m = parse_text(text, "cuda", "atx.cu")
    (c,) = propose(TID, m, m.kernel("atx"))
    assert "htam_pack_A" in c.new_text and "htam_pack_x" not in c.new_text
    assert "x[i]" in c.new_text or "x[r]" in c.new_text


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("spelling", sorted(ATX))
@pytest.mark.parametrize("rows,cols", [(9, 64), (14, 45)])
def test_a_weighted_column_walk_gives_the_same_sums_on_the_cpu(spelling, tmp_path, rows, cols):
    from htam_core.source import parse_text
    from htam_core.transforms.registry import propose

    text = ATX[spelling]
    m = parse_text(text, "cuda", "atx.cu")
    (c,) = propose(TID, m, m.kernel("atx"))

    def main(grid: str) -> str:
        return ATX_MAIN.replace("ROWS", str(rows)).replace("COLS", str(cols)).replace("GRID", grid)

    prelude = "typedef float real;\n" if "real" in text else ""
    strip = (lambda t: t.replace("typedef float real;\n", "")) if prelude else (lambda t: t)
    before = run_main(strip(text), "atx", main("(n + 31) / 32"), tmp_path, prelude=prelude)
    after = run_main(strip(c.new_text), "atx", main("((n + 31) / 32 + 3) / 4"), tmp_path, prelude=prelude)
    assert after == before and len(after) == cols and any(v != -1.0 for v in after)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("spelling", sorted(ATX))
def test_a_weighted_column_walk_compiles_with_nvcc(spelling):
    from spellings import nvcc_error

    from htam_core.source import parse_text
    from htam_core.transforms.registry import propose

    m = parse_text(ATX[spelling], "cuda", "atx.cu")
    (c,) = propose(TID, m, m.kernel("atx"))
    assert nvcc_error(c.new_text, "atx.cu") == ""
