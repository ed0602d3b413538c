"""The analysis layer's gather facts (:func:`gather_indices`): which buffer's loaded values index which buffer,
and with how many elements per index value."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.gathers import gather_indices, index_bound

_HEAD = "__global__ void k(float* out, const int* ids, const float* table, int n, int C, int D) {\n" \
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n"


@pytest.mark.parametrize("body,stride", [
    ("out[i] = table[ids[i / C] * C + i % C];", "C"),
    ("int tok = ids[i]; out[i] = table[tok * C * D + 3];", "C*D"),
    ("const float* row = table + (size_t)ids[i] * D; out[i] = row[0] + row[1];", "D"),
    ("out[i] = table[__ldg(&ids[i])];", "1"),
    ("out[i] = table[C * (ids[i] + 1) - 1];", "C"),
])
def test_the_stride_of_a_loaded_index(body, stride):
    m = parse_text(_HEAD + "  " + body + "\n}\n", "cuda")
    gs = gather_indices(analyze(m, m.kernel("k")))
    assert {(g.pointer, g.target, str(g.stride)) for g in gs} == {("ids", "table", stride)}


@pytest.mark.parametrize("body", [
    "out[i] = table[ids[i] % C];",            # not linear in the loaded value
    "out[i] = table[ids[i] * ids[i]];",       # the coefficient reads loaded data
    "out[i] = table[i] * ids[i];",            # loaded, but not as an index
])
def test_no_gather(body):
    m = parse_text(_HEAD + "  " + body + "\n}\n", "cuda")
    assert gather_indices(analyze(m, m.kernel("k"))) == ()


@pytest.mark.parametrize("body,values,high,in_row,proven", [
    ("const float* row = table + (size_t)i * D; out[i] = row[ids[i]];", {"D": 100}, 100, True, True),
    ("out[i] = table[i * D + ids[i] + 3];", {"D": 100}, 97, True, True),
    ("out[i] = table[i * D * C + ids[i] * C + (i % C)];", {"D": 10, "C": 4}, 10, True, True),
    ("out[i] = table[ids[i / C] * C + i % C];", {"C": 4}, 250, False, True),
    ("out[i] = table[i + ids[i]];", {}, 1000, False, False),         # moves by whole index steps
    ("out[i] = table[i * D + ids[i]];", {}, 1000, False, False),      # the row's length is unknown
])
def test_the_bound_of_a_gather_inside_a_row(body, values, high, in_row, proven):
    m = parse_text(_HEAD + "  " + body + "\n}\n", "cuda")
    (g,) = gather_indices(analyze(m, m.kernel("k")))
    b = index_bound(g, 1000, values, frozenset({"n", "C", "D"}))
    assert (b.high, b.in_row, b.proven) == (high, in_row, proven)
