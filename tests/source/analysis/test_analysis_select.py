"""``select_step``: a running max/min written as a comparison and a choice, read with the comparison as written (a
rewrite combines partial values with it, so ties and NaN choose as in the original), in both forms (a conditional
expression and an ``if``) and every operand order; not a step when a branch or the comparison names another value,
the candidate reads the running value, or the ``if`` has an ``else`` or a second statement."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.select import select_step
from htam_core.source.analysis.syntax import parse_cuda, statements


def _step(stmt: str):
    src = f"void f(const float *p, float x, float m, float y) {{ {stmt} }}".encode()
    body = parse_cuda(src).root_node.named_children[0].child_by_field_name("body")
    (st,) = statements(body)
    return src, select_step(src, st)


@pytest.mark.parametrize(("stmt", "kind", "nan_enters", "combined"), [
    ("m = x > m ? x : m;", "max", False, "m = v > m ? v : m;"),
    ("m = (m < x) ? x : m;", "max", False, "m = m < v ? v : m;"),
    ("m = m > x ? m : x;", "max", True, "m = m > v ? m : v;"),
    ("m = (x >= m) ? (x) : (m);", "max", False, "m = v >= m ? v : m;"),
    ("m = x < m ? x : m;", "min", False, "m = v < m ? v : m;"),
    ("m = m <= x ? m : x;", "min", True, "m = m <= v ? m : v;"),
    ("if (x > m) m = x;", "max", False, "if (v > m) m = v;"),
    ("if ((m > x)) { m = x; }", "min", False, "if (m > v) m = v;"),
    ("if (p[0] * 2.0f < m) m = p[0] * 2.0f;", "min", False, "if (v < m) m = v;"),
])
def test_a_choice_is_a_step_with_its_comparison(stmt, kind, nan_enters, combined):
    src, step = _step(stmt)
    assert step is not None and step.name == "m"
    assert step.selection.kind == kind and step.selection.nan_enters == nan_enters
    assert step.selection.assign("m", "v") == combined
    assert src[step.candidate.start_byte:step.candidate.end_byte].decode() in ("x", "p[0] * 2.0f")


def test_a_compound_candidate_is_parenthesized_in_the_combine():
    _, step = _step("m = x > m ? x : m;")
    assert step.selection.combine("m", "a + b") == "(a + b) > m ? (a + b) : m"
    assert step.selection.combine("m", "red[w]") == "red[w] > m ? red[w] : m"


@pytest.mark.parametrize("stmt", [
    "m = x > y ? x : m;",          # the comparison does not name m
    "m = x > m ? x + 1.0f : m;",   # the taken value is not the compared one
    "m = x > m ? y : m;",
    "m = m * 2.0f > m ? m * 2.0f : m;",  # the candidate reads m
    "m = x == m ? x : m;",          # not an ordering
    "if (x > m) m = x; else m = y;",
    "if (x > m) { m = x; y = 0.0f; }",
    "if (x > m) m += x;",
    "m = x > m ? m : m;",
])
def test_not_a_step(stmt):
    assert _step(stmt)[1] is None


@pytest.mark.parametrize(("stmt", "kind"), [
    ("s[t] = s[t + k] > s[t] ? s[t + k] : s[t];", "max"),
    ("s[t] = (s[t] < s[t + k]) ? s[t + k] : s[t];", "max"),
    ("s[t] = s[t] <= s[t + k] ? s[t] : s[t + k];", "min"),
    ("if (s[t + k] < s[t]) s[t] = s[t + k];", "min"),
])
def test_an_element_is_a_running_value_only_when_asked(stmt, kind):
    src = f"void f(float *s, int t, int k) {{ {stmt} }}".encode()
    body = parse_cuda(src).root_node.named_children[0].child_by_field_name("body")
    (st,) = statements(body)
    assert select_step(src, st) is None
    step = select_step(src, st, element=True)
    assert step is not None and step.name == "s[t]" and step.selection.kind == kind
    assert step.target is not None and src[step.target.start_byte:step.target.end_byte].decode() == "s[t]"
    assert src[step.candidate.start_byte:step.candidate.end_byte].decode() == "s[t + k]"
