"""KernelBench-semantics correctness checks, in-process on CPU tensors (no kernel code involved)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from htam_core.harness.trial import Trial  # noqa: E402
from htam_core.verify.correctness import (  # noqa: E402
    check_correctness,
    compare_outputs,
    tolerance_for,
    trial_seeds,
)


def make_trial(cand, ref=lambda xs: [xs[0].sum(dim=-1)], sets=1):
    def make_inputs(seed, set_index, scale):
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(8, 64 + 16 * set_index, generator=g) * scale]
    return Trial(make_inputs, ref, cand, set(), sets)


def test_tolerances_follow_kernelbench():
    assert tolerance_for(torch.float32) == (1e-4, 1e-4)
    assert tolerance_for(torch.float16) == (1e-2, 1e-2) and tolerance_for(torch.bfloat16) == (1e-2, 1e-2)
    assert tolerance_for(torch.int32) == (0.0, 0.0)
    assert tolerance_for(torch.float32, fp32_tol=1e-3) == (1e-3, 1e-3)
    assert tolerance_for(torch.float32, atol=0.5) == (0.5, 1e-4)


def test_seeds_are_deterministic_from_42():
    assert trial_seeds() == trial_seeds(5, 42) and len(set(trial_seeds())) == 5


def test_correct_candidate_passes_five_seeds():
    r = check_correctness(make_trial(lambda xs: [xs[0].sum(-1)]), verified_on="interpreter")
    assert r.correct and r.trials == 5 and r.max_abs_err == 0.0


def test_constant_reduction_is_refused():
    const = {}

    def cand(xs):
        const.setdefault("v", xs[0].sum(-1).clone())  # returns the first answer forever
        return [const["v"]]
    r = check_correctness(make_trial(cand), verified_on="interpreter")
    assert not r.correct and "mismatch" in r.refused_by


def test_second_input_set_is_checked():
    def cand(xs):  # hard-wired to the first input set's 64 columns
        return [xs[0][:, :64].sum(-1)]
    assert check_correctness(make_trial(cand, sets=1), verified_on="interpreter").correct
    r = check_correctness(make_trial(cand, sets=2), verified_on="interpreter")
    assert not r.correct and r.trials == 6 and "input set 1" in r.messages[0]


def test_nan_and_shape_and_count():
    ok, _, msgs, rules = compare_outputs([torch.tensor([1.0, float("nan")])], [torch.tensor([1.0, 2.0])])
    assert not ok and rules == ["unwritten-output"]
    ok, _, _, rules = compare_outputs([torch.tensor([1.0, float("inf")])], [torch.tensor([1.0, 2.0])])
    assert not ok and rules == ["non-finite"]
    ok, _, msgs, rules = compare_outputs([torch.zeros(2, 3)], [torch.zeros(3, 2)])
    assert not ok and rules == ["shape"]
    ok, _, _, rules = compare_outputs([torch.zeros(2)], [torch.zeros(2), torch.zeros(2)])
    assert not ok and rules == ["output-count"]
    ok, err, _, _ = compare_outputs([torch.tensor([1.00005])], [torch.tensor([1.0])])
    assert ok and err == pytest.approx(5e-5, rel=1e-2)
    assert not compare_outputs([torch.tensor([1.001])], [torch.tensor([1.0])])[0]


def test_in_place_mutation_and_exceptions():
    def mutate(xs):
        out = xs[0].sum(-1)
        xs[0].zero_()
        return [out]
    r = check_correctness(make_trial(mutate), verified_on="interpreter", arg_names=["x"])
    assert not r.correct and r.refused_by == ["input-mutated"] and "x" in r.messages[0]

    def boom(xs):
        raise ValueError("kaboom")
    r = check_correctness(make_trial(boom), verified_on="interpreter")
    assert r.status == "error" and "kaboom" in r.messages[0]
