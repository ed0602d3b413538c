"""The bounds-check reader of the analysis layer (:mod:`htam_core.source.analysis.guards`): the guarded-body form
and the early-return forms read as the same positive conjunction, with the form named."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.guards import describe_form, first_bounds_guard
from htam_core.source.analysis.syntax import of_type, parse_cuda


def _guard(body: str):
    src = ("__global__ void k(float *C, int M, int N) { int row = threadIdx.y; int col = threadIdx.x; "
           + body + " }").encode()
    fn = of_type(parse_cuda(src).root_node, "function_definition")[0]
    block = fn.child_by_field_name("body")
    stmts = [c for c in block.named_children if c.type != "comment"]
    found = first_bounds_guard(stmts, src)
    assert found is not None
    return found[1], src


@pytest.mark.parametrize("body", [
    "if (row < M && col < N) { C[row * N + col] = 0; }",
    "if (row >= M || col >= N) return; C[row * N + col] = 0;",
    "if (M <= row || N <= col) { return; } C[row * N + col] = 0;",
    "if (!(row < M && col < N)) return; C[row * N + col] = 0;",
    "if (!(row < M) || !(col < N)) return; C[row * N + col] = 0;",
])
def test_every_form_reads_as_row_lt_m_and_col_lt_n(body):
    g, src = _guard(body)
    assert not isinstance(g, str), g
    assert {v: src[n.start_byte:n.end_byte].decode() for v, n in g.bounds().items()} == {"row": "M", "col": "N"}
    assert g.others() == ()
    assert [src[s.start_byte:s.end_byte].decode() for s in g.body] == ["C[row * N + col] = 0;"]
    assert g.form == ("if" if body.startswith("if (row <") else "return")
    assert g.end_byte == src.index(b";", src.index(b"C[row")) + (1 if g.form == "return" else 3)


def test_the_early_return_condition_is_positive_and_the_form_is_named():
    g, src = _guard("if (row >= M || col > N || flag) return; C[0] = 1;")
    assert g.condition == "(row < M && col <= N && !(flag))"
    assert [t.text for t in g.others()] == ["col <= N", "!(flag)"]
    assert describe_form(g, src) == "the early return `if (row >= M || col > N || flag) return;`"
    g2, src2 = _guard("if (row < M) { C[0] = 1; }")
    assert g2.single("row") is not None and g2.single("col") is None
    assert describe_form(g2, src2) == "the guarded body `if (row < M) { … }`"


@pytest.mark.parametrize(("body", "why"), [
    ("if (row < M) { C[0] = 1; } else { C[0] = 2; }", "else branch"),
    ("if (row >= M) { C[0] = 0; return; } C[1] = 1;", "returns after other statements"),
    ("if (row >= M) return;", "nothing follows the early return"),
])
def test_what_is_not_a_bounds_check_says_why(body, why):
    g, _ = _guard(body)
    assert isinstance(g, str) and why in g
