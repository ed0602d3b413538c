"""``is_zero_value``: an accumulator's start read as zero however it is written (a literal, a functional cast, a C
cast, a ``static_cast``), and nothing else; online softmax and warp per row read a sum's start through it."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.constants import is_zero_value


@pytest.mark.parametrize("text", ["0", "0.0f", "0.", "0u", "T(0)", "T{0}", "scalar_t(0.0f)", "(float)0",
                                  "( float ) 0", "static_cast<T>(0)", "(0)", "acc_t(0)"])
def test_zero_spellings(text):
    assert is_zero_value(text)


@pytest.mark.parametrize("text", ["1", "T(1)", "x", "a(0) + 1", "FLT_MAX", "T(-3.0e38f)", "-INFINITY", "0 * x",
                                  "static_cast<T>(n)"])
def test_not_zero(text):
    assert not is_zero_value(text)
