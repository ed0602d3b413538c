"""The analysis layer's gather facts (:func:`gather_indices`): which buffer's loaded values index which buffer,
and with how many elements per index value."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.gathers import gather_indices

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
