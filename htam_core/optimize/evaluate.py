"""Evaluate one candidate kernel file: guards, correctness, time (GPU) or static profile (CPU).

Every compile and run happens in worker processes (:mod:`htam_core.runtime.worker`), never here. The
order follows KernelBench's discipline (its ``src/eval.py``): refuse what the static reward-hack guards refuse,
then check correctness over seeds, and only then let a time count.

* **GPU mode**: :func:`htam_core.profile.api.profile_on_gpu` verifies the candidate on the GPU against the
  harness reference and times it (:mod:`htam_core.measure.timer`: CUDA-graph replay or events with an
  asynchronous L2 flush, checked against CUPTI). :meth:`Evaluator.compare` then times the parent and the
  candidate interleaved in one worker (:mod:`htam_core.measure.compare`) for the speedup and its spread.
* **Static mode** (no GPU): the candidate is compiled for the static profile (nvcc / Triton AOT); Triton
  candidates are checked for correctness under ``TRITON_INTERPRET=1`` in a worker; CUDA candidates are
  compile-checked only and reported as *unverified*, never as correct. The static compile runs on a thread
  pool while the candidate verifies in its worker, and :meth:`Evaluator.prefetch` compiles candidates the loop
  may evaluate next on the same pool (nvcc in parallel on the CPU cores); the results meet in the on-disk compile
  cache (:mod:`htam_core.runtime.cache`), so a kernel version is compiled once across runs, the CLI and the
  editor.

Workers are pre-started (:meth:`Evaluator.prestart`): the persistent GPU worker with torch imported, and a second,
clean one for the fresh-process re-timing, which runs no candidate before it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htam_core.harness import Harness
from htam_core.harness.base import mark_origin, origin_dirs
from htam_core.measure.compare import Comparison
from htam_core.measure.gpu import pool_config, prestart_gpu_worker
from htam_core.optimize.phases import PhaseTimes
from htam_core.profile.api import profile_on_gpu, static_profile
from htam_core.runtime.worker import WorkerPool, get_pool, run_in_worker
from htam_core.source import language_for_path, parse_text
from htam_core.source.analysis.includes import headers_digest
from htam_core.source.model import SourceModel
from htam_core.types.errors import ProfileError
from htam_core.types.language import traits
from htam_core.types.profile import Profile
from htam_core.verify.guards import check_source, labels, new_findings, refused_by
from htam_core.verify.run import verify_in_worker

if TYPE_CHECKING:
    from htam_core.optimize.measure_cache import MeasureCache

#: The candidate folder of the starting kernel; under the oracle rule every candidate is checked against it.
START_LABEL = "00-start"
#: The worker target of the interleaved parent/candidate comparison.
COMPARE_TARGET = "htam_core.measure.compare:compare_harnesses"
#: Modules the Triton interpreter's verification worker imports as soon as it starts (static mode).
INTERPRET_WARM_IMPORTS: tuple[str, ...] = ("torch", "triton")
#: Added to the messages of an evaluation that was taken from the measurement cache.
REUSED_MESSAGE = "measurement reused: identical code was measured earlier in this suite run"


@dataclass
class Evaluation:
    """The verdict on one candidate.

    Attributes:
        ok: it compiled, loaded and was not refused (it may still be unverifiable).
        correct: ``True`` verified against the reference, ``False`` wrong or refused, ``None`` not verifiable
            here (CUDA on a machine without a GPU, or no harness).
        verified_on: ``"gpu"``, ``"interpreter"`` or ``"compile-only"``.
        failure: ``"refused"``, ``"incorrect"`` or ``"failed"`` (compile error, fault, timeout), else ``None``.
        time_ms: median time in ms on the first input set, or ``None``.
        per_set_ms: median time of every input set, ms.
        profile: the candidate's profile (GPU or static), or ``None`` when it could not be built.
        model: the candidate's source model.
        messages: what the guards, the verifier and the profiler said.
        labels: labelling guard rules that fired (``tf32``, ``reduced-precision``): such a candidate's time is
            never counted as a plain speedup.
        reused: the verdict and times come from the measurement cache (identical code measured earlier in
            the same benchmark run), not from a new measurement.
    """

    ok: bool
    correct: bool | None
    verified_on: str
    failure: str | None = None
    time_ms: float | None = None
    per_set_ms: list[float] = field(default_factory=list)
    profile: Profile | None = None
    model: SourceModel | None = None
    messages: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    reused: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON form without the source model (the text re-parses cheaply) and without ``reused``."""
        return {"ok": self.ok, "correct": self.correct, "verified_on": self.verified_on,
                "failure": self.failure, "time_ms": self.time_ms, "per_set_ms": list(self.per_set_ms),
                "profile": self.profile.to_json() if self.profile is not None else None,
                "messages": list(self.messages), "labels": list(self.labels)}

    @classmethod
    def from_json(cls, d: dict[str, Any], model: SourceModel | None = None) -> Evaluation:
        """Inverse of :meth:`to_json`; ``model`` is attached as the source model.

        Raises:
            KeyError, TypeError, ValueError: ``d`` is not an evaluation's JSON.
        """
        prof = d.get("profile")
        return cls(ok=bool(d["ok"]), correct=d["correct"], verified_on=str(d["verified_on"]),
                   failure=d["failure"], time_ms=d["time_ms"],
                   per_set_ms=[float(x) for x in d.get("per_set_ms") or []],
                   profile=Profile.from_json(prof) if prof is not None else None, model=model,
                   messages=[str(m) for m in d.get("messages") or []],
                   labels=[str(x) for x in d.get("labels") or []])


