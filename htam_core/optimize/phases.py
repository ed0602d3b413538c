"""Where the optimize loop's time goes: wall seconds per phase, written to ``report.json`` (``"phases"``).

Phases (seconds, summed over the run; they may overlap, because compiles of later candidates and the Nsight
Compute stage run in the background while the loop verifies and times):

* ``compile``: static compiles (nvcc ``-Xptxas -v``, Triton AOT) and, on a GPU, loading a harness and building
  its launcher in the worker;
* ``verify``: correctness over seeds (the Triton interpreter without a GPU; on a GPU it includes the kernel's
  first, JIT-compiling launch);
* ``time``: the GPU timer and the interleaved parent/candidate comparisons of the search;
* ``retime``: the fresh-process re-timing of the best kernel;
* ``ncu``: Nsight Compute runs of the background counters stage (off the critical path);
* ``process_start``: worker processes started and warmed (interpreter, imports), counted inside the phase whose
  call paid for it when the worker was not pre-started;
* ``wall``: the whole run, from the start of :func:`htam_core.optimize.run_optimize` to the report.

``bench/bench_loop_speed.py`` reads these figures. The idea of splitting a search's time into its phases to find
what to take off the critical path is the usual profile-before-optimizing rule, applied to the loop itself.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

#: The phases every report names, in this order (a phase that did not happen is 0.0).
PHASES: tuple[str, ...] = ("compile", "verify", "time", "retime", "ncu", "process_start")


class PhaseTimes:
    """Thread-safe accumulator of wall seconds per phase (compiles run on a thread pool).

    Attributes:
        seconds: phase name -> seconds (float, >= 0); counts: phase name -> how many intervals were added.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.counts: dict[str, int] = dict.fromkeys(PHASES, 0)
        self._lock = threading.Lock()

    def add(self, phase: str, seconds: float, count: int = 1) -> None:
        """Add ``seconds`` (wall seconds, negative values are clamped to 0) and ``count`` intervals to ``phase``."""
        with self._lock:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + max(0.0, float(seconds))
            self.counts[phase] = self.counts.get(phase, 0) + int(count)

    @contextlib.contextmanager
    def measure(self, phase: str) -> Iterator[None]:
        """Context manager adding the wall time of its body to ``phase`` (also when the body raises)."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.add(phase, time.monotonic() - t0)

    def to_json(self, wall_s: float | None = None) -> dict[str, object]:
        """``{"seconds": {phase: s}, "counts": {phase: n}, "wall_s": wall_s, "overlap_note": ...}`` (seconds rounded
        to the millisecond)."""
        with self._lock:
            return {"seconds": {k: round(v, 3) for k, v in self.seconds.items()}, "counts": dict(self.counts),
                    "wall_s": None if wall_s is None else round(wall_s, 3),
                    "overlap_note": "phases overlap: compiles and Nsight Compute run in the background, and a "
                                    "worker start is also counted in the phase whose call paid for it"}
