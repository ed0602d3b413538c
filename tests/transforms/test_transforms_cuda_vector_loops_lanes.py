"""``cuda.vectorize_float4`` on warp-per-row loops whatever the spelling of the warp: a step of ``warpSize``, a lane
``threadIdx.x & 31`` and a row ``global >> 5`` split the row among a warp's lanes like ``32``, ``% 32`` and ``/ 32``;
a refusal for an index used otherwise names the use and its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

TID = "cuda.vectorize_float4"


def _propose(tmp_path: Path, text: str, kernel: str):
    p = tmp_path / "k.cu"
    p.write_text(text)
    m = load(str(p))
    return registry.propose(TID, m, m.kernel(kernel))


def _warp_rows(lane: str, row: str, step: str) -> str:
    return ("__global__ void row_sumsq(const float* x, float* out, int rows, int cols) {\n"
            f"    const int lane = {lane};\n"
            f"    int r = {row};\n"
            "    if (r >= rows) return;\n"
            "    float s = 0.0f;\n"
            f"    for (int c = lane; c < cols; c += {step}) s += x[(size_t)r * cols + c] * x[(size_t)r * cols + c];\n"
            "    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
            "    if (lane == 0) out[r] = s;\n}\n"
            "void go(const float* x, float* o, int rows, int cols) { row_sumsq<<<rows / 4, 128>>>(x, o, rows, cols); }\n")


@pytest.mark.parametrize(("lane", "row", "step"), [
    ("threadIdx.x & 31", "(blockIdx.x * blockDim.x + threadIdx.x) / 32", "32"),
    ("threadIdx.x & 31", "(blockIdx.x * blockDim.x + threadIdx.x) >> 5", "32"),
    ("threadIdx.x % warpSize", "(blockIdx.x * blockDim.x + threadIdx.x) / warpSize", "warpSize"),
    ("threadIdx.x & (warpSize - 1)", "(blockIdx.x * blockDim.x + threadIdx.x) >> 5", "warpSize"),
])
def test_warp_per_row_spellings_take_float4(tmp_path, lane, row, step):
    res = _propose(tmp_path, _warp_rows(lane, row, step), "row_sumsq")
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    assert "float4" in c.new_text or "htam_V" in c.new_text


def test_one_warp_per_block_stepping_by_warp_size(tmp_path):
    text = ("__global__ void row_max(const float* x, float* out, int rows, int cols) {\n"
            "    int row = blockIdx.x, lane = threadIdx.x;\n"
            "    if (row >= rows) return;\n"
            "    float m = -1e30f;\n"
            "    for (int c = lane; c < cols; c += warpSize) m = fmaxf(m, x[(size_t)row * cols + c]);\n"
            "    if (lane == 0) out[row] = m;\n}\n"
            "void go(const float* x, float* o, int rows, int cols) { row_max<<<rows, 32>>>(x, o, rows, cols); }\n")
    res = _propose(tmp_path, text, "row_max")
    assert not isinstance(res, NotApplicable), res.reason


def test_a_mask_of_an_index_that_may_be_negative_is_not_a_lane(tmp_path):
    res = _propose(tmp_path, _warp_rows("(int)threadIdx.x - 1 & 31", "blockIdx.x", "32"), "row_sumsq")
    assert isinstance(res, NotApplicable) and "not a loop that splits a range" in res.reason


@pytest.mark.parametrize(("use", "shown"), [("int r = idx / cols;", "r = idx / cols"),
                                            ("float r = 0.0f; r += (float)(idx % cols);", "r += (float)(idx % cols)")])
def test_an_index_used_otherwise_is_evaluated_per_lane(tmp_path, use, shown):
    """The row ``idx / cols`` (or column ``idx % cols``) of a one-element-per-thread kernel: each lane of the vector
    form computes it with its own index, and the candidate names the use."""
    text = ("__global__ void scale_rows(const float* x, float* y, int n, int cols) {\n"
            "    int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (idx < n) {\n"
            f"        {use}\n"
            "        y[idx] = x[idx] * (float)r;\n"
            "    }\n}\n"
            "void go(const float* x, float* y, int n, int cols) { scale_rows<<<(n + 255) / 256, 256>>>(x, y, n, cols); }\n")
    res = _propose(tmp_path, text, "scale_rows")
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    assert c.params["per_lane"] == [shown] and "const int idx = (int)(htam_v * 4 + 3);" in c.new_text
