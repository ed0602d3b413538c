"""General rules of the Triton model, on small files written for these tests."""

from __future__ import annotations

import textwrap

from htam_core.source import Document, parse_text

SRC = '''
import triton
import triton.language as tl
from triton import jit

BLOCK_DEFAULT: tl.constexpr = 128


@jit
def _helper(x, SCALE: tl.constexpr):
    return x * SCALE


@triton.autotune(
    configs=[
        triton.Config({"BM": 64, "BN": 32}, num_warps=4, num_stages=3),
        triton.Config({"BM": 128, "BN": 64}, num_warps=8),
    ],
    key=["M", "N"],
    prune_configs_by={"early_config_prune": None},
)
@triton.heuristics({"EVEN": lambda a: a["M"] % a["BM"] == 0})
@triton.jit(do_not_specialize=["M"])
def tiled(a_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, EVEN: tl.constexpr = False):
    pid = tl.program_id(axis=1)
    rows = pid * BM + tl.arange(0, BM)
    dst = out_ptr + rows
    acc = tl.zeros([BM], dtype=tl.float32)
    for i in tl.static_range(4):
        acc += tl.load(a_ptr + rows + i, mask=rows < M, other=0.0)
    for j in range(0, 16, 2):
        acc += j
    acc = _helper(acc, 2)
    tl.store(dst, tl.exp(acc) / tl.sum(acc, axis=0), mask=rows < M)


@triton.jit
def unlaunched_kernel(p_ptr):
    tl.store(p_ptr, 1.0)


def run(a, out, M, N):
    grid = lambda meta: (triton.cdiv(M, meta["BM"]), 1)
    tiled[grid](a, out, M, N)
    tiled[(1, 1)](a, out, M, N, num_warps=2, num_stages=1)
'''


def model():
    return parse_text(textwrap.dedent(SRC).lstrip("\n"), "python")


def test_decorator_stack_ranges_params_and_device_functions() -> None:
    m = model()
    ks = {k.name: k for k in m.kernels}
    assert sorted(ks) == ["tiled", "unlaunched_kernel"]
    t = ks["tiled"]
    assert (t.start_line, t.end_line) == (13, 33)
    assert [p.name for p in t.params] == ["a_ptr", "out_ptr", "M", "N", "BM", "BN", "EVEN"]
    assert t.constexpr_params == ["BM", "BN", "EVEN"]
    assert t.params[-1].default == "False"
    assert [(d.name, d.start_line, d.end_line) for d in m.device_functions] == [("_helper", 8, 10)]
    assert (ks["unlaunched_kernel"].start_line, ks["unlaunched_kernel"].end_line) == (36, 38)


def test_autotune_heuristics_and_jit_kwargs() -> None:
    t = {k.name: k for k in model().kernels}["tiled"]
    assert t.attributes["autotune"]["configs"] == [
        {"kwargs": {"BM": "64", "BN": "32"}, "num_warps": "4", "num_stages": "3"},
        {"kwargs": {"BM": "128", "BN": "64"}, "num_warps": "8", "num_stages": None},
    ]
    assert t.attributes["autotune"]["key"] == ["M", "N"]
    assert "early_config_prune" in t.attributes["autotune"]["prune_configs_by"]
    assert t.attributes["heuristics"] == {"EVEN": 'lambda a: a["M"] % a["BM"] == 0'}
    assert t.attributes["jit_kwargs"] == {"do_not_specialize": '["M"]'}


def test_launch_sites() -> None:
    t = {k.name: k for k in model().kernels}["tiled"]
    assert [s.line for s in t.launch_sites] == [43, 44]
    first, second = t.launch_sites
    assert first.config == {"grid": "grid"}
    assert first.resolved_config["grid"] == 'lambda meta: (triton.cdiv(M, meta["BM"]), 1)'
    assert first.args == ["a", "out", "M", "N"]
    assert second.config == {"grid": "(1, 1)", "num_warps": "2", "num_stages": "1"}


