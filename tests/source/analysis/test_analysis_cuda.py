"""Affine indices and strides, loop facts, read/write sets and launch dims of every CUDA corpus kernel,
against expectations written by reading each kernel."""

from __future__ import annotations

import sympy

from htam_core.source.analysis import sym
from tests.source.analysis.conftest import CORPUS, facts_of, facts_of_text

tx, ty = sym("threadIdx.x"), sym("threadIdx.y")
bx, by = sym("blockIdx.x"), sym("blockIdx.y")
bdx, bdy = sym("blockDim.x"), sym("blockDim.y")
M, N, K = sym("M"), sym("N"), sym("K")


def _acc(f, pointer, kind):
    return [a for a in f.accesses if a.pointer == pointer and a.kind == kind]


def test_sgemm_naive():
    f = facts_of("sgemm_naive.cu", "sgemm_naive")
    row, col, k = bdx * bx + tx, bdy * by + ty, sym("k")
    (loop,) = f.loops
    assert (loop.var, loop.start, loop.cmp, loop.bound, loop.step, loop.trip_count) == ("k", 0, "<", K, 1, K)
    assert [(a.name, a.op, a.type) for a in loop.accumulators] == [("acc", "sum", "float")]
    (a,) = _acc(f, "A", "read")
    (b,) = _acc(f, "B", "read")
    assert sympy.expand(a.index - (row * K + k)) == 0 and sympy.expand(b.index - (k * N + col)) == 0
    # x runs over rows: A is read with stride K along threadIdx.x (uncoalesced), B is a broadcast along x
    assert a.stride("threadIdx.x") == K and a.pattern() == "strided" and a.coalesced() is False
    assert b.pattern("x") == "broadcast" and b.pattern("y") == "contiguous"
    assert a.stride("k") == 1 and b.stride("k") == N
    assert f.reduction_dim(loop) == "both"
    assert {x.pointer for x in f.uncoalesced("x")} == {"A", "C"}
    assert [(p.name, p.mode) for p in f.pointers] == [("A", "read"), ("B", "read"), ("C", "readwrite")]
    assert f.thread_index("x").name == "row" and f.thread_index("y").name == "col"
    (la,) = f.launches
    assert [(d.text, d.value) for d in la.grid] == [("CEIL_DIV(M, 16)", None), ("CEIL_DIV(N, 16)", None)]
    assert la.block_shape == (16, 16, 1) and la.threads == 256 and la.smem == 0 and la.host == "run_sgemm_naive"


def test_copy_and_transpose():
    cp = facts_of("transpose_naive.cu", "copy_rowmajor")
    tr = facts_of("transpose_naive.cu", "transpose_naive")
    cols, rows = sym("cols"), sym("rows")
    x, y = 32 * bx + tx, 32 * by + ty
    assert cp.loops == () and tr.loops == ()
    assert cp.constant("TILE") == 32
    for f in (cp, tr):
        (r,) = _acc(f, "in", "read")
        assert sympy.expand(r.index - (y * cols + x)) == 0 and r.coalesced("x") is True
    (w,) = _acc(tr, "out", "write")
    assert sympy.expand(w.index - (x * rows + y)) == 0 and w.stride("threadIdx.x") == rows and not w.coalesced()
    assert _acc(cp, "out", "write")[0].coalesced() is True
    assert [a.pointer for a in tr.uncoalesced()] == ["out"] and cp.uncoalesced() == ()
    for f in (cp, tr):
        la = f.launches[0]
        assert la.block_shape == (32, 32, 1) and la.host == "time_kernel"
        assert [d.text for d in la.grid] == ["(cols + TILE - 1) / TILE", "(rows + TILE - 1) / TILE"]


