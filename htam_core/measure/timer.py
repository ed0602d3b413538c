"""The timer: device time of one launcher, by CUDA-graph replay or events with an asynchronous L2 flush.

:class:`LauncherTimer` prepares a no-argument launcher once and then takes samples; :func:`time_launcher`
is the one-call form that returns a :class:`Timing`.

Preparation:

1. warm-up calls (compilation, autotuning, caches), each synchronized, until ``warmup_ms`` of GPU time
   or ``min_warmup`` calls;
2. the launcher is captured into a CUDA graph on a side stream (``torch.cuda.graph``: allocations inside the
   launcher come from the graph's private memory pool, so launchers that allocate their outputs capture
   too). A capture that fails, or a graph that launches fewer device operations than an eager call (CUPTI
   counts both), falls back to the events method (:mod:`htam_core.measure.method` decides and says why).

A sample (one trial) starts with an asynchronous L2 flush (a 256 MB write), so every trial starts with a
cold L2, as a kernel in a pipeline reading fresh data does. Then:

* ``cuda-graph``: the graph holds the start event, the launcher's work and the end event (events recorded
  during capture with ``external=True`` become event nodes of the graph), so the interval excludes the
  graph's own launch latency; each trial replays it and waits for its end event. Where timing events cannot
  be captured, the events are recorded around the replay instead (``method_reason`` says so);
* ``events-async-flush``: ``start event; launcher; end event`` with no host synchronization between trials:
  while the GPU writes the flush buffer the host is already enqueueing the launch, so the events bracket
  device work and not the host's Python launcher (a host sync after the flush would leave the GPU idle while
  the launcher runs, and the events would time the host).

Event overhead (:mod:`htam_core.measure.calibrate`): an event pair around a kernel also measures the kernel's
dispatch and completion latency, which CUPTI's kernel record leaves out (on an H200 raw events read 1.9-3.3 µs
above CUPTI: +46 % on a 6 µs kernel). A null kernel timed in the same structure (same method, same flush)
against its CUPTI duration gives that latency once per process and device (H200: 2.24-2.43 µs inside a graph,
2.22-2.69 µs eagerly); every trial reports ``event interval - overhead`` and the timing says how much was
subtracted (``event_overhead_ms``, ``event_overhead``). The events are already placed as tightly as they can
be (the flush precedes the start event, and inside a graph the start event node is the kernel node's only
parent): an empty event pair inside a graph reads 1.25 µs on the H200, and a null kernel between them adds
another ~1 µs of dispatch and completion beyond its own duration, neither of which a different placement of
the events removes. The calibration is a subtraction of a measured constant, not a measurement of each kernel:
its residual (a wide grid's dispatch versus the null kernel's) is what ``bench/timing_agreement.py`` reports.

Checks:

* **Side streams** (:meth:`LauncherTimer.guard`): a few synchronized trials compare the host wall clock of
  ``call + device-wide sync`` with the events around the call; when the wall clock exceeds the events by
  more than 50 % plus :data:`SIDE_STREAM_SLACK_MS`, work escaped the timed stream, and the wall-clock times
  are reported instead (method ``wall-clock+sync``), with a warning.
* **CUPTI** (:meth:`LauncherTimer.cupti_pass`, :func:`cross_check_timing`): a few trials taken exactly as the
  timed ones while the profiler records; CUPTI's per-call sum of their device operations' durations is compared
  with the timer's own events of *those* trials (:func:`htam_core.measure.cupti.check_same_trials`), which refuses
  a disagreement of more than 10 % and more than 1 µs once the event overhead is subtracted
  (:data:`htam_core.measure.cupti.CALIBRATED_SLACK_MS`; 4 µs, :data:`~htam_core.measure.cupti.ABS_SLACK_MS`, for
  wall-clock times and an uncalibrated timer), and an un-profiled median above those trials. Like for like,
  because the profiler slows some kernels itself (a raw CUDA kernel with one scalar access per thread over 64M
  threads runs 16-23 µs longer on an H200: +20 % on a 70 µs kernel); that slowdown is reported
  (``profiler_slowdown``), and the published time is the un-profiled one. Un-profiled trials that read above the
  CUPTI trials taken after them are taken once more (:func:`retake_if_drifted`): a device still reaching its clocks
  then agrees and the retake is published (the note gives both medians); other work timed in the first set does
  not, and the timing is refused.

Idea sources: ``triton.testing.do_bench`` (asynchronous flush, per-trial events) and
``triton.testing.do_bench_cudagraph`` (graph replay). Runs inside a worker process with torch and CUDA.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from htam_core.measure import calibrate, cupti
from htam_core.measure.flush import L2_FLUSH_BYTES, flush_l2, flush_op_names
from htam_core.measure.method import METHOD_GRAPH, METHOD_WALL, MethodChoice, choose_method, may_capture
from htam_core.measure.stats import launch_bound, relative_iqr

__all__ = ["L2_FLUSH_BYTES", "SIDE_STREAM_SLACK_MS", "Timing", "flush_l2", "LauncherTimer", "time_launcher",
           "restore_rng_after_failed_capture", "cross_check_timing", "profiled_ms", "retake_if_drifted"]

#: Extra host time allowed over the event time before side-stream work is suspected, ms.
SIDE_STREAM_SLACK_MS = 0.05
#: Calls of the CUPTI cross-check pass.
CUPTI_CALLS = 5

@dataclass
class Timing:
    """Result of :func:`time_launcher`, milliseconds.

    Attributes:
        min_ms, median_ms, max_ms: over the trials.
        trials: timed trials; times_ms: every trial's time.
        method: ``cuda-graph``, ``events-async-flush`` or ``wall-clock+sync``; method_reason: why.
        spread: relative IQR of the trials (a fraction).
        cupti_ms: CUPTI's per-call device time (median), or ``None`` (not cross-checked).
        cupti_ops: device operations per call that CUPTI saw, or ``None``.
        agreement: ``timer / cupti - 1`` on the trials CUPTI recorded (the timer's events of those trials), or
            ``None``.
        refused: the refusal message when timer and CUPTI disagree on the same trials (more than 10 % and 1 µs, 4 µs
            uncalibrated), or the un-profiled timer reads more than those trials (the time is then not a measurement),
            else ``None``.
        launch_bound: CUPTI's (else the timer's) time is under 10 µs.
        l2_flush: every trial started with a cold L2.
        event_overhead_ms: the calibrated event latency subtracted from every trial (0: none).
        event_overhead: that calibration in words (:func:`htam_core.measure.calibrate.describe`).
        cupti_events_ms: the timer's median (overhead subtracted) over the trials CUPTI recorded, ms, or ``None``.
        profiler_slowdown: ``cupti_events_ms / median_ms - 1``: how much slower the kernel ran while the profiler
            recorded it (raw CUDA kernels with one scalar access per thread: +7 % to +25 % on an H200), or ``None``.
        warnings: anything the caller should report.
    """

    min_ms: float
    median_ms: float
    max_ms: float
    trials: int
    times_ms: list[float] = field(default_factory=list)
    method: str = METHOD_GRAPH
    method_reason: str = ""
    spread: float = 0.0
    cupti_ms: float | None = None
    cupti_ops: int | None = None
    agreement: float | None = None
    refused: str | None = None
    launch_bound: bool = False
    l2_flush: bool = True
    warnings: list[str] = field(default_factory=list)
    event_overhead_ms: float = 0.0
    event_overhead: str = ""
    cupti_events_ms: float | None = None
    profiler_slowdown: float | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON form (``times_ms`` included; the keys ``min``/``median``/``max`` for the statistics)."""
        return {"min": self.min_ms, "median": self.median_ms, "max": self.max_ms, "trials": self.trials,
                "times_ms": self.times_ms, "method": self.method, "method_reason": self.method_reason,
                "spread": self.spread, "cupti_ms": self.cupti_ms, "cupti_ops": self.cupti_ops,
                "agreement": self.agreement, "refused": self.refused, "launch_bound": self.launch_bound,
                "l2_flush": self.l2_flush, "warnings": list(self.warnings),
                "event_overhead_ms": self.event_overhead_ms, "event_overhead": self.event_overhead,
                "cupti_events_ms": self.cupti_events_ms, "profiler_slowdown": self.profiler_slowdown}


