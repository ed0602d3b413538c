"""Engine-side state of one editor session: the logic the language server's handlers delegate to.

This module never imports pygls or lsprotocol. It keeps

* a **profile cache** per kernel, keyed by ``(file path, kernel name)`` and tagged with the content hash of
  the kernel it was made from (:func:`content_hash`: the kernel's text plus its launch configurations), so
  that a lookup with the current text says whether the profile is **stale**; whether it is **static**
  comes from :attr:`htam_core.types.profile.Profile.mode`;
* the **history** of applied steps per kernel fingerprint (:func:`kernel_fingerprint`: the file path and the
  kernel name, so that the identity survives the edits it records), seeded from the memory store's records;
* the HTAM **ranker** over the memory store (:class:`htam_core.memory.Ranker`), with rankings cached until
  the store, the history or the profile change;
* **resolution** of a ranked step into an edit: the strategy's mechanical transform through
  :func:`htam_core.transforms.registry.propose` (engine ``rules``) or the LLM generator (engine ``llm``);
* **recording** an applied step: the kernel is re-profiled in the background and the outcome is stored as a
  transition in memory (measured on a GPU; unmeasured when only a static profile exists).

Profiles run on one background thread (one GPU at a time); every compile or run of kernel code happens in the
profiler's worker processes (:mod:`htam_core.runtime.worker`). A new profile request for a kernel cancels
a queued or running stale request for the same kernel (a running compile finishes, its result is dropped).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_core.memory.fingerprint import kernel_fingerprint
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms.base import TextEdit
from htam_core.types.profile import Profile

__all__ = [
    "AppliedStep", "ProfileEntry", "ProfileView", "Resolution", "Session", "content_hash", "kernel_fingerprint",
    "minimal_edit", "outcome_of",
]

#: Relative time change under which an applied step counts as neutral (measurement noise), 2%.
NEUTRAL_BAND = 0.02


def content_hash(kernel: Kernel) -> str:
    """Hash (16 hex digits) of what a profile of ``kernel`` depends on in its file: its text and the
    configurations of its launch sites. Editing another kernel does not change it."""
    h = hashlib.sha256(kernel.text.encode("utf-8", errors="surrogatepass"))
    for s in kernel.launch_sites:
        h.update(repr(sorted((s.resolved_config or s.config).items())).encode())
    return h.hexdigest()[:16]


def minimal_edit(old: str, new: str) -> TextEdit:
    """One byte-offset :class:`TextEdit` turning ``old`` into ``new``: the span between their common prefix
    and common suffix (never splitting a UTF-8 character), so that an editor applies one small change."""
    a = old.encode("utf-8", errors="surrogatepass")
    b = new.encode("utf-8", errors="surrogatepass")
    n = min(len(a), len(b))
    p = 0
    while p < n and a[p] == b[p]:
        p += 1
    while p > 0 and p < len(a) and (a[p] & 0xC0) == 0x80:
        p -= 1
    s = 0
    while s < n - p and a[len(a) - 1 - s] == b[len(b) - 1 - s]:
        s += 1
    while s > 0 and (a[len(a) - s] & 0xC0) == 0x80:
        s -= 1
    return TextEdit(p, len(a) - s, b[p:len(b) - s].decode("utf-8", errors="surrogatepass"))


@dataclass
class ProfileEntry:
    """The last profile (or profile failure) of one kernel.

    Attributes:
        path, kernel: file and kernel name.
        content_hash: :func:`content_hash` of the kernel that was profiled.
        profile: the profile, or ``None`` when it failed.
        error: why profiling failed (one line), or ``None``.
        details: the tool's diagnostic lines for a failure.
        finished: epoch seconds when it finished.
        source: ``"disk"`` (the saved file) or ``"buffer"`` (unsaved editor text, static only).
    """

    path: str
    kernel: str
    content_hash: str
    profile: Profile | None = None
    error: str | None = None
    details: list[str] = field(default_factory=list)
    finished: float = 0.0
    source: str = "disk"


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


@dataclass
class AppliedStep:
    """One step applied to a kernel, with its outcome once known.

    Attributes:
        step, direction, title: strategy id, direction id, display title.
        time: epoch seconds when it was applied.
        outcome: the recorded :class:`htam_core.memory.Outcome`, or ``None`` while pending.
        pending: why the outcome is not known yet (``"profiling"``, ``"waiting for save"``), or ``None``.
    """

    step: str
    direction: str
    title: str
    time: float
    outcome: Any = None
    pending: str | None = None


@dataclass
class Resolution:
    """A ranked step turned into an edit, or the reason it cannot be.

    Attributes:
        ok: an edit exists.
        edits: byte-offset edits on the model's text (one per change).
        new_text: the whole file after the edits.
        description: what the edit does.
        reason: why there is no edit (shown to the user), when not ``ok``.
        params: the transform's parameters, or the LLM call's metadata.
    """

    ok: bool
    edits: list[TextEdit] = field(default_factory=list)
    new_text: str | None = None
    description: str = ""
    reason: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


def outcome_of(before: Profile | None, after: Profile | None, error: str | None) -> Any:
    """The :class:`htam_core.memory.Outcome` of one applied step from the profiles before and after it.

    * the new kernel failed to compile or run (``error``): ``failed``;
    * the GPU check found it incorrect (``after.extra["correctness"]["correct"]`` false): ``incorrect``;
    * both profiles measured on a GPU: speedup ``before.median / after.median``; ``win`` above +2%,
      ``loss`` below -2%, else ``neutral``;
    * otherwise: ``neutral`` with no speedup, ``measured=False`` (it counts as a trial, not as evidence).
    """
    from htam_core.memory import Outcome

    if error is not None or after is None:
        return Outcome(None, False, False, "failed", (error or "no profile after the step")[:300])
    corr = after.extra.get("correctness") if isinstance(after.extra, dict) else None
    if isinstance(corr, dict) and corr.get("correct") is False:
        sp = None
        if before is not None and before.time_ms and after.time_ms and after.time_ms.median > 0:
            sp = before.time_ms.median / after.time_ms.median
        return Outcome(sp, False, True, "incorrect", "the GPU check against the reference failed")
    measured = (before is not None and before.mode == "gpu" and before.time_ms is not None
                and after.mode == "gpu" and after.time_ms is not None and after.time_ms.median > 0)
    if measured:
        assert before is not None and before.time_ms is not None and after.time_ms is not None
        sp = before.time_ms.median / after.time_ms.median
        status = "win" if sp > 1 + NEUTRAL_BAND else "loss" if sp < 1 - NEUTRAL_BAND else "neutral"
        note = f"{before.time_ms.median:.4g} ms -> {after.time_ms.median:.4g} ms on {after.device}"
        if corr is None:
            note += "; correctness not checked (no reference)"
        return Outcome(sp, True, True, status, note)
    why = "no GPU profile before the step" if before is None or before.mode != "gpu" else "static profile after"
    return Outcome(None, True, False, "neutral", f"not measured ({why}); correctness not checked")


def _gpu_name(index: int) -> str | None:
    """Name of GPU ``index`` from ``nvidia-smi`` (no CUDA context in this process), or ``None``."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=name", "--format=csv,noheader", "-i", str(index)],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    name = out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
    return name or None


