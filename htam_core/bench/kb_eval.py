"""Worker target: KernelBench's verdict and timing for one problem (runs in a GPU worker process).

Correctness follows KernelBench's ``src/eval.py``: 5 trials seeded from 42, the same inputs to reference and
candidate, ``allclose`` with atol = rtol = 1e-4 for fp32 (1e-2 for fp16/bf16), shapes must match; it reuses
:func:`htam_core.verify.correctness.check_correctness` (which also refuses mutated inputs).
Timing follows KernelBench's ``cuda_event`` method: 3 warm-up calls, the L2 cache flushed before each trial,
CUDA events around each call, 100 trials, the **mean** reported in ms (with std, min, max). The eager
reference, the start solution and the final solution are timed in the same process on the same inputs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

#: KernelBench's timing constants (upstream ``src/timing.py`` at 423217d).
WARMUPS = 3
TRIALS = 100


def time_kernelbench(fn: Callable[[], Any], trials: int = TRIALS, warmups: int = WARMUPS) -> dict[str, Any]:
    """Time ``fn`` with KernelBench's semantics; returns ``{"mean", "std", "min", "max", "trials"}`` in ms."""
    import torch

    from htam_core.measure.timer import flush_l2

    with torch.no_grad():
        for _ in range(warmups):
            fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(trials):
            flush_l2()
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    return {"mean": statistics.fmean(times), "std": statistics.pstdev(times), "min": min(times),
            "max": max(times), "trials": len(times)}


def evaluate_problem(candidate: str, reference: str, start: str | None = None, trials: int = TRIALS,
                     warmups: int = WARMUPS) -> dict[str, Any]:
    """Verify ``candidate`` (a ``ModelNew`` file) against ``reference`` (``Model``/``get_inputs``/
    ``get_init_inputs``) and time eager, the start solution (when given) and the candidate.

    Returns:
        ``{"device", "correct", "status", "max_abs_err", "messages", "eager", "new", "start",
        "start_correct"}``; timings are :func:`time_kernelbench` dicts or ``None`` (the candidate is not
        timed when it is incorrect, as in KernelBench).
    """
    import torch

    from htam_core.harness.base import Harness
    from htam_core.harness.runner import prepare_kernelbench
    from htam_core.verify.correctness import BASE_SEED, check_correctness

    def prep(path: str) -> Any:
        return prepare_kernelbench(Harness(kind="kernelbench", path=path, kernel="ModelNew", language="python",
                                           reference_path=reference), "cuda")

    out: dict[str, Any] = {"device": torch.cuda.get_device_name(), "eager": None, "new": None, "start": None,
                           "start_correct": None}
    p = prep(candidate)
    verdict = check_correctness(p.trial, verified_on="gpu", arg_names=p.arg_names)
    out.update(correct=verdict.correct, status=verdict.status, max_abs_err=verdict.max_abs_err,
               messages=verdict.messages[:5])
    inputs = p.trial.make_inputs(BASE_SEED, 0, 1.0)
    out["eager"] = time_kernelbench(p.reference_call(inputs), trials, warmups)  # type: ignore[attr-defined]
    if verdict.correct:
        out["new"] = time_kernelbench(p.bind(inputs), trials, warmups)
    if start:
        ps = prep(start)
        sv = check_correctness(ps.trial, verified_on="gpu", arg_names=ps.arg_names)
        out["start_correct"] = sv.correct
        if sv.correct:
            out["start"] = time_kernelbench(ps.bind(inputs), trials, warmups)
    del inputs
    torch.cuda.empty_cache()
    return out