def test_features() -> None:
    t = {k.name: k for k in model().kernels}["tiled"]
    f = t.features
    assert [(lp.kind, lp.trip_count) for lp in f.loops] == [("static_range", 4), ("range", 8)]
    assert f.masks == 2 and f.loads == 1 and f.stores == 1
    assert f.reductions == ["sum"] and "exp" in f.math_calls
    assert f.uses_2d_index and not f.uses_dot
    written = {p.name: (p.is_pointer, p.written) for p in t.params}
    assert written["out_ptr"] == (True, True) and written["a_ptr"] == (True, False)


def test_half_typed_python_keeps_complete_kernels() -> None:
    src = textwrap.dedent('''
        import triton
        import triton.language as tl


        @triton.jit
        def first(x_ptr):
            tl.store(x_ptr, 1.0)


        @triton.jit
        def typing(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK
            x = tl.load(x_ptr + offs, mask=offs < n)


        @triton.jit
        def last(y_ptr):
            tl.store(y_ptr, 0.0)


        def go(y):
            last[(1,)](y)
        ''').lstrip("\n")
    ks = {k.name: k for k in parse_text(src, "python").kernels}
    assert sorted(ks) == ["first", "last", "typing"]
    assert (ks["first"].start_line, ks["first"].end_line) == (5, 7)
    assert ks["typing"].incomplete and (ks["typing"].start_line, ks["typing"].end_line) == (10, 13)
    assert (ks["last"].start_line, ks["last"].end_line) == (16, 18)
    assert [s.line for s in ks["last"].launch_sites] == [22]


def test_collapsed_python_recovers_kernels_in_place() -> None:
    """An unclosed ``\"\"\"`` at the top (being typed) collapses the tree; the kernels are still
    found in the current text, one line down, not taken stale from the last good parse."""
    src = textwrap.dedent(SRC).lstrip("\n")
    doc = Document(src, "python")
    good = doc.model
    assert not good.stale and len(good.kernels) == 2
    doc.apply_change(0, 0, 0, 0, 'x = """\n')
    now = doc.model
    assert not now.stale and now.errors and now.text.startswith('x = """')
    assert [(k.name, k.start_line, k.end_line) for k in now.kernels] == [
        (k.name, k.start_line + 1, k.end_line + 1) for k in good.kernels]
    assert doc.kernel_at(good.kernels[0].start_line, 4).name == good.kernels[0].name
    doc.apply_change(0, 0, 1, 0, "")
    assert not doc.model.stale and doc.model.kernels == good.kernels


def test_jit_call_forms_in_a_class_body() -> None:
    """``triton.jit(fn)`` bound as class attributes over a module-level ``def``: one kernel per
    binding, each with its qualified name, the autotune of a call chain, and its own launches."""
    src = textwrap.dedent('''
        import triton
        import triton.language as tl


        def _fn(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


        class Ops:
            triple = triton.jit(_fn, do_not_specialize=["n"])
            tuned = triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])(triton.jit(_fn))


        def run(x):
            Ops.triple[(1,)](x, x.numel(), BLOCK=128)
        ''').lstrip("\n")
    m = parse_text(src, "python")
    ks = {k.qualified_name: k for k in m.kernels}
    assert sorted(ks) == ["Ops.triple", "Ops.tuned"]
    for k in ks.values():
        assert (k.name, k.start_line, k.end_line, k.incomplete) == ("_fn", 5, 7, False)
        assert [p.name for p in k.params] == ["x_ptr", "n", "BLOCK"] and k.constexpr_params == ["BLOCK"]
    assert [s.line for s in ks["Ops.triple"].launch_sites] == [16] and ks["Ops.tuned"].launch_sites == []
    assert ks["Ops.triple"].attributes["jit_kwargs"] == {"do_not_specialize": '["n"]'}
    assert ks["Ops.tuned"].attributes["autotune"]["key"] == ["n"]
    assert ks["Ops.tuned"].attributes["autotune"]["configs"][0]["kwargs"] == {"BLOCK": "128"}
    assert m.kernel("Ops.tuned") is ks["Ops.tuned"] and m.kernel("_fn").answers_to("_fn")
    # a plain call of a function is no kernel; neither is a jit call over a name with no def in scope
    plain = parse_text("def f(x):\n    return x\n\n\ny = g(f)\nz = triton.jit(missing)\n", "python")
    assert plain.kernels == []
