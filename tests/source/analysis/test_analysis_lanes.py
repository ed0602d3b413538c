"""The warp's constants and the lane idioms as the analysis reads them: ``warpSize`` is the constant 32 wherever a
constant is read (loop steps, trip counts, lane widths), and for a non-negative index ``x & (2^k - 1)`` reads as
``x % 2^k`` and ``x >> k`` as ``x / 2^k`` (``threadIdx.x & 31`` is the lane, ``threadIdx.x >> 5`` the warp)."""

from __future__ import annotations

import pytest
import sympy

from htam_core.source.analysis import sym
from htam_core.source.analysis.constants import BUILTIN_CONSTANTS
from htam_core.source.analysis.facts import combine, non_negative
from tests.source.analysis.conftest import facts_of_text

tx, bx, bdx = sym("threadIdx.x"), sym("blockIdx.x"), sym("blockDim.x")
mod, div = sympy.Function("mod"), sympy.Function("div")


def _row_loop(lane: str, step: str) -> str:
    return ("__global__ void k(const float* x, float* out, int cols) {\n"
            f"    int lane = {lane};\n"
            "    float m = 0.0f;\n"
            f"    for (int c = lane; c < cols; c += {step}) m += x[(size_t)blockIdx.x * cols + c];\n"
            "    if (lane == 0) out[blockIdx.x] = m;\n}\n"
            "void go(const float* x, float* o, int rows, int cols) { k<<<rows, 32>>>(x, o, cols); }\n")


def test_warp_size_is_the_constant_of_every_nvidia_gpu():
    assert BUILTIN_CONSTANTS["warpSize"] == 32
    (loop,) = facts_of_text(_row_loop("threadIdx.x", "warpSize"), "k").loops
    assert loop.step == BUILTIN_CONSTANTS["warpSize"] and loop.start == tx
    assert loop.trip_count is not None and "warpSize" not in str(loop.trip_count)


def test_a_local_named_warp_size_is_the_users_value():
    text = _row_loop("threadIdx.x", "ws").replace("    int lane", "    const int warpSize = 64, ws = warpSize;\n    int lane")
    (loop,) = facts_of_text(text, "k").loops
    assert loop.step == 64


@pytest.mark.parametrize(("lane", "width"), [("threadIdx.x & 31", 32), ("31 & threadIdx.x", 32),
                                               ("threadIdx.x & (warpSize - 1)", 32), ("threadIdx.x & 15", 16),
                                               ("threadIdx.x % 32", 32)])
def test_a_low_bits_mask_of_the_thread_index_is_its_remainder(lane, width):
    (loop,) = facts_of_text(_row_loop(lane, str(width)), "k").loops
    assert loop.start == mod(tx, width)


def test_a_shift_of_the_global_index_is_its_quotient():
    e = combine(">>", bdx * bx + tx, sympy.Integer(5))
    assert e == div(bdx * bx + tx, 32)
    assert combine("/", bdx * bx + tx, sympy.Integer(32)) == e  # the same fact as the division


@pytest.mark.parametrize(("op", "a", "b"), [("&", sym("n"), 31), ("&", tx, 30), ("&", tx - 1, 31), (">>", sym("n"), 5),
                                            ("&", tx, 0)])
def test_a_mask_or_shift_not_known_to_be_a_remainder_stays_opaque(op, a, b):
    e = combine(op, a, sympy.Integer(b))
    assert not any(f.func in (mod, div) for f in e.atoms(sympy.Function))


def test_non_negative_reads_builtins_and_their_sums():
    assert non_negative(bdx * bx + tx) and non_negative(mod(tx, 32)) and non_negative(sympy.Integer(0))
    assert not non_negative(sym("n")) and not non_negative(tx - 1) and not non_negative(sympy.Integer(-1))
