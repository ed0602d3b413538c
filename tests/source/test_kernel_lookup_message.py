"""The message of a kernel lookup that fails says what happened and what to do (a new user's trial)."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text


def test_a_file_without_kernels_says_so_and_what_to_do() -> None:
    model = parse_text("int helper(int x) { return x + 1; }\n", "cuda")
    with pytest.raises(KeyError) as e:
        model.kernel("foo")
    msg = e.value.args[0]
    assert "no kernel named 'foo'" in msg and "the file has no kernel" in msg and "open the file that defines it" in msg


def test_a_wrong_name_lists_the_kernels_and_asks_for_one() -> None:
    model = parse_text("__global__ void k1(float* x) { x[0] = 1.f; }\n", "cuda")
    with pytest.raises(KeyError) as e:
        model.kernel("nope")
    assert "(kernels: k1); pass one of these names" in e.value.args[0]