def test_softmax_row_per_thread():
    f = facts_of("softmax_row_per_thread.cu", "softmax_row_per_thread")
    cols, j = sym("cols"), sym("j")
    row = bdx * bx + tx
    assert [lp.line for lp in f.loops] == [25, 29, 33]
    assert all(lp.var == "j" and lp.trip_count == cols and lp.depth == 0 for lp in f.loops)
    assert [[(a.name, a.op, a.type) for a in lp.accumulators] for lp in f.loops] == [
        [("m", "max", "float")], [("denom", "sum", "float")], []]
    assert f.loops[0].accumulators[0].init_text == "-FLT_MAX"
    # one thread per row: every loop walks its thread's row (stride 1 in j, stride cols in threadIdx.x)
    assert f.row_loops() == f.loops
    assert [f.reduction_dim(lp) for lp in f.loops] == ["row", "row", None]
    for a in f.global_accesses():  # through the aliases xr = x + row * cols, yr = y + row * cols
        assert sympy.expand(a.index - (row * cols + j)) == 0 and a.stride("threadIdx.x") == cols
    assert [(p.name, p.mode) for p in f.pointers] == [("x", "read"), ("y", "write")]
    (la,) = f.launches
    assert [(d.text, d.value) for d in la.block] == [("threads", 128)] and la.grid[0].value is None


def test_block_sum_interleaved():
    f = facts_of("reduce_sum_smem.cu", "block_sum_interleaved")
    (loop,) = f.loops
    assert (loop.var, loop.start, loop.update, loop.step) == ("s", 1, "*", 2)
    assert loop.trip_count == sympy.ceiling(sympy.log(bdx, 2)) and loop.trip_value is None
    assert loop.accumulators == ()
    shared = [a for a in f.accesses if a.space == "shared"]
    assert {(a.kind, str(a.index)) for a in shared} == {
        ("write", "threadIdx.x"), ("readwrite", "threadIdx.x"), ("read", "s + threadIdx.x"), ("read", "0")}
    (r,) = _acc(f, "in", "read")
    assert sympy.expand(r.index - (bdx * bx + tx)) == 0 and r.coalesced() is True
    (w,) = _acc(f, "partial", "write")
    assert w.index == bx and w.pattern() == "broadcast"
    assert [(p.name, p.mode) for p in f.pointers] == [("in", "read"), ("partial", "write")]
    (la,) = f.launches
    assert la.threads == 256 and la.grid[0].text == "blocks" and la.host == "reduce_sum"


def test_bias_gelu_templates():
    fwd = facts_of("bias_gelu_templates.cu", "bias_gelu_fwd")
    # template arguments bound at the launch site bias_gelu_fwd<T, kBlock, kItems>
    assert fwd.constant("BLOCK") == 128 and fwd.constant("ITEMS") == 4
    (loop,) = fwd.loops
    assert loop.trip_value == 4 and loop.has_unroll_pragma and not fwd.is_row_loop(loop)
    cols, i = sym("cols"), sym("i")
    (xr,) = _acc(fwd, "x", "read")
    assert sympy.expand(xr.index - (by * cols + (bx * 128 + tx) * 4 + i)) == 0
    assert xr.stride("threadIdx.x") == 4 and xr.pattern() == "strided"
    (la,) = fwd.launches
    assert la.template_args == ("T", "kBlock", "kItems") and dict(la.bindings) == {"BLOCK": 128, "ITEMS": 4}
    assert [d.text for d in la.grid] == ["DIV_UP(cols, kBlock * kItems)", "rows"] and la.block_shape == (128, 1, 1)

    grad = facts_of("bias_gelu_templates.cu", "bias_grad_colsum")
    walk, tree = grad.loops
    rows = sym("rows")
    assert (walk.var, walk.start, walk.bound, walk.step) == ("r", tx, rows, 256)
    assert walk.strides_threads  # steps by the block size of the launch
    assert [(a.name, a.op, a.type) for a in walk.accumulators] == [("acc", "sum", "float")]
    assert grad.reduction_dim(walk) == "column"  # dy[r * cols + c]: the reduction walks down a column
    assert (tree.start, tree.cmp, tree.update, tree.trip_value, tree.has_unroll_pragma) == (128, ">", ">>", 8, True)
    assert {a.space for a in grad.accesses if a.pointer == "partial"} == {"shared"}
    (la,) = grad.launches
    assert la.smem == 1024 and la.threads == 256 and [d.text for d in la.grid] == ["cols"]


