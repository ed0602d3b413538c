"""``cuda.warp_per_row`` on a column walk (the analysis layer's ``strided_walk``: a loop that moves a row length
per step, neighbouring threads already reading neighbouring elements): the step stays makeable (32x the warps in
flight is a measured win on a column sum with few columns) but says what it does, in every spelling of the guard
and the index, and the "serial loop over a row" boost of the ranking does not apply to it; a row sum keeps the
row title. Kernels written here."""

from __future__ import annotations

import pytest
from transform_helpers import facts_of_text

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import parse_text
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose

LAUNCH = """
void go(const float* A, float* s, int rows, int cols) {
    KERNEL<<<(cols + 127) / 128, 128>>>(A, s, rows, cols);
}
"""

COLUMN_SUMS = {
    "if_block": """__global__ void KERNEL(const float* __restrict__ A, float* __restrict__ sums, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; ++r)
            s += __ldg(&A[r * cols + c]);
        sums[c] = s;
    }
}""",
    "early_return": """__global__ void KERNEL(const float* A, float* sums, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++) { s += A[c + r * cols]; }
    sums[c] = s;
}""",
    "column_major_max": """__global__ void KERNEL(const float* A, float* out, int rows, int cols) {
    int j = threadIdx.x + blockIdx.x * blockDim.x;
    if (j < cols) {
        float m = -1e30f;
        for (int i = 0; i < rows; i += 1) m = fmaxf(m, A[(size_t)i * cols + j]);
        out[j] = m;
    }
}""",
}

ROW_SUM = """__global__ void KERNEL(const float* A, float* sums, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f;
        for (int c = 0; c < cols; ++c)
            s += A[r * cols + c];
        sums[r] = s;
    }
}"""


def _model(body: str):
    text = (body + LAUNCH).replace("KERNEL", "k")
    return parse_text(text, "cuda")


@pytest.mark.parametrize("name", sorted(COLUMN_SUMS))
def test_a_column_walk_is_made_and_says_so(name):
    model = _model(COLUMN_SUMS[name])
    res = propose("cuda.warp_per_row", model, model.kernel("k"))
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    assert "column walk" in c.description and "moves cols elements per step" in c.description
    assert "give each row" not in c.description


@pytest.mark.parametrize("name", sorted(COLUMN_SUMS))
def test_the_analysis_finds_the_strided_walk(name):
    f = facts_of_text((COLUMN_SUMS[name] + LAUNCH).replace("KERNEL", "k"), "k")
    (lp,) = f.loops
    acc = f.strided_walk(lp)
    assert acc is not None and str(acc.stride(lp.var)) == "cols"


def test_a_row_sum_still_gets_a_warp_per_row():
    model = _model(ROW_SUM)
    res = propose("cuda.warp_per_row", model, model.kernel("k"))
    assert not isinstance(res, NotApplicable), res.reason
    assert "give each row" in res[0].description
    f = facts_of_text(model.text, "k")
    assert f.strided_walk(f.loops[0]) is None


def test_the_column_sum_gets_no_row_loop_boost():
    model = _model(COLUMN_SUMS["if_block"])
    k = model.kernel("k")
    facts = compute_facts(k.features, k.language, None, k, model)
    assert facts["thread_column_sum"] is True
    signals = load_knowledge().direction("parallel_mapping").signals
    row_boost = next(s for s in signals if "serial per-thread loop over a row" in s.why)
    assert row_boost.when.evaluate(facts) is False
    row = _model(ROW_SUM)
    kr = row.kernel("k")
    assert load_knowledge().strategy("warp_per_row").applies.evaluate(
        compute_facts(kr.features, kr.language, None, kr, row)) is not False
