"""A thread-per-row running sum (``acc += in[r * cols + c]; out[r * cols + c] = acc;``) is a scan: the steps that
split a row loop over threads (one thread per element, one warp or one block per row, the row in registers) and the
block scan (which needs a segment prefix loop) each refuse it in one line that says so, for several spellings, naming
the row scan step where it makes the scan (an element type spelled through a ``typedef`` included); a row reduction
keeps its own refusals or edits."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.transforms import registry

KERNEL = """__global__ void row_cumsum(const T *__restrict__ in, T *__restrict__ out, IDX rows, IDX cols) {
    IDX r = (IDX)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    T acc = 0;
    for (IDX c = 0; c < cols; ++c) {
BODY
    }
}
void launch(const T *in, T *out, IDX rows, IDX cols) {
    row_cumsum<<<(unsigned)((rows + 127) / 128), 128>>>(in, out, rows, cols);
}
"""

SPELLINGS = {
    "int, size_t, inclusive": ("int", "size_t", "        acc += in[r * cols + c];\n        out[r * cols + c] = acc;"),
    "float, int, exclusive": ("float", "int", "        out[r * cols + c] = acc;\n        acc += in[r * cols + c];"),
    "double, long, a = a + x": ("double", "long", "        acc = acc + in[r * cols + c];\n"
                                "        out[r * cols + c] = acc;"),
    "short, int, inclusive": ("short", "int", "        acc += in[r * cols + c];\n        out[r * cols + c] = acc;"),
}
#: The spellings the row scan step makes (the element type ``T`` is a ``typedef`` the kernel's view resolves, and
#: ``__shfl_up_sync`` takes it): the refusals name that step; a ``short`` it does not take, so the line says no
#: step makes the scan.
ROW_SCANNED = {"int, size_t, inclusive", "float, int, exclusive", "double, long, a = a + x"}

STEPS = ["cuda.thread_per_element", "cuda.warp_per_row", "cuda.block_per_row", "cuda.block_scan"]


def _text(name: str) -> str:
    t, idx, body = SPELLINGS[name]
    return "typedef " + t + " T;\n" + KERNEL.replace("IDX", idx).replace("BODY", body)


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_a_running_sum_is_refused_as_a_scan(name, step):
    model = parse_text(_text(name), "cuda")
    got = registry.propose(step, model, model.kernel("row_cumsum"))
    assert not isinstance(got, list)
    assert "is a running sum" in got.reason and "\n" not in got.reason, got.reason
    if name in ROW_SCANNED:
        assert "the row_scan step (cuda.row_scan" in got.reason, got.reason
    else:
        assert "block-wide scan with a carry" in got.reason and "does not make" in got.reason, got.reason


def test_a_row_sum_stored_once_is_not_called_a_running_sum():
    text = _text("int, size_t, inclusive").replace(
        "        acc += in[r * cols + c];\n        out[r * cols + c] = acc;", "        acc += in[r * cols + c];")
    text = text.replace("    }\n}\nvoid", "    }\n    out[r] = acc;\n}\nvoid")
    model = parse_text(text, "cuda")
    for step in STEPS:
        got = registry.propose(step, model, model.kernel("row_cumsum"))
        assert isinstance(got, list) or "running sum" not in got.reason
