"""Element-copy transposes computed from the affine indices (:attr:`KernelFacts.transposes`,
:mod:`htam_core.source.analysis.transpose`): the row, the column, the sizes and the bounds checks, whatever the
spelling, and nothing for a kernel that is not a transpose or whose checks are not the matrix's bounds."""

from __future__ import annotations

import pytest
import sympy
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
    X + "if (x < cols && y < rows) out[x * rows + y] = x + in[y * cols + x];",  # reads the thread's column
    X + "if (x < cols / 2 && y < rows) out[x * rows + y] = in[y * cols + x];",  # half the columns
    X + "if (threadIdx.x < 16 && x < cols && y < rows) out[x * rows + y] = in[y * cols + x];",
    X + "if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x] ; out[0] = in[0];",  # two stores
    X + "if (x < cols && y < rows) { out[x * rows + y] = in[y * cols + x]; } else { out[0] = 0; }",
    X + "if (x < cols && y < rows) out[x * rows + y + 1] = in[y * cols + x];",  # shifted
])
def test_what_is_not_a_whole_transpose_gives_nothing(body):
    assert _one(body) == ()


def test_a_scaled_transpose_is_one_with_its_stored_function():
    (t,) = _one(X + "if (x < cols && y < rows) out[x * rows + y] = 2.0f * in[y * cols + x];")
    assert t.value == "2.0f * htam_v"


SAMPLES = ("int x = blockIdx.x * 32 + threadIdx.x; int y = blockIdx.y * 32 + threadIdx.y;\n"
           "for (int j = 0; j < LIMIT; j += 8) if (x < cols && y + j < rows) out[x * rows + y + j] = in[(y + j) * cols + x];")


@pytest.mark.parametrize(("limit", "block", "why"), [
    (32, (32, 8), None),  # 8 rows of threads, 4 passes: the 32x32 tile once
    (16, (32, 8), "moves 512 of the 32x32 cells"),  # half the tile's rows are never moved
    (32, (32, 16), "and cells outside it"),  # 16 rows of threads stepping by 8 run into the next tile
    (24, (32, 16), "more than once"),  # j = 0, 8, 16: every row of the tile, rows 8-23 twice
    (32, (16, 8), "moves 512 of the 32x32 cells"),  # half the tile's columns
])
def test_a_block_must_move_its_tile_exactly_once(limit, block, why):
    from htam_core.source.analysis.transpose import tile_coverage

    f = facts_of_text(HEAD + SAMPLES.replace("LIMIT", str(limit)) + "\n}\n", "k")
    (t,) = f.transposes
    got = tile_coverage(t, f.loops, block)
    assert (got is None) if why is None else (why in (got or "")), got


def test_a_loop_of_unknown_length_cannot_be_told():
    from htam_core.source.analysis.transpose import tile_coverage

    f = facts_of_text(HEAD + SAMPLES.replace("LIMIT", "rows") + "\n}\n", "k")
    (t,) = f.transposes
    assert tile_coverage(t, f.loops, (32, 8)) is None


BATCH_HEAD = "__global__ void k(const float *in, float *out, int nb, int rows, int cols, long long s) {\n"


@pytest.mark.parametrize(("body", "batch", "base"), [
    # an offset in the index, through an `int` local
    (X + "int b = blockIdx.z;\nif (x < cols && y < rows) out[b * rows * cols + x * rows + y] = "
     "in[b * rows * cols + y * cols + x];", ("z",), "blockIdx.z*rows*cols"),
    # rebased pointers with a `size_t` offset
    (X + "const float *src = in + (size_t)blockIdx.z * rows * cols;\nfloat *dst = out + (size_t)blockIdx.z * "
     "rows * cols;\nif (x < cols && y < rows) dst[x * rows + y] = src[y * cols + x];", ("z",), "blockIdx.z*rows*cols"),
    # a batch stride of its own
    (X + "if (x < cols && y < rows) out[blockIdx.z * s + x * rows + y] = in[blockIdx.z * s + y * cols + x];",
     ("z",), "blockIdx.z*s"),
    # a 2-D grid whose y is the batch, the rows in a loop
    ("int x = blockIdx.x * blockDim.x + threadIdx.x;\nif (x < cols) for (int r = threadIdx.y; r < rows; "
     "r += blockDim.y) out[blockIdx.y * rows * cols + x * rows + r] = in[blockIdx.y * rows * cols + r * cols + x];",
     ("y",), "blockIdx.y*rows*cols"),
])
def test_a_uniform_batch_offset_is_the_slice_base(body, batch, base):
    (t,) = _one(body, BATCH_HEAD)
    assert t.batch == batch and (t.rows, t.cols) == (sym("rows"), sym("cols"))
    want = sympy.Mul(*(sym(n) for n in base.split("*")))
    assert sympy.expand(t.read_base - want) == 0 and sympy.expand(t.write_base - want) == 0
    assert not {f"blockIdx.{d}" for d in batch} & {str(v) for v in t.row.free_symbols | t.col.free_symbols}


def test_a_batch_check_is_a_uniform_bound_and_a_plain_transpose_has_no_base():
    (t,) = _one(X + "if (blockIdx.z >= nb || x >= cols || y >= rows) return;\n"
                "out[blockIdx.z * rows * cols + x * rows + y] = in[blockIdx.z * rows * cols + y * cols + x];",
                BATCH_HEAD)
    assert [(b.lo, b.hi) for b in t.uniform_bounds] == [(sym("blockIdx.z"), sym("nb"))]
    assert len(t.bounds) == 2
    (p,) = _one(X + "if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];")
    assert p.batch == () and p.read_base == 0 and p.write_base == 0 and p.uniform_bounds == ()


