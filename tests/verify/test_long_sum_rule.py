"""The decision rule for an output the start fills with a long float32 sum (:mod:`htam_core.verify.long_sum_rule`),
on synthetic sums computed here: a sequential float32 running sum (the naive kernel's order) that stagnates, a
blocked float32 sum (a tree's order) that does not, and wrong candidates."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from htam_core.verify.correctness import REORDERED_SUM_FP32_TOL
from htam_core.verify.long_sum_rule import FLOAT64_REFERENCE, is_long, judge_long_sum


def _sums(n: int, seed: int = 0) -> tuple[float, float, float]:
    """``(sequential float32, blocked float32, float64)`` sums of ``n`` squared differences / n."""
    rng = np.random.default_rng(seed)
    d = (rng.random(n, dtype=np.float32) - rng.random(n, dtype=np.float32)).astype(np.float32)
    terms = (d * d / np.float32(n)).astype(np.float32)
    seq = float(np.add.accumulate(terms, dtype=np.float32)[-1])
    blocked = float(terms.reshape(-1, 1024).sum(axis=1, dtype=np.float32).sum(dtype=np.float32))
    return seq, blocked, float(terms.astype(np.float64).sum())


def judge(*args, **kw):
    """:func:`judge_long_sum` at the reordered-sum tolerance."""
    return judge_long_sum(*args, tol=REORDERED_SUM_FP32_TOL, **kw)


@pytest.fixture(scope="module")
def stagnated() -> tuple[float, float, float]:
    return _sums(1 << 23)


def test_a_more_accurate_candidate_is_accepted_where_the_start_stagnated(stagnated):
    seq, blocked, exact = stagnated
    # the premise: the sequential sum is off by more than the tolerance, the blocked one is not
    assert abs(seq - exact) > REORDERED_SUM_FP32_TOL * abs(exact)
    assert abs(blocked - exact) < abs(seq - exact)
    assert not torch.isclose(torch.tensor(blocked), torch.tensor(seq), rtol=REORDERED_SUM_FP32_TOL,
                             atol=REORDERED_SUM_FP32_TOL)  # the plain oracle check would refuse it
    v = judge(torch.tensor([blocked]), [torch.tensor([seq])], torch.tensor([exact], dtype=torch.float64))
    assert v.ok and v.refused == 0
    assert FLOAT64_REFERENCE in v.message
    assert v.cand_err < v.start_err


def test_a_candidate_as_stagnated_as_the_start_is_accepted(stagnated):
    seq, _, exact = stagnated
    v = judge(torch.tensor([seq]), [torch.tensor([seq])], torch.tensor([exact], dtype=torch.float64))
    assert v.ok


def test_a_wrong_candidate_is_refused(stagnated):
    seq, _, exact = stagnated
    off = abs(seq - exact)
    for wrong in (exact + 2 * off, exact - 2 * off, exact * 1.5, float("nan")):
        v = judge(torch.tensor([wrong]), [torch.tensor([seq])], torch.tensor([exact], dtype=torch.float64))
        assert not v.ok and v.refused == 1, wrong
        assert "farther from it than both" in v.message


def test_the_start_error_is_the_worse_of_its_runs():
    exact = torch.tensor([10.0, 20.0], dtype=torch.float64)
    runs = [torch.tensor([10.5, 20.0]), torch.tensor([9.0, 20.0])]
    between = torch.tensor([10.9, 20.0])  # 0.9 off: worse than run 1, within run 2's error
    assert judge(between, runs, exact).ok
    assert not judge(between, runs[:1], exact).ok
    beyond = torch.tensor([11.2, 20.0])
    v = judge(beyond, runs, exact)
    assert not v.ok and v.refused == 1


def test_elementwise_per_row_sums():
    exact = torch.linspace(1.0, 2.0, 64, dtype=torch.float64)
    start = (exact * (1 - 0.05)).float()  # every row 5 % low
    cand = (exact * (1 + 0.0002)).float()  # within the tolerance
    assert judge(cand, [start], exact).ok
    cand[17] = exact[17] * 1.08  # one row worse than both
    v = judge(cand, [start], exact)
    assert not v.ok and v.refused == 1


def test_which_sums_are_long():
    u = 2.0 ** -24
    tol = REORDERED_SUM_FP32_TOL
    assert is_long(None, tol)
    assert is_long(1 << 25, tol)
    assert not is_long(4096, tol)
    edge = int(REORDERED_SUM_FP32_TOL / u)
    assert is_long(edge + 1, tol) and not is_long(edge - 1, tol)


def test_shapes_and_empty_starts_are_errors():
    with pytest.raises(ValueError):
        judge(torch.zeros(2), [], torch.zeros(2))
    with pytest.raises(ValueError):
        judge(torch.zeros(3), [torch.zeros(2)], torch.zeros(2))


def test_a_non_finite_twin_accepts_nothing_else():
    start = torch.tensor([1.0, 2.0])
    twin = torch.tensor([float("nan"), 2.0], dtype=torch.float64)
    v = judge(torch.tensor([1.0, 2.0]), [start], twin)
    assert not v.ok and v.refused == 1
    assert judge(torch.tensor([float("nan"), 2.0]), [start], twin).ok