class Evaluator:
    """Evaluates candidates of one kernel against one harness.

    Args:
        path: the original kernel file (its harness lives next to it).
        kernel_name: the kernel's name.
        harness: from :func:`htam_core.harness.find_harness`, or ``None`` when there is none.
        gpu: measure on the GPU (``True``) or evaluate statically (``False``).
        workdir: candidates are written under it, one folder each.
        original_text: the start text; guard findings already present there are not held against candidates.
        gpu_index, trials, target: see :class:`htam_core.optimize.task.OptimizeTask`.
        cache: a :class:`~htam_core.optimize.measure_cache.MeasureCache` shared by the runs of one benchmark,
            or ``None``. Only GPU measurements go through it (see :meth:`evaluate`).

    Attributes:
        reused: evaluations answered from the cache so far.
        phases: wall seconds per phase (:class:`htam_core.optimize.phases.PhaseTimes`).
        fresh_pids: pid of the worker of each fresh re-timing (:meth:`compare` with ``fresh=True``).
    """

    def __init__(self, path: str | Path, kernel_name: str, harness: Harness | None, *, gpu: bool, workdir: Path,
                 original_text: str, gpu_index: int = 0, trials: int = 100, target: str = "sm_90",
                 cache: MeasureCache | None = None) -> None:
        self.path = Path(path)
        self.kernel_name = kernel_name
        self.harness = harness
        self.gpu = gpu
        self.workdir = workdir
        self.gpu_index = gpu_index
        self.trials = trials
        self.target = target
        self.language = language_for_path(self.path)
        self._original_findings = check_source(original_text, self.language)
        self.cache = cache
        self.reused = 0
        self.phases = PhaseTimes()
        self.fresh_pids: list[int | None] = []
        self._fresh: WorkerPool | None = None
        self._compile_pool = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1),
                                                thread_name_prefix="htam-compile")
        self._compiles: dict[str, Future[Profile]] = {}
        self._compiles_lock = threading.Lock()

    # -- workers and compiles ahead of need -----------------------------------------------------------
    def prestart(self) -> None:
        """Start the workers this evaluator will call, in the background, before the first candidate: on a GPU
        the persistent worker of the GPU (torch imported, :func:`~htam_core.measure.gpu.prestart_gpu_worker`)
        and a second, clean worker for the fresh re-timing (it runs nothing before that; the rule that the best
        is re-timed in a process that ran no candidate stays); without a GPU the Triton interpreter's
        verification worker. Never waits, never raises."""
        if self.gpu and self.harness is not None:
            prestart_gpu_worker(self.gpu_index)
            if self._fresh is None:
                cfg = {**pool_config(self.gpu_index), "keep_warm": False}
                self._fresh = WorkerPool(f"gpu{self.gpu_index}-fresh", **cfg)
                self._fresh.prestart_in_background()
        elif self.harness is not None and traits(self.harness.language).tiles:
            pool = get_pool("verify-interpret", interpret=True, gpu_index=None,
                            warm_imports=list(INTERPRET_WARM_IMPORTS))
            pool.prestart_in_background()

    def close(self) -> None:
        """Stop the compile pool (queued compiles are dropped) and an unused fresh worker."""
        self._compile_pool.shutdown(wait=False, cancel_futures=True)
        fresh, self._fresh = self._fresh, None
        if fresh is not None:
            fresh.close()

    def _compile(self, text: str, model: SourceModel, kernel: Any) -> Profile:
        """Static profile of ``text`` (compile phase); raises :class:`ProfileError`. On a GPU it is asked exactly
        as :func:`~htam_core.profile.api.profile_on_gpu` would ask it (harness found from the file), so the
        compile cache holds one entry per kernel version for the loop, the CLI and the editor."""
        with self.phases.measure("compile"):
            if self.gpu:
                return static_profile(model, kernel, self.target)
            return static_profile(model, kernel, self.target, harness=self.harness)

    def _compile_future(self, text: str, model: SourceModel | None = None, kernel: Any = None) -> Future[Profile]:
        """The (shared) future of the static compile of ``text`` on the compile pool."""
        key = hashlib.sha256(text.encode()).hexdigest()
        with self._compiles_lock:
            fut = self._compiles.get(key)
            if fut is None or fut.cancelled():
                if model is None:
                    model = parse_text(text, self.language)
                    kernel = model.kernel(self.kernel_name)
                fut = self._compile_pool.submit(self._compile, text, model, kernel)
                self._compiles[key] = fut
            return fut

    def prefetch(self, text: str) -> bool:
        """Compile the candidate ``text`` ahead of its evaluation on the compile pool (nvcc or Triton AOT, in
        parallel with the candidate being verified); its evaluation then reuses the result. Returns whether a
        compile was queued (not when the kernel is missing from ``text`` or already queued). Never raises."""
        key = hashlib.sha256(text.encode()).hexdigest()
        with self._compiles_lock:
            if key in self._compiles:
                return False
        try:
            model = parse_text(text, self.language)
            kernel = model.kernel(self.kernel_name)
            self._compile_future(text, model, kernel)
        except Exception:  # noqa: BLE001 - a prefetch is only a hint; the evaluation reports the problem
            return False
        return True

    def write(self, text: str, label: str) -> Path:
        """Write ``text`` as ``<workdir>/<label>/<original file name>`` and return the path; ``<workdir>/.htam-origin``
        names the original file's folder, so the candidate imports its sibling modules."""
        d = self.workdir / label
        d.mkdir(parents=True, exist_ok=True)
        mark_origin(self.workdir, self.path)  # candidates import the original's sibling modules (harness.base)
        p = d / self.path.name
        p.write_text(text, encoding="utf-8")
        return p

    def harness_for(self, cand_path: Path, fp32_tol: float | None = None) -> Harness | None:
        """The harness with the candidate file ``cand_path`` as its kernel (``None`` without a harness), checked at
        the float32 tolerance ``fp32_tol`` when it is set (else the harness's own)."""
        if self.harness is None:
            return None
        return dataclasses.replace(self._checked_harness(fp32_tol), path=str(cand_path.resolve()))

    def _checked_harness(self, fp32_tol: float | None) -> Harness:
        """The harness with the float32 tolerance ``fp32_tol`` of one evaluation (:meth:`evaluate`'s argument)."""
        assert self.harness is not None
        return self.harness if fp32_tol is None else dataclasses.replace(self.harness, fp32_tol=fp32_tol)

    def evaluate(self, text: str, label: str, *, use_ncu: bool = False,
                 reuse: bool = True, fp32_tol: float | None = None) -> tuple[Evaluation, Path]:
        """Evaluate the candidate ``text``; returns the verdict and where the file was written. ``fp32_tol``: the
        float32 tolerance of the correctness check when the harness sets none (``None``: the default;
        :data:`htam_core.verify.correctness.REORDERED_SUM_FP32_TOL` for a candidate that only reorders sums).

        With a measurement cache, on a GPU and without ``use_ncu``: when ``reuse`` is true and byte-identical
        code was measured earlier with the same harness and trials, the stored verdict and times are returned
        (``reused=True``, with a fresh source model and :data:`REUSED_MESSAGE`); the file is still written.
        A new measurement is stored unless it ``failed`` (a timeout, out-of-memory error or crash may be
        transient). Pass ``reuse=False`` for a kernel that must be timed afresh (the start kernel: the suite's
        repeatability figure compares start times of separate runs).

        Never raises for a bad candidate: compile errors, faults, hangs and refusals become the verdict.
        """
        return self._evaluate(text, label, use_ncu, reuse, fp32_tol)

    def _evaluate(self, text: str, label: str, use_ncu: bool, reuse: bool,
                  fp32_tol: float | None) -> tuple[Evaluation, Path]:
        cand_path = self.write(text, label)
        if label == START_LABEL and self.harness is not None and self.harness.uses_oracle:
            # the oracle is the start as evaluated (an editor's unsaved text), not whatever is on disk later
            self.harness = dataclasses.replace(self.harness, oracle_path=str(cand_path.resolve()))
        model = parse_text(text, self.language, str(cand_path))
        try:
            kernel = model.kernel(self.kernel_name)
        except KeyError as exc:
            return Evaluation(False, False, "compile-only", "failed", model=model,
                              messages=[str(exc.args[0])]), cand_path
        findings = new_findings(check_source(text, self.language), self._original_findings)
        refused = refused_by(findings)
        lab = labels(findings)
        if refused:
            msgs = [f"refused by guard {f.rule_id} (line {f.line}): {f.message}" for f in findings
                    if f.rule_id in refused]
            return Evaluation(False, False, "compile-only", "refused", model=model, messages=msgs,
                              labels=lab), cand_path
        if self.gpu and self.harness is not None:
            return self._measured(text, cand_path, model, kernel, use_ncu, reuse, lab, fp32_tol), cand_path
        return self._static(cand_path, model, kernel, lab, fp32_tol), cand_path

    def _measured(self, text: str, cand_path: Path, model: SourceModel, kernel, use_ncu: bool, reuse: bool,
                  lab: list[str], fp32_tol: float | None = None) -> Evaluation:
        """A GPU evaluation through the measurement cache (when there is one and ncu is off)."""
        if self.cache is None or use_ncu:
            return self._on_gpu(cand_path, model, kernel, use_ncu, lab, fp32_tol)
        key = self.cache.key(text, self.kernel_name, self.language, self._checked_harness(fp32_tol), self.trials,
                             self.gpu,
                             self.target, headers_digest(text, cand_path, origin_dirs(cand_path)))
        if reuse:
            hit = self.cache.get(key)
            if hit is not None:
                self.reused += 1
                return dataclasses.replace(hit, model=model, labels=lab, reused=True,
                                           messages=[*hit.messages, REUSED_MESSAGE])
        ev = self._on_gpu(cand_path, model, kernel, use_ncu, lab, fp32_tol)
        if ev.failure != "failed":
            self.cache.put(key, self.kernel_name, ev)
        return ev

    def _on_gpu(self, cand_path: Path, model: SourceModel, kernel, use_ncu: bool, lab: list[str],
                fp32_tol: float | None = None) -> Evaluation:
        # the static compile runs on the compile pool (a prefetched candidate's is ready or running) while the GPU
        # worker verifies and times; the measurement takes its result afterwards
        compiling = self._compile_future(cand_path.read_text(encoding="utf-8"), model, kernel)

        def static_result() -> Profile | None:
            try:
                return compiling.result()
            except Exception:  # noqa: BLE001 - static data is a complement; its failure leaves fields None
                return None

        t0 = time.monotonic()
        try:
            p = profile_on_gpu(path=str(cand_path), kernel_name=self.kernel_name,
                               harness=self.harness_for(cand_path, fp32_tol), gpu_index=self.gpu_index, model=model,
                               kernel=kernel, use_ncu=use_ncu, trials=self.trials, target=self.target,
                               static=static_result)
        except ProfileError as exc:
            self.phases.add("verify", time.monotonic() - t0)
            return Evaluation(False, False, "gpu", "failed", model=model, messages=[str(exc)], labels=lab)
        self._add_worker_phases(p.extra.get("phases") or {}, time.monotonic() - t0)
        corr = p.extra.get("correctness") or {}
        correct = bool(corr.get("correct")) if corr else None
        msgs = list(corr.get("messages", [])) if corr else []
        timing = p.extra.get("timing") or {}
        per_set = [] if timing.get("refused") else [s["median"] for s in timing.get("per_set", [])]
        if timing.get("refused"):  # correct but not timed: the report says why, not only "neutral"
            msgs.append(str(timing["refused"]))
        if correct is False:
            return Evaluation(True, False, "gpu", "incorrect", p.time_ms.median if p.time_ms else None, per_set,
                              p, model, msgs, lab)
        return Evaluation(True, correct, "gpu", None, p.time_ms.median if p.time_ms else None, per_set, p, model,
                          msgs, lab)

    def _add_worker_phases(self, phases: dict[str, float], total_s: float) -> None:
        """Split one GPU evaluation's ``total_s`` wall seconds into the worker's own ``phases`` (compile, verify,
        time); the rest (the call's start, peaks, the worker start when it was not warm) counts as verify."""
        known = 0.0
        for name in ("compile", "verify", "time"):
            v = float(phases.get(name) or 0.0)
            self.phases.add(name, v)
            known += v
        self.phases.add("verify", max(0.0, total_s - known), count=0)

    def compare(self, parent_text: str, cand_path: Path, *, fresh: bool = False) -> tuple[Comparison | None, str]:
        """Time the parent ``parent_text`` and the candidate at ``cand_path`` interleaved in the GPU worker.

        Args:
            fresh: run in a new worker process, started for this call and stopped after it, instead of the
                persistent GPU worker that timed the search (the re-timing of the best kernel,
                :mod:`htam_core.optimize.reproduce`).

        Returns:
            ``(comparison, "")``, or ``(None, why)`` when there is no GPU harness or the worker failed (a fault,
            a timeout): the caller then has no spread and says so.
        """
        if not (self.gpu and self.harness is not None):
            return None, "no GPU harness: nothing to compare"
        parent_path = self.write(parent_text, f"_parent-{hashlib.sha256(parent_text.encode()).hexdigest()[:12]}")
        args = {"parent": self.harness_for(parent_path).to_json(),  # type: ignore[union-attr]
                "candidate": self.harness_for(cand_path).to_json()}  # type: ignore[union-attr]
        target = COMPARE_TARGET
        if fresh:
            with self.phases.measure("retime"), self._fresh_pool() as pool:
                r = pool.run(target, args, timeout_s=900.0)
                self.fresh_pids.append(r.worker_pid)
        else:
            with self.phases.measure("time"):
                r = run_in_worker(target, args, timeout_s=900.0, pool_key=f"gpu{self.gpu_index}",
                                  **pool_config(self.gpu_index))
        if not r.ok:
            err = r.error
            return None, f"interleaved comparison failed: {err.kind}: {err.message}" if err else "comparison failed"
        try:
            return Comparison.from_json(r.value), ""
        except (KeyError, TypeError, ValueError) as exc:
            return None, f"interleaved comparison gave a malformed result: {exc}"

    def _fresh_pool(self) -> WorkerPool:
        """The worker of one fresh re-timing: the pre-started one when it has run no call (a crashed pre-start
        is restarted by its first call, still clean), else a new one; the caller closes it after the call."""
        pool, self._fresh = self._fresh, None
        if pool is None or pool.calls:
            if pool is not None:
                pool.close()
            pool = WorkerPool(f"gpu{self.gpu_index}-fresh", **{**pool_config(self.gpu_index), "keep_warm": False})
        return pool

    def _static(self, cand_path: Path, model: SourceModel, kernel, lab: list[str],
                fp32_tol: float | None = None) -> Evaluation:
        msgs: list[str] = []
        h = self.harness_for(cand_path, fp32_tol)
        # the compile (nvcc / Triton AOT, on the compile pool) and the verification (interpreter worker) overlap
        compiling = self._compile_future(cand_path.read_text(encoding="utf-8"), model, kernel)
        verdict = self._verify_static(h, cand_path) if h is not None else None
        try:
            prof = compiling.result()
        except ProfileError as exc:
            return Evaluation(False, False, "compile-only", "failed", model=model, messages=[str(exc)], labels=lab)
        if h is None:
            msgs.append("not verified: no harness for this kernel (htam.toml, KernelBench reference, or one inferred "
                        "from the file's __main__ block or tests)")
            return Evaluation(True, None, "compile-only", None, profile=prof, model=model, messages=msgs, labels=lab)
        assert verdict is not None
        msgs.extend(verdict.messages)
        if verdict.status == "unverified":
            return Evaluation(True, None, verdict.verified_on, None, profile=prof, model=model, messages=msgs,
                              labels=lab)
        if verdict.status == "error":
            return Evaluation(False, False, verdict.verified_on, "failed", profile=prof, model=model, messages=msgs,
                              labels=lab)
        if not verdict.correct:
            return Evaluation(True, False, verdict.verified_on, "incorrect", profile=prof, model=model,
                              messages=msgs, labels=lab)
        return Evaluation(True, True, verdict.verified_on, None, profile=prof, model=model, messages=msgs,
                          labels=lab)

    def _verify_static(self, h: Harness, cand_path: Path) -> Any:
        """Correctness under the Triton interpreter in its worker (verify phase)."""
        # the start is never called "the candidate" in its messages
        subject = "the starting kernel" if cand_path.parent.name == START_LABEL else "the candidate"
        with self.phases.measure("verify"):
            return verify_in_worker(h, interpret=True, subject=subject)
