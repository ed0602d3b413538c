"""The correctness check with a float64 twin of the start (:attr:`Trial.run_reference64`) for the outputs the start
fills with a long float32 sum (:attr:`Trial.long_sum_outputs`), on the CPU with sums computed here: a stagnating
sequential float32 sum as the start, a blocked sum as the candidate."""

from __future__ import annotations

import numpy as np
import torch

from htam_core.harness.trial import Trial
from htam_core.verify.correctness import check_correctness
from htam_core.verify.long_sum_rule import FLOAT64_REFERENCE

N = 1 << 22


def _inputs(seed: int, _set: int, scale: float) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(N, generator=g) * scale]


def _terms(inputs: list) -> np.ndarray:
    """The terms of a mean of squares, ``x * x / n`` in float32 (an MSE-like loss)."""
    x = inputs[0].numpy()
    return (x * x / np.float32(N)).astype(np.float32)


def _sequential(inputs: list) -> list:
    return [torch.tensor([np.add.accumulate(_terms(inputs), dtype=np.float32)[-1]]), inputs[0][:4] * 2]


def _blocked(inputs: list) -> list:
    t = _terms(inputs).reshape(-1, 1024)
    return [torch.tensor([t.sum(axis=1, dtype=np.float32).sum(dtype=np.float32)]), inputs[0][:4] * 2]


def _exact(inputs: list) -> list:
    x = inputs[0].double()
    return [torch.tensor([(x * x / N).sum()]).float(), inputs[0][:4] * 2]


def _trial(candidate, twin=_exact, flagged=(0,)) -> Trial:
    return Trial(_inputs, _sequential, candidate, set(), 1, run_reference64=twin, long_sum_outputs=flagged)


def test_the_stagnated_start_refuses_the_blocked_sum_without_a_twin():
    res = check_correctness(_trial(_blocked, twin=None), verified_on="interpreter")
    assert res.status == "incorrect" and "mismatch" in res.refused_by


def test_the_blocked_sum_is_correct_against_the_float64_twin():
    res = check_correctness(_trial(_blocked), verified_on="interpreter")
    assert res.correct, res.messages
    assert any(FLOAT64_REFERENCE in m for m in res.messages)


def test_an_output_not_flagged_keeps_the_start_as_its_reference():
    res = check_correctness(_trial(_blocked, flagged=()), verified_on="interpreter")
    assert not res.correct


def test_a_wrong_sum_is_refused_against_the_twin():
    def wrong(inputs: list) -> list:
        out = _blocked(inputs)
        return [out[0] * 1.2, out[1]]
    res = check_correctness(_trial(wrong), verified_on="interpreter")
    assert not res.correct
    assert any("farther from it than both" in m for m in res.messages)


def test_another_output_that_differs_is_still_refused():
    def bad_other(inputs: list) -> list:
        out = _blocked(inputs)
        return [out[0], out[1] + 1.0]
    res = check_correctness(_trial(bad_other), verified_on="interpreter")
    assert not res.correct
