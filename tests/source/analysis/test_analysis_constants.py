"""The one constant evaluator (scoping rules) and the one trip counter."""

from __future__ import annotations

import sympy

from htam_core.source.analysis.constants import ConstEnv, literal_value, python_constants
from htam_core.source.analysis.loops import count_iterations, symbolic_trip_count
from htam_core.source.analysis.syntax import of_type, parse_cuda

SRC = b"""
#define T 64
#define HALF (T / 2)
namespace n { constexpr int kB = 2 * T; }
template <int B> __global__ void k() {}
void f(int argc) {
    const int a = HALF + 1;
    int m = 16;
    if (argc) m = 8;
    dim3 b(kB, 2);
    int use = a + m + sizeof(float) + b;
}
"""


def _env():
    tree = parse_cuda(SRC)
    return ConstEnv(SRC, tree.root_node), tree.root_node


def test_scoped_constants():
    env, root = _env()
    at = SRC.index(b"int use")
    assert env.value_of_text("a", at) == 33  # const local through a #define expression
    assert env.value_of_text("m", at) is None  # reassigned: not a constant
    assert env.value_of_text("kB * 2", at) == 256  # namespace constexpr
    assert env.value_of_text("b", at) == 256  # dim3 b(kB, 2): threads per block
    assert env.value_of_text("sizeof(float) * T") == 256
    assert env.value_of_text("a") is None  # outside f, its locals are not visible
    fn = env.function_at(at)
    use = next(d for d in of_type(fn, "init_declarator") if b"use" in SRC[d.start_byte:d.end_byte])
    assert env.value(use.child_by_field_name("value"), fn) is None  # m is not constant
    c = env.const_name("T", None)
    assert c.value == 64 and SRC[c.preproc_range[0]:c.preproc_range[1]] == b"64"  # rewritable
    assert ConstEnv(SRC, root, {"B": 256}).value_of_text("B / 2") == 128  # template binding


def test_literals_and_python_constants():
    assert literal_value("0x100") == 256 and literal_value("256u") == 256 and literal_value("1.5f") == 1.5
    assert literal_value("(32)") == 32 and literal_value("N") is None
    text = "B = 4\ndef host():\n    BLOCK = 64\n    BLOCK2 = f()\n    k[g](BLOCK=BLOCK)\n"
    assert python_constants(text, text.index("k[")) == {"B": 4, "BLOCK": 64}


def test_trip_counter():
    assert count_iterations(0, "<", 10, "+", 3) == 4
    assert count_iterations(128, ">", 0, ">>", 1) == 8
    assert count_iterations(1, "<", 256, "*", 2) == 8
    assert count_iterations(0, "<", 10, "+", 0) is None  # does not progress
    n = sympy.Symbol("n", integer=True)
    assert symbolic_trip_count(sympy.Integer(0), "<", n, "+", sympy.Integer(4)) == sympy.ceiling(n / 4)
    assert symbolic_trip_count(sympy.Integer(0), "<=", n, "+", sympy.Integer(1)) == n + 1
    assert symbolic_trip_count(sympy.Integer(0), "<", sympy.Integer(16), "+", sympy.Integer(4)) == 4


def test_c_literals_and_operators_are_the_c_ones() -> None:
    """Regression: C octal literals were read as decimal floats (``017`` -> 17.0) and the host-code evaluator
    used Python's floored ``%`` (``-7 % 3 == 2``); both evaluators now share one literal reader and operator table."""
    from htam_core.harness.cu_eval import Program
    from htam_core.source.analysis.constants import binary_op

    assert literal_value("017") == 15 and literal_value("0") == 0 and literal_value("0x1F") == 31
    assert literal_value("0b101") == 5 and literal_value("019") is None
    assert binary_op("%", -7, 3) == -1 and binary_op("/", -7, 2) == -3 and binary_op("/", 1, 0) is None
    prog = Program("#define A (-7 % 3)\n#define B 010\nint x = A + B;\n")
    assert prog.globals.get("x") == 7
