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


@pytest.mark.parametrize("expr", ["__ldg(&v[i]) != 0", "__ldg(v + i)", "!__ldcs(&flag[i])"])
def test_a_load_intrinsic_only_reads(expr):
    """The form ``cuda.ldg`` writes (``__ldg(&v[i])``) in a guard is a read, as ``v[i]`` is."""
    assert side_effect_free(expr)


@pytest.mark.parametrize("expr", ["__ldg_helper(&v[i])", "load(&v[i])", "__ldg(&v[i], 1)"])
def test_a_helper_named_like_a_load_is_a_call(expr):
    assert not side_effect_free(expr)
