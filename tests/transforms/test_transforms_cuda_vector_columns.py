"""``cuda.vector_columns``: a thread-per-column sum with scalar reads gets 16 bytes of adjacent columns per thread
(one vector load per row when aligned and in range, a scalar path otherwise) and a grid x divided to match.

Structure from the result's text and facts, the refusals by reason, and a CPU run (the kernel has no thread
cooperation, so :mod:`cpu_emulation` runs it one thread at a time) of the original and the rewrite on column
counts that are and are not multiples of 4 (the unaligned rows take the scalar path). The nvcc compile test
(``test_transforms_cuda_compile``) builds every candidate of the fixture.
"""

from __future__ import annotations

import pytest
from cpu_emulation import compiler, run_main
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
