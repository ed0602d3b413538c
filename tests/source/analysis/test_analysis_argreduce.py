"""Arg-max/arg-min steps (``htam_core.source.analysis.argreduce``): ``if (v > best) { best = v; bi = c; }`` and
its spellings (assignments in either order, the extreme on either side, strict or not) read as one
:class:`ArgStep` with its kind and tie rule; other conditional updates are not one."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.argreduce import arg_step
from htam_core.source.analysis.syntax import parse


def _step(stmt: str):
    src = f"void f(const float *p, int n) {{ float best = 0.0f; int bi = 0; int c = 1; float v = p[c]; {stmt} }}"
    data = src.encode()
    ifs = [n for n in syn.walk(parse(data, "cuda").root_node) if syn.is_if(n)]
    assert len(ifs) == 1
    return arg_step(data, ifs[0]), data


@pytest.mark.parametrize(("stmt", "kind", "first"), [
    ("if (v > best) { best = v; bi = c; }", "argmax", True),
    ("if (p[c] >= best) { bi = c; best = p[c]; }", "argmax", False),
    ("if (best < v) { best = v; bi = c; }", "argmax", True),
    ("if (best > v) { best = v; bi = c; }", "argmin", True),
    ("if ((v <= best)) { best = v; bi = c; }", "argmin", False),
])
def test_the_spellings_of_an_arg_step(stmt: str, kind: str, first: bool) -> None:
    a, data = _step(stmt)
    assert a is not None and (a.kind, a.first, a.value, a.index) == (kind, first, "best", "bi")
    assert data[a.index_value.start_byte:a.index_value.end_byte] == b"c"


@pytest.mark.parametrize("stmt", [
    "if (v > best) best = v;",  # a running max without an index
    "if (v > best) { best = v; bi = c; } else { bi = 0; }",  # an else branch
    "if (v > best) { best = v + 1.0f; bi = c; }",  # stores another value than it compares
    "if (v > best) { best = v; bi = bi + 1; }",  # the index reads itself
    "if (v != best) { best = v; bi = c; }",  # not an ordering
    "if (v > best) { best = v; bi = c; c = 0; }",  # a third statement
])
def test_other_updates_are_no_arg_step(stmt: str) -> None:
    assert _step(stmt)[0] is None
