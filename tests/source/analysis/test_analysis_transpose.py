"""Element-copy transposes computed from the affine indices (:attr:`KernelFacts.transposes`,
:mod:`htam_core.source.analysis.transpose`): the row, the column, the sizes and the bounds checks, whatever the
spelling, and nothing for a kernel that is not a transpose or whose checks are not the matrix's bounds."""

from __future__ import annotations

import pytest
from conftest import facts_of_text

from htam_core.source.analysis import sym

HEAD = "__global__ void k(const float *in, float *out, int rows, int cols) {\n"
X = "int x = blockIdx.x * blockDim.x + threadIdx.x;\nint y = blockIdx.y * blockDim.y + threadIdx.y;\n"


def _one(body: str, head: str = HEAD):
    f = facts_of_text(head + body + "\n}\n", "k")
    return f.transposes


@pytest.mark.parametrize("body", [
    X + "if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];",
    X + "if (x >= cols || y >= rows) return;\nout[x * rows + y] = in[y * cols + x];",
    X + "if (!(x < cols)) return;\nif (y < rows) { out[y + rows * x] = in[x + y * cols]; }",
    X + "if (cols > x && rows > y) out[(long long)x * rows + y] = (float)in[(long long)y * cols + x];",
    "auto x = blockIdx.x * blockDim.x + threadIdx.x;\nauto y0 = (blockIdx.y * blockDim.y + threadIdx.y) * 4;\n"
    "for (int k = 0; k < 4; ++k) { int y = y0 + k; if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x]; }",
])
def test_every_spelling_gives_row_col_and_sizes(body):
    (t,) = _one(body)
    assert (t.rows, t.cols) == (sym("rows"), sym("cols"))
    assert t.col.coeff(sym("threadIdx.x")) == 1 and t.row.coeff(sym("threadIdx.x")) == 0
    assert t.read_coalesced and not t.write_coalesced
    assert {(b.hi) for b in t.bounds} <= {sym("rows"), sym("cols")}


def test_threads_down_the_columns_make_the_writes_the_coalesced_side():
    body = ("int r = blockIdx.x * blockDim.x + threadIdx.x; int c = blockIdx.y * blockDim.y + threadIdx.y;\n"
            "if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];")
    (t,) = _one(body)
    assert t.write_coalesced and not t.read_coalesced
    assert t.row.coeff(sym("threadIdx.x")) == 1


def test_a_square_matrix_with_one_size():
    head = "__global__ void k(float *odata, const float *idata, int n) {\n"
    (t,) = _one(X + "for (int j = 0; j < 32; j += 8) odata[x * n + (y + j)] = idata[(y + j) * n + x];", head)
    assert t.rows == t.cols == sym("n") and t.bounds == ()
    assert t.row.coeff(sym("j")) == 1


@pytest.mark.parametrize("body", [
    X + "if (x < cols && y < rows) out[y * cols + x] = in[y * cols + x];",  # a copy
    X + "if (x < cols && y < rows) out[x * rows + y] = 2.0f * in[y * cols + x];",  # not the loaded value
    X + "if (x < cols / 2 && y < rows) out[x * rows + y] = in[y * cols + x];",  # half the columns
    X + "if (threadIdx.x < 16 && x < cols && y < rows) out[x * rows + y] = in[y * cols + x];",
    X + "if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x] ; out[0] = in[0];",  # two stores
    X + "if (x < cols && y < rows) { out[x * rows + y] = in[y * cols + x]; } else { out[0] = 0; }",
    X + "if (x < cols && y < rows) out[x * rows + y + 1] = in[y * cols + x];",  # shifted
])
def test_what_is_not_a_whole_transpose_gives_nothing(body):
    assert _one(body) == ()
