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

from htam_core.harness.base import Harness
from htam_core.harness.runner import prepare_kernelbench
from htam_core.harness.trial import BASE_SEED
from htam_core.measure.timer import flush_l2
from htam_core.runtime.worker import release_memory
from htam_core.verify.correctness import check_correctness

#: KernelBench's timing constants (upstream ``src/timing.py`` at 423217d).
WARMUPS = 3
TRIALS = 100


def time_kernelbench(fn: Callable[[], Any], trials: int = TRIALS, warmups: int = WARMUPS) -> dict[str, Any]:
    """Time ``fn`` with KernelBench's semantics; returns ``{"mean", "std", "min", "max", "trials"}`` in ms."""
    import torch

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


#: The torch.compile anchors timed beside HTAM: name -> ``torch.compile`` mode (``None``: Inductor's default).
#: ``max-autotune`` also captures CUDA graphs; ``max-autotune-no-cudagraphs`` autotunes the same way without them,
#: which tells the autotuned kernels' effect apart from the graphs' per-call work.
COMPILE_ANCHORS: dict[str, str | None] = {"compile-default": None, "compile-max-autotune": "max-autotune",
                                          "compile-max-autotune-no-cudagraphs": "max-autotune-no-cudagraphs"}


def compile_anchor(model: Any, inputs: list[Any], mode: str | None, timer: Callable[[Callable[[], Any]], Any],
                   want: list[Any] | None = None, atol: float = 1e-4, rtol: float = 1e-4) -> dict[str, Any]:
    """Compile ``model`` with ``torch.compile(mode=mode)`` (Inductor), check it against eager and time it.

    Args:
        model: the eager ``nn.Module`` (KernelBench's ``Model``) or any callable.
        inputs: its inputs (tensors on the device it runs on).
        mode: ``None`` (Inductor's default) or a ``torch.compile`` mode (``"max-autotune"``).
        timer: times a zero-argument callable; returns a dict with ``"mean"`` in ms
            (:func:`time_kernelbench` on a GPU; any timer on a CPU).
        want: the eager outputs (computed here when ``None``).
        atol, rtol: the correctness tolerance (KernelBench's fp32 rule by default).

    Returns:
        ``{"mode", "status": "ok"|"incorrect"|"failed", "correct", "compile_s", "max_abs_err", "timing",
        "error"}``: the first call's wall time is ``compile_s``; an incorrect result is not timed, as a
        candidate's is not. Never raises for a model that does not compile (``status`` ``failed``).
    """
    import time

    import torch

    out: dict[str, Any] = {"mode": mode or "default", "status": "failed", "correct": None, "compile_s": None,
                           "max_abs_err": None, "timing": None, "error": None}
    with torch.no_grad():
        if want is None:
            want = _outputs(model(*inputs))
        try:
            compiled = torch.compile(model, mode=mode)
            t0 = time.perf_counter()
            got = _outputs(compiled(*inputs))
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            out["compile_s"] = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 - Inductor's failures are many; the anchor is "failed"
            out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
            return out
        ok = len(got) == len(want) and all(g.shape == w.shape for g, w in zip(got, want, strict=False))
        err = max(((g.float() - w.float()).abs().max().item() for g, w in zip(got, want, strict=False)), default=0.0) \
            if ok else None
        ok = ok and all(torch.allclose(g.float(), w.float(), atol=atol, rtol=rtol)
                        for g, w in zip(got, want, strict=False))
        out.update(correct=ok, max_abs_err=err, status="ok" if ok else "incorrect")
        if ok:
            out["timing"] = timer(lambda: compiled(*inputs))
    return out


def _outputs(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple) else [v]


def evaluate_compiled(candidate: str, reference: str, anchor: str, trials: int = TRIALS,
                      warmups: int = WARMUPS) -> dict[str, Any]:
    """Worker target (GPU): the ``anchor`` of :data:`COMPILE_ANCHORS` on the problem ``reference`` (its
    ``Model`` built and fed exactly as for :func:`evaluate_problem`; ``candidate`` is any ``ModelNew`` file of
    the pair, needed to build it), timed with KernelBench's timer beside a fresh eager timing.

    Returns:
        :func:`compile_anchor`'s dict plus ``"anchor"`` and ``"eager"`` (a :func:`time_kernelbench` dict).
    """
    import torch

    p = prepare_kernelbench(Harness(kind="kernelbench", path=candidate, kernel="ModelNew", language="python",
                                    reference_path=reference), "cuda")
    inputs = p.trial.make_inputs(BASE_SEED, 0, 1.0)
    model = p.reference_model  # type: ignore[attr-defined]
    eager = time_kernelbench(p.reference_call(inputs), trials, warmups)  # type: ignore[attr-defined]
    try:
        res = compile_anchor(model, inputs, COMPILE_ANCHORS[anchor], lambda fn: time_kernelbench(fn, trials, warmups))
    finally:
        del inputs, model, p
        reset_compiled_state()
    return {**res, "anchor": anchor, "eager": eager, "device": torch.cuda.get_device_name()}


def reset_compiled_state() -> None:
    """Drop what ``torch.compile`` keeps after a call: Dynamo's compiled frames and the CUDA-graph trees'
    memory pools (``max-autotune`` records graphs whose static buffers hold a copy of every input), then
    give the memory back (:func:`htam_core.runtime.worker.release_memory`).

    The anchor's worker stays alive between problems; without this its pools held 6-19 GiB each while the
    next problem's evaluation ran out of memory (H200, KernelBench level 1, 2026-12-02). Never raises.
    """
    import contextlib

    import torch

    with contextlib.suppress(Exception):
        torch._dynamo.reset()
    with contextlib.suppress(Exception):
        from torch._inductor import cudagraph_trees

        cudagraph_trees.reset_cudagraph_trees()
    release_memory()