class LauncherTimer:
    """Times one no-argument launcher; prepare once, then take samples (interleaving two timers is fine).

    Args:
        fn: launches the work to time; its inputs are bound already.
        method: ``"auto"`` (a graph when possible), ``"cuda-graph"`` or ``"events-async-flush"``.
        launcher_kind: ``"triton"``, ``"cupy"``, ``"python"`` or ``"cu-host-launcher"`` (see
            :func:`htam_core.measure.method.may_capture`), or ``None``.
        flush: flush the L2 before every trial.
        use_cupti: count device operations with CUPTI (graph validation, cross-check).
        events_in_graph: capture the timing events into the graph (``False``: record them around the replay,
            for comparison).
        min_warmup, warmup_ms: warm-up calls and GPU time.
        subtract_overhead: subtract the calibrated event latency of the method from every trial (see the module
            docstring); ``False`` reports raw event intervals.

    Raises:
        RuntimeError: from ``fn`` or CUDA (a faulting kernel); the worker reports it.
    """

    def __init__(self, fn: Callable[[], Any], *, method: str = "auto", launcher_kind: str | None = None,
                 flush: bool = True, use_cupti: bool = True, min_warmup: int = 3, warmup_ms: float = 50.0,
                 events_in_graph: bool = True, subtract_overhead: bool = True) -> None:
        self.fn = fn
        self.events_in_graph = events_in_graph
        self.flush = flush
        self.use_cupti = use_cupti
        self.graph: Any = None
        self.graph_events: tuple[Any, Any] | None = None  # timing events inside the graph
        self.graph_events_note = "" if events_in_graph else "timing events around the replay (asked for)"
        self.per_call_ms = self._warm_up(min_warmup, warmup_ms)
        self.eager_ops: int | None = None
        self.choice = self._choose(method, launcher_kind)
        self.calibration: calibrate.Calibration | None = None
        if subtract_overhead:
            if self.method == METHOD_GRAPH and self.graph_events is None:
                self.calibration = calibrate.Calibration(self.method, 0.0, note="events around the replay are "
                                                         "not calibrated")
            else:
                self.calibration = calibrate.calibrate(self.method, flush=flush)

    # -- preparation ------------------------------------------------------------------------------
    def _warm_up(self, min_warmup: int, warmup_ms: float) -> float:
        import torch

        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        done, spent = 0, 0.0
        while (done < min_warmup or spent < warmup_ms) and done < 1000:
            start.record()
            self.fn()
            end.record()
            torch.cuda.synchronize()
            spent += start.elapsed_time(end)
            done += 1
        return max(spent / done, 1e-3)

    def _capture(self) -> str | None:
        """Capture the launcher into ``self.graph`` (with timing events inside it when torch can record
        them into a graph); the error text when it cannot be captured at all."""
        import torch

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        try:
            with torch.cuda.stream(side):
                self.fn()  # a warm call on the capture stream (the allocator's advice before capture)
            torch.cuda.current_stream().wait_stream(side)
        except Exception as exc:  # noqa: BLE001 - the eager path re-raises a real fault
            return _brief_error(exc)
        err = None
        for inside in (True, False) if self.events_in_graph else (False,):
            try:
                events = (torch.cuda.Event(enable_timing=True, external=True),
                          torch.cuda.Event(enable_timing=True, external=True)) if inside else None
            except TypeError:  # a torch without external events
                self.graph_events_note = "timing events around the replay (this torch cannot capture them)"
                continue
            g = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(g, stream=side):
                    if events:
                        events[0].record()
                    self.fn()
                    if events:
                        events[1].record()
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - a capture failure: try without events, then eagerly
                err = _brief_error(exc)
                try:
                    torch.cuda.synchronize()
                except Exception:  # noqa: BLE001, S110 - the eager path re-raises a real fault
                    pass
                try:
                    g.reset()
                except Exception:  # noqa: BLE001, S110 - nothing was captured to release
                    pass
                restore_rng_after_failed_capture()
                if inside:
                    self.graph_events_note = f"timing events around the replay (captured events failed: {err})"
                continue
            self.graph, self.graph_events = g, events
            return None
        return err

    def _choose(self, requested: str, launcher_kind: str | None) -> MethodChoice:
        pre = may_capture(requested, launcher_kind)
        if self.use_cupti:
            self.eager_ops = len(cupti.device_ops([self.fn]))
        if pre is not None:
            return pre
        err = self._capture()
        graph_ops = None
        if err is None and self.use_cupti:
            graph_ops = len(cupti.device_ops([self.graph.replay]))
        choice = choose_method(requested, launcher_kind, capture_error=err, eager_kernels=self.eager_ops,
                               graph_kernels=graph_ops)
        if choice.method != METHOD_GRAPH:
            self.close()
        return choice

    @property
    def reason(self) -> str:
        """Why the method was chosen, and where a graph's events are."""
        if self.choice.method == METHOD_GRAPH:
            return self.graph_events_note or "timing events inside the graph"
        return self.choice.reason

    @property
    def method(self) -> str:
        """The method the samples use (``cuda-graph`` or ``events-async-flush``)."""
        return self.choice.method

    def _call(self) -> Callable[[], Any]:
        return self.graph.replay if self.graph is not None else self.fn

    # -- measuring --------------------------------------------------------------------------------
    @property
    def overhead_ms(self) -> float:
        """The event latency subtracted from every trial, ms (0: none)."""
        return self.calibration.overhead_ms if self.calibration is not None else 0.0

    def sample(self, n: int, *, raw: bool = False) -> list[float]:
        """``n`` trials, ms each, minus the calibrated event overhead unless ``raw`` (see the module docstring)."""
        times = self._sample_raw(n)
        return times if raw or self.overhead_ms <= 0 else calibrate.subtract(times, self.overhead_ms)

    def _sample_raw(self, n: int) -> list[float]:
        import torch

        if self.graph is not None and self.graph_events is not None:
            start_ev, end_ev = self.graph_events
            out = []
            torch.cuda.synchronize()
            for _ in range(n):
                if self.flush:
                    flush_l2()
                self.graph.replay()
                end_ev.synchronize()  # the events are re-recorded by the next replay
                out.append(start_ev.elapsed_time(end_ev))
            return out
        call = self._call()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        torch.cuda.synchronize()
        for s, e in zip(starts, ends, strict=True):
            if self.flush:
                flush_l2()
            s.record()
            call()
            e.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]

    def guard(self, n: int = 10) -> tuple[list[float], list[float]]:
        """Side-stream guard: ``n`` synchronized eager calls; returns (event ms, wall-clock ms) per call."""
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ev, wall = [], []
        for _ in range(n):
            if self.flush:
                flush_l2()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            self.fn()
            end.record()
            torch.cuda.synchronize()  # all streams: side-stream work finishes before the wall clock stops
            wall.append((time.perf_counter() - t0) * 1000.0)
            ev.append(start.elapsed_time(end))
        return ev, wall

    def cupti_pass(self, calls: int = CUPTI_CALLS) -> cupti.CuptiPass | None:
        """``calls`` trials taken exactly as :meth:`sample` takes them (flush, then the graph replay with its events,
        or the event-bracketed call) while CUPTI records: the device operations and those trials' raw event
        intervals (:func:`htam_core.measure.cupti.check_same_trials` compares like with like); ``None`` when CUPTI
        is off."""
        if not self.use_cupti:
            return None
        names = flush_op_names() if self.flush else ()
        box: list[float] = []
        ops = cupti.device_ops([lambda: box.extend(self._sample_raw(calls))])
        return cupti.CuptiPass(tuple(ops), calls, tuple(names), tuple(box))

    def close(self) -> None:
        """Release the captured graph (and its private memory pool)."""
        if self.graph is not None:
            self.graph.reset()
            self.graph = None
            self.graph_events = None


