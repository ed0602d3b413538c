"""The editor's profile cache: the last profile of each kernel, background profiling, and listeners.

Entries are keyed by ``(file path, kernel key)`` (:attr:`~htam_core.source.model.Kernel.key`: the plain name,
or ``f64::scale`` / ``scale(double*, double, int)`` where kernels of one file share a name) and tagged with the :func:`content_hash` of the kernel they
were made from (its text plus its launch configurations), so that a lookup with the current kernel says whether
the profile is **stale**. Each published entry gets a new :attr:`ProfileEntry.revision` (process-wide, increasing):
the rankings (:mod:`htam_core.editor.ranking`) are keyed by it, never by object identity.

Stages: :meth:`ProfileCache.publish` is the one way an entry enters the cache, and every listener registered with
:meth:`ProfileCache.subscribe` hears about it. A background profile (:meth:`ProfileCache.start`) runs the
profile function's **stages** in order (:data:`StagesFn`: a generator of :class:`Stage`; on a GPU the timer and
static resources first, then the Nsight Compute counters; without one, a source-only static profile, then the
compiled one) and publishes an entry after each, so the hover shows the quick stage at once and updates when the
slow one lands. A stage's entry says what still follows (:attr:`ProfileEntry.pending`). Between stages the next
one is queued behind other kernels' waiting profiles, so a slow second stage never delays another kernel's first.

Cancellation: a new profile of other content of the same kernel, or :meth:`ProfileCache.cancel_changed` after an
edit changed the kernel's version, cancels the job: its running stage's result is dropped and its later stages
never start. Debounce: :meth:`ProfileCache.start` with ``delay`` waits that long before queueing the job, and a
newer request within it replaces the waiting one (re-profile on save).

Profiles run on one background thread (one GPU at a time); every compile or run of kernel code happens in the
profiler's worker processes (:mod:`htam_core.profile`). A new profile request for a kernel cancels a queued or
running stale request for the same kernel (a running compile finishes, its result is dropped).
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from htam_core.source.model import Kernel
from htam_core.types.profile import Profile

__all__ = ["ProfileCache", "ProfileEntry", "ProfileView", "Stage", "StagesFn", "content_hash"]

_revisions = itertools.count(1)


def content_hash(kernel: Kernel) -> str:
    """Hash (16 hex digits) of what a profile of ``kernel`` depends on in its file: its text and the
    configurations of its launch sites. Editing another kernel does not change it (the kernel's *version*)."""
    h = hashlib.sha256(kernel.text.encode("utf-8", errors="surrogatepass"))
    for s in kernel.launch_sites:
        h.update(repr(sorted((s.resolved_config or s.config).items())).encode())
    return h.hexdigest()[:16]


@dataclass
class ProfileEntry:
    """The last profile (or profile failure) of one kernel.

    Attributes:
        path, kernel: file and kernel key (:attr:`~htam_core.source.model.Kernel.key`).
        content_hash: :func:`content_hash` of the kernel that was profiled.
        profile: the profile, or ``None`` when it failed.
        error: why profiling failed (one line), or ``None``.
        details: the tool's diagnostic lines for a failure.
        finished: epoch seconds when it finished.
        source: ``"disk"`` (the saved file) or ``"buffer"`` (unsaved editor text, static only).
        stage: which stage made it (``"profile"`` for a one-stage profile function; the :class:`Stage` name
            otherwise).
        pending: what the later stages still add (``"Nsight Compute counters"``), or ``None`` for the last.
        revision: set by :meth:`ProfileCache.publish`; increases with every published entry.
        inline: published by :meth:`ProfileCache.publish_first` (a first stage made by a request, outside any job):
            the job started next runs only the later stages, and answers its ``on_first`` with this entry.
    """

    path: str
    kernel: str
    content_hash: str
    profile: Profile | None = None
    error: str | None = None
    details: list[str] = field(default_factory=list)
    finished: float = 0.0
    source: str = "disk"
    stage: str = "profile"
    pending: str | None = None
    revision: int = 0
    inline: bool = False


@dataclass
class ProfileView:
    """What is known about a kernel's profile right now.

    Attributes:
        entry: the last finished profile (or failure), or ``None``.
        stale: the kernel changed since ``entry`` was made.
        running: a profile of the kernel is queued or running.
    """

    entry: ProfileEntry | None
    stale: bool
    running: bool

    @property
    def profile(self) -> Profile | None:
        """The profile, or ``None``."""
        return self.entry.profile if self.entry is not None else None

    @property
    def static(self) -> bool:
        """The known profile is static (no GPU measurement)."""
        p = self.profile
        return p is not None and p.mode != "gpu"

    @property
    def revision(self) -> int:
        """The entry's revision (0 without an entry)."""
        return self.entry.revision if self.entry is not None else 0

    @property
    def unfinished(self) -> bool:
        """Nothing is profiling the kernel, and it has no profile of its current version, or only an earlier
        stage of one (:attr:`ProfileEntry.pending` set: the source-only stage published at once by the first
        request, or a job that stopped after its first stage): a profile should be queued."""
        if self.running:
            return False
        return self.entry is None or (not self.stale and self.entry.pending is not None)


@dataclass
class Stage:
    """One stage of a staged profile.

    Attributes:
        name: the stage (``"timer"``, ``"counters"``, ``"source"``, ``"compiled"``).
        profile: what the stage knows.
        source: ``"disk"`` or ``"buffer"`` (see :attr:`ProfileEntry.source`).
        pending: what later stages still add (shown with the profile), or ``None`` when this is the last.
    """

    name: str
    profile: Profile
    source: str
    pending: str | None = None


@dataclass
class _Job:
    key: tuple[str, str]
    content_hash: str
    cancel: threading.Event = field(default_factory=threading.Event)
    future: Future | None = None
    timer: threading.Timer | None = None
    waiters: list[Callable[[ProfileEntry], None]] = field(default_factory=list)
    first_waiters: list[Callable[[ProfileEntry], None]] = field(default_factory=list)


#: ``profile_now(path, kernel key, editor text, file language) -> (Profile, source)``; raises on failure.
ProfileFn = Callable[[str, str, str, str], tuple[Profile, str]]
#: ``stages(path, kernel key, editor text, file language, cancelled) -> iterator of Stage``: each ``next`` runs
#: one stage (raising on failure); ``cancelled()`` says the job was cancelled (a long stage may stop early).
StagesFn = Callable[[str, str, str, str, Callable[[], bool]], Iterator[Stage]]


class ProfileCache:
    """Profiles per kernel, made on one background thread.

    Args:
        profile_now: the function that profiles in one stage (see :data:`ProfileFn`); it runs on the profile
            thread.
        stages: instead, the staged profile function (see :data:`StagesFn`).

    Thread safety: every method may be called from any thread.
    """

    def __init__(self, profile_now: ProfileFn | None = None, *, stages: StagesFn | None = None) -> None:
        if (profile_now is None) == (stages is None):
            raise ValueError("ProfileCache needs exactly one of profile_now and stages")
        self._stages: StagesFn = stages if stages is not None else _one_stage(profile_now)  # type: ignore[arg-type]
        self._lock = threading.RLock()
        self._entries: dict[tuple[str, str], ProfileEntry] = {}
        self._jobs: dict[tuple[str, str], _Job] = {}
        self._listeners: list[Callable[[ProfileEntry], None]] = []
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="htam-profile")
        #: one line about the last finished profile (``"name: 0.12 ms (H200)"``), for the status bar
        self.last: str | None = None

    @property
    def busy(self) -> bool:
        """A profile is queued or running."""
        with self._lock:
            return bool(self._jobs)

    def subscribe(self, listener: Callable[[ProfileEntry], None]) -> None:
        """Call ``listener(entry)`` (on the publishing thread) after every :meth:`publish`."""
        with self._lock:
            self._listeners.append(listener)

    def entry(self, path: str, kernel_key: str) -> ProfileEntry | None:
        """The last published entry of the kernel whose :attr:`~htam_core.source.model.Kernel.key` is
        ``kernel_key``, or ``None``."""
        with self._lock:
            return self._entries.get((path, kernel_key))

    def view(self, path: str, kernel: Kernel) -> ProfileView:
        """What is known about ``kernel``'s profile (never waits)."""
        key = (path, kernel.key)
        with self._lock:
            entry = self._entries.get(key)
            running = key in self._jobs
        stale = entry is not None and entry.content_hash != content_hash(kernel)
        return ProfileView(entry, stale, running)

    def publish(self, entry: ProfileEntry, *, _last_of: _Job | None = None,
                _unless: Callable[[ProfileEntry | None], bool] | None = None) -> ProfileEntry | None:
        """Store ``entry`` as the kernel's latest profile (any stage), give it a new revision and tell the
        listeners. Returns the entry. (``_last_of``: the job whose last stage this is; it ends in the same step,
        so listeners see the kernel as no longer profiling. ``_unless(current entry)``: checked in the same
        step; when true nothing is published and ``None`` is returned.)"""
        key = (entry.path, entry.kernel)
        with self._lock:
            if _unless is not None and _unless(self._entries.get(key)):
                return None
            entry.revision = next(_revisions)
            self._entries[key] = entry
            if _last_of is not None:
                self._finish(_last_of)
            listeners = list(self._listeners)
        p = entry.profile
        t = (f"{p.time_ms.median:.3g} ms" if p.time_ms else "static") if p is not None else None
        self.last = f"{entry.kernel}: {t} ({p.device})" if p is not None else f"{entry.kernel}: failed"
        for listener in listeners:
            listener(entry)
        return entry

    def publish_first(self, path: str, kernel: Kernel, stage: Stage) -> ProfileEntry | None:
        """Publish ``stage`` as the first stage of ``kernel``'s profile, made by the caller outside any job (the
        editor's source-only stage, computed in the request that first asks about the kernel), unless the kernel
        already has a profile of this version or one is queued or running (a job's own stages win). A later
        :meth:`start` runs the remaining stages.

        Returns:
            the published entry, or ``None`` when nothing was published.
        """
        chash, key = content_hash(kernel), (path, kernel.key)
        new = ProfileEntry(path, kernel.key, chash, stage.profile, finished=time.time(), source=stage.source,
                           stage=stage.name, pending=stage.pending, inline=True)
        return self.publish(new, _unless=lambda cur: key in self._jobs or (cur is not None
                                                                            and cur.content_hash == chash))

    def start(self, path: str, kernel: Kernel, text: str, file_language: str, *, force: bool = False,
              on_done: Callable[[ProfileEntry], None] | None = None,
              after: Callable[[ProfileEntry], None] | None = None, delay: float = 0.0,
              on_first: Callable[[ProfileEntry], None] | None = None) -> bool:
        """Queue a background profile of ``kernel`` from the editor text ``text``.

        Nothing is queued when a profile of this exact content is running or finished its last stage (unless
        ``force``); an earlier stage alone (:meth:`publish_first`) does not count as finished.
        A queued or running profile of other content of the same kernel is cancelled (its result dropped).

        Args:
            path: the file's path on disk; text: the editor's text of the whole file; file_language:
                ``"cuda"`` or ``"python"``.
            on_done: called on the profile thread with the entry of the last stage (or of a failed stage); when
                this job is superseded by a newer one, with the newer job's entry instead.
            after: called before ``on_done`` with that entry, even when the job was superseded (used to
                record an applied step's outcome).
            on_first: called with the entry of the first stage that is published (or of the failure), as
                ``on_done`` is (``htam.profile`` answers with it while the later stages run); at once, on the
                calling thread, when that stage is the kernel's :attr:`ProfileEntry.inline` entry of this version.
            delay: seconds to wait before queueing (debounce): a newer request for the kernel within it
                replaces this one.

        Returns:
            whether a profile was queued.
        """
        key = (path, kernel.key)
        chash = content_hash(kernel)
        with self._lock:
            old = self._jobs.get(key)
            if old is not None and old.content_hash == chash and not force and after is None:
                if on_done is not None:
                    old.waiters.append(on_done)
                if on_first is not None:
                    old.first_waiters.append(on_first)
                return False
            entry = self._entries.get(key)
            if (old is None and entry is not None and entry.content_hash == chash and entry.pending is None
                    and not force and after is None):
                return False
            job = _Job(key, chash)
            if old is not None:  # stale work: dropped; whoever waited for it gets this newer profile
                self._cancel(old)
                job.waiters.extend(old.waiters)
                job.first_waiters.extend(old.first_waiters)
                old.waiters.clear()
                old.first_waiters.clear()
            if on_done is not None:
                job.waiters.append(on_done)
            first_now = entry is not None and entry.inline and entry.content_hash == chash
            if on_first is not None and not first_now:
                job.first_waiters.append(on_first)
            self._jobs[key] = job
            gen = self._stages(path, kernel.key, text, file_language, job.cancel.is_set)
            if delay > 0:
                job.timer = threading.Timer(delay, self._submit, (job, gen, after))
                job.timer.daemon = True
                job.timer.start()
        if on_first is not None and first_now:  # its first stage is already out: the job adds the later ones
            on_first(entry)
        if delay <= 0:
            self._submit(job, gen, after)
        return True

    def _submit(self, job: _Job, gen: Iterator[Stage], after: Callable[[ProfileEntry], None] | None) -> None:
        try:
            job.future = self._executor.submit(self._step, job, gen, after)
        except RuntimeError:  # closed
            self._finish(job)

    def _cancel(self, job: _Job) -> None:
        job.cancel.set()
        if job.timer is not None:
            job.timer.cancel()
            if job.future is None:  # never queued: it ends here
                self._finish(job)

    def _finish(self, job: _Job) -> None:
        with self._lock:
            if self._jobs.get(job.key) is job:
                del self._jobs[job.key]

    def cancel_changed(self, path: str, kernels: list[Kernel]) -> int:
        """Cancel the queued or running profiles of ``path``'s kernels whose version is no longer the one being
        profiled (the kernel was edited, or is gone from ``kernels``). Returns how many were cancelled."""
        current = {k.key: content_hash(k) for k in kernels}
        with self._lock:
            stale = [j for (p, name), j in self._jobs.items()
                     if p == path and current.get(name) != j.content_hash and not j.cancel.is_set()]
            for job in stale:
                self._cancel(job)
        return len(stale)

    def _step(self, job: _Job, gen: Iterator[Stage], after: Callable[[ProfileEntry], None] | None) -> None:
        """Run one stage of ``job`` on the profile thread, publish it and queue the next one."""
        more = False
        try:
            if job.cancel.is_set() and after is None:
                return
            path, name = job.key
            entry = ProfileEntry(path, name, job.content_hash)
            try:
                st = next(gen, None)
                if st is None:
                    return
                entry.profile, entry.source, entry.stage, entry.pending = st.profile, st.source, st.name, st.pending
            except Exception as exc:  # ProfileError, SourceError, a worker failure: shown, never raised
                lines = str(exc).splitlines()
                entry.error = (lines[0] if lines else type(exc).__name__)[:500]
                entry.details = list(getattr(exc, "details", []) or lines[1:])[:30]
                entry.profile = self._keep_earlier(job, entry)
            entry.finished = time.time()
            more = entry.error is None and entry.pending is not None
            cancelled = job.cancel.is_set()
            if cancelled and after is None:  # stale: dropped, later stages never start
                more = False
                return
            if not more and after is not None:
                after(entry)
            if not cancelled:
                self.publish(entry, _last_of=None if more else job)
                with self._lock:
                    firsts, job.first_waiters = list(job.first_waiters), []
                for w in firsts:
                    w(entry)
            if more:
                self._submit(job, gen, after)
                return
            if cancelled:
                return
            with self._lock:
                waiters, job.waiters = list(job.waiters), []
            for w in waiters:
                w(entry)
        finally:
            if not more:
                gen.close()
                self._finish(job)

    def _keep_earlier(self, job: _Job, entry: ProfileEntry) -> Profile | None:
        """A later stage failed: keep the earlier stage's profile of the same version, with the failure as a
        warning (``None`` when the first stage failed)."""
        with self._lock:
            prev = self._entries.get(job.key)
        if prev is None or prev.content_hash != job.content_hash or prev.profile is None or prev.pending is None:
            return None
        import copy

        p = copy.deepcopy(prev.profile)
        p.warnings.insert(0, f"{prev.pending} not collected: {entry.error}")
        entry.error = None
        return p

    def blocking(self, path: str, kernel: Kernel, text: str, file_language: str,
                 timeout: float | None = None) -> ProfileEntry | None:
        """Queue a forced profile and wait for it (for callers off the event loop); ``None`` on timeout."""
        done: Future = Future()
        self.start(path, kernel, text, file_language, force=True, on_done=done.set_result)
        try:
            return done.result(timeout)
        except Exception:  # noqa: BLE001 - timeout or cancelled: the caller says "not finished"
            return None

    def close(self) -> None:
        """Cancel queued profiles and stop the profile thread."""
        with self._lock:
            for job in list(self._jobs.values()):
                self._cancel(job)
        self._executor.shutdown(wait=False, cancel_futures=True)


def _one_stage(profile_now: ProfileFn) -> StagesFn:
    """A one-stage :data:`StagesFn` (``stage="profile"``) from a :data:`ProfileFn`."""
    def stages(path: str, name: str, text: str, file_language: str, cancelled: Callable[[], bool]) -> Iterator[Stage]:
        profile, source = profile_now(path, name, text, file_language)
        yield Stage("profile", profile, source)

    return stages


def read_disk(path: str) -> str | None:
    """The saved file's text, or ``None`` when it cannot be read as UTF-8."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
