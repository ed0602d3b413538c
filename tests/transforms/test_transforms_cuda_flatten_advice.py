"""``cuda.thread_per_element`` refuses a thread-per-row loop with an accumulator, and its one line says what the
loop is from the facts: a running value stored at each element (a prefix scan: ``out[..c] = acc``, a scaled or
running-max spelling, for which the warp-per-row scan ``cuda.row_scan`` is named) or a reduction (the total used
after the loop). It names another step only when that step is made on the same kernel, so the advice never points to a step that is itself refused."""

from __future__ import annotations

import re

import pytest

from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

HEAD = "__global__ void k(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {\n" \
       "    int r = blockIdx.x * blockDim.x + threadIdx.x;\n    if (r >= rows) return;\n"
HOST = "void run(const float* in, float* out, int rows, int cols) { k<<<(rows + 255) / 256, 256>>>(in, out, rows, cols); }\n"

RUNNING = {
    "cumsum": "    float acc = 0.0f;\n    for (int c = 0; c < cols; ++c) {\n        acc += in[r * cols + c];\n"
              "        out[r * cols + c] = acc;\n    }\n}\n",
    "scaled": "    float acc = 0.0f;\n    for (int c = 0; c < cols; ++c) {\n        acc += in[r * cols + c];\n"
              "        out[r * cols + c] = 0.5f * acc;\n    }\n}\n",
    "running_max": "    float m = -1e30f;\n    for (int c = 0; c < cols; ++c) {\n        m = fmaxf(m, in[r * cols + c]);\n"
                   "        out[r * cols + c] = m;\n    }\n}\n",
}
REDUCTIONS = {
    "sum": "    float acc = 0.0f;\n    for (int c = 0; c < cols; ++c) acc += in[r * cols + c];\n    out[r] = acc;\n}\n",
    "max": "    float m = -1e30f;\n    for (int c = 0; c < cols; ++c) m = fmaxf(m, in[r * cols + c]);\n    out[r] = m;\n}\n",
}


def _refusal(body: str) -> tuple[str, object]:
    model = parse_text(HEAD + body + HOST, "cuda")
    res = registry.propose("cuda.thread_per_element", model, model.kernel("k"))
    assert isinstance(res, NotApplicable)
    return res.reason, model


def _named_steps_are_made(reason: str, model) -> None:
    for step in re.findall(r"fits \((\w+)\)", reason):
        made = registry.propose(f"cuda.{step}", model, model.kernel("k"))
        assert not isinstance(made, NotApplicable), (step, made.reason)


@pytest.mark.parametrize("body", RUNNING.values(), ids=RUNNING.keys())
def test_a_running_value_is_called_a_prefix_scan(body):
    reason, model = _refusal(body)
    assert "prefix scan" in reason and "reduction" not in reason and "\n" not in reason
    assert "(warp_per_row)" not in reason  # the reduction's warp per row is refused on a scan
    assert "the row_scan step (cuda.row_scan" in reason  # the warp-per-row scan is made, and named
    assert not isinstance(registry.propose("cuda.row_scan", model, model.kernel("k")), NotApplicable)
    _named_steps_are_made(reason, model)


@pytest.mark.parametrize("body", REDUCTIONS.values(), ids=REDUCTIONS.keys())
def test_a_reduction_names_a_step_only_when_it_is_made(body):
    reason, model = _refusal(body)
    assert "a reduction" in reason and "prefix" not in reason
    _named_steps_are_made(reason, model)
    made = registry.propose("cuda.warp_per_row", model, model.kernel("k"))
    assert ("(warp_per_row)" in reason) == (not isinstance(made, NotApplicable))