def test_broken_partial_kernels():
    f = facts_of("broken_partial_kernels.cu", "scale_inplace")
    (a,) = f.accesses
    assert a.kind == "readwrite" and a.coalesced() is True
    assert f.pointer("data").mode == "readwrite"
    (la,) = f.launches
    assert la.threads == 256 and la.grid[0].value == 1536 and la.host == "main"
    for name in ("row_l2_normalize", "axpby"):  # half-typed: facts or one clear line, never an exception
        g = facts_of("broken_partial_kernels.cu", name)
        assert g.errors or g.accesses


def test_kernelbench_cuda_in_python():
    sw = facts_of("kb_swish.py", "swish_fwd_kernel")
    assert sw.language == "cuda-in-python" and sw.loops == ()
    assert all(a.coalesced() for a in sw.accesses) and len(sw.accesses) == 2
    assert sw.launches[0].threads == 256 and sw.launches[0].host == "swish_forward"
    rs = facts_of("kb_rowsum.py", "sum_over_dim_kernel")
    (loop,) = rs.loops
    R, inner = sym("R"), sym("inner")
    assert loop.trip_count == R and [a.name for a in loop.accumulators] == ["acc"]
    (r,) = _acc(rs, "in", "read")
    assert r.stride("r") == inner and rs.reduction_dim(loop) == "column"
    assert r.pattern() == "unknown"  # idx / inner and idx % inner are not affine in threadIdx.x
    assert rs.launches[0].threads == 256


def test_batched_3d_launch_and_locals():
    text = """
#define TILE 8
constexpr int DEPTH = 4;
__global__ void bmm(const float* A, float* C, int N) {
    int b = blockIdx.z;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < N; k += TILE)
        C[(b * N + row) * N + col] += A[b * N * N + row * N + k];
}
void run(const float* A, float* C, int N, int B) {
    dim3 block(TILE, TILE, DEPTH / 2);
    dim3 grid = dim3(N / TILE, N / TILE, B);
    bmm<<<grid, block>>>(A, C, N);
}
"""
    f = facts_of_text(text, "bmm")
    (la,) = f.launches
    assert la.block_shape == (8, 8, 2) and la.threads == 128
    assert [d.text for d in la.grid] == ["N / TILE", "N / TILE", "B"]
    (loop,) = f.loops
    assert loop.step == 8 and loop.trip_count == sympy.ceiling(N / 8)
    (c,) = _acc(f, "C", "readwrite")
    assert c.stride("blockIdx.z") == N * N and c.coalesced("x") and c.stride("k") == 0
    (a,) = _acc(f, "A", "read")
    assert a.pattern("x") == "broadcast" and a.stride("threadIdx.y") == N
    assert f.pointer("C").mode == "readwrite" and f.pointer("A").mode == "read"


def test_escaping_pointer_is_unknown():
    text = """
__device__ void helper(float* p);
__global__ void k(float* p, int n) { helper(p); p[threadIdx.x] = 0.f; }
void run(float* p) { k<<<1, 32>>>(p, 1); }
"""
    assert facts_of_text(text, "k").pointer("p").mode == "unknown"


def test_facts_lead_to_nodes_to_edit():

    from htam_core.source.api import load
    from htam_core.transforms._cuda import load_unit

    model = load(CORPUS / "softmax_row_per_thread.cu")
    unit = load_unit(model, model.kernel("softmax_row_per_thread"))
    f = unit.facts
    loop = unit.node_at(f.row_loops()[1].span, ("for_statement",))
    assert loop is not None and unit.t(loop).startswith("for (int j = 0; j < cols; ++j)")
    acc = f.accumulator("denom")
    assert unit.t(unit.node_at(acc.span)) == "denom += expf(xr[j] - m);"
    assert unit.t(unit.node_at(acc.decl_span)) == "float denom = 0.0f;"
    tid = f.thread_index("x")
    assert unit.t(unit.node_at(tid.span)) == "int row = blockIdx.x * blockDim.x + threadIdx.x;"


