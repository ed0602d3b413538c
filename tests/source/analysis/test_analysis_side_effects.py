"""``side_effect_free``: a host expression (a launch argument) the transforms may evaluate twice, such as a size
passed through a cast, against one with a call, an assignment or an increment."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.syntax import side_effect_free


@pytest.mark.parametrize("expr", ["M", "(unsigned int)M", "static_cast<int64_t>(n)", "int(n)", "a.x * 2 + 1",
                                  "p[i]", "(size_t)rows * cols"])
def test_names_operators_and_casts_are_free_of_effects(expr):
    assert side_effect_free(expr)


@pytest.mark.parametrize("expr", ["n++", "--n", "f(n)", "a = b", "M, N", "get<int>(n)", "x +", ""])
def test_calls_assignments_increments_and_broken_text_are_not(expr):
    assert not side_effect_free(expr)