@pytest.mark.parametrize("body", [
    # the batch index differs within the block
    X + "int b = blockIdx.z * blockDim.z + threadIdx.z;\nif (x < cols && y < rows) out[b * rows * cols + x * rows "
    "+ y] = in[b * rows * cols + y * cols + x];",
    # the batch index scales a thread index: not the same for the whole block
    X + "if (x < cols && y < rows) out[blockIdx.z * rows * cols + x * rows + y] = "
    "in[blockIdx.z * threadIdx.x + y * cols + x];",
])
def test_what_is_not_a_uniform_base_gives_nothing(body):
    assert _one(body, BATCH_HEAD) == ()


PITCHED = "__global__ void k(const float *in, float *out, int w, int h, PARAMS) {\n"


@pytest.mark.parametrize(("params", "store", "strides"), [
    ("int sp, int dp", "out[x * dp + y] = in[y * sp + x];", ("sp", "dp")),
    ("long long lda, long long ldb", "out[x * ldb + y] = in[lda * y + x];", ("lda", "ldb")),
    ("size_t sp, size_t dp", "out[x * (dp / sizeof(float)) + y] = in[y * (sp / sizeof(float)) + x];",
     ("div(sp, expr(sizeof(float)))", "div(dp, expr(sizeof(float)))")),
])
def test_a_pitched_transpose_has_the_guards_extents_and_the_indices_strides(params, store, strides):
    (t,) = _one(X + f"if (x < w && y < h) {store}", PITCHED.replace("PARAMS", params))
    assert (t.rows, t.cols) == (sym("h"), sym("w")) and t.pitched
    assert (str(t.in_stride), str(t.out_stride)) == strides


def test_a_dense_transpose_has_its_sides_as_strides():
    (t,) = _one(X + "if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];")
    assert (t.in_stride, t.out_stride) == (sym("cols"), sym("rows")) and not t.pitched


@pytest.mark.parametrize("store", [
    # a float row found through a byte pointer: the offsets are bytes, not elements (the access is not read)
    "const float *s = (const float *)((const char *)in + y * sp); float *d = (float *)((char *)out + x * dp);"
    " d[y] = s[x];",
    "out[x * dp + y] = in[y * sp + x];",  # checked against a side (y < dp) and another parameter (y < h)
])
def test_what_a_pitched_tile_would_not_keep_gives_nothing(store):
    guard = "x < w && y < h" if "char" in store else "x < w && y < h && y < dp"
    assert _one(X + f"if ({guard}) {{ {store} }}", PITCHED.replace("PARAMS", "size_t sp, size_t dp")) == ()


@pytest.mark.parametrize(("body", "read_rev", "write_rev"), [
    # rotation by 90 degrees clockwise: the output's column runs the input's rows backwards
    (X + "if (x < cols && y < rows) out[x * rows + (rows - 1 - y)] = in[y * cols + x];", (False, False), (True, False)),
    # a transposed flip: the output's rows run the input's columns backwards
    (X + "if (x < cols && y < rows) out[(cols - 1 - x) * rows + y] = in[y * cols + x];", (False, False), (False, True)),
    # the reversal on the read side (a counter-clockwise rotation)
    (X + "if (x < cols && y < rows) out[x * rows + y] = in[y * cols + (cols - 1 - x)];", (False, True), (False, False)),
    (X + "if (x >= cols || y >= rows) return;\nout[x * rows + y] = in[(rows - 1 - y) * cols + x];",
     (True, False), (False, False)),
    # both sides reversed along one axis, both axes reversed on the write (a rotation by 180 of the transpose)
    (X + "if (x < cols && y < rows) out[x * rows + (rows - 1 - y)] = in[(rows - 1 - y) * cols + x];",
     (True, False), (True, False)),
    (X + "if (x < cols && y < rows) out[(cols - 1 - x) * rows + (rows - 1 - y)] = in[y * cols + x];",
     (False, False), (True, True)),
])
def test_a_reversed_coordinate_is_the_same_role_reversed(body, read_rev, write_rev):
    (t,) = _one(body)
    assert (t.row, t.col) == (sym("blockIdx.y") * sym("blockDim.y") + sym("threadIdx.y"),
                              sym("blockIdx.x") * sym("blockDim.x") + sym("threadIdx.x"))
    assert (t.rows, t.cols) == (sym("rows"), sym("cols"))
    assert (t.read_reversed, t.write_reversed) == (read_rev, write_rev)
    assert (t.read_base, t.write_base) == (0, 0)  # the reversal's extent is the coordinate's, not a base
    r, c = t.place("write", "r", "c", "R", "C")
    assert r == ("(R - 1 - r)" if write_rev[0] else "r") and c == ("(C - 1 - c)" if write_rev[1] else "c")


def test_a_reversal_over_another_extent_keeps_the_rest_as_the_base():
    (t,) = _one(X + "if (x < cols && y < rows) out[x * rows + (n - 1 - y)] = in[y * cols + x];",
                HEAD.replace("int cols)", "int cols, int n)"))
    assert t.write_reversed == (True, False)
    assert sympy.expand(t.write_base - (sym("n") - sym("rows"))) == 0  # out[n - rows + c * rows + (rows - 1 - r)]


def test_a_reversal_shifted_by_one_keeps_the_shift_as_the_base():
    (t,) = _one(X + "if (x < cols && y < rows) out[x * rows + (rows - y)] = in[y * cols + x];")
    assert t.write_reversed == (True, False) and t.write_base == 1  # out[1 + c * rows + (rows - 1 - r)]


def test_a_coordinate_mixing_both_axes_is_no_role():
    assert _one(X + "if (x < cols && y < rows) out[x * rows + (rows - 1 - y) - x] = in[y * cols + x];") == ()
