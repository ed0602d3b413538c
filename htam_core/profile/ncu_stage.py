"""The second stage of a two-stage GPU profile: Nsight Compute counters added to a timed profile.

The editor shows the timer's profile (``profile_on_gpu(..., use_ncu=False)``: compile, the measure timer with its
CUPTI cross-check, static resources) at once, then runs this stage in the background: the harness under ncu in
the GPU worker, its SOL, achieved occupancy and rules added to a copy of the first profile, the bottleneck
re-classified from them. The time stays the timer's. A ``.cu`` program with ``main()`` is already timed by ncu,
so it has no second stage.

:class:`CountersStage` is the same stage for the optimize loop: Nsight Compute runs on a background thread, in
its own worker (never the GPU worker that times candidates), once per kernel version, cached on disk by content
hash (source text, harness, target, the ncu binary), so that the loop ranks with the timing and the static
profile and takes the counters when they arrive.
"""

from __future__ import annotations

import copy
import hashlib
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from htam_core.harness.base import Harness
from htam_core.measure.gpu import _apply_ncu, _call, pool_config
from htam_core.measure.ncu import find_ncu
from htam_core.runtime.cache import CompileCache, content_key, file_fingerprint
from htam_core.runtime.worker import close_pool, get_pool, kill_pool
from htam_core.types.profile import Profile

__all__ = ["counters_follow", "add_ncu_counters", "with_counters", "counters_key", "CountersStage", "FOLLOW_NOTE",
           "COUNTERS_TARGET"]

#: The worker target that runs a harness under Nsight Compute (:func:`htam_core.measure.ncu.ncu_harness_target`).
COUNTERS_TARGET = "htam_core.measure.ncu:ncu_harness_target"

#: The note a first-stage profile carries while its counters are being collected.
FOLLOW_NOTE = "ncu counters follow in the background"


def counters_follow(p: Profile, harness: Harness | None) -> bool:
    """Whether :func:`add_ncu_counters` can add to ``p``: a GPU profile timed through ``harness`` (not a
    ``.cu`` program, which ncu already times), without counters, with ``ncu`` on PATH."""
    return (p.mode == "gpu" and harness is not None and not harness.traits.whole_program and not p.extra.get("ncu")
            and find_ncu() is not None)


def add_ncu_counters(p: Profile, harness: Harness, gpu_index: int = 0, *, kernel: Any = None,
                     timeout_s: float = 600.0, target: str = "sm_90", text: str | None = None,
                     cache: CompileCache | None = None) -> Profile:
    """A copy of the timed profile ``p`` with the Nsight Compute counters of ``harness`` and the bottleneck
    re-classified from them.

    Args:
        p: the first-stage profile; harness: the harness it was timed with; gpu_index: the GPU (its worker);
        kernel: the source-model kernel (features for the classifier), or ``None``; timeout_s: limit of the ncu
        run, seconds; target: the static target the classifier uses; text: the kernel file's text, which keys
        the counters cache (:func:`counters_key`; ``None``: no cache); cache: that cache (default the
        ``"counters"`` namespace of :class:`CompileCache`, shared with the optimize loop's :class:`CountersStage`).

    Returns:
        The new profile (``p`` is unchanged). An ncu failure is a warning of the new profile, not an error.
    """
    key = None
    if text is not None:
        cache = cache if cache is not None else CompileCache(namespace="counters")
        key = counters_key(text, harness, target)
        hit = cache.get(key)
        if hit is not None and isinstance(hit.get("summary"), dict):
            return with_counters(p, hit["summary"], kernel=kernel, target=target)
    r = _call(COUNTERS_TARGET, {"harness": harness.to_json()}, gpu_index, timeout_s)
    if r.ok:
        if key is not None and cache is not None and isinstance(r.value, dict):
            cache.put(key, {"summary": r.value})
        return with_counters(p, r.value, kernel=kernel, target=target)
    return with_counters(p, None, kernel=kernel, target=target,
                         error=r.error.message if r.error else "unknown")


def with_counters(p: Profile, summary: dict[str, Any] | None, *, kernel: Any = None, target: str = "sm_90",
                  error: str | None = None) -> Profile:
    """A copy of ``p`` with the ncu ``summary`` (:func:`htam_core.measure.ncu.run_ncu`'s dict) applied and the
    bottleneck re-classified; with ``summary`` ``None``, ``error`` becomes a warning instead. ``p`` is unchanged.
    ``kernel`` (the source-model kernel or ``None``) gives the classifier its features; ``target`` is the static
    target the classifier uses."""
    from htam_core.profile.classify import classify

    q = copy.deepcopy(p)
    q.warnings = [w for w in q.warnings if w != FOLLOW_NOTE]
    if summary is not None:
        _apply_ncu(q, summary)
    else:
        q.warnings.append(f"ncu counters not collected: {error or 'unknown'}")
    q.bottleneck = classify(q, kernel.features if kernel is not None else None, target=target)
    return q