def test_atomics_through_a_pointer_argument_are_read_and_written():
    """Regression: ``atomicAdd(p, v)`` and ``atomicMax(p + i, v)`` left ``p`` "read" (only ``&p[i]`` counted), so a
    transform reading the read set would have made the atomic's target const."""
    f = facts_of_text("""
__global__ void k(float *a, float *b, float *c, const float *e) {
    int i = threadIdx.x;
    atomicAdd(a, e[i]);
    atomicAdd(&b[i], 1.0f);
    atomicMax((int *)(c + i), 1);
}
""", "k")
    assert [(p.name, p.mode) for p in f.pointers] == [("a", "readwrite"), ("b", "readwrite"), ("c", "readwrite"),
                                                       ("e", "read")]
    (ca,) = _acc(f, "c", "readwrite")
    assert ca.stride("threadIdx.x") == 1


def test_builtin_aliases_are_locals_that_always_hold_one_builtin():
    f = facts_of_text("""
__global__ void k(float* out, const float* in, int n) {
    int tid = threadIdx.x;
    int nthreads = blockDim.x;
    unsigned int width = (unsigned int)nthreads;   // a chain through a cast
    int g = blockIdx.x * blockDim.x + threadIdx.x; // an expression, not one builtin
    int lim = blockDim.x;
    if (n < lim) { lim = n; }                      // modified: not an alias
    int copy = n;                                  // a parameter, not a builtin
    for (int s = blockDim.x / 2; s > 0; s >>= 1) { out[s] = in[s]; }
    for (int j = threadIdx.x; j < n; j += blockDim.x) { out[j] += in[g + tid + width + lim + copy]; }
}
""", "k")
    assert f.builtin_aliases == (("tid", "threadIdx.x"), ("nthreads", "blockDim.x"), ("width", "blockDim.x"))
    assert f.builtin_alias("width") == "blockDim.x" and f.builtin_alias("j") is None
    assert f.builtin_alias("lim") is None and f.builtin_alias("g") is None and f.builtin_alias("copy") is None


def test_cooperative_groups_queries_are_thread_indices():
    """``warp.thread_rank()`` is the lane, ``warp.size()`` the tile's width, ``meta_group_rank()`` the warp in
    the block; with a 1-D launch the rank in the block is threadIdx.x, otherwise the linear rank. The tile
    declaration tree-sitter misreads as `(tile < 32) > (warp = ...)` is still recognized."""
    text = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(float* out, const float* in, int cols) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    for (int i = warp.thread_rank(); i < cols; i += warp.size()) { out[row * cols + i] = in[row * cols + i]; }
    for (int j = block.thread_rank(); j < cols; j += block.size()) { out[j] += 1.0f; }
}
void run(float* out, const float* in, int rows, int cols, int threads) { k<<<rows / 4, threads>>>(out, in, cols); }
"""
    mod, div = sympy.Function("mod"), sympy.Function("div")
    f = facts_of_text(text, "k")
    lane_loop, block_loop = f.loops
    assert (lane_loop.start, lane_loop.step, lane_loop.bound) == (mod(tx, 32), 32, sym("cols"))
    assert (block_loop.start, block_loop.step) == (tx, bdx)
    assert f.thread_indices[0].name == "row"
    assert f.thread_indices[0].expr == bx * div(bdx + 31, 32) + div(tx, 32)
    two_d = facts_of_text(text.replace("<<<rows / 4, threads>>>", "<<<rows / 4, dim3(threads, 2)>>>"), "k")
    linear = tx + ty * bdx + sym("threadIdx.z") * bdx * bdy
    assert two_d.loops[0].start == mod(linear, 32) and two_d.loops[1].step == bdx * bdy * sym("blockDim.z")


def test_a_thread_blocks_dim3_queries_are_the_builtins():
    """``block.thread_index().y``, ``block.group_index().x``, ``block.group_dim().x`` and ``block.dim_threads().y``
    of a ``thread_block`` are threadIdx, blockIdx and blockDim: the global indices they build are global thread
    indices. The same query on an object that is not a thread block is not a builtin."""
    text = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(float* out, int rows, int cols) {
    cg::thread_block block = cg::this_thread_block();
    int col = block.group_index().x * block.group_dim().x + block.thread_index().x;
    int row = blockIdx.y * block.dim_threads().y + block.thread_index().y;
    int other = blockIdx.x * blockDim.x + thing.thread_index().x;
    if (row < rows && col < cols) out[row * cols + col] = 1.0f + other;
}
"""
    f = facts_of_text(text, "k")
    col, row, other = f.thread_indices
    assert (col.expr, col.is_global) == (bx * bdx + tx, True)
    assert (row.expr, row.is_global) == (by * bdy + ty, True)
    assert not other.is_global


