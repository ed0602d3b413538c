"""Enumerators are compile-time constants of the one evaluator: every spelling of ``enum`` C++ accepts, scoped as C++
scopes them (a local of the same name hides a file-scope enumerator), headers included."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.enums import enumerators
from htam_core.source.analysis.syntax import parse_cuda

SRC = b"""
enum { BLOCK = 256 };
enum { A, B, C };
enum { X = 4, Y };
enum Sizes { TILE = 32, HALF = TILE / 2, NEXT };
enum class E : int { K = 8, L = K * 2, M };
enum struct F { Q = 3 };
namespace ns { enum { N = 3 }; constexpr int kQ = 7; }
namespace other { enum { N = 5 }; void g() { int v = N; } }
struct Cfg { enum { WIDTH = 128 }; };
namespace outer { struct Inner { enum Kind { P = 9 }; }; }
void f() {
    int TILE = 9;
    enum { LOCAL = 12 };
    int use = TILE + LOCAL;
}
void h() { int other_use = BLOCK; }
"""


def _env() -> ConstEnv:
    return ConstEnv(SRC, parse_cuda(SRC).root_node)


@pytest.mark.parametrize(("expr", "value"), [
    ("BLOCK", 256), ("A", 0), ("B", 1), ("C", 2), ("X", 4), ("Y", 5),  # implicit values count on from the previous
    ("TILE", 32), ("HALF", 16), ("NEXT", 17), ("Sizes::HALF", 16),  # a sibling read in its enum's value
    ("E::K", 8), ("E::L", 16), ("E::M", 17), ("static_cast<int>(E::M)", 17), ("(int)E::L", 16), ("F::Q", 3),
    ("ns::N", 3), ("Cfg::WIDTH", 128), ("outer::Inner::P", 9), ("Inner::Kind::P", 9), ("::BLOCK", 256),
    ("BLOCK / 2 + C", 130), ("ns::kQ", 7),
])
def test_enumerator_values(expr: str, value: int) -> None:
    assert _env().value_of_text(expr) == value


@pytest.mark.parametrize("expr", [
    "K",  # an enum class member is named through its enum only
    "WIDTH",  # a class member is not visible outside the class
    "P",
    "LOCAL",  # declared in f: not visible at file scope
])
def test_names_cpp_does_not_see_are_not_constants(expr: str) -> None:
    assert _env().value_of_text(expr) is None


def test_a_local_hides_the_enumerator_and_a_local_enum_is_seen_in_its_function() -> None:
    env = _env()
    at = SRC.index(b"int use")
    assert env.value_of_text("TILE", at) == 9  # the local int TILE, not the enumerator
    assert env.definition("TILE", env.function_at(at), at)[0] == "local"
    assert env.value_of_text("LOCAL", at) == 12
    assert env.definition("LOCAL", env.function_at(at), at)[0] == "local enum"
    assert env.value_of_text("HALF", at) == 16  # HALF = TILE / 2 reads its enum's TILE, not f's local
    at_h = SRC.index(b"int other_use")
    assert env.value_of_text("TILE", at_h) == 32
    assert env.definition("BLOCK", env.function_at(at_h), at_h)[0] == "enum"


def test_the_innermost_namespace_of_the_use_wins() -> None:
    env = _env()
    assert env.value_of_text("N", SRC.index(b"int v = N")) == 5  # other::g sees other::N
    assert env.value_of_text("N") == 3  # at file scope: the first one (a using-directive brings it in)


def test_the_enumerator_is_rewritable_through_its_literal() -> None:
    env = _env()
    c = env.const_name("BLOCK", None)
    assert c is not None and c.value == 256 and c.literal is not None and env.t(c.literal) == "256"
    implicit = env.const_name("C", None)
    assert implicit is not None and implicit.value == 2 and implicit.literal is None  # nothing to rewrite


def test_names_of_each_spelling() -> None:
    table = enumerators(parse_cuda(SRC).root_node, SRC)
    assert {"Cfg::WIDTH", "outer::Inner::P", "Inner::Kind::P", "outer::Inner::Kind::P", "E::K"} <= set(table)
    assert "WIDTH" not in table and "K" not in table


def test_a_cycle_is_no_constant() -> None:
    src = b"enum { U = V + 1, V = U + 1 };\n"
    assert ConstEnv(src, parse_cuda(src).root_node).value_of_text("U") is None


def test_an_enumerator_of_a_local_header(tmp_path: Path) -> None:
    (tmp_path / "cfg.h").write_text("#pragma once\nenum { HBLOCK = 128 };\nenum class H { W = 4 };\n")
    src = b'#include "cfg.h"\n__global__ void k(float* x) { x[threadIdx.x] = HBLOCK * (int)H::W; }\n'
    (tmp_path / "k.cu").write_bytes(src)
    env = ConstEnv(src, parse_cuda(src).root_node, path=str(tmp_path / "k.cu"))
    assert env.value_of_text("HBLOCK * (int)H::W") == 512
    c = env.const_name("HBLOCK", None)
    assert c is not None and c.value == 128 and c.literal is None  # in the header: nothing of this unit to rewrite
