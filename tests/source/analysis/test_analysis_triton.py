"""Program-id and arange axes, tile loops, reductions, masked memory ops, dots and launches of every Triton
corpus kernel, against expectations written by reading each kernel."""

from __future__ import annotations

import sympy

from htam_core.source.analysis import sym
from tests.source.analysis.conftest import facts_of, facts_of_text


def _axes(f):
    return [(a.name, a.kind, a.axis, a.ndim, a.size) for a in f.triton.axes]


def test_vadd_kernel():
    f = facts_of("vector_add_small_block.py", "vadd_kernel")
    # BLOCK_SIZE=BLOCK_SIZE at the launch, with BLOCK_SIZE = 64 just before it in vector_add
    assert f.constant("BLOCK_SIZE") == 64
    assert _axes(f) == [("start", "program_id", 0, 1, None), ("idx", "arange", 0, 1, 64)]
    assert f.loops == () and f.triton.reductions == () and f.triton.tile_loops == ()
    assert [(m.op, m.pointer, m.masked) for m in f.triton.memops] == [
        ("load", "a_ptr", True), ("load", "b_ptr", True), ("store", "c_ptr", True)]
    assert [(p.name, p.mode) for p in f.pointers] == [("a_ptr", "read"), ("b_ptr", "read"), ("c_ptr", "write")]
    (la,) = f.launches
    assert la.host == "vector_add" and dict(la.bindings) == {"BLOCK_SIZE": 64}
    assert dict(la.kwargs)["num_warps"] == "4"


def test_row_softmax_kernel():
    f = facts_of("softmax_rows.py", "row_softmax_kernel")
    assert _axes(f) == [("r", "program_id", 0, 1, None), ("cols", "arange", 0, 1, sym("BLOCK_SIZE"))]
    assert [(r.fn, r.axis, r.target) for r in f.triton.reductions] == [("max", 0, "shifted"), ("sum", 0, "total")]
    assert f.loops == ()  # the whole row is one tile
    assert all(m.masked for m in f.triton.memops) and f.triton.memops[0].has_other
    assert "exp" in f.triton.math_calls and f.constant("BLOCK_SIZE") is None  # next_power_of_2: a runtime value


def test_layernorm_two_pass_tile_loops():
    f = facts_of("layernorm_heuristics.py", "ln_fwd_kernel")
    n, blk = sym("N"), sym("BLOCK_N")
    p1, p2 = f.loops
    for lp in (p1, p2):
        assert (lp.kind, lp.var, lp.start, lp.bound, lp.step) == ("range", "off", 0, n, blk)
        assert lp.trip_count == sympy.ceiling(n / blk)
    assert f.triton.tile_loops == (0, 1)  # both passes walk the row tile by tile
    assert [(a.name, a.op, a.type) for a in p1.accumulators] == [("s1", "sum", "float32"), ("s2", "sum", "float32")]
    assert p2.accumulators == ()
    assert [(r.fn, r.axis, r.target) for r in f.triton.reductions] == [("sum", 0, "mean"), ("sum", 0, "var")]
    loads = [m for m in f.triton.memops if m.op == "load"]
    assert {m.pointer for m in loads} == {"x_ptr", "w_ptr", "b_ptr"}  # x_row = x_ptr + row * row_stride
    assert sorted(m.masked for m in loads) == [False] * 4 + [True] * 4  # EVEN_N and masked branches
    assert {p.name: p.mode for p in f.pointers}["mean_ptr"] == "write"


def test_matmul_autotune():
    f = facts_of("matmul_autotune.py", "mm_kernel")
    bm, bn, bk, k = sym("BM"), sym("BN"), sym("BK"), sym("K")
    assert f.triton.autotuned and f.triton.program_axes() == (0, 1)
    assert [(a.name, a.axis, a.ndim, a.size) for a in f.triton.aranges()] == [
        ("rm", 0, 2, bm), ("rn", 1, 2, bn), ("rk", 1, 2, bk)]
    (loop,) = f.loops
    assert (loop.var, loop.step, loop.trip_count) == ("k0", bk, sympy.ceiling(k / bk))
    assert [(a.name, a.op, a.type) for a in loop.accumulators] == [("acc", "sum", "float32")]  # not the pointers
    assert f.triton.tile_loops == (0,)
    (d,) = f.triton.dots
    assert (d.a, d.b, d.a_dtype, d.b_dtype, d.input_precision) == ("a", "b", None, None, None)  # dtype of a_ptr
    assert not f.triton.grouped_program_ids
    assert f.launches[0].host == "matmul" and f.launches[0].bindings == ()  # autotuned: no constexpr at the site