def counters_key(text: str, harness: Harness, target: str = "sm_90", extra: str = "") -> str:
    """The content hash of one kernel version's counters: the source text, the harness without its file paths
    (each candidate lives in its own folder, each run copies or not) and the parts that only verification reads
    (:data:`_NOT_IN_COUNTERS_KEY`), the target, the ncu binary (:func:`file_fingerprint`) and ``extra``
    (e.g. a digest of the local headers)."""
    hj = {k: v for k, v in harness.to_json().items() if k not in _NOT_IN_COUNTERS_KEY}
    return content_key(kind="ncu-counters", text=hashlib.sha256(text.encode()).hexdigest(), harness=hj,
                       target=target, ncu=file_fingerprint(find_ncu()), extra=extra)


#: Harness fields that do not change what ncu measures: where files are, and what only the verifier reads.
_NOT_IN_COUNTERS_KEY = frozenset({"path", "source", "origin_path", "oracle_path", "reference_path", "reference",
                                  "ref_globals", "atol", "rtol", "interpret_sizes", "notes", "inference"})


class CountersStage:
    """Nsight Compute counters off the optimize loop's critical path.

    One background thread runs the jobs one at a time (one ncu at a time per GPU) in its own worker
    (``"gpu<i>-counters"``), so the GPU worker that verifies and times candidates is never held by ncu. Each
    kernel version (:func:`counters_key`) is profiled at most once: a second :meth:`submit` of it returns the same
    future, and a version whose counters are in the on-disk cache (``<cache root>/counters/``, shared by the
    CLI, the editor and later runs) is answered from it without starting ncu. The idea is the editor's
    two-stage profile (timer first, counters later), applied to the loop.

    Args:
        gpu_index: the GPU whose counters are collected.
        target: the static target the classifier uses.
        timeout_s: limit of one ncu run, seconds.
        cache: the counters cache; default a :class:`CompileCache` in the ``"counters"`` namespace.

    Attributes:
        runs: ncu runs started; hits: versions answered from the cache; seconds: wall seconds spent in ncu runs.
    """

    def __init__(self, gpu_index: int = 0, *, target: str = "sm_90", timeout_s: float = 600.0,
                 cache: CompileCache | None = None) -> None:
        self.gpu_index = gpu_index
        self.target = target
        self.timeout_s = timeout_s
        self.cache = cache if cache is not None else CompileCache(namespace="counters")
        self.pool_key = f"gpu{gpu_index}-counters"
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="htam-ncu")
        self._futures: dict[str, Future[Profile]] = {}
        self._lock = threading.Lock()
        self._stopped = False
        self.runs = 0
        self.hits = 0
        self.seconds = 0.0

    def submit(self, text: str, profile: Profile, harness: Harness | None, *, kernel: Any = None,
               extra_key: str = "") -> Future[Profile] | None:
        """Queue the counters of the kernel version ``text`` (timed as ``profile`` through ``harness``).

        Returns:
            A future of the profile with counters (:func:`with_counters`; an ncu failure is a warning of that
            profile), or ``None`` when there is nothing to add (:func:`counters_follow` is false) or the stage
            was stopped. Never waits for ncu.
        """
        if self._stopped or harness is None or not counters_follow(profile, harness):
            return None
        key = counters_key(text, harness, self.target, extra_key)
        with self._lock:
            fut = self._futures.get(key)
            if fut is not None:
                return fut
            cached = self.cache.get(key)
            if cached is not None and isinstance(cached.get("summary"), dict):
                self.hits += 1
                fut = Future()
                fut.set_result(with_counters(profile, cached["summary"], kernel=kernel, target=self.target))
            else:
                fut = self._executor.submit(self._run, key, profile, harness, kernel)
            self._futures[key] = fut
            return fut

    def _run(self, key: str, profile: Profile, harness: Harness, kernel: Any) -> Profile:
        """One ncu run in the counters worker; a summary is cached, a failure is not (it may be transient)."""
        self.runs += 1
        t0 = time.monotonic()
        try:
            r = get_pool(self.pool_key, **pool_config(self.gpu_index)).run(
                COUNTERS_TARGET, {"harness": harness.to_json(), "timeout_s": self.timeout_s}, self.timeout_s + 60)
        finally:
            self.seconds += time.monotonic() - t0
        if r.ok and isinstance(r.value, dict):
            self.cache.put(key, {"summary": r.value})
            return with_counters(profile, r.value, kernel=kernel, target=self.target)
        return with_counters(profile, None, kernel=kernel, target=self.target,
                             error=r.error.message if r.error else "unknown")

    @staticmethod
    def ready(fut: Future[Profile] | None) -> Profile | None:
        """The profile with counters when ``fut`` is done and succeeded, else ``None`` (never waits)."""
        if fut is None or not fut.done() or fut.cancelled() or fut.exception() is not None:
            return None
        return fut.result()

    def pending(self) -> int:
        """Jobs queued or running."""
        with self._lock:
            return sum(not f.done() for f in self._futures.values())

    def stop(self) -> int:
        """Stop the stage: drop the queued jobs and kill a running ncu (its worker and everything it started), so
        that the GPU is quiet for the fresh re-timing. Returns how many jobs did not finish. Safe to call twice."""
        with self._lock:
            self._stopped = True
            unfinished = [f for f in self._futures.values() if not f.done()]
        for f in unfinished:
            f.cancel()
        kill_pool(self.pool_key)  # a running ncu ends now (its call returns a crash, kept as a warning)
        self._executor.shutdown(wait=True, cancel_futures=True)
        close_pool(self.pool_key)
        return len(unfinished)
