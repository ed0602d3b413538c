"""The optimization task and its result: plain, serializable records.

One optimization of one kernel is a self-contained task (ARCHITECTURE.md, "Rules"): a :class:`OptimizeTask` goes in,
an :class:`OptimizeResult` comes out, so that a benchmark can spread tasks over GPUs or hosts with an
existing engine (Dask, Ray) and no home-made scheduler.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from htam_core.optimize.reproduce import Reproduction


def folder_name(kernel: str) -> str:
    """``kernel`` (a name, ``f64::scale`` or ``scale(double*, double, int)``) as a folder name: every run of
    characters other than letters, digits, ``.``, ``-`` and ``_`` becomes one ``_`` (``f64_scale``,
    ``scale_double_double_int``); a plain name is unchanged."""
    return re.sub(r"[^\w.-]+", "_", kernel).strip("_") or "kernel"

#: Candidate policies: ``htam`` ranks with the memory (optionally ablated), ``random`` draws uniformly over
#: the same applicable transforms, ``exhaustive`` tries every candidate of the transform space breadth-first.
POLICIES = ("htam", "random", "exhaustive")


@dataclass
class OptimizeTask:
    """What to optimize and how.

    Attributes:
        path: the kernel's file (``.py``, ``.cu``, ``.cuh``).
        kernel: the kernel's name.
        engine: ``"rules"`` (mechanical transforms; default) or ``"llm"``.
        budget: number of candidates to evaluate (each verified, and timed on a GPU).
        policy: one of :data:`POLICIES`.
        ablation: HTAM ablation switch (``flat``, ``no-local``, ``no-prefix``, ``no-position``, ``no-update``,
            ``random``) or ``None``.
        out_dir: where the report and candidates go; default ``htam-out/<stem>-<kernel>``.
        memory_path: HTAM memory store; ``None`` = ``HTAM_MEMORY`` or the user data dir.
        seed: seed of the ranker and the random policy.
        static: force static mode (``True``), force GPU (``False``) or decide from the machine (``None``).
        gpu_index: CUDA device index.
        llm: :meth:`htam_core.generate.config.LLMConfig.to_json` for the LLM engine, or ``None``.
        source_text: start from this text instead of the file on disk (an unsaved editor buffer).
        record: write outcomes into the memory store.
        trials: timed trials per candidate on the GPU.
        use_ncu: collect Nsight Compute counters for the start kernel and each new best, in the background
            (:class:`htam_core.profile.ncu_stage.CountersStage`; the loop never waits for them).
        measure_cache: path of a SQLite measurement cache shared by several optimizations of one benchmark run
            (:class:`htam_core.optimize.measure_cache.MeasureCache`), or ``None`` (default: off). On a GPU, a
            candidate byte-identical to one measured earlier with the same harness and trials reuses that
            verdict and those times; the start kernel is always measured afresh, and so is every evaluation
            with Nsight Compute.
        replay_table: a measured-space table (:mod:`htam_core.optimize.replay`): every evaluation is a lookup in
            it and nothing runs on a GPU; ``None`` (default) measures for real.
        replay_kernel: the kernel's id in that table (``<file>::<name>``; default ``<path>::<kernel>``).
    """

    path: str
    kernel: str
    engine: str = "rules"
    budget: int = 8
    policy: str = "htam"
    ablation: str | None = None
    out_dir: str | None = None
    memory_path: str | None = None
    seed: int = 0
    static: bool | None = None
    gpu_index: int = 0
    llm: dict[str, Any] | None = None
    source_text: str | None = None
    record: bool = True
    trials: int = 100
    use_ncu: bool = True
    measure_cache: str | None = None
    replay_table: str | None = None
    replay_kernel: str | None = None

    def resolved_out_dir(self) -> Path:
        """The output directory, defaulting to ``htam-out/<file stem>-<kernel>``."""
        if self.out_dir:
            return Path(self.out_dir)
        return Path("htam-out") / f"{Path(self.path).stem}-{folder_name(self.kernel)}"

    def to_json(self) -> dict[str, Any]:
        """JSON form; the buffer text is left out."""
        d = asdict(self)
        d.pop("source_text", None)
        return d


@dataclass
class ProgressEvent:
    """Progress of a running optimization, for a terminal bar or LSP work-done progress.

    Attributes:
        step: candidates evaluated so far (0 before the first).
        total: the budget.
        direction, strategy: what the current step tries, or ``None`` between steps.
        best_speedup: best measured speedup over the start so far, or ``None`` when nothing was timed.
        message: one line for a human.
    """

    step: int
    total: int
    direction: str | None
    strategy: str | None
    best_speedup: float | None
    message: str


@dataclass
class StepRecord:
    """One evaluated candidate.

    Attributes:
        index: 1-based candidate number.
        direction, strategy: what was applied (knowledge-base ids); ``transform``: the mechanical transform id.
        description: what the edit does; ``params``: its parameters.
        edit: unified diff of the candidate against the kernel it was derived from.
        status: ``win``, ``loss``, ``neutral``, ``incorrect`` or ``failed`` (the memory's outcome status), or
            ``endpoint_fault`` (:data:`htam_core.memory.records.ENDPOINT_FAULT`): the LLM endpoint gave no
            candidate (deadline passed, HTTP error, refused connection, malformed reply, reply without code);
            such a step is never recorded in the memory and says nothing about its strategy.
        correct: ``True`` verified correct, ``False`` refused or wrong, ``None`` not verifiable here (and for an
            endpoint fault: there was no candidate).
        verified_on: ``"gpu"``, ``"interpreter"``, ``"compile-only"``, or ``"none"`` (no candidate).
        time_ms: median time in ms, or ``None`` (not measured).
        speedup: over the kernel it was derived from (``parent_ms / time_ms``), or ``None``.
        speedup_vs_start: over the starting kernel, or ``None``.
        accepted: the loop continued from this candidate (on a GPU only after a measured win; without a GPU
            the loop follows unmeasured candidates, which are never *kept*: see :meth:`kept`).
        evidence: the memory evidence used to choose this step.
        messages: verifier, guard and profiler messages.
        candidate_path: where the candidate's file was written.
        score: the ranker's score of the step, or ``None`` (random/exhaustive).
        spread: the measured relative spread of ``speedup`` (its win threshold is ``1 + spread``), or ``None``
            when the parent and the candidate were not timed interleaved.
        reason: why an ``incorrect`` or ``failed`` candidate is so, in one line (which output, seed and input
            set, max abs/rel error; or the guard, compile or runtime error line), else ``None``.
        parent: what the candidate was made from: ``"start"`` (the user's kernel) or the ``index`` of an
            earlier candidate; following parents from the best back to ``"start"`` gives the best's lineage
            (:func:`lineage`).
    """

    index: int
    direction: str
    strategy: str
    transform: str | None
    description: str
    params: dict[str, Any]
    edit: str
    status: str
    correct: bool | None
    verified_on: str
    time_ms: float | None
    speedup: float | None
    speedup_vs_start: float | None
    accepted: bool
    evidence: str
    messages: list[str] = field(default_factory=list)
    candidate_path: str | None = None
    score: float | None = None
    spread: float | None = None
    reason: str | None = None
    parent: int | str = "start"

    def kept(self) -> str:
        """``"yes"`` (a measured win the loop kept), ``"no"``, or ``"not measured"``: a candidate without a
        measured speedup (static mode, or an untimed start) is never called kept, even when the loop went
        on from it."""
        if self.status in ("incorrect", "failed"):
            return "no"
        if self.speedup is None:
            return "not measured"
        return "yes" if self.accepted else "no"

    def to_json(self) -> dict[str, Any]:
        """JSON form: every field plus ``kept`` (:meth:`kept`)."""
        return {**asdict(self), "kept": self.kept()}


@dataclass
class NotMade:
    """A step the policy ranked that the loop did not make, and why (the transform's refusal message).

    Attributes:
        direction, strategy: the knowledge-base ids; ``transform``: its mechanical transform id or ``None``.
        reason: why no candidate was made (the same sentence an editor shows for the step).
        kernel: which kernel it was ranked for: ``"start"``, or ``"after a → b"``: the last (up to four) steps
            of the chain the loop went on from, the prefix the memory sees.
        candidate: the index of the candidate the refusal was computed on (its line numbers are that
            candidate's, ``candidates/NN-*``), or ``None`` for the start (the user's own file).
        refused: ``True`` when the step could not be made on that kernel (a transform's refusal, no
            transform); ``False`` when the loop chose not to repeat a step it had already made in this run
            (static mode went on from it, every candidate already evaluated): such a pass is no step not made.
    """

    direction: str
    strategy: str
    transform: str | None
    reason: str
    kernel: str
    candidate: int | None = None
    refused: bool = True


def lineage(steps: list[StepRecord], best: int | None) -> list[StepRecord]:
    """The steps that made candidate ``best``, from the first one applied to the start to ``best`` itself.

    Follows :attr:`StepRecord.parent` from ``best`` back to ``"start"``; ``best`` ``None`` (the best is the
    start) gives ``[]``.

    Raises:
        ValueError: a parent is not among ``steps``, or the parents form a cycle (a loop bug).
    """
    by_index = {s.index: s for s in steps}
    path: list[StepRecord] = []
    at: int | str | None = best
    while at is not None and at != "start":
        if at not in by_index or len(path) > len(steps):
            raise ValueError(f"candidate {at!r} is not a step of this run (or the parents form a cycle)")
        path.append(by_index[at])  # type: ignore[index]
        at = by_index[at].parent  # type: ignore[index]
    return path[::-1]


@dataclass
class OptimizeResult:
    """What an optimization produced.

    Attributes:
        best_text: the best correct kernel file's text (the start text when nothing beat it).
        best_speedup: measured speedup of the best over the start, or ``None`` (static mode: nothing timed).
        measured: candidates were timed on a GPU.
        steps: every evaluated candidate, in order.
        report_dir: the output directory; ``report_md``: its ``report.md``.
        summary: one paragraph for a human.
        cancelled: stopped early by the user.
        changed: ``best_text`` differs from the start text.
        start_ms: median time of the start kernel, or ``None``.
        best_ms: median time of the best kernel, or ``None``.
        mode: ``"gpu"`` or ``"static"``.
        best_path: path of ``best.<ext>``.
        warnings: what the user should know (no harness and what to add, a failed start, early stop ...).
        measurements_reused: candidates whose verdict and times were taken from the measurement cache
            (:attr:`OptimizeTask.measure_cache`) instead of being measured again.
        start_ok: the starting kernel ran and was not found wrong (``False``: it failed or does not match its
            reference, so no candidate was tried; ``htam optimize`` then exits 1).
        best_correct, best_verified_on: the best kernel's verdict (``Evaluation.correct``/``verified_on``).
        not_made: ranked steps the loop passed over without a candidate, with the refusal reason of each.
        plot: ``speedup.png`` when it was written, else ``None`` (``plot_note`` says why).
        plot_note: why there is no plot, or what the plot cannot show.
        reproduction: the fresh-process re-timing of the best kernel
            (:class:`htam_core.optimize.reproduce.Reproduction`), or ``None`` when the loop did not judge it.
        best_step: the index of the candidate ``best.<ext>`` is, or ``None`` when it is the start.
        launcher_paths: the other files the best kernel's steps rewrote (the kernel's launch in a host file), as
            written beside ``best.<ext>`` in the output folder.
        best_copy: with launchers, the best kernel written again under its own file name (the name a launcher's
            ``#include`` uses), or ``None``.
        best_lineage: the indices of the steps that made the best, from the start to ``best_step``
            (:func:`lineage`); ``[]`` when the best is the start.
        phases: where the run's time went (:mod:`htam_core.optimize.phases`: seconds per phase, the worker
            starts, the Nsight Compute stage's runs and cache hits, the wall time), or ``None``.
        recorded: the memory uid of each candidate the run recorded, by candidate index (under the kernel's tried
            id, :func:`~htam_core.memory.fingerprint.tried_fingerprint`); ``--apply`` makes those of
            ``best_lineage`` steps of the file (:meth:`~htam_core.memory.store.Store.adopt`).
    """

    best_text: str
    best_speedup: float | None
    measured: bool
    steps: list[StepRecord]
    report_dir: Path
    report_md: Path
    summary: str
    cancelled: bool
    changed: bool
    start_ms: float | None = None
    best_ms: float | None = None
    mode: str = "static"
    best_path: Path | None = None
    warnings: list[str] = field(default_factory=list)
    measurements_reused: int = 0
    start_ok: bool = True
    best_correct: bool | None = None
    best_verified_on: str | None = None
    not_made: list[NotMade] = field(default_factory=list)
    plot: Path | None = None
    plot_note: str | None = None
    reproduction: Reproduction | None = None
    best_step: int | None = None
    best_lineage: list[int] = field(default_factory=list)
    phases: dict[str, Any] | None = None
    launcher_paths: list[Path] = field(default_factory=list)
    best_copy: Path | None = None
    recorded: dict[int, str] = field(default_factory=dict)

    def apply_refusal(self) -> str | None:
        """Why the best kernel must not be written into the user's file, or ``None`` when it may.

        It may only when it differs from the start, was verified correct on the GPU against the harness, and
        has a measured speedup over the start (``htam optimize --apply``; ``--apply-unverified`` overrides).
        """
        if not self.start_ok:
            return "the starting kernel failed or does not match its reference, so no candidate was tried"
        if self.mode != "gpu":
            return ("nothing was measured (static mode: no GPU), so no candidate is verified on the GPU and timed; "
                    "run on a GPU to measure it")
        if not self.measured:
            return "the starting kernel could not be timed on the GPU, so no candidate has a measured speedup"
        if not self.changed or not self.best_speedup or self.best_speedup <= 1.0:
            return "no candidate was measured faster than the start"
        if self.best_correct is not True or self.best_verified_on != "gpu":
            return f"the best candidate was not verified correct on the GPU ({self.best_verified_on or 'not run'})"
        if self.reproduction is not None and not self.reproduction.reproduced:
            return f"the best candidate's speedup was not confirmed: {self.reproduction.line()}"
        return None

    @property
    def confirmed_win(self) -> bool:
        """The best is measured faster than the start and, when re-timed, the re-timing reproduced it."""
        return bool(self.measured and self.changed and self.best_speedup and self.best_speedup > 1.0
                    and (self.reproduction is None or self.reproduction.reproduced))

    def to_json(self) -> dict[str, Any]:
        """JSON form (the best text left out; it is in ``best.<ext>``)."""
        return {
            "best_speedup": self.best_speedup, "measured": self.measured, "mode": self.mode,
            "start_ms": self.start_ms, "best_ms": self.best_ms, "cancelled": self.cancelled,
            "changed": self.changed, "summary": self.summary, "report_dir": str(self.report_dir),
            "report_md": str(self.report_md), "best_path": str(self.best_path) if self.best_path else None,
            "launcher_paths": [str(p) for p in self.launcher_paths],
            "best_copy": str(self.best_copy) if self.best_copy else None,
            "warnings": list(self.warnings), "measurements_reused": self.measurements_reused,
            "start_ok": self.start_ok, "best_correct": self.best_correct,
            "best_verified_on": self.best_verified_on, "apply_refusal": self.apply_refusal(),
            "plot": str(self.plot) if self.plot else None, "plot_note": self.plot_note,
            "not_made": [asdict(m) for m in self.not_made], "steps": [s.to_json() for s in self.steps],
            "reproduction": self.reproduction.to_json() if self.reproduction else None,
            "best_step": self.best_step, "best_lineage": list(self.best_lineage), "phases": self.phases,
        }