def test_a_grid_groups_thread_rank_is_the_global_thread_index():
    """``grid.thread_rank()`` of a ``cg::grid_group`` (or ``auto grid = cg::this_grid()``), ``cg::this_grid()
    .thread_rank()`` called in place, and ``block.group_index().x * block.size() + block.thread_rank()`` are the
    global thread index (1-D launch: ``blockIdx.x * blockDim.x + threadIdx.x``; otherwise the linear block rank
    times the block's threads plus the linear rank in the block); ``grid.size()`` is every thread of the grid.
    A ``thread_rank()`` of an object that is no group stays unknown."""
    text = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(float* out, const float* in, int n) {
    cg::grid_group grid = cg::this_grid();
    auto g2 = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    unsigned long long a = grid.thread_rank();
    int b = cg::this_grid().thread_rank();
    int c = block.group_index().x * block.size() + block.thread_rank();
    int d = g2.thread_rank();
    int e = thing.thread_rank();
    for (int i = a; i < n; i += grid.size()) out[i] = in[i] + b + c + d + e;
}
void run(float* out, const float* in, int n) { k<<<(n + 255) / 256, 256>>>(out, in, n); }
"""
    f = facts_of_text(text, "k")
    idx = {t.name: t for t in f.thread_indices}
    for name in ("a", "b", "c", "d"):
        assert (idx[name].expr, idx[name].is_global) == (bx * bdx + tx, True), name
    assert "e" not in idx or not idx["e"].is_global
    (loop,) = f.loops
    assert (loop.start, loop.step) == (bx * bdx + tx, sym("gridDim.x") * bdx)
    two_d = facts_of_text(text.replace("<<<(n + 255) / 256, 256>>>", "<<<dim3(n / 256, 2), dim3(16, 16)>>>"), "k")
    (a2,) = [t for t in two_d.thread_indices if t.name == "a"]
    gdx = sym("gridDim.x")
    block_rank = bx + by * gdx + sym("blockIdx.z") * gdx * sym("gridDim.y")
    assert sympy.expand(a2.expr - (block_rank * (bdx * bdy * sym("blockDim.z")) + tx + ty * bdx
                                   + sym("threadIdx.z") * bdx * bdy)) == 0


def test_an_object_like_macro_that_reads_builtins_is_its_index():
    """``#define GID (blockIdx.x * blockDim.x + threadIdx.x)`` is read as that expression (nested macros and sizes
    too); a macro that reads no builtin stays a plain name, and a local of the same name wins over the macro."""
    text = """