def test_bias_gelu_residual():
    f = facts_of("bias_gelu_fused.py", "bias_gelu_residual_kernel")
    assert _axes(f)[0] == ("pid", "program_id", 0, 1, None)
    assert f.constant("BLOCK_SIZE") == 512 and f.loops == ()
    assert [m.pointer for m in f.triton.memops] == ["x_ptr", "bias_ptr", "res_ptr", "out_ptr"]
    assert all(m.masked and (m.op == "store" or m.has_other) for m in f.triton.memops)
    (la,) = f.launches
    assert dict(la.kwargs)["BLOCK_SIZE"] == "512" and la.grid[0].text.startswith("lambda meta")


def test_dot_dtypes_and_grouping():
    text = '''
import triton
import triton.language as tl

@triton.jit
def k(a_ptr, b_ptr, c_ptr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    group = pid // GROUP_M
    first = group * GROUP_M
    size = tl.minimum(8 - first, GROUP_M)
    a = tl.load(a_ptr).to(tl.float16)
    b = tl.load(b_ptr, dtype=tl.bfloat16)
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr, c)
'''
    f = facts_of_text(text, "k", "python")
    (d,) = f.triton.dots
    assert (d.a_dtype, d.b_dtype, d.input_precision) == ("float16", "bfloat16", "ieee")
    assert f.triton.grouped_program_ids


def test_row_kernel_facts_bounds_dependents_and_loops():
    f = facts_of("softmax_rows.py", "row_softmax_kernel").triton
    assert [(b.arange, b.block, b.bound) for b in f.bounds] == [("cols", "BLOCK_SIZE", "n_cols")]
    assert f.program_id_calls == 1 and f.row_dependents[:2] == ("r", "vals")
    assert "cols" not in f.row_dependents and {"cols", "valid"} <= set(f.arange_dependents)
    assert f.control_names == () and f.loops == () and f.tensor_shapes == ()
    ax = f.aranges()[0]
    assert ax.end_text == "BLOCK_SIZE" and ax.call_span is not None and ax.span is not None
    f = facts_of("layernorm_heuristics.py", "ln_fwd_kernel").triton
    assert {(b.block, b.bound) for b in f.bounds} == {("BLOCK_N", "N")}
    assert {"EVEN_N", "N", "BLOCK_N"} <= set(f.control_names)  # if EVEN_N: and the range(...) headers
    assert f.tensor_shapes == ("[BLOCK_N]", "[BLOCK_N]")
    p1, p2 = f.loops
    assert p1.header == p2.header == "off in range(0, N, BLOCK_N)"
    assert p1.writes == ("cols", "v", "s1", "s2") and "mean" in p2.reads and "mean" not in p1.reads
    assert len(p1.statements) == 4  # cols, the if/else load, s1 +=, s2 +=


def test_row_dependents_follow_augmented_pointer_moves():
    text = '''
import triton
import triton.language as tl

@triton.jit
def k(X, Y, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=n > offs)
    tl.store(Y + row, tl.sum(x))
'''
    f = facts_of_text(text, "k", "python").triton
    assert f.row_dependents == ("row", "X", "x")  # X += row * stride makes X a per-row pointer
    assert [(b.arange, b.bound) for b in f.bounds] == [("offs", "n")]  # n > offs is offs < n


def test_memops_record_their_cache_hints() -> None:
    src = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs, mask=offs < n, cache_modifier='.cg', eviction_policy='evict_first')\n"
        "    tl.store(y_ptr + offs, x, mask=offs < n)\n"
    )
    f = facts_of_text(src, "k", "python")
    assert [(m.op, m.hints) for m in f.triton.memops] == [("load", ("cache_modifier", "eviction_policy")),
                                                          ("store", ())]
