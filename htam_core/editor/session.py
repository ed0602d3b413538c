"""The engine state behind one language-server session: the parts of :mod:`htam_core.editor`, wired together.

This module never imports pygls or lsprotocol. :class:`Session` holds the settings (engine, LLM endpoint, GPU,
static mode), the memory (:class:`~htam_core.editor.memory.EditorMemory`), the history of applied steps
(:class:`~htam_core.editor.history.History`), the profile cache (:class:`~htam_core.editor.profiles.ProfileCache`),
the rankings (:class:`~htam_core.editor.ranking.Rankings`) and the recorder
(:class:`~htam_core.editor.record.Recorder`), and answers the server's questions through them.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

from htam_core.editor.harness import HarnessChecks
from htam_core.editor.history import AppliedStep, History
from htam_core.editor.makeable import Makeability, Plan, plan
from htam_core.editor.makeable import warm_up as warm_transforms
from htam_core.editor.memory import EditorMemory
from htam_core.editor.profiles import ProfileCache, ProfileEntry, ProfileView, Stage, content_hash, read_disk
from htam_core.editor.proposals import Proposal, Proposals, propose_step
from htam_core.editor.ranking import Analysis, Rankings
from htam_core.editor.record import Recorder
from htam_core.memory.fingerprint import kernel_fingerprint
from htam_core.runtime.children import one_shot_kwargs
from htam_core.source.model import Kernel, SourceModel
from htam_core.types.profile import Profile

__all__ = ["RANK_DEPTH", "Session"]

#: A kernel is ranked this many times deeper than the code actions it lists (at least 12 steps), so that the
#: list still holds ``top`` steps after the ones that cannot be made on this kernel are left out.
RANK_DEPTH = 3


def _depth(top: int) -> int:
    return max(12, top * RANK_DEPTH)


def _named(model: SourceModel, key: str) -> Kernel | None:
    """The kernel of ``model`` that ``key`` (a :attr:`Kernel.key`) selects, read as ``--kernel`` reads a name
    (:meth:`SourceModel.kernel`), or ``None``."""
    try:
        return model.kernel(key)
    except KeyError:
        return None


def _gpu_name(index: int) -> str | None:
    """Name of GPU ``index`` from ``nvidia-smi`` (no CUDA context in this process), or ``None``."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=name", "--format=csv,noheader", "-i", str(index)],
                             capture_output=True, text=True, timeout=10, **one_shot_kwargs())
    except (OSError, subprocess.SubprocessError):
        return None
    name = out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
    return name or None