#define BS 128
#define LANE (threadIdx.x)
#define GID (blockIdx.x * BS + LANE)
#define OTHER (n + 1)
__global__ void k(float* out, int n) {
    int i = GID;
    int j = OTHER;
    if (i < n) out[i] = j;
}
"""
    f = facts_of_text(text, "k")
    (i,) = f.thread_indices
    assert (i.name, i.expr, i.is_global) == ("i", 128 * bx + tx, True)
    (w,) = f.accesses
    assert w.stride("threadIdx.x") == 1


def test_row_and_column_split_of_the_flat_index_folds_back():
    """``(i / T) * T * C + (i % T) * C`` is ``i * C`` (C's truncating division): the row stride along x is
    known, so a thread-per-row loop over such a split index is a row loop (uncoalesced)."""
    f = facts_of_text(
        "__global__ void k(const float *in, float *out, int N, int T, int C) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < N) { int b = i / T; int t = i % T;\n"
        "        float *o = out + b * T * C + t * C; const float *p = in + t * C;\n"
        "        for (int c = 0; c < C; c++) o[c] = p[c]; }\n}\n", "k")
    (w,) = _acc(f, "out", "write")
    (r,) = _acc(f, "in", "read")
    assert w.stride("threadIdx.x") == sym("C") and w.stride("c") == 1 and w.pattern() == "strided"
    assert r.stride("threadIdx.x") is None  # t alone stays a remainder: not affine in threadIdx.x
    assert [lp.var for lp in f.row_loops()] == ["c"]


VEC_HELPERS = """
struct alignas(16) Pack { float v[4]; };
template <class T> __device__ Pack load16(const T *address) { return *reinterpret_cast<const Pack *>(address); }
template <class T> __device__ int4 load_bits(const T *address) { return __ldcs(reinterpret_cast<const int4 *>(address)); }
template <class T> __device__ void store_bits(T *target, int4 v) { *reinterpret_cast<int4 *>(target) = v; }
__device__ float twice(const float *p) { return 2.0f * p[0]; }

__global__ void colsum(float *out, const float *x, int rows, int cols) {
    int c = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    float acc = 0.0f;
    for (int r = threadIdx.y; r < rows; r += blockDim.y) {
        int4 b = load_bits(x + r * cols + c);
        acc += __int_as_float(b.x) + twice(x + r * cols);
    }
    store_bits(out + c, make_int4(0, 0, 0, 0));
}
"""


def test_calls_of_sixteen_byte_helpers_are_vector_accesses():
    """A device function that reinterprets its pointer as ``int4``/``float4`` is a 16-byte load or store;
    a cast to another struct (``Pack``) or a plain helper is not one."""
    f = facts_of_text(VEC_HELPERS, "colsum")
    x = [a for a in f.accesses if a.pointer == "x"]
    assert [(a.kind, a.vector, a.index_text) for a in x] == [("read", True, "x + r * cols + c")]
    assert sympy.expand(x[0].index - (sym("r") * sym("cols") + 4 * (bdx * bx + tx))) == 0
    (o,) = [a for a in f.accesses if a.pointer == "out"]
    assert (o.kind, o.vector) == ("write", True)


def test_column_split_loops_are_column_sums_with_lanes_on_rows():
    """A warp per column (lanes from ``warp.thread_rank()``, the column from the warp number) and a block per
    column are column splits with the row length as stride, with or without the launch; a thread per column
    (coalesced) and a row sum (stride 1) are not; a column that moves with the lane is not one column per group."""
    text = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void warp_col(float* out, const float* x, int rows, int cols) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int c = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    float s = 0.0f;
    for (int r = warp.thread_rank(); r < rows; r += warp.size()) { s += x[r * cols + c]; }
    out[c] = s;
}
__global__ void block_col(float* out, const float* x, int rows, int cols) {
    float s = 0.0f;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) { s += x[r * cols + blockIdx.x]; }
    out[blockIdx.x] = s;
}
__global__ void thread_col(float* out, const float* x, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int r = 0; r < rows; r++) { s += x[r * cols + c]; }
    out[c] = s;
}
__global__ void block_row(float* out, const float* x, int rows, int cols) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) { s += x[blockIdx.x * cols + i]; }
    out[blockIdx.x] = s;
}
__global__ void lane_col(float* out, const float* x, int rows, int cols) {
    float s = 0.0f;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) { s += x[r * cols + threadIdx.x]; }
    out[blockIdx.x] = s;
}
void run(float* out, const float* x, int rows, int cols) { warp_col<<<cols / 4, 128>>>(out, x, rows, cols); }
"""
    div = sympy.Function("div")
    (w,) = facts_of_text(text, "warp_col").column_split_loops()
    assert (w.loop, w.stride, w.column) == (0, sym("cols"), bx * div(bdx + 31, 32) + div(tx, 32))
    no_launch = text.split("void run")[0]
    assert len(facts_of_text(no_launch, "warp_col").column_split_loops()) == 1  # the linear rank in the block
    (b,) = facts_of_text(text, "block_col").column_split_loops()
    assert (b.stride, b.column) == (sym("cols"), bx)
    for name in ("thread_col", "block_row", "lane_col"):
        assert facts_of_text(text, name).column_split_loops() == (), name
    (t,) = facts_of_text(text, "thread_col").thread_column_loops()  # coalesced, one thread per column
    assert (t.stride, t.column) == (sym("cols"), bx * bdx + tx)
    for name in ("warp_col", "block_col", "block_row", "lane_col"):
        assert facts_of_text(text, name).thread_column_loops() == (), name


ROWPTR = """
__global__ void lin(float *out, const float *inp, const float *weight, const float *bias, int R, int C, int O)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int o = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < R && o < O) {
        float val = (bias != NULL) ? bias[o] : 0.0f;
        const float *wrow = weight + o * C;
        const float *irow = &inp[r * C];
        const float *half = irow + C / 2;         // a chain: inp at r * C + C / 2
        for (int i = 0; i < C; i++) { val += irow[i] * wrow[i]; }
        out[r * O + o] = val + half[0];
    }
}
__global__ void moving(const float *A, float *out, int K)
{
    const float *a = A + threadIdx.x * K;
    float s = 0.0f;
    for (int k = 0; k < K; ++k) { s += *a; a++; }   // incremented: no fixed offset
    out[threadIdx.x] = s;
}
__global__ void taken(const float *A, float *out)
{
    const float *a = A + threadIdx.x;
    const float **pa = &a;                         // address-taken: may be changed through pa
    out[threadIdx.x] = a[0];
}
"""


def test_pointer_offset_locals_are_accesses_of_their_parameter():
    f = facts_of_text(ROWPTR, "lin")
    r, o, i, C = bdx * bx + tx, bdy * by + ty, sym("i"), sym("C")
    (w,) = _acc(f, "weight", "read")
    assert sympy.expand(w.index - (o * C + i)) == 0 and w.stride("i") == 1 and w.stride("threadIdx.y") == C
    loop_read, half_read = _acc(f, "inp", "read")
    assert sympy.expand(loop_read.index - (r * C + i)) == 0
    assert half_read.stride("i") == 0 and half_read.stride("threadIdx.x") == C  # r * C + C / 2
    assert [(a.name, a.pointer) for a in f.pointer_aliases] == [("wrow", "weight"), ("irow", "inp"), ("half", "inp")]
    half = f.pointer_alias("half")
    assert len(half.parts) == 2 and half.depends_on_thread() and not half.vector
    # the null test of bias touches no memory: bias is read, not unknown
    assert [(p.name, p.mode) for p in f.pointers] == [("out", "write"), ("inp", "read"), ("weight", "read"),
                                                      ("bias", "read")]
    assert [lp.var for lp in f.matmul_loops()] == ["i"]  # the NT product through the two row pointers


def test_moved_or_address_taken_pointers_are_not_aliases():
    for kernel in ("moving", "taken"):
        f = facts_of_text(ROWPTR, kernel)
        assert f.pointer_aliases == () and _acc(f, "A", "read") == []
        assert f.pointer("A").mode == "unknown"  # the accesses through the local are not known


def test_accesses_under_a_condition_inside_a_loop_are_guarded_by_that_loop():
    """``Access.guarded``: the loops inside whose body a condition (if branch, else, ?: branch, right side of
    &&/||) decides whether the access runs; the kernel's top-level bounds check guards no loop."""
    f = facts_of_text("""
__global__ void k(const float* x, const float* w, float* y, int n, int lim) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = w[i];
        for (int j = 0; j < 8; j++) {
            s += x[i * 8 + j];
            if (j < lim) s += w[j];
            else s -= y[j];
            s += (j > 2) ? x[j] : 0.f;
            if (j < lim && x[j + 1] > 0.f) s += 1.f;
        }
        y[i] = s;
    }
}
""", "k")
    (loop,) = f.loops
    got = {(a.pointer, a.index_text, a.kind): a.guarded for a in f.accesses}
    assert got[("w", "i", "read")] == ()  # under the kernel's bounds check, outside any loop
    assert got[("x", "i * 8 + j", "read")] == ()  # in the loop, unconditional
    assert got[("w", "j", "read")] == (loop.id,)
    assert got[("y", "j", "read")] == (loop.id,)  # the else branch
    assert got[("x", "j", "read")] == (loop.id,)  # a ?: branch
    assert got[("x", "j + 1", "read")] == (loop.id,)  # the right side of &&
    assert got[("y", "i", "write")] == ()