def _rng_usable() -> bool:
    import torch

    try:
        torch.empty(1, device="cuda").normal_()  # draws from the default CUDA generator
        return True
    except RuntimeError as exc:
        if "graph capture" in str(exc) or "capture mode" in str(exc):
            return False
        raise


def restore_rng_after_failed_capture() -> None:
    """Make torch's default CUDA generator usable again after a graph capture failed.

    ``CUDAGraph.capture_begin`` puts the default generator into capture mode and only a *successful*
    ``capture_end`` takes it out; after a failed capture every later ``torch.randn`` in the process raises
    "Offset increment outside graph capture encountered unexpectedly". One small successful capture on a side
    stream runs the missing epilogue.

    Raises:
        RuntimeError: the generator is still unusable (the worker must be restarted; the message says so).
    """
    import torch

    if _rng_usable():
        return
    g, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    scratch = torch.empty(1, device="cuda")
    with torch.cuda.graph(g, stream=side):
        scratch.add_(1.0)
    torch.cuda.synchronize()
    g.reset()
    if not _rng_usable():
        raise RuntimeError("a failed CUDA graph capture left torch's CUDA random generator in capture mode and it "
                           "could not be restored; restart the worker (the next profile starts a fresh one)")


def _brief_error(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300]


def _trials_for(per_call_ms: float, trials: int, max_total_s: float, flush: bool) -> int:
    cost = per_call_ms + (0.1 if flush else 0.0) + 0.02  # flush ~0.06-0.1 ms on a 4-5 TB/s device
    return max(5, min(trials, int(max_total_s * 1000 / cost)))


