"""The predicate language: parsing, three-valued evaluation, and refusal of anything but facts."""

from __future__ import annotations

import pytest

from htam_core.memory.facts import FACTS
from htam_core.memory.predicates import PredicateError, parse_predicate


@pytest.mark.parametrize(
    ("text", "facts", "expected"),
    [
        ("loads >= 2", {"loads": 3}, True),
        ("loads >= 2", {"loads": 1}, False),
        ("language == 'cuda' and not uses_dot", {"language": "cuda", "uses_dot": False}, True),
        ("language == \"triton\" or masks > 0", {"language": "cuda", "masks": 0}, False),
        ("'SOLBottleneck' in ncu_rules", {"ncu_rules": ["SOLBottleneck"]}, True),
        ("'x' in ['a', 'b']", {}, False),
        ("not (a and b) or c", {"a": True, "b": True, "c": False}, False),
        ("block_size < 128", {"block_size": None}, None),
        ("block_size < 128 or uses_dot", {"block_size": None, "uses_dot": True}, True),
        ("block_size < 128 and uses_dot", {"block_size": None, "uses_dot": False}, False),
        ("not spills", {"spills": None}, None),
        ("math_calls", {"math_calls": []}, False),
        ("x == 1.5", {"x": 1.5}, True),
        ("x == true", {"x": True}, True),
    ],
)
def test_evaluate_three_valued(text: str, facts: dict, expected: bool | None) -> None:
    assert parse_predicate(text).evaluate(facts) is expected


@pytest.mark.parametrize("text", ["", "loads >=", "(loads > 1", "loads > 1 )", "__import__('os')", "a.b",
                                  "loads ; drop", "[1, 2"])
def test_syntax_errors_are_reported(text: str) -> None:
    with pytest.raises(PredicateError):
        parse_predicate(text, FACTS)


def test_unknown_fact_is_refused_with_the_vocabulary() -> None:
    with pytest.raises(PredicateError, match="unknown fact.*os_system"):
        parse_predicate("os_system and loads > 1", FACTS)


def test_names_are_collected() -> None:
    p = parse_predicate("matmul_like and not (uses_shared or 'A' in ncu_rules)")
    assert p.names == {"matmul_like", "uses_shared", "ncu_rules"}


@pytest.mark.parametrize(
    ("text", "facts", "expected"),
    [
        ("stencil_window and not uses_shared", {"stencil_window": False, "uses_shared": False},
         ["stencil_window = False"]),
        ("stencil_window and not uses_shared", {"stencil_window": True, "uses_shared": True}, ["uses_shared = True"]),
        ("has_loop or block_size < 128", {"has_loop": False, "block_size": 256},
         ["has_loop = False", "block_size (= 256) < 128 is false"]),
        ("has_loop or block_size < 128", {"has_loop": True, "block_size": None}, ["has_loop = True"]),
        ("has_loop and block_size < 128", {"has_loop": True, "block_size": None}, ["block_size (= None) < 128 is unknown"]),
    ],
)
def test_because_names_the_deciding_facts(text: str, facts: dict, expected: list[str]) -> None:
    assert parse_predicate(text).because(facts) == expected
