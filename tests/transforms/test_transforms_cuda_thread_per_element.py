"""``cuda.thread_per_element``: a thread-per-row kernel whose row loop carries nothing across elements gets one
thread per element (the row from the flat index divided by the row length, the column from the remainder),
and every launch's grid grows by the row length.

Structural tests read the facts of the result (no loop left, the stores coalesced along x); the CPU test runs
the original and the rewrite one thread at a time (:mod:`cpu_emulation`) and compares outputs; the refusals
name the shape that is missing. The compile test (``test_transforms_cuda_compile``) builds the candidates with
nvcc.
"""

from __future__ import annotations

import pytest
from transform_helpers import facts_of_text as _facts
from transform_helpers import fixture_path

TID = "cuda.thread_per_element"
FILE = "row_flatten_variants.cu"


def test_gathered_embedding_rows_become_coalesced(cand):
    (c,) = cand(TID, FILE, "embed_rows")
    f = _facts(c.new_text, "embed_rows")
    assert not f.loops
    (w,) = [a for a in f.global_accesses() if a.pointer == "out"]
    assert w.kind == "write" and w.pattern("x") == "contiguous"  # (e / C) * C + e % C folds to e
    assert "embed_rows<<<((B * T + 127) / 128) * ((C)), 128>>>" in c.new_text
    assert c.params == {"loop_var": "c", "row_length": "C", "launches": 1}


def test_early_return_guard_and_a_row_value(cand):
    (c,) = cand(TID, FILE, "row_scale")
    # the early return becomes the canonical guard over every element of the rows (no return left)
    assert "if (htam_e < (long long)(rows) * (cols)) {" in c.new_text and "return" not in c.new_text.split(
        "row_scale(")[1].split("row_sum(")[0]
    assert "int r = (int)(htam_e / (cols));" in c.new_text and "const int c = (int)(htam_e % (cols));" in c.new_text
    assert "row_scale<<<((rows + 255) / 256) * ((cols)), 256>>>" in c.new_text


@pytest.mark.parametrize("kernel,needle", [
    ("row_sum", "accumulates acc across the row"),
    ("col_scale", "is not an uncoalesced row loop"),
    ("row_prefix", "is a running sum (`out[r * cols + c] = run` stores run at each step"),
])
def test_refusals(refuse, kernel, needle):
    assert needle in refuse(TID, FILE, kernel)


@pytest.mark.parametrize("rows,cols", [(37, 9), (5, 1), (3, 0), (64, 33)])
def test_same_numbers_on_the_cpu(rows, cols, tmp_path, cand):
    """The original over ``ceil(rows / 8)`` blocks and the rewrite over ``cols`` times as many give the same
    output (an empty row length writes nothing)."""
    from cpu_emulation import compiler, run_main

    if compiler() is None:
        pytest.skip("no host C++ compiler")

    def main(grid: str) -> str:
        return f"""
int main() {{
    const int rows = {rows}, cols = {cols};
    std::vector<float> x((size_t)rows * cols + 1), y((size_t)rows * cols + 1, -7.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * (float)((i * 5) % 17) - 3.0f;
    HTAM_LAUNCH({grid}, 1, 8, 1, row_scale(x.data(), y.data(), rows, cols));
    for (float v : y) std::printf("%.9g\\n", v);
    return 0;
}}
"""
    (c,) = cand(TID, FILE, "row_scale")
    before = run_main(fixture_path(FILE).read_text(), "row_scale", main("(rows + 7) / 8"), tmp_path)
    after = run_main(c.new_text, "row_scale", main("((rows + 7) / 8) * cols"), tmp_path)
    assert len(before) == rows * cols + 1 and after == before