def time_launcher(fn: Callable[[], Any], *, trials: int = 100, method: str = "auto",
                  launcher_kind: str | None = None, flush: bool = True, cross_check: bool = True,
                  min_warmup: int = 3, warmup_ms: float = 50.0, max_total_s: float = 10.0,
                  subtract_overhead: bool = True) -> Timing:
    """Time ``fn`` (a no-argument launcher) on the GPU: see the module docstring.

    Args:
        fn: launches the work to time; its inputs are bound already.
        trials: timed trials (fewer when ``max_total_s`` would be exceeded, at least 5).
        method, launcher_kind, flush: see :class:`LauncherTimer`.
        cross_check: run the CUPTI pass and refuse a timer that disagrees with it by more than 10 % and 4 µs.
        min_warmup, warmup_ms: warm-up.
        max_total_s: time budget of the trials, seconds.
        subtract_overhead: subtract the calibrated event latency (see :class:`LauncherTimer`).

    Returns:
        A :class:`Timing` (ms). When the side-stream guard fires, its wall-clock samples are the times.

    Raises:
        RuntimeError: from ``fn`` or CUDA (a faulting kernel).
    """
    t = LauncherTimer(fn, method=method, launcher_kind=launcher_kind, flush=flush, use_cupti=cross_check,
                      min_warmup=min_warmup, warmup_ms=warmup_ms, subtract_overhead=subtract_overhead)
    try:
        n = _trials_for(t.per_call_ms, trials, max_total_s, flush)
        times = t.sample(n)
        method_used, reason, warns = t.method, t.reason, []
        overhead, overhead_note = t.overhead_ms, calibrate.describe(t.calibration)
        ev, wall = t.guard(min(n, 10))
        ev_med, wall_med = statistics.median(ev), statistics.median(wall)
        if wall_med > ev_med * 1.5 + SIDE_STREAM_SLACK_MS:
            times, method_used = wall, METHOD_WALL
            reason = "side-stream guard"
            overhead, overhead_note = 0.0, "event overhead not subtracted (wall-clock times)"
            warns.append(f"GPU work outside the timed stream: events say {ev_med:.4g} ms but the device was busy "
                         f"{wall_med:.4g} ms per call (side stream?); reporting wall-clock time with device sync")
        cp = t.cupti_pass() if cross_check else None
        if cp is not None and method_used != METHOD_WALL:
            times, note = retake_if_drifted(times, profiled_ms(cp, overhead), _slack(overhead), lambda: t.sample(n))
            warns += [note] if note else []
    finally:
        t.close()
    med = statistics.median(times)
    timing = Timing(min(times), med, max(times), len(times), [round(x, 6) for x in times], method_used, reason,
                    relative_iqr(times) if med > 0 else 0.0, l2_flush=flush, warnings=warns,
                    event_overhead_ms=overhead, event_overhead=overhead_note)
    if cross_check:
        cross_check_timing(timing, cp)
    timing.launch_bound = launch_bound(timing.cupti_ms if timing.cupti_ms is not None else med)
    return timing


