"""A second, stricter verification of a candidate whose speedup looks too good.

A speedup above :data:`STRICT_SPEEDUP` (10x) over the starting kernel is more often a reward hack than a
win. Before such a speedup is reported, :func:`strict_reverify` checks the candidate again, in a worker:

* more seeds (:data:`STRICT_SEEDS`, against KernelBench's 5) drawn from another base seed
  (:data:`STRICT_BASE_SEED`, not 42), so inputs the first check used cannot be memorised;
* every input set of the harness (on a GPU; under the interpreter, the sets it can afford);
* fp32 outputs compared with atol = rtol = :data:`STRICT_FP32_TOL` (1e-5), or the harness's tolerance
  when that is smaller; fp16/bf16 and integer outputs keep their usual tolerances. A candidate whose only
  numeric change is the order of its float additions is checked at its reordered-sum tolerance
  (:attr:`Harness.fp32_tol`, set by the loop to :data:`~htam_core.verify.correctness.REORDERED_SUM_FP32_TOL`):
  the rounding of a reordered n-term sum is bounded by n·u·Σ|x| (Higham, *Accuracy and Stability of Numerical
  Algorithms*, 2nd ed., §4.2), and 1e-5 would refuse correct reorderings of long sums.

The optimize loop calls it from ``_judge`` (:mod:`htam_core.optimize.loop`); a failure makes the candidate
``"incorrect"`` with rule id ``"strict-reverify"``.
"""

from __future__ import annotations

from typing import Any

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.runner import device_and_mode, prepare
from htam_core.runtime.worker import run_in_worker
from htam_core.verify.correctness import CorrectnessResult, check_correctness

#: Speedup over the starting kernel above which the strict re-verification runs.
STRICT_SPEEDUP = 10.0
#: Seeds of the strict check (KernelBench's normal check uses 5).
STRICT_SEEDS = 10
#: Base seed of the strict check (the normal one is 42).
STRICT_BASE_SEED = 20261129
#: Upper bound of the fp32 tolerances (atol and rtol) in the strict check.
STRICT_FP32_TOL = 1e-5
#: Rule id of a failed strict check.
STRICT_RULE = "strict-reverify"


def needs_strict_reverify(speedup_vs_start: float | None, *, gpu: bool) -> bool:
    """True when a measured speedup over the start exceeds :data:`STRICT_SPEEDUP` on a GPU."""
    return bool(gpu and speedup_vs_start is not None and speedup_vs_start > STRICT_SPEEDUP)


def strict_fp32_cap(harness: Harness, cap: float = STRICT_FP32_TOL) -> float:
    """The cap of the fp32 tolerances in the strict check of ``harness``: ``cap`` (:data:`STRICT_FP32_TOL`), or the
    harness's reordered-sum tolerance (:attr:`Harness.fp32_tol`) when that is set and larger: the strict check
    adds seeds and input sets, it does not ask a reordered sum to round like the original order."""
    return max(cap, harness.fp32_tol) if harness.fp32_tol is not None else cap


def strict_verify_harness(harness: dict[str, Any], n_seeds: int = STRICT_SEEDS, base_seed: int = STRICT_BASE_SEED,
                          fp32_cap: float = STRICT_FP32_TOL) -> dict[str, Any]:
    """Worker target: the strict check of the harness's kernel.

    Returns:
        :meth:`CorrectnessResult.to_json`.
    """
    h = Harness.from_json(harness)
    device, mode = device_and_mode(h)
    if device is None or h.traits.whole_program:
        return CorrectnessResult(False, "unverified", mode if device else "compile-only", None, [
            "the strict re-verification needs to run the kernel, and nothing can run it here"]).to_json()
    try:
        p = prepare(h, device)
    except HarnessError as e:
        return CorrectnessResult(False, "error", mode, None, [str(e)], refused_by=["harness"]).to_json()
    res = check_correctness(p.trial, verified_on=mode, n_seeds=n_seeds, base_seed=base_seed, atol=h.atol,
                            rtol=h.rtol, fp32_tol=h.fp32_tol, fp32_cap=strict_fp32_cap(h, fp32_cap),
                            arg_names=p.arg_names)
    return res.to_json()


def strict_reverify(harness: Harness, *, gpu_index: int = 0, interpret: bool = False, n_seeds: int = STRICT_SEEDS,
                    base_seed: int = STRICT_BASE_SEED, fp32_tol: float = STRICT_FP32_TOL,
                    timeout_s: float = 600.0) -> CorrectnessResult:
    """Check ``harness``'s candidate again, strictly, in the same persistent worker the verifier uses.

    Args:
        harness: the candidate's harness (its ``path`` is the candidate file).
        gpu_index: the GPU (worker ``"gpu<i>"``) when ``interpret`` is False.
        interpret: run under the Triton interpreter on the CPU instead (tests, CPU machines).
        n_seeds, base_seed: :data:`STRICT_SEEDS` seeds from :data:`STRICT_BASE_SEED`.
        fp32_tol: cap of the fp32 tolerances (:data:`STRICT_FP32_TOL`; :func:`strict_fp32_cap` raises it to the
            harness's reordered-sum tolerance).
        timeout_s: wall-clock limit, seconds.

    Returns:
        A :class:`CorrectnessResult`; when it is not correct, ``refused_by`` contains ``"strict-reverify"``
        and ``messages`` say what failed. A worker failure (timeout, fault) counts as a failure.
    """
    key = "verify-interpret" if interpret else f"gpu{gpu_index}"
    r = run_in_worker("htam_core.verify.strict:strict_verify_harness",
                      {"harness": harness.to_json(), "n_seeds": n_seeds, "base_seed": base_seed, "fp32_cap": fp32_tol},
                      timeout_s=timeout_s, pool_key=key, interpret=interpret,
                      gpu_index=None if interpret else gpu_index)
    mode = "interpreter" if interpret else "gpu"
    if r.ok:
        v = r.value
        res = CorrectnessResult(v["correct"], v["status"], v["verified_on"], v["max_abs_err"], v["messages"],
                                v.get("trials", 0), v.get("refused_by", []))
    else:
        e = r.error
        assert e is not None
        res = CorrectnessResult(False, "error", mode, None, [f"{e.kind}: {e.message}"], refused_by=[e.kind])  # type: ignore[arg-type]
    if not res.correct:
        res.status = "incorrect" if res.status == "correct" else res.status
        res.refused_by = sorted(set(res.refused_by) | {STRICT_RULE})
        res.messages.insert(0, f"{STRICT_RULE}: the speedup above {STRICT_SPEEDUP:g}x did not survive the stricter "
                               f"check ({n_seeds} seeds from base {base_seed}, every input set, fp32 tolerance "
                               f"<= {strict_fp32_cap(harness, fp32_tol):g})")
    return res
