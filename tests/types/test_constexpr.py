"""Constexpr values of every type Triton takes: read from source text, parsed from ``--constexpr``, shown back."""

from __future__ import annotations

import pytest

from htam_core.types.constexpr import (
    UNKNOWN,
    constexpr_text,
    dtype_value,
    is_constexpr_value,
    parse_cli_value,
    read_constexpr,
)


@pytest.mark.parametrize(("text", "value"), [
    ("128", 128), ("1_024", 1024), ("0.5", 0.5), ("True", True), ("False", False), ("None", None),
    ("'silu'", "silu"), ('"gelu"', "gelu"), ("tl.float16", dtype_value("float16")),
    ("triton.language.bfloat16", dtype_value("bfloat16")), ("tl.int8", dtype_value("int8")),
    ("tl.float8e4nv", dtype_value("float8e4nv")),
])
def test_literals_of_every_constexpr_type_are_read(text: str, value: object) -> None:
    assert read_constexpr(text) == value
    assert is_constexpr_value(read_constexpr(text))


@pytest.mark.parametrize("text", ["activation", "n // 2", "tl.arange", "torch.float16x", "f(1)", "[1, 2]", None])
def test_what_needs_evaluating_is_unknown(text: str | None) -> None:
    assert read_constexpr(text) is UNKNOWN


@pytest.mark.parametrize(("text", "value"), [
    ("silu", "silu"), ("'silu'", "silu"), ("1024", 1024), ("0.25", 0.25), ("True", True), ("None", None),
    ("tl.float16", dtype_value("float16")), ("leaky_relu", "leaky_relu"), (" gelu ", "gelu"),
])
def test_cli_values_are_literals_else_bare_strings(text: str, value: object) -> None:
    assert parse_cli_value(text) == value


@pytest.mark.parametrize(("value", "text"), [
    ("silu", "'silu'"), (128, "128"), (None, "None"), (True, "True"), (dtype_value("float16"), "tl.float16"),
])
def test_values_are_shown_as_the_user_writes_them(value: object, text: str) -> None:
    assert constexpr_text(value) == text
    assert read_constexpr(text) == value  # what is shown reads back as the same value