@dataclass
class _Job:
    key: tuple[str, str]
    content_hash: str
    cancel: threading.Event = field(default_factory=threading.Event)
    future: Future | None = None
    waiters: list[Callable[[ProfileEntry], None]] = field(default_factory=list)


class Session:
    """The engine state behind one language-server session.

    Args:
        memory_path: the memory store file (``None``: ``$HTAM_MEMORY`` or the user data dir).
        engine: ``"rules"`` or ``"llm"``.
        llm: :class:`htam_core.generate.config.LLMConfig` for the LLM engine, or ``None``.
        gpu_index: GPU used for profiling.
        static: profile statically even when a GPU is present.
        target: compute capability of static profiles (``"sm_90"``).

    Thread safety: every public method may be called from any thread; memory access is serialized.
    """

    def __init__(self, *, memory_path: str | None = None, engine: str = "rules", llm: Any = None,
                 gpu_index: int = 0, static: bool = False, target: str = "sm_90") -> None:
        self.memory_path = memory_path
        self.engine = engine
        self.llm = llm
        self.gpu_index = gpu_index
        self.static = static
        self.target = target
        self.kb: Any = None
        self.store: Any = None
        self.ranker: Any = None
        self.memory_error: str | None = None
        self.gpu: str | None = None
        self._ready = threading.Event()
        self._lock = threading.RLock()  # profile cache, jobs, history
        self._mem = threading.RLock()  # store and ranker (one SQLite connection)
        self._profiles: dict[tuple[str, str], ProfileEntry] = {}
        self._jobs: dict[tuple[str, str], _Job] = {}
        self._history: dict[str, list[AppliedStep]] = {}
        self._pending_save: dict[str, list[Callable[[], None]]] = {}
        self._rank_cache: dict[tuple, list[Any]] = {}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="htam-profile")
        self.last_profile: str | None = None

    # ---- lifecycle --------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """:meth:`warm_up` has finished (the knowledge base, memory and ranker are loaded)."""
        return self._ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until :meth:`warm_up` has finished; returns whether it did within ``timeout`` seconds."""
        return self._ready.wait(timeout)

    def warm_up(self) -> None:
        """Load the knowledge base, open the memory store, build the ranker (imports torch: seconds when
        cold), seed the histories from the stored records and look for the GPU. Call it off the event loop.

        A store that cannot be opened leaves the ranker on the priors only and sets :attr:`memory_error`.
        """
        try:
            self._open_memory()
            self.gpu = None if self.static else _gpu_name(self.gpu_index)
        finally:
            self._ready.set()

    def _open_memory(self) -> None:
        from htam_core.memory import MemoryStoreError, Ranker, load_knowledge, open_store

        with self._mem:
            if self.kb is None:
                self.kb = load_knowledge()
            if self.store is not None:
                self.store.close()
            self.store, self.memory_error = None, None
            try:
                self.store = open_store(self.memory_path, kb=self.kb)
            except MemoryStoreError as exc:
                self.memory_error = str(exc)
            self.ranker = Ranker(self.kb, self.store)
            self._rank_cache.clear()
            history: dict[str, list[AppliedStep]] = {}
            if self.store is not None:
                for r in self.store.records():
                    title = self.kb.strategy(r.step).title if self.kb.has_strategy(r.step) else r.step
                    history.setdefault(r.fingerprint, []).append(
                        AppliedStep(r.step, r.direction, title, r.time, r.outcome))
        with self._lock:
            self._history = history

    def configure(self, *, memory_path: str | None = None, engine: str | None = None, llm: Any = None,
                  gpu_index: int | None = None, static: bool | None = None) -> None:
        """Apply new settings; a new memory path reopens the store (call off the event loop)."""
        reopen = memory_path != self.memory_path
        self.memory_path = memory_path
        if engine is not None:
            self.engine = engine
        if llm is not None:
            self.llm = llm
        if gpu_index is not None and gpu_index != self.gpu_index:
            self.gpu_index = gpu_index
            self.gpu = None if self.static else _gpu_name(gpu_index)
        if static is not None and static != self.static:
            self.static = static
            self.gpu = None if static else _gpu_name(self.gpu_index)
        if reopen and self.ready:
            self._open_memory()

    def close(self) -> None:
        """Cancel queued profiles, stop the profile thread and close the store."""
        with self._lock:
            for job in self._jobs.values():
                job.cancel.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._mem:
            if self.store is not None:
                self.store.close()
                self.store = None

    @property
    def busy(self) -> bool:
        """A profile is queued or running."""
        with self._lock:
            return bool(self._jobs)

    # ---- profiles -----------------------------------------------------------------------------------
    def profile_view(self, path: str, kernel: Kernel) -> ProfileView:
        """What is known about ``kernel``'s profile (never waits)."""
        key = (path, kernel.name)
        with self._lock:
            entry = self._profiles.get(key)
            running = key in self._jobs
        stale = entry is not None and entry.content_hash != content_hash(kernel)
        return ProfileView(entry, stale, running)

    def start_profile(self, path: str, kernel: Kernel, text: str, file_language: str, *, force: bool = False,
                      on_done: Callable[[ProfileEntry], None] | None = None,
                      after: Callable[[ProfileEntry], None] | None = None) -> bool:
        """Queue a background profile of ``kernel`` from the editor text ``text``.

        Nothing is queued when a profile of this exact content exists or is running (unless ``force``).
        A queued or running profile of other content of the same kernel is cancelled (its result dropped).

        Args:
            path: the file's path on disk; text: the editor's text of the whole file; file_language:
                ``"cuda"`` or ``"python"``.
            on_done: called on the profile thread with the new entry; when this job is superseded by a newer
                one, with the newer job's entry instead.
            after: called before ``on_done`` with the entry (used to record an applied step's outcome).

        Returns:
            whether a profile was queued.
        """
        key = (path, kernel.name)
        chash = content_hash(kernel)
        with self._lock:
            old = self._jobs.get(key)
            if old is not None and old.content_hash == chash and not force and after is None:
                if on_done is not None:
                    old.waiters.append(on_done)
                return False
            entry = self._profiles.get(key)
            if old is None and entry is not None and entry.content_hash == chash and not force and after is None:
                return False
            job = _Job(key, chash)
            if old is not None:  # stale work: dropped; whoever waited for it gets this newer profile
                old.cancel.set()
                job.waiters.extend(old.waiters)
                old.waiters.clear()
            if on_done is not None:
                job.waiters.append(on_done)
            self._jobs[key] = job
        job.future = self._executor.submit(self._run_profile, job, path, kernel.name, text, file_language, after)
        return True

    def _profile_now(self, path: str, name: str, text: str, file_language: str) -> tuple[Profile, str]:
        """Profile the kernel: the saved file when ``text`` equals it (GPU when present), else the buffer
        statically. Raises ProfileError (or SourceError) on failure."""
        from htam_core.profile.api import profile_kernel, static_profile
        from htam_core.source import parse_text

        on_disk = None
        try:
            on_disk = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass
        if on_disk == text:
            return profile_kernel(path, name, static=True if self.static else None, target=self.target,
                                  gpu_index=self.gpu_index), "disk"
        model = parse_text(text, file_language, path)  # type: ignore[arg-type]
        p = static_profile(model, name, self.target)
        if self.gpu is not None:
            p.warnings.insert(0, "the file has unsaved changes: static profile of the editor text; save the file "
                                 "to measure it on the GPU")
        return p, "buffer"

    def _run_profile(self, job: _Job, path: str, name: str, text: str, file_language: str,
                     after: Callable[[ProfileEntry], None] | None) -> None:
        try:
            if job.cancel.is_set() and after is None:
                return
            entry = ProfileEntry(path, name, job.content_hash)
            try:
                entry.profile, entry.source = self._profile_now(path, name, text, file_language)
            except Exception as exc:  # ProfileError, SourceError, a worker failure: shown, never raised
                lines = str(exc).splitlines()
                entry.error = (lines[0] if lines else type(exc).__name__)[:500]
                entry.details = list(getattr(exc, "details", []) or lines[1:])[:30]
            entry.finished = time.time()
            if after is not None:
                after(entry)
            if job.cancel.is_set():
                return
            with self._lock:
                self._profiles[job.key] = entry
                self._rank_cache.clear()
            p = entry.profile
            if p is not None:
                t = f"{p.time_ms.median:.3g} ms" if p.time_ms else "static"
                self.last_profile = f"{name}: {t} ({p.device})"
            else:
                self.last_profile = f"{name}: failed"
            with self._lock:
                waiters, job.waiters = list(job.waiters), []
            for w in waiters:
                w(entry)
        finally:
            with self._lock:
                if self._jobs.get(job.key) is job:
                    del self._jobs[job.key]

    def profile_blocking(self, path: str, kernel: Kernel, text: str, file_language: str,
                         timeout: float | None = None) -> ProfileEntry | None:
        """Queue a forced profile and wait for it (for commands that run off the event loop)."""
        done: Future = Future()
        self.start_profile(path, kernel, text, file_language, force=True, on_done=done.set_result)
        try:
            return done.result(timeout)
        except Exception:  # noqa: BLE001 - timeout or cancelled: the caller says "not finished"
            return None

    # ---- history and ranking ------------------------------------------------------------------------
    def history(self, path: str, kernel_name: str) -> list[AppliedStep]:
        """Applied steps of the kernel, oldest first (a copy)."""
        with self._lock:
            return list(self._history.get(kernel_fingerprint(path, kernel_name), []))

    def rank(self, path: str, kernel: Kernel, profile: Profile | None, top: int = 5) -> list[Any]:
        """Rank the next steps of ``kernel`` (:class:`htam_core.memory.RankedStep` list, best first).

        Cached per kernel content, profile, history and store contents. Requires :meth:`warm_up`.
        """
        from htam_core.memory import state_from_profile

        if not self.ready:
            return []
        fp = kernel_fingerprint(path, kernel.name)
        prefix = tuple(s.step for s in self.history(path, kernel.name))
        with self._mem:
            mark = self.store.high_water() if self.store is not None else ()
            key = (fp, content_hash(kernel), id(profile), prefix, mark, top, kernel.language,
                   kernel.incomplete)
            hit = self._rank_cache.get(key)
            if hit is not None:
                return hit
            steps = self.ranker.rank(state_from_profile(profile), list(prefix), kernel.features, kernel.language,
                                     profile, top=top, kernel=kernel)
            if len(self._rank_cache) > 256:
                self._rank_cache.clear()
            self._rank_cache[key] = steps
            return steps

    def strategy(self, step_id: str) -> Any:
        """The knowledge base's strategy ``step_id``.

        Raises:
            KeyError: unknown id.
        """
        if self.kb is None or not self.kb.has_strategy(step_id):
            raise KeyError(f"unknown strategy {step_id!r}")
        return self.kb.strategy(step_id)

    # ---- resolution ---------------------------------------------------------------------------------
    def resolve(self, model: SourceModel, kernel: Kernel, step_id: str, profile: Profile | None,
                evidence: str = "") -> Resolution:
        """Turn the ranked step ``step_id`` into an edit of ``model`` (blocking: call off the event loop).

        Engine ``rules``: the strategy's mechanical transform (first validated candidate). Engine ``llm``:
        the LLM generator with the strategy's guidance and ``evidence`` as a transition hint; its reply must
        parse and keep the kernel. Never raises for a step that cannot be made: ``Resolution.reason`` says why.
        """
        try:
            strat = self.strategy(step_id)
        except KeyError as exc:
            return Resolution(False, reason=str(exc.args[0]))
        if kernel.incomplete or model.stale:
            return Resolution(False, reason=f"{kernel.name} does not parse yet (it is incomplete); finish it first")
        if self.engine == "llm":
            return self._resolve_llm(model, kernel, strat, profile, evidence)
        if not strat.transform:
            return Resolution(False, reason=f"“{strat.title}” has no mechanical transform, so the rules engine "
                                            "cannot write it. Set htam.engine to \"llm\" to have a model write "
                                            "it, or apply it by hand: " + strat.guidance.split(". ")[0].strip())
        from htam_core.transforms import registry

        try:
            result = registry.propose(strat.transform, model, kernel, profile)
        except KeyError as exc:
            return Resolution(False, reason=str(exc.args[0]))
        if not result:
            return Resolution(False, reason=f"“{strat.title}” does not apply to {kernel.name}: "
                                            f"{getattr(result, 'reason', 'not applicable')}")
        cand = result[0]
        params = dict(cand.params)
        params.update(transform_id=cand.transform_id, changes_numerics=cand.changes_numerics)
        return Resolution(True, list(cand.edits), cand.new_text, cand.description, None, params)

    def _resolve_llm(self, model: SourceModel, kernel: Kernel, strat: Any, profile: Profile | None,
                     evidence: str) -> Resolution:
        from htam_core.generate.config import LLMConfig
        from htam_core.generate.errors import GenerationError
        from htam_core.generate.registry import GenerationRequest, create
        from htam_core.runtime.cache import cache_root
        from htam_core.source import parse_text

        config = self.llm if self.llm is not None else LLMConfig()
        direction = self.kb.direction(strat.direction)
        request = GenerationRequest(
            kernel_text=model.text, language=kernel.language, kernel_name=kernel.name, profile=profile,
            direction={"name": direction.name, "description": direction.description},
            strategies=[{"id": strat.id, "name": strat.title, "guidance": strat.guidance,
                         "example_before": strat.before, "example_after": strat.after, "risk": strat.risk,
                         "transform": strat.transform}],
            transition_hints=[evidence] if evidence else [])
        try:
            gen = create("llm", config=config, log_dir=cache_root() / "llm")
            cands = gen.propose(request)
        except GenerationError as exc:
            return Resolution(False, reason=f"the LLM could not write “{strat.title}”: {exc}")
        if not cands:
            return Resolution(False, reason=f"the LLM reply for “{strat.title}” held no code")
        code = cands[0].code
        if code == model.text:
            return Resolution(False, reason=f"the LLM returned the file unchanged for “{strat.title}”")
        new_model = parse_text(code, model.file_language, model.path)
        if not any(k.name == kernel.name and not k.incomplete for k in new_model.kernels):
            return Resolution(False, reason=f"the LLM's version of the file no longer holds a complete kernel "
                                            f"{kernel.name}; nothing was changed")
        edit = minimal_edit(model.text, code)
        return Resolution(True, [edit], code, cands[0].description, None, dict(cands[0].params))

    # ---- recording ----------------------------------------------------------------------------------
    def record_applied(self, path: str, kernel: Kernel, step_id: str, text: str, file_language: str, *,
                       before_hash: str | None = None, saved: bool = True,
                       on_done: Callable[[AppliedStep, ProfileEntry | None], None] | None = None) -> AppliedStep:
        """Note that ``step_id`` was applied to ``kernel`` (``text``: the file after the edit) and record the
        outcome in memory once the kernel is re-profiled in the background.

        The profile before the step is the cached one whose content hash is ``before_hash`` (the kernel as
        the code action saw it); without it the outcome is unmeasured. With a GPU and unsaved text
        (``saved=False``) the re-profile waits for :meth:`saved`; without a GPU the editor text is
        profiled statically right away.

        Raises:
            KeyError: unknown strategy id.
        """
        strat = self.strategy(step_id)
        fp = kernel_fingerprint(path, kernel.name)
        key = (path, kernel.name)
        with self._lock:
            entry = self._profiles.get(key)
            before = entry.profile if entry is not None and before_hash and entry.content_hash == before_hash \
                else None
            prefix = [s.step for s in self._history.get(fp, [])]
            applied = AppliedStep(step_id, strat.direction, strat.title, time.time(), None, "profiling")
            self._history.setdefault(fp, []).append(applied)
            self._rank_cache.clear()
        from htam_core.memory import state_from_profile

        state = state_from_profile(before)

        def record(new: ProfileEntry) -> None:
            outcome = outcome_of(before, new.profile, new.error)
            device = (new.profile.device if new.profile is not None else None) or (
                before.device if before is not None else f"{self.target} (static)")
            with self._mem:
                if self.store is not None:
                    try:
                        self.store.record(prefix, state, step_id, outcome, fp, device)
                    except Exception as exc:  # noqa: BLE001 - a store failure is reported, not raised
                        self.memory_error = f"could not record the step in {self.store.path}: {exc}"
                self._rank_cache.clear()
            applied.outcome, applied.pending = outcome, None
            if on_done is not None:
                on_done(applied, new)

        def go() -> None:
            self.start_profile(path, kernel, text, file_language, after=record)

        if self.gpu is not None and not saved:
            applied.pending = "waiting for save (the GPU measures the saved file)"
            with self._lock:
                self._pending_save.setdefault(path, []).append(go)
        else:
            go()
        return applied

    def saved(self, path: str) -> int:
        """The file was saved: start the re-profiles that waited for it. Returns how many started."""
        with self._lock:
            waiting = self._pending_save.pop(path, [])
        for go in waiting:
            go()
        return len(waiting)

    # ---- memory summary -----------------------------------------------------------------------------
    def memory_markdown(self, top: int = 10) -> str:
        """A Markdown summary of the HTG: record count, per-direction statistics and the strongest
        strategy transitions (edges with the largest mean log speedup, at least one valued record)."""
        import math

        if not self.ready:
            return "HTAM memory is still loading."
        with self._mem:
            if self.store is None:
                return f"**HTAM memory unavailable**: {self.memory_error or 'no store'}"
            n = self.store.count()
            dirs = self.store.node_stats("direction")
            strats = self.store.node_stats("strategy")
            edges = self.store.edge_stats("strategy")
            path = self.store.path
        kb = self.kb

        def title(sid: str) -> str:
            return "start" if sid == "<start>" else kb.strategy(sid).title if kb.has_strategy(sid) else sid

        def gain(s: Any) -> str:
            return f"{math.exp(s.mean) - 1:+.0%}" if s.n_values else "not measured"

        lines = [f"## HTAM memory: {n} record{'s' if n != 1 else ''}", "", f"Store: `{path}`", "",
                 "| Direction | trials | wins | failures | mean gain |", "|---|---|---|---|---|"]
        for d in kb.directions:
            s = dirs.get(d.id)
            if s is None:
                lines.append(f"| {d.name} | 0 | 0 | 0 | prior only |")
            else:
                lines.append(f"| {d.name} | {s.count} | {s.wins} | {s.failures} | {gain(s)} |")
        valued = [(k, s) for k, s in edges.items() if s.n_values]
        valued.sort(key=lambda kv: (-kv[1].mean, -kv[1].count))
        lines += ["", "### Strongest transitions", ""]
        if not valued:
            lines.append("No measured transition yet: apply steps on a GPU machine to learn some.")
        for (src, dst), s in valued[:top]:
            lines.append(f"- after **{title(src)}**, **{title(dst)}**: {gain(s)} mean, paid off {s.wins} of "
                         f"{s.count}" + (f", failed {s.failures}" if s.failures else ""))
        worst = [kv for kv in valued if kv[1].mean < 0][-3:]
        if worst:
            lines += ["", "### Transitions that hurt", ""]
            for (src, dst), s in reversed(worst):
                lines.append(f"- after **{title(src)}**, **{title(dst)}**: {gain(s)} mean over {s.count}")
        tried = sorted(strats.items(), key=lambda kv: -kv[1].count)[:top]
        if tried:
            lines += ["", "### Most tried strategies", ""]
            lines += [f"- {title(k)}: {s.count} trials, {s.wins} wins, {gain(s)}" for k, s in tried]
        return "\n".join(lines) + "\n"