def _slack(overhead_ms: float) -> float:
    """The absolute slack of the CUPTI check: calibrated events, or raw ones."""
    return cupti.CALIBRATED_SLACK_MS if overhead_ms > 0 else cupti.ABS_SLACK_MS


def profiled_ms(cp: cupti.CuptiPass, overhead_ms: float) -> float | None:
    """The median of the timer's own events over the trials CUPTI recorded, the event overhead ``overhead_ms``
    subtracted as from every trial; ``None`` when the pass kept no events."""
    if not cp.event_ms:
        return None
    ev = calibrate.subtract(cp.event_ms, overhead_ms) if overhead_ms > 0 else list(cp.event_ms)
    return statistics.median(ev)


def retake_if_drifted(times: list[float], profiled: float | None, slack_ms: float,
                      sample: Callable[[], list[float]]) -> tuple[list[float], str | None]:
    """Take the trials once more when their median reads above the trials CUPTI recorded later.

    The profiler only adds time, so un-profiled trials slower than the profiled ones timed something those did
    not: other work, or a device that had not yet reached its clocks (seen on an H100: a half-precision kernel's
    trials at 0.105 ms, the CUPTI trials right after at 0.0925 ms by both the timer and CUPTI). One more set of the
    same trials, taken after the CUPTI pass, tells them apart: when it agrees with the profiled trials it replaces
    the first set and the note says both medians; when it still reads above, the first set is kept and the cross-check
    refuses it as before (:func:`htam_core.measure.cupti.check_same_trials`).

    Args:
        times: the first set's trials, ms. profiled: the median of the timer's events over the CUPTI trials, ms
            (:func:`profiled_ms`; ``None``: nothing to compare, nothing retaken). slack_ms: the check's absolute
            slack. sample: takes the same number of trials again (:meth:`LauncherTimer.sample`).

    Returns:
        ``(trials, note)``: the trials to publish and the note (``None`` when nothing was retaken or the retake
        did not agree).
    """
    if profiled is None or not times:
        return times, None
    first = statistics.median(times)
    if not cupti.reads_above(first, profiled, slack_ms=slack_ms):
        return times, None
    again = sample()
    second = statistics.median(again) if again else first
    if cupti.reads_above(second, profiled, slack_ms=slack_ms):
        return times, None
    return again, (f"the first {len(times)} trials read {first:.4g} ms, above the {profiled:.4g} ms of the trials "
                   f"CUPTI recorded after them; taken again after the CUPTI pass: {second:.4g} ms, kept")


