"""The tolerance rule for a nondeterministic reference (a start kernel with float atomicAdd, whose output
differs run to run): the self-difference of two reference runs widens that output's atol by a documented
factor, capped; a deterministic reference keeps the strict tolerance. In-process on CPU tensors."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

from htam_core.harness.trial import Trial  # noqa: E402
from htam_core.verify.correctness import (  # noqa: E402
    NOISE_CAP,
    NOISE_FACTOR,
    check_correctness,
    noise_atol,
    self_difference,
)


def _inputs(seed: int, set_index: int, scale: float) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(16, 100, generator=g) * scale]


def _noisy(amplitude: float):  # noqa: ANN202 - a reference whose every run adds fresh noise to one output
    runs = itertools.count()

    def run(xs: list) -> list:
        g = torch.Generator().manual_seed(1000 + next(runs))
        exact = xs[0].sum(-1)
        return [exact + amplitude * (torch.rand(exact.shape, generator=g) - 0.5), xs[0].max(-1).values]
    return run


def _cand(offset: float):  # noqa: ANN202
    return lambda xs: [xs[0].sum(-1) + offset, xs[0].max(-1).values]


def test_self_difference_and_the_floor_it_gives() -> None:
    a = [torch.tensor([1.0, 2.0]), torch.tensor([3, 4])]
    b = [torch.tensor([1.0, 2.5]), torch.tensor([3, 5])]
    assert self_difference(a, b) == [0.5, 0.0]  # integer outputs are never widened
    assert noise_atol([1e-5, 0.0, 1.0]) == [NOISE_FACTOR * 1e-5, 0.0, NOISE_CAP]


def test_a_nondeterministic_reference_widens_only_its_noisy_output() -> None:
    # two reference runs differ by up to ~4e-4 (beyond the strict 1e-4); a candidate 3e-4 off passes
    r = check_correctness(Trial(_inputs, _noisy(8e-4), _cand(3e-4)), verified_on="interpreter")
    assert r.correct, r.messages
    assert r.reference_noise is not None and r.reference_noise[0] > 1e-4 and r.reference_noise[1] == 0.0
    assert any("nondeterministic" in m and "output 0" in m and "output 1" not in m for m in r.messages)
    assert r.to_json()["reference_noise"] == r.reference_noise


def test_the_second_output_stays_strict() -> None:
    def cand(xs: list) -> list:
        return [xs[0].sum(-1), xs[0].max(-1).values + 3e-4]  # the deterministic output is off
    r = check_correctness(Trial(_inputs, _noisy(8e-4), cand), verified_on="interpreter")
    assert not r.correct and any("output 1:" in m and "differ beyond atol=0.0001" in m for m in r.messages)


def test_a_deterministic_reference_keeps_the_strict_tolerance() -> None:
    ref = _cand(0.0)
    r = check_correctness(Trial(_inputs, ref, _cand(3e-4)), verified_on="interpreter")
    assert not r.correct and r.reference_noise is None
    assert not any("nondeterministic" in m for m in r.messages)


def test_the_widening_is_capped() -> None:
    # noise ~0.5: 4 x noise would accept anything; the cap (1e-2) still refuses a candidate 0.05 off
    r = check_correctness(Trial(_inputs, _noisy(1.0), _cand(0.05)), verified_on="interpreter")
    assert not r.correct and any(f"atol={NOISE_CAP:g}" in m for m in r.messages), r.messages
