"""A guarded body whose ``else`` changes nothing (``else { return; }`` ending the kernel, ``else return;``, ``else
{}``, ``else ;``) is the guarded-body form (:func:`~htam_core.source.analysis.guards.noop_else`); an ``else`` that
does work, or whose ``return`` skips later statements, is refused in one line. Also the loop header the row steps
read (:func:`~htam_core.source.analysis.loops.counted_header`): its exclusive bound. Kernels written here."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.guards import bounds_guard, closing_bounds_guard, else_span, open_guarded_block
from htam_core.source.analysis.syntax import of_type, parse_cuda, statements


def _body(body: str) -> tuple[list, bytes]:
    src = ("__global__ void k(float *y, int n) { int i = threadIdx.x; " + body + " }").encode()
    fn = of_type(parse_cuda(src).root_node, "function_definition")[0]
    return statements(fn.child_by_field_name("body")), src


NOOP = ["else { return; }", "else return;", "else {}", "else ;", "else { /* out of range */ }",
        "else {\n        return;\n    }"]


@pytest.mark.parametrize("alt", NOOP)
def test_a_noop_else_ending_the_kernel_is_the_guarded_body(alt):
    stmts, src = _body(f"if (i < n) {{ y[i] = 1.0f; }} {alt}")
    g = closing_bounds_guard(stmts, src)
    assert not isinstance(g, str), g
    assert g.form == "if" and g.single("i") is not None and g.alternative is not None
    assert [src[s.start_byte:s.end_byte].decode() for s in g.body] == ["y[i] = 1.0f;"]
    start, end = else_span(g)
    assert src[start:end].decode().strip() == alt and end == g.stmt.end_byte


def test_without_an_else_there_is_no_else_span():
    stmts, src = _body("if (i < n) { y[i] = 1.0f; }")
    g = closing_bounds_guard(stmts, src)
    assert not isinstance(g, str) and g.alternative is None and else_span(g) is None


@pytest.mark.parametrize(("body", "why"), [
    ("if (i < n) { y[i] = 1.0f; } else { y[0] = 0.0f; }", "has an else branch that does work"),
    ("if (i < n) { y[i] = 1.0f; } else { y[0] = 0.0f; return; }", "has an else branch that does work"),
    ("if (i < n) { y[i] = 1.0f; } else return; y[0] = 2.0f;", "else branch returns before the statements after it"),
    ("if (i >= n) return; else { y[i] = 1.0f; }", "the early return has an else branch"),
    ("if (!(i < n)) return; else y[i] = 1.0f;", "the early return has an else branch"),
])
def test_an_else_that_changes_something_is_refused_in_one_line(body, why):
    stmts, src = _body(body)
    g = closing_bounds_guard(stmts, src)
    assert isinstance(g, str) and why in g and "\n" not in g


def test_an_empty_else_followed_by_statements_still_guards_only_its_body():
    stmts, src = _body("if (i < n) { y[i] = 1.0f; } else {} y[0] = 2.0f;")
    g = closing_bounds_guard(stmts, src)
    assert isinstance(g, str) and "is not the kernel's last statement" in g


def test_a_return_in_an_else_inside_a_loop_is_not_a_noop():
    stmts, src = _body("for (int r = 0; r < 4; ++r) { if (i < n) { y[i] += 1.0f; } else { return; } }")
    inner = of_type(stmts[-1], "if_statement")[0]
    g = bounds_guard(inner, None, src)
    assert isinstance(g, str) and "returns before" in g


@pytest.mark.parametrize("alt", ["else { return; }", "else return;", "else {}"])
def test_the_opened_block_reads_through_a_noop_else(alt):
    stmts, src = _body(f"if (i < n) {{ float s = 0.0f; for (int r = 0; r < n; ++r) s += y[r]; y[i] = s; }} {alt}")
    loop = of_type(stmts[-1], "for_statement")[0]
    opened = open_guarded_block(stmts, loop, src)
    assert isinstance(opened, tuple) and opened[1] is stmts[-1] and loop in opened[0]


def test_the_opened_block_refuses_an_else_that_does_work():
    stmts, src = _body("if (i < n) { for (int r = 0; r < n; ++r) y[i] += y[r]; } else { y[0] = 0.0f; }")
    loop = of_type(stmts[-1], "for_statement")[0]
    why = open_guarded_block(stmts, loop, src)
    assert isinstance(why, str) and "else branch that does work" in why


# ------------------------------------------------------------------------------- counted loop headers
def _headers(loops: str) -> list:
    text = f"__global__ void k(float *y, int n, long q) {{ {loops} }}"
    m = parse_text(text, "cuda")
    return [(lp.header, lp.header_problem, text) for lp in analyze(m, m.kernel("k")).loops]


@pytest.mark.parametrize(("loop", "cmp", "exclusive"), [
    ("for (int k = 0; k < n; ++k) y[k] = 0;", "<", "n"),
    ("for (long k = 0; k <= q; ++k) y[k] = 0;", "<=", "(q) + 1"),
    ("for (int k = 1; n > k; k++) y[k] = 0;", "<", "n"),
    ("for (int k = 0; q >= k; k += 1) y[k] = 0;", "<=", "(q) + 1"),
    ("for (int k = 0; k != n; k = k + 1) y[k] = 0;", "!=", "n"),
    ("for (int k = 0; k < n; k += 2) y[k] = 0;", "<", None),
    ("for (int k = n; k > 0; --k) y[k] = 0;", ">", None),
])
def test_the_header_gives_the_exclusive_bound_of_a_loop_counting_up_by_one(loop, cmp, exclusive):
    ((h, why, text),) = _headers(loop)
    assert h is not None, why
    assert (h.cmp, h.exclusive, h.var) == (cmp, exclusive, "k")
    b = text.encode()
    assert b[h.start[0]:h.start[1]].decode() in ("0", "1", "n")
    assert b[h.update[0]:h.update[1]].decode().replace(" ", "") in ("++k", "k++", "k+=1", "k=k+1", "k+=2", "--k")


@pytest.mark.parametrize(("loop", "why"), [
    ("int k; for (k = 0; k < n; ++k) y[k] = 0;", "does not declare its variable"),
    ("for (int k = 0; ; ++k) y[k] = 0;", "is not a counted for loop"),
    ("for (int k = 0; y[k] > 0.0f; ++k) y[k] = 0;", "does not compare k with a bound"),
])
def test_a_header_that_is_not_counted_says_why(loop, why):
    ((h, problem, _),) = _headers(loop)
    assert h is None and why in problem