def cross_check_timing(timing: Timing, cp: cupti.CuptiPass | None) -> None:
    """Check ``timing`` against CUPTI's pass ``cp`` in place: fills ``cupti_ms``, ``cupti_ops``, ``cupti_events_ms``,
    ``profiler_slowdown`` and ``agreement``, and sets ``refused`` (or adds the note to ``warnings``).

    The timer's events of the trials CUPTI recorded (minus ``timing.event_overhead_ms``, as every trial) are
    compared with CUPTI's time of those trials (:func:`htam_core.measure.cupti.check_same_trials`); wall-clock
    times (the side-stream guard) are compared with CUPTI directly, at the raw slack. Pure: no GPU.

    Args:
        timing: the timer's result (``median_ms``, ``method``, ``event_overhead_ms`` set).
        cp: the pass (:meth:`LauncherTimer.cupti_pass`), or ``None`` (CUPTI off: "not cross-checked").
    """
    overhead = timing.event_overhead_ms
    per = cp.per_call_ms() if cp is not None else None
    timing.cupti_ms = statistics.median(per) if per else None
    timing.cupti_ops = cp.ops_per_call() if cp is not None and per else None
    if cp is not None and cp.event_ms and timing.method != METHOD_WALL:
        timing.cupti_events_ms = profiled_ms(cp, overhead)
        assert timing.cupti_events_ms is not None
        timing.profiler_slowdown = timing.cupti_events_ms / timing.median_ms - 1.0 if timing.median_ms > 0 else None
    ag = cupti.check_same_trials(timing.median_ms, timing.cupti_events_ms, timing.cupti_ms, slack_ms=_slack(overhead))
    timing.agreement = ag.relative
    if ag.ok is False:
        timing.refused = ag.message
    elif ag.message:
        timing.warnings.append(ag.message)
