"""The value a host function's local holds at a launch (:func:`htam_core.source.analysis.reaching.reaching_value`):
its nearest dominating definition, or none when a write, a branch or a loop makes the value's text mean something
else at the launch; :func:`~htam_core.source.analysis.reaching.reaching_definition`, the same definition also when
a name its value reads changed since; :func:`~htam_core.source.analysis.reaching.assigned_values`, every value a
name or member is given. Pointer locals and a launch in a lambda are read too. Host functions written for these
tests."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.reaching import assigned_values, reaching_definition, reaching_value
from htam_core.source.analysis.syntax import of_type, parse_cuda, text


def _value(body: str, name: str = "g", reader=reaching_value) -> str | None:
    src = ("void run(int n, int w)\n{\n" + body + "\n    k<<<LAUNCH>>>();\n}\n").encode()
    root = parse_cuda(src).root_node
    (fn,) = of_type(root, "function_definition")
    at = src.index(b"k<<<")
    v = reader(fn, name, at, src)
    return None if v is None else text(v, src)


@pytest.mark.parametrize(("body", "value"), [
    ("    int g = (n + 255) / 256;", "(n + 255) / 256"),
    ("    int g;\n    g = (n + 127) / 128;", "(n + 127) / 128"),
    ("    int g = 1;\n    if (n > 0) { n += 1; }\n    g = (n + 63) / 64;", "(n + 63) / 64"),
    ("    int g = 4;\n    g = (w + 31) / 32;", "(w + 31) / 32"),
    ("    int g = 0;\n    for (int i = 0; i < 4; ++i) { w += i; }\n    g = w / 8;", "w / 8"),
])
def test_the_nearest_dominating_definition(body: str, value: str) -> None:
    assert _value(body) == value


@pytest.mark.parametrize("body", [
    "    int g = (n + 255) / 256;\n    g += 1;",                      # written after it
    "    int g = 8;\n    if (n > 4) g = (n + 3) / 4;",                  # a branch
    "    int g = (n + 255) / 256;\n    n = 2 * n;",                   # a name of its value written after it
    "    int g = (n + 255) / 256;\n    g = g * 2;",                   # reads the variable's earlier value
    "    int g = (n + 255) / 256;\n    setup(&g);",                   # address taken
    "    int g;",                                                       # no value
])
def test_no_single_value_reaches(body: str) -> None:
    assert _value(body) is None


def test_a_write_in_a_loop_around_the_launch_reaches_it_again() -> None:
    src = b"""void run(int n)
{
    int g = (n + 255) / 256;
    for (int r = 0; r < 3; ++r) {
        k<<<g, 256>>>();
        g = g / 2;
    }
}
"""
    root = parse_cuda(src).root_node
    (fn,) = of_type(root, "function_definition")
    assert reaching_value(fn, "g", src.index(b"k<<<"), src) is None
    assert reaching_value(fn, "g", src.index(b"    for"), src) is not None  # before the loop


@pytest.mark.parametrize(("body", "value"), [
    ("    float *p = d_x;", "d_x"),
    ("    float *const p = (d_x);", "(d_x)"),
    ("    float *p = d_z;\n    p = d_x;", "d_x"),
])
def test_a_pointer_local(body: str, value: str) -> None:
    assert _value(body, "p") == value


def test_the_definition_reaches_when_a_name_of_its_value_changed() -> None:
    body = "    int g = (n + 255) / 256;\n    n = 2 * n;"
    assert _value(body) is None
    assert _value(body, reader=reaching_definition) == "(n + 255) / 256"
    assert _value("    int g = 8;\n    if (n > 4) g = (n + 3) / 4;", reader=reaching_definition) is None


def test_a_launch_in_a_lambda_reads_the_host_function() -> None:
    src = b"void run(int n)\n{\n    int g = (n + 255) / 256;\n    auto go = [&] { k<<<g, 256>>>(); };\n    go();\n}\n"
    root = parse_cuda(src).root_node
    (lam,) = of_type(root, "lambda_expression")
    assert text(reaching_value(lam, "g", src.index(b"k<<<"), src), src) == "(n + 255) / 256"
    inner = src.replace(b"[&] {", b"[&] { int g = 2;")
    (lam,) = of_type(parse_cuda(inner).root_node, "lambda_expression")
    assert text(reaching_value(lam, "g", inner.index(b"k<<<"), inner), inner) == "2"


def test_every_value_a_name_or_member_is_given() -> None:
    src = b"void run(Buf b)\n{\n    float *p = d_z;\n    if (n) p = d_x;\n    for (p = d_w; ; ) {}\n" \
          b"    b . data = d_y;\n    float *q = d_v;\n}\n"
    (fn,) = of_type(parse_cuda(src).root_node, "function_definition")
    assert [text(v, src) for v in assigned_values(fn, "p", src)] == ["d_z", "d_x", "d_w"]
    assert [text(v, src) for v in assigned_values(fn, "b.data", src)] == ["d_y"]
    assert assigned_values(fn, "r", src) == []