class Session:
    """The engine state behind one language-server session.

    Args:
        memory_path: the memory store file (``None``: ``$HTAM_MEMORY`` or the user data dir).
        engine: ``"rules"`` or ``"llm"``.
        llm: :class:`htam_core.generate.config.LLMConfig` for the LLM engine, or ``None``.
        gpu_index: GPU used for profiling.
        static: profile statically even when a GPU is present.
        target: compute capability of static profiles (``"sm_90"``).

    Thread safety: every public method may be called from any thread. Methods that say "blocking" must run
    off the event loop. Call :meth:`warm_up` first (profiles of a non-static session wait for its GPU lookup).
    """

    def __init__(self, *, memory_path: str | None = None, engine: str = "rules", llm: Any = None,
                 gpu_index: int = 0, static: bool = False, target: str = "sm_90") -> None:
        self.memory_path = memory_path
        self.engine = engine
        self.llm = llm
        self.gpu_index = gpu_index
        self.static = static
        self.target = target
        self.gpu: str | None = None
        self.memory = EditorMemory()
        self.history_log = History()
        self.profiles = ProfileCache(stages=self._stages)
        self.rankings = Rankings(self.memory.rank)
        self.makeable = Makeability(self.strategy)
        #: the LLM engine's proposals per (kernel version, strategy id); the rules engine's are the verdicts'
        self.llm_proposals = Proposals(256)
        #: each kernel's harness status, found in a helper process
        self.harness = HarnessChecks()
        self.recorder = Recorder(self.profiles, self.history_log, self.memory, lambda: self.gpu is not None,
                                 lambda: f"{self.target} (static)")
        self._ready = threading.Event()
        #: :attr:`gpu` has been looked up (the first thing :meth:`warm_up` does; nothing to look up in static mode):
        #: which stages a profile has. A profile waits for it (30 s at most), the source-only stage 2 s.
        self._mode_known = threading.Event()
        if static:
            self._mode_known.set()

    # ---- lifecycle --------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """:meth:`warm_up` has finished (the knowledge base, memory and ranker are loaded)."""
        return self._ready.is_set()

    @property
    def memory_error(self) -> str | None:
        """Why the memory store is unavailable or could not be written, or ``None``."""
        return self.memory.error

    @property
    def last_profile(self) -> str | None:
        """One line about the last finished profile, or ``None``."""
        return self.profiles.last

    @property
    def busy(self) -> bool:
        """A profile is queued or running."""
        return self.profiles.busy

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until :meth:`warm_up` has finished; returns whether it did within ``timeout`` seconds."""
        return self._ready.wait(timeout)

    def warm_up(self) -> None:
        """Load the knowledge base, open the memory store, build the ranker (numpy; no torch),
        seed the histories from the stored records, look for the GPU and load the transforms and the analysis
        layer (:func:`htam_core.editor.makeable.warm_up`) (blocking).

        A store that cannot be opened leaves the ranker on the priors only and sets :attr:`memory_error`.
        """
        try:
            if not self._mode_known.is_set():
                self.look_up_gpu()
            self._open_memory()
            warm_transforms()  # the first makeable check then costs only its own transforms
        finally:
            self._ready.set()

    def look_up_gpu(self) -> None:
        """Look for the GPU (``nvidia-smi``, no CUDA context; nothing in static mode): which stages a profile has.
        The first step of :meth:`warm_up`, also callable before it: the source-only stage (:meth:`source_stage`)
        needs only this, not the memory (blocking, under a second)."""
        try:
            self.gpu = None if self.static else _gpu_name(self.gpu_index)
        finally:
            self._mode_known.set()
        self.prestart_worker()

    def prestart_worker(self) -> None:
        """With a GPU (and not in static mode): start the GPU's persistent worker now, in the background, with
        torch imported, so that the first measured hover does not pay for the process start and the imports
        (:func:`htam_core.measure.gpu.prestart_gpu_worker`). Never waits; nothing without a GPU."""
        if self.gpu is None or self.static:
            return
        # imported here, not at module level: the server's start-up imports no measurement code
        from htam_core.measure.gpu import prestart_gpu_worker

        prestart_gpu_worker(self.gpu_index)

    def _open_memory(self) -> None:
        records = self.memory.open(self.memory_path)
        self.history_log.seed(records, self.memory.title)
        self.rankings.clear()

    def configure(self, *, memory_path: str | None = None, engine: str | None = None, llm: Any = None,
                  gpu_index: int | None = None, static: bool | None = None) -> None:
        """Apply new settings; a new memory path reopens the store (blocking)."""
        reopen = memory_path != self.memory_path
        self.memory_path = memory_path
        if engine is not None:
            self.engine = engine
        if llm is not None:
            self.llm = llm
            self.llm_proposals.clear()  # another model writes other proposals
        if gpu_index is not None and gpu_index != self.gpu_index:
            self.gpu_index = gpu_index
            self.gpu = None if self.static else _gpu_name(gpu_index)
            self.prestart_worker()
        if static is not None and static != self.static:
            self.static = static
            self.gpu = None if static else _gpu_name(self.gpu_index)
            self._mode_known.set()
            self.prestart_worker()
        if reopen and self.ready:
            self._open_memory()

    def close(self) -> None:
        """Cancel queued profiles, stop the profile thread and the harness helper, and close the store."""
        self.profiles.close()
        self.harness.shutdown()
        self.memory.close()

    # ---- profiles -----------------------------------------------------------------------------------
    def profile_view(self, path: str, kernel: Kernel) -> ProfileView:
        """What is known about ``kernel``'s profile (never waits)."""
        return self.profiles.view(path, kernel)

    def start_profile(self, path: str, kernel: Kernel, text: str, file_language: str, *, force: bool = False,
                      on_done: Callable[[ProfileEntry], None] | None = None, delay: float = 0.0,
                      on_first: Callable[[ProfileEntry], None] | None = None) -> bool:
        """Queue a background profile (see :meth:`ProfileCache.start`)."""
        return self.profiles.start(path, kernel, text, file_language, force=force, on_done=on_done, delay=delay,
                                   on_first=on_first)

    def kernels_changed(self, path: str, kernels: list[Kernel]) -> int:
        """The file's kernels after an edit: cancel the profiles of kernel versions that are gone (see
        :meth:`ProfileCache.cancel_changed`). Returns how many were cancelled."""
        return self.profiles.cancel_changed(path, kernels)

    def profile_blocking(self, path: str, kernel: Kernel, text: str, file_language: str,
                         timeout: float | None = None) -> ProfileEntry | None:
        """Queue a forced profile and wait for all its stages (blocking)."""
        return self.profiles.blocking(path, kernel, text, file_language, timeout)

    def _stages(self, path: str, name: str, text: str, file_language: str,
                cancelled: Callable[[], bool]) -> Iterator[Stage]:
        """The two stages of a kernel's profile (runs on the profile thread; a stage raises ProfileError or
        SourceError on failure).

        * The saved file, with a GPU: ``timer`` (compile, the measure timer with its CUPTI cross-check, static
          resources; no Nsight Compute), then ``counters`` (Nsight Compute SOL, achieved occupancy, rules) when
          ncu can add them.
        * Otherwise (no GPU, static mode or unsaved text): ``source`` (facts, static roofline, launch
          configuration; no compile), then ``compiled`` (ptxas / Triton AOT registers, spills, occupancy). The
          ``source`` stage is left out when :meth:`source_stage` already published it for this kernel version
          (:attr:`ProfileEntry.inline`).
        """
        from htam_core.profile.api import static_profile
        from htam_core.profile.static_roofline import kernel_harness_noted, sizes_of
        from htam_core.source import load, parse_text

        self._mode_known.wait(30)  # a profile queued before warm_up looked for the GPU waits for it
        on_disk = read_disk(path) == text
        if self._measures(on_disk):
            from htam_core.harness.base import HarnessError
            from htam_core.harness.find import find_harness
            from htam_core.profile import ncu_stage
            from htam_core.profile.api import profile_on_gpu

            model = load(path)
            kernel = _named(model, name)
            try:
                harness = find_harness(path, name, model)
            except HarnessError:
                harness = None  # profile_on_gpu finds it again and says why it is missing
            p = profile_on_gpu(path, name, harness, self.gpu_index, model=model, kernel=kernel, use_ncu=False,
                               target=self.target)
            if harness is None or not ncu_stage.counters_follow(p, harness):
                yield Stage("timer", p, "disk")
                return
            p.warnings.append(ncu_stage.FOLLOW_NOTE)
            yield Stage("timer", p, "disk", pending="Nsight Compute counters")
            yield Stage("counters", ncu_stage.add_ncu_counters(p, harness, self.gpu_index, kernel=kernel,
                                                               target=self.target, text=text), "disk")
            return
        model = parse_text(text, file_language, path)  # type: ignore[arg-type]
        prev = self.profiles.entry(path, name)
        kernel = _named(model, name)
        if prev is None or not prev.inline or kernel is None or prev.content_hash != content_hash(kernel):
            yield self._source_stage(path, name, model, on_disk)  # not published at once by source_stage
        # the compile's sizes may come from a harness inferred by running the file's __main__ block (in a child)
        harness, why = kernel_harness_noted(path, name, model)
        p = static_profile(model, name, self.target, sizes=sizes_of(harness), harness=harness)
        p.warnings[:0] = [n for n in (self._unsaved_note(on_disk), why) if n]
        yield Stage("compiled", p, "disk" if on_disk else "buffer")

    def _measures(self, on_disk: bool) -> bool:
        """A profile of the saved file is measured on the GPU (else its stages are source, then compiled)."""
        return on_disk and self.gpu is not None and not self.static

    def _unsaved_note(self, on_disk: bool) -> str | None:
        return ("the file has unsaved changes: static profile of the editor text; save the file to measure it "
                "on the GPU") if self.gpu is not None and not self.static and not on_disk else None

    def _source_stage(self, path: str, name: str, model: SourceModel, on_disk: bool) -> Stage:
        """The source-only stage: the analysis layer's facts, the static roofline and the launch configuration,
        no compile (milliseconds). The harness's sizes come from files only (an ``htam.toml`` table, a
        KernelBench pair, a cached recording): running the file to infer a harness is left to the compiled
        stage.

        Raises:
            ProfileError: unknown kernel or a language that cannot be profiled.
        """
        from htam_core.profile.api import source_profile
        from htam_core.profile.static_roofline import kernel_harness_noted, sizes_of

        harness, why = kernel_harness_noted(path, name, model, run_code=False)  # None: no lookup that runs code
        p = source_profile(model, name, self.target, sizes=sizes_of(harness), harness=harness)
        p.warnings[:0] = [n for n in (self._unsaved_note(on_disk), why) if n]
        return Stage("source", p, "disk" if on_disk else "buffer", pending="compile (registers, spills, occupancy)")

    def source_stage(self, path: str, kernel: Kernel, model: SourceModel) -> ProfileEntry | None:
        """Publish the source-only stage of ``kernel`` (of ``model``, the parse of the editor text) now, in the
        calling thread, when its profile would start with that stage (no GPU, static mode or unsaved text) and
        the kernel has no profile of this version and none is running (blocking, milliseconds: no compile, no
        worker, no run of the file, no wait for the memory). :meth:`start_profile` then runs only the compile.

        Returns:
            the published entry; ``None`` when nothing was published (a GPU profile, a profile exists or runs,
            the GPU was not looked up within 2 s, a file that does not parse, or the stage failed: the
            background profile then says why).
        """
        if not self._mode_known.wait(2.0) or getattr(model, "stale", False) or kernel.incomplete:
            return None
        view = self.profiles.view(path, kernel)
        if view.running or (view.entry is not None and not view.stale):
            return None
        on_disk = read_disk(path) == model.text
        if self._measures(on_disk):
            return None
        try:
            stage = self._source_stage(path, kernel.key, model, on_disk)
        except Exception:  # noqa: BLE001 - ProfileError, an analysis failure: the background profile reports it
            return None
        return self.profiles.publish_first(path, kernel, stage)

    # ---- history and ranking ------------------------------------------------------------------------
    def history(self, path: str, kernel_key: str) -> list[AppliedStep]:
        """Applied steps of the kernel, oldest first (a copy)."""
        return self.history_log.of(path, kernel_key)

    def adopt_optimized(self, result: Any) -> None:
        """After the best kernel of an auto-optimize run (an :class:`~htam_core.optimize.OptimizeResult`) was
        applied to its file: the records of the steps that made it become the file's steps (in the store and in
        the history, seeded again from the store), the run's other candidates stay tried only (blocking)."""
        uids = [result.recorded[i] for i in result.best_lineage if i in result.recorded]
        if uids:
            self.history_log.seed(self.memory.adopt(uids), self.memory.title)

    def tried(self, path: str, kernel_key: str) -> list[AppliedStep]:
        """The candidates ``htam optimize`` tried on copies of the kernel, not applied to it, oldest first."""
        return self.history_log.tried(path, kernel_key)

    def _key_parts(self, path: str, kernel: Kernel) -> tuple[str, str, ProfileEntry | None, tuple[str, ...]]:
        fp = kernel_fingerprint(path, kernel.key)
        return fp, content_hash(kernel), self.profiles.entry(path, kernel.key), self.history_log.prefix(
            path, kernel.key)

    def analysis(self, path: str, kernel: Kernel, top: int, *, hover: bool) -> tuple[Analysis | None, bool]:
        """The kernel's current analysis and whether it is fresh (never computes; see
        :meth:`Rankings.read`). ``None`` before :meth:`warm_up` or before the first :meth:`analyze`."""
        if not self.ready:
            return None, True
        fp, chash, entry, prefix = self._key_parts(path, kernel)
        return self.rankings.read(fp, Rankings.key(chash, entry, prefix, _depth(top), self.memory.revision),
                                  hover=hover)

    def analyze(self, path: str, kernel: Kernel, top: int, model: SourceModel | None = None) -> Analysis | None:
        """Rank ``kernel`` with its latest profile, history and memory (blocking; cached per key) and make it
        the kernel's analysis; ranked :data:`RANK_DEPTH` times deeper than ``top``. With ``model`` (the file
        ``kernel`` belongs to), the verdicts of the ranked steps are computed too (:meth:`plan` then finds
        them cached). ``None`` before :meth:`warm_up`."""
        if not self.ready:
            return None
        fp, chash, entry, prefix = self._key_parts(path, kernel)
        a = self.rankings.compute(fp, kernel, chash, entry, prefix, _depth(top), self.memory.revision, model)
        if model is not None:
            plan(a.steps, self.makeable.computing(model, kernel), top, llm=self.engine == "llm")
        return a

    def rank(self, path: str, kernel: Kernel, top: int = 5) -> list[Any]:
        """The first ``top`` steps of :meth:`analyze` (blocking)."""
        a = self.analyze(path, kernel, top)
        return a.steps[:top] if a is not None else []

    def plan(self, model: SourceModel, kernel: Kernel, analysis: Analysis | None, top: int,
             need: int | None = None) -> Plan:
        """``analysis``'s ranking split into code actions (only steps that can be made on this kernel version,
        or every step with the LLM engine), advice and skipped steps (blocking the first time a kernel version
        is seen: the transforms run; see :mod:`htam_core.editor.makeable`). ``need``: see
        :func:`~htam_core.editor.makeable.plan`."""
        if analysis is None:
            return Plan()
        return plan(analysis.steps, self.makeable.computing(model, kernel), top, llm=self.engine == "llm", need=need)

    def known_plan(self, model: SourceModel, kernel: Kernel, analysis: Analysis | None, top: int,
                   need: int | None = None) -> Plan | None:
        """:meth:`plan` from cached verdicts only, or ``None`` when a verdict is not known yet (never blocks)."""
        if analysis is None:
            return Plan()
        llm = self.engine == "llm"
        known = plan(analysis.steps, self.makeable.cached(model, kernel), top, llm=llm, need=need)
        return known if known.complete else None

    def strategy(self, step_id: str) -> Any:
        """The knowledge base's strategy ``step_id``.

        Raises:
            KeyError: unknown id.
        """
        return self.memory.strategy(step_id)

    # ---- resolution and recording -------------------------------------------------------------------
    def proposal(self, model: SourceModel, kernel: Kernel, step_id: str, profile: Profile | None,
                 evidence: str = "") -> Proposal:
        """The :class:`~htam_core.editor.proposals.Proposal` of the ranked step ``step_id`` on ``kernel`` of
        ``model`` (blocking): made once per (kernel version, strategy) and engine. With the rules engine it is the one
        made when the code actions were listed (:meth:`plan`); the LLM's is made on the first call and kept. Never
        raises for a step that cannot be made."""
        if self.engine != "llm":
            v = self.makeable.verdicts(model, kernel, [step_id])[step_id]
            return v.proposal or Proposal.refused(step_id, v.reason or f"unknown strategy {step_id!r}")
        try:
            strat = self.strategy(step_id)
        except KeyError as exc:
            return Proposal.refused(step_id, str(exc.args[0]))
        direction = self.memory.kb.direction(strat.direction)
        return self.llm_proposals.get((self.makeable.version(model, kernel), step_id), lambda: propose_step(
            model, kernel, strat, direction, profile, engine="llm", llm=self.llm, evidence=evidence))

    def record_applied(self, path: str, kernel: Kernel, step_id: str, text: str, file_language: str, *,
                       before_hash: str | None = None, saved: bool = True,
                       on_done: Callable[[AppliedStep, ProfileEntry | None], None] | None = None) -> AppliedStep:
        """See :meth:`htam_core.editor.record.Recorder.record_applied`.

        Raises:
            KeyError: unknown strategy id.
        """
        return self.recorder.record_applied(path, kernel, step_id, text, file_language, before_hash=before_hash,
                                            saved=saved, on_done=on_done)

    def saved(self, path: str) -> int:
        """The file was saved: start the re-profiles that waited for it. Returns how many started."""
        return self.recorder.saved(path)

    def memory_markdown(self, top: int = 10) -> str:
        """The HTG summary of ``htam.showMemory`` (blocking)."""
        if not self.ready:
            return "HTAM memory is still loading."
        return self.memory.markdown(top)
