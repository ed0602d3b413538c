"""GPU timing of one callable: CUDA events, warm-up, L2 flush before every trial, median of many trials.

Method (KernelBench's timing and ``triton.testing.do_bench``):

* warm-up runs first (compilation, autotuning, caches), until ``warmup_ms`` of GPU time or at
  least ``min_warmup`` calls;
* before **every** trial the L2 cache is flushed by writing a 256 MB buffer (larger than any
  current L2: H100/H200 have 50-60 MB), so every trial starts cold, as a kernel in a real
  pipeline would;
* each trial is timed with a pair of CUDA events around the call on the current stream;
* **all streams** are waited on: after each trial ``torch.cuda.synchronize()`` (device-wide), and
  the host wall-clock of call + device sync is recorded too. When the wall-clock time exceeds the
  event time by more than :data:`SIDE_STREAM_SLACK_MS` plus 50 %, work escaped the timed stream
  (a side stream): the wall-clock times are reported instead, with a warning (issue 9 guard);
* min, median and max over the trials are reported in milliseconds.

Runs inside a worker process; needs torch with CUDA.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Size of the L2-flush buffer, bytes (256 MB).
L2_FLUSH_BYTES = 256 * 1024 * 1024
#: Extra host time allowed over the event time before side-stream work is suspected, ms.
SIDE_STREAM_SLACK_MS = 0.05

_FLUSH: dict[int, Any] = {}


@dataclass
class Timing:
    """Result of :func:`time_gpu`.

    Attributes:
        min_ms, median_ms, max_ms: over the trials, milliseconds.
        trials: number of timed trials.
        times_ms: every trial's time, ms.
        method: ``"cuda-events"`` or ``"wall-clock+sync"`` (side-stream work detected).
        warnings: anything the caller should report.
    """

    min_ms: float
    median_ms: float
    max_ms: float
    trials: int
    times_ms: list[float] = field(default_factory=list)
    method: str = "cuda-events"
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON form (``times_ms`` included)."""
        return {"min": self.min_ms, "median": self.median_ms, "max": self.max_ms, "trials": self.trials,
                "times_ms": self.times_ms, "method": self.method, "warnings": list(self.warnings)}


def flush_l2() -> None:
    """Write a 256 MB buffer on the current device (evicts the whole L2)."""
    import torch

    dev = torch.cuda.current_device()
    buf = _FLUSH.get(dev)
    if buf is None:
        buf = _FLUSH[dev] = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    buf.zero_()


def time_gpu(fn: Callable[[], Any], *, trials: int = 100, min_warmup: int = 3, warmup_ms: float = 100.0,
             max_total_s: float = 10.0, flush: bool = True) -> Timing:
    """Time ``fn`` (a no-argument launcher) on the GPU.

    Args:
        fn: launches the work to time; its inputs are bound already.
        trials: timed trials (fewer when ``max_total_s`` would be exceeded, at least 5).
        min_warmup: at least this many warm-up calls.
        warmup_ms: warm up until this much GPU time has been spent.
        max_total_s: time budget for the trials, seconds.
        flush: flush L2 before every trial.

    Returns:
        A :class:`Timing` (ms).

    Raises:
        RuntimeError: from ``fn`` or CUDA (a faulting kernel); the worker reports it.
    """
    import torch

    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    done = 0
    t_warm = 0.0
    while done < min_warmup or t_warm < warmup_ms:
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        t_warm += start.elapsed_time(end)
        done += 1
        if done >= 1000:
            break
    per_call_ms = max(t_warm / done, 1e-3)
    n = max(5, min(trials, int(max_total_s * 1000 / (per_call_ms + 0.2))))
    ev_times: list[float] = []
    wall_times: list[float] = []
    for _ in range(n):
        if flush:
            flush_l2()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()  # all streams: side-stream work finishes before the wall clock stops
        wall_times.append((time.perf_counter() - t0) * 1000.0)
        ev_times.append(start.elapsed_time(end))
    ev_med, wall_med = statistics.median(ev_times), statistics.median(wall_times)
    times, method, warns = ev_times, "cuda-events", []
    if wall_med > ev_med * 1.5 + SIDE_STREAM_SLACK_MS:
        times, method = wall_times, "wall-clock+sync"
        warns.append(f"GPU work outside the timed stream: events say {ev_med:.4g} ms but the device was busy "
                     f"{wall_med:.4g} ms per call (side stream?); reporting wall-clock time with device sync")
    return Timing(min(times), statistics.median(times), max(times), n, [round(t, 6) for t in times], method, warns)


def spread_pct(a: float, b: float) -> float:
    """Relative difference of two medians in percent: ``|a - b| / min(a, b) * 100``."""
    return abs(a - b) / max(min(a, b), 1e-12) * 100.0
