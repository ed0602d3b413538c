"""``triton.language`` under any alias reads as ``tl`` in the facts, new code is written with the file's own
alias, and tile-size constexprs are found by use, not by name."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.syntax import parse
from htam_core.source.analysis.triton_names import triton_names
from tests.source.analysis.conftest import facts_of_text

_BODY = """
@triton.jit
def k(x_ptr, out_ptr, n, XB: {tl}.constexpr):
    offs = {tl}.program_id(axis=0) * XB + {tl}.arange(0, XB)
    v = {tl}.load(x_ptr + offs, mask=offs < n, other=0.0)
    acc = {tl}.zeros([XB], dtype={tl}.float32)
    {tl}.store(out_ptr + offs, {tl}.where(v > 0, v, acc), mask=offs < n)
"""


@pytest.mark.parametrize(("header", "tl", "spelling"), [
    ("import triton\nimport triton.language as tl\n", "tl", "tl"),
    ("import triton\nimport triton.language as language\n", "language", "language"),
    ("import triton\nfrom triton import language as tl2\n", "tl2", "tl2"),
    ("import triton\n", "triton.language", "tl"),
    ("import triton as tr\nimport triton.language\n", "tr.language", "tl"),
])
def test_aliases_give_the_same_facts(header, tl, spelling):
    text = header + _BODY.format(tl=tl)
    f = facts_of_text(text, "k", "python")
    assert [(a.name, a.kind) for a in f.triton.axes] == [("offs", "program_id"), ("offs", "arange")]
    assert [(m.op, m.pointer, m.masked, m.has_other) for m in f.triton.memops] == [
        ("load", "x_ptr", True, True), ("store", "out_ptr", True, False)]
    assert f.triton.tensor_shapes == ("[XB]",)
    assert f.triton.tile_params == ("XB",)
    src = text.encode()
    assert triton_names(parse(src, "python").root_node, src).spelling == spelling


def test_canonical_leaves_other_calls_alone():
    src = b"import triton.language as language\n"
    names = triton_names(parse(src, "python").root_node, src)
    assert names.canonical("language.math.exp") == "tl.math.exp"
    assert names.canonical("triton.language.load") == "tl.load"
    assert names.canonical("languages.load") == "languages.load"
    assert names.canonical("x.to") == "x.to" and names.canonical("range") == "range"


def test_tile_params_by_use_not_by_name():
    text = """import triton
import triton.language as tl

@triton.jit
def k(x_ptr, n, BS: tl.constexpr, STEP: tl.constexpr, FLAG: tl.constexpr):
    acc = tl.zeros([BS], dtype=tl.float32)
    for off in range(0, n, STEP):
        acc += tl.load(x_ptr + off + tl.arange(0, BS), mask=off + tl.arange(0, BS) < n)
    if FLAG:
        tl.store(x_ptr + tl.arange(0, BS), acc)
"""
    assert facts_of_text(text, "k", "python").triton.tile_params == ("BS", "STEP")


def test_kernel_features_read_aliases():
    from htam_core.source import parse_text

    text = """import triton
from triton import language as tl2

@triton.jit
def k(x_ptr, out_ptr, n, B: tl2.constexpr):
    c = tl2.arange(0, B)
    v = tl2.load(x_ptr + c, mask=c < n, other=0.0)
    tl2.store(out_ptr, tl2.sum(tl2.exp(v), axis=0))
"""
    feats = parse_text(text, "python").kernel("k").features
    assert feats.reductions == ["sum"] and "exp" in feats.math_calls
    assert feats.loads == 1 and feats.stores == 1
