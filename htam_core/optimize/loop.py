"""The HTAM evolution loop.

Each step: profile the current kernel (its state) → rank directions, then strategies → generate a candidate
(mechanical transform or LLM) → verify (guards, correctness over seeds) → time it on the GPU → record the
outcome into the memory → keep the best correct kernel and continue from it. The budget counts steps: evaluated
candidates and, with the LLM engine, endpoint faults. Cancelling (``cancel`` event or Ctrl-C) keeps the best so far
and still writes the report.

LLM endpoint faults (no complete reply within ``--llm-timeout``, HTTP errors, a refused connection, a malformed
reply, a reply without code) become steps of status ``endpoint_fault``: shown in the report, never recorded in the
memory (they say nothing about the strategy). The loop gives the LLM up after ``--llm-max-faults`` consecutive
faults, and at once on a fault that would repeat (authentication, wrong URL or model, a refused request).

Nsight Compute is off the critical path: the start (and each new best) is timed without it, and its counters
are collected by a background stage (:class:`htam_core.profile.ncu_stage.CountersStage`: its own worker, once
per kernel version, cached by content hash); the loop ranks with the timing and the static profile and takes
the counters when they arrive. No candidate is profiled with ncu: no rule that judges a candidate reads a
counter. The stage is stopped before the fresh re-timing, so that runs on a quiet GPU. The workers are started
when the loop begins (:meth:`Evaluator.prestart`), and the time of each phase goes to ``report.json``
(:mod:`htam_core.optimize.phases`).

Without a GPU the loop runs in *static* mode: it verifies what can be verified (Triton under the
interpreter, CUDA compile-only), follows the ranking of the static state, records unmeasured outcomes
(they count as trials, never as speedups) and says plainly that nothing was timed.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, NamedTuple

from htam_core.generate import registry
from htam_core.generate.config import LLMConfig
from htam_core.generate.errors import GenerationError, LLMCancelledError, LLMEndpointError, LLMRepeatError
from htam_core.generate.llm import CheckResult
from htam_core.generate.registry import GenerationRequest
from htam_core.harness import HarnessError, find_harness
from htam_core.harness.base import reference_failed
from htam_core.measure.stats import MIN_SPREAD, SPREAD_RULE, classify_gain, headline_geomean
from htam_core.memory import (
    KnowledgeBase,
    Ranker,
    load_knowledge,
    open_store,
    state_from_profile,
    state_of_kernel,
)
from htam_core.memory.fingerprint import kernel_fingerprint, tried_fingerprint
from htam_core.memory.outcome import outcome_of, status_of
from htam_core.memory.records import ENDPOINT_FAULT, NOT_LEARNED
from htam_core.memory.variants import variant_key
from htam_core.optimize.evaluate import START_LABEL, Evaluation, Evaluator
from htam_core.optimize.measure_cache import MeasureCache
from htam_core.optimize.policy import Choice, all_choices, htam_choices, order_variants_scored, random_choices
from htam_core.optimize.replay import NOT_IN_TABLE, TableError, TableEvaluator, load_table
from htam_core.optimize.report import geomean_ratio as _geomean_ratio
from htam_core.optimize.report import write_report
from htam_core.optimize.reproduce import Reproduction, judge_reproduction, not_measured
from htam_core.optimize.task import POLICIES, NotMade, OptimizeResult, OptimizeTask, ProgressEvent, StepRecord
from htam_core.profile.api import gpu_available
from htam_core.profile.ncu_stage import CountersStage
from htam_core.runtime.worker import start_stats
from htam_core.source import SourceError, incomplete_reason, language_for_path, load, parse_text
from htam_core.source.model import Kernel
from htam_core.source.workspace import mark_output_folder
from htam_core.transforms.registry import no_transform_message
from htam_core.verify import strict
from htam_core.verify.correctness import NONDETERMINISTIC, REORDERED_SUM_FP32_TOL

#: Steps of history the memory sees (the prefix h_t).
PREFIX_LEN = 4
#: Other variants of the chosen strategy compiled ahead on the compile pool (rules engine).
PREFETCH_VARIANTS = 2


class OptimizeError(Exception):
    """The optimization could not start (missing file, unknown kernel, no or unusable harness, unusable memory,
    bad settings)."""


def _brief(message: str, limit: int = 600) -> str:
    """A worker's message without its Python traceback frames (the user needs the error, not our stack)."""
    lines = [ln for ln in message.splitlines() if ln.strip() and not ln.startswith(("Traceback", "  File ", "    "))]
    text = " ".join(lines) or message
    return text if len(text) <= limit else text[:limit] + " …"


def start_mismatch_warning(messages: list[str], file_name: str, kernel: str) -> str:
    """The warning when the starting kernel was verified and does not match its reference: no candidate is
    tried (each would be judged against the same mismatch). Quotes the verifier's first messages and, when
    they mention NaN (the poison of ``init = "empty"`` outputs), says that an output buffer the kernel also
    reads needs another init.

    Args:
        messages: the start's evaluation messages (the verifier's first).
        file_name, kernel: for the suggested ``htam verify`` command.
    """
    said = "; ".join(_brief(m, 300) for m in messages[:3]) or "no message"
    text = ("the starting kernel does not match its reference, so no candidate was tried (each would be judged "
            f"against the same mismatch): {said}. Fix the kernel or its harness (inputs, reference, tolerances in "
            f"htam.toml), check it with `htam verify {file_name} --kernel {kernel}`, then run again")
    if any("NaN" in m for m in messages[:6]):
        text += (". NaN is the poison written into outputs declared with init = \"empty\": an output buffer the "
                 "kernel also reads (C in C = alpha*A*B + beta*C, or out += x) needs init = \"zeros\" (or another "
                 "init) instead of \"empty\" in htam.toml")
    return text


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _diff(a: str, b: str, name: str) -> str:
    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), f"a/{name}", f"b/{name}", n=2))



class _Node(NamedTuple):
    """A kernel version the loop stands on: its text, evaluation, the memory's prefix of steps that made it and
    the indices of the kept steps that led to it from the start (``[]``: the start)."""

    text: str
    ev: Evaluation
    prefix: list[str]
    chain: list[int]


def _open_output(out: Path) -> None:
    """Create the run's output folder and mark it as htam's (:func:`mark_output_folder`): the copies of the
    user's files it will hold are never read as the user's launches."""
    out.mkdir(parents=True, exist_ok=True)
    mark_output_folder(out)


def follows_in_static(engine: str, correct: bool | None, numerics: bool, reorders_only: bool) -> bool:
    """Whether static mode (no GPU: nothing timed) follows a neutral candidate down the ranking.

    A candidate verified correct (a Triton kernel under the interpreter) is followed. A compiled but unverifiable
    one (CUDA without a GPU, or no harness) is followed only when it is a mechanical transform of the rules engine
    whose results equal the parent's, or differ only in the order of float additions (``reorders_only``: a tree,
    shuffle or vector sum of the same terms): a fast-math or reduced-precision step is not, and unverified LLM
    code never is.

    Args:
        engine: ``"rules"`` or ``"llm"``.
        correct: the verifier's verdict (``None``: not checked).
        numerics: the candidate may change results in the last bits.
        reorders_only: that change is only the order of float additions.

    Raises:
        Nothing.
    """
    if correct is True:
        return True
    return correct is None and engine == "rules" and (not numerics or reorders_only)

class _Loop:
    def __init__(self, task: OptimizeTask, on_progress: Callable[[ProgressEvent], None] | None,
                 cancel: threading.Event | None) -> None:
        if task.policy not in POLICIES:
            raise OptimizeError(f"unknown policy {task.policy!r}; expected one of {', '.join(POLICIES)}")
        if task.engine not in ("rules", "llm"):
            raise OptimizeError(f"unknown engine {task.engine!r}; expected rules or llm")
        if task.budget < 1:
            raise OptimizeError("--budget must be at least 1")
        self.task = task
        self.emit = on_progress or (lambda e: None)
        self.cancel = cancel or threading.Event()
        self.path = Path(task.path)
        model = self._load_kernel()
        self.out = task.resolved_out_dir()
        self.kb: KnowledgeBase = load_knowledge()
        try:
            self.store = open_store(task.memory_path)
        except Exception as exc:  # MemoryStoreError and OS errors: say what and where
            raise OptimizeError(f"cannot open the HTAM memory: {exc}") from exc
        ranker_ablation = task.ablation if task.policy == "htam" else None
        self.ranker = Ranker(self.kb, self.store, seed=task.seed, ablation=ranker_ablation)
        self.rng = random.Random(task.seed)
        table = None
        if task.replay_table:
            try:
                table = load_table(task.replay_table)
            except TableError as exc:
                raise OptimizeError(str(exc)) from exc
        self.gpu = table.measured if table is not None else (task.static is not True) and gpu_available()
        self.warnings: list[str] = []
        if task.static is False and not self.gpu:
            self.warnings.append("no GPU found: running in static mode")
        self.harness = self._find_harness(model, replay=table is not None)
        if (line := self._harness_line()) is not None:
            self.warnings.append(line)
        _open_output(self.out)  # only once the run can start: a refused one leaves no folder
        cache = None
        if task.measure_cache and self.gpu:
            cache = MeasureCache(task.measure_cache)
            self.warnings.extend(cache.warnings)
        self.evaluator = Evaluator(self.path, task.kernel, self.harness, gpu=self.gpu, workdir=self.out / "candidates",
                                   original_text=self.start_text, gpu_index=task.gpu_index,
                                   trials=task.trials, cache=cache)
        if table is not None:  # a replay: every measurement is a lookup in the table
            self.evaluator = TableEvaluator(table, task.replay_kernel or f"{task.path}::{task.kernel}", self.path,
                                            task.kernel, self.out / "candidates")
        # Nsight Compute counters off the critical path: once per kernel version, in the background
        self.counters = CountersStage(task.gpu_index) if (self.gpu and task.use_ncu and self.harness is not None
                                                          and table is None) else None
        self._counter_jobs: list[tuple[Evaluation, Future]] = []
        self.counters_note: str | None = None
        self.measurements_reused = 0  # candidates (steps) whose measurement came from the cache
        self.max_faults = 1  # consecutive LLM endpoint faults before the loop stops asking (set from the LLM config)
        self.generator = self._generator()
        self.fingerprint = kernel_fingerprint(self.path, self.kernel.key)
        #: the memory uid of each candidate recorded, by candidate index (under the kernel's tried id)
        self.recorded: dict[int, str] = {}
        self.steps: list[StepRecord] = []
        self.tried: set[str] = {_text_hash(self.start_text)}
        #: other workspace files as the steps that led to a kernel version left them (its launcher), by the
        #: version's text hash; the best version's are written beside best.* in --out
        self.files_of: dict[str, dict[str, str]] = {}
        self.kept_strategies: set[str] = set()
        # the other variants of the last proposed step (its choice, the next ones), and of a step that improved
        self._variants_left: tuple[Choice, list[Any]] | None = None
        self._siblings: tuple[Choice, list[Any]] | None = None  # tried next against its parent (_sibling_step)
        self.dead: set[tuple[str, str]] = set()  # (text hash, strategy) with nothing new to propose
        self._placed_models: dict[str, Any] = {}  # text hash -> its model at the original's place (_placed)
        self.not_made: list[NotMade] = []  # ranked steps passed over, with the refusal reason (for the report)
        self._not_made_seen: set[tuple[str, str]] = set()
        # LLM engine: evaluations made by the repair check, reused when the candidate comes back (text hash ->
        # verdict and file), and the folder label of the step being generated.
        self._checked: dict[str, tuple[Evaluation, Path]] = {}
        self._check_label, self._check_tries = "candidate", 0
        self._wait_at: tuple[int, float | None] = (0, None)  # (step, best speedup) for the LLM's waiting lines
        # measured wins wait for the fresh-process re-timing of the best before the memory learns them:
        # (prefix, state, strategy, step record, device)
        self._pending_wins: list[tuple[list[str], dict, str, StepRecord, str]] = []

    def _load_kernel(self) -> Any:
        """Read and parse the task's file (or its unsaved text), set ``start_text``, ``file_language`` and
        ``kernel``, and return the source model; :class:`OptimizeError` with one line when the file is missing,
        does not parse, lacks the kernel or is half-typed there."""
        task = self.task
        if not self.path.is_file():
            raise OptimizeError(f"no such file: {task.path}")
        try:
            self.start_text = task.source_text if task.source_text is not None else self.path.read_text("utf-8")
            self.file_language = language_for_path(self.path)
            model = parse_text(self.start_text, self.file_language, str(self.path)) if task.source_text is not None \
                else load(self.path)
        except (SourceError, UnicodeDecodeError) as exc:
            raise OptimizeError(str(exc)) from exc
        try:
            self.kernel = model.kernel(task.kernel)
        except KeyError as exc:
            raise OptimizeError(str(exc.args[0])) from exc
        if (why := incomplete_reason(self.kernel, "it is optimized")) is not None:
            raise OptimizeError(why)
        if model.stale:
            raise OptimizeError(f"kernel {task.kernel!r} in {self.path.name} is incomplete (the file does not parse "
                                f"there: {'; '.join(model.errors[:2]) or 'half-typed'}); finish it first")
        return model

    def _harness_line(self) -> str | None:
        """The run's note on its harness: where an inferred or oracle harness came from and what "correct" means
        (matches the starting kernel, or the reference); for a program run whole, that it checks nothing, why no
        launch harness was inferred, and how to get one; ``None`` for a harness the user wrote."""
        h = self.harness
        if h is None:
            return None
        if h.traits.whole_program:
            return (f"harness: {h.description()}: no candidate is checked for correctness; add a "
                    f"[kernel.{self.task.kernel}] table to htam.toml (htam harness infer prints one to start from) to "
                    "verify them" + "".join(f"; {n}" for n in h.notes[1:]))
        if h.traits.inferred or h.uses_oracle:
            return (f"harness: {h.description()}; a correct candidate matches {h.checked_against}"
                    + "".join(f"; {n}" for n in h.notes))
        return None

    def _find_harness(self, model: Any, *, replay: bool) -> Any:
        """The kernel's harness, or ``None`` for a replay without one (the table holds every verdict and time);
        :class:`OptimizeError` (the store closed first) when the user's harness is unusable, or when there is none
        outside a replay: candidates could be neither verified nor timed."""
        task = self.task
        try:
            return find_harness(self.path, task.kernel, model)
        except HarnessError as exc:
            if not exc.missing or not replay:
                self.store.close()  # the run stops here: run_optimize's finally never sees this loop
            if not exc.missing:  # the user's harness exists but is wrong: never go on without it
                raise OptimizeError(f"the harness of {task.kernel} cannot be used: {exc}\nFix it (check it with "
                                    f"`htam verify {self.path.name} --kernel {task.kernel}`), then run again.") from exc
            if not replay:
                # none at all (only the template guess): stop with the same message (and template) as
                # `htam verify` rather than write an unverified best
                raise OptimizeError(str(exc).replace("\n\n", "\n")) from exc
            return None

    def _generator(self) -> Any:
        if self.task.engine == "llm":
            try:
                cfg = LLMConfig(**(self.task.llm or {}))
            except (TypeError, GenerationError) as exc:  # unknown keys, bad limits
                raise OptimizeError(f"bad LLM settings {self.task.llm!r}: {exc}") from exc
            if not cfg.model:
                raise OptimizeError("the LLM engine needs a model name (--llm-model NAME)")
            self.max_faults = cfg.max_faults
            return registry.create("llm", config=cfg, log_dir=self.out, on_wait=self._on_wait, cancel=self.cancel)
        return registry.create("rules")

    # -- one candidate ------------------------------------------------------------------------------
    def _request(self, choice: Choice, text: str, ev: Evaluation, feedback: str | None,
                 ranked: list[Choice] | None = None, prefix: list[str] | None = None) -> GenerationRequest:
        d = self.kb.direction(choice.direction)
        strategies = [choice.strategy]
        if self.task.engine == "llm":
            # companions: the next applicable strategies of the same direction, in the policy's order (so never
            # a strategy of the other language or one whose predicate is false for this kernel)
            strategies += [c.strategy for c in ranked or [] if c.direction == choice.direction
                           and c.strategy != choice.strategy][:2]
        strat_dicts = []
        for sid in strategies:
            s = self.kb.strategy(sid)
            strat_dicts.append({"id": s.id, "name": s.title, "guidance": s.guidance, "example_before": s.before,
                                "example_after": s.after, "risk": s.risk, "transform": s.transform})
        hints = self._hints(choice, prefix or [])
        lang = self.kernel.language
        return GenerationRequest(kernel_text=text, language=lang, kernel_name=self.task.kernel, profile=ev.profile,
                                 direction={"name": d.name, "description": d.description}, strategies=strat_dicts,
                                 transition_hints=hints, error_feedback=feedback, path=str(Path(self.path).resolve()),
                                 files=self.files_of.get(_text_hash(text), {}))

    def _hints(self, choice: Choice, prefix: list[str]) -> list[str]:
        """Transition hints for the prompt: the memory's evidence for the step, and the knowledge base's
        transition priors from the last applied step (strategy and direction level) when there are any."""
        hints = [choice.evidence] if choice.evidence else []
        if prefix and self.kb.has_strategy(prefix[-1]):
            last = self.kb.strategy(prefix[-1])
            for key in (("strategy", last.id, choice.strategy), ("direction", last.direction, choice.direction)):
                edge = self.kb.transitions.get(key)
                if edge and edge.why not in " ".join(hints):
                    hints.append(f"after {last.title}: {edge.why} ({edge.when})")
        return hints

    def _check(self, code: str) -> Any:
        """Repair check for the LLM engine: the candidate must parse and keep the kernel, then it is
        evaluated like any candidate (guards, compile, correctness against the harness in a worker); a
        failure is sent back to the model. The verdict is kept so the loop does not evaluate it twice."""
        model = parse_text(code, self.file_language)
        if not any(k.answers_to(self.task.kernel) for k in model.kernels):
            return CheckResult(False, f"the reply must keep the kernel {self.task.kernel!r} (same name)")
        if model.errors:
            return CheckResult(False, "the code does not parse: " + "; ".join(model.errors[:5]))
        self._check_tries += 1
        ev, path = self.evaluator.evaluate(code, f"{self._check_label}-try{self._check_tries}")
        self._checked[_text_hash(code)] = (ev, path)
        if ev.failure:
            what = {"refused": "refused by the reward-hack guards", "incorrect": "wrong: it does not match the "
                    "reference", "failed": "failed to compile or run"}[ev.failure]
            return CheckResult(False, f"the candidate was {what}:\n" + "\n".join(ev.messages[:20]))
        return CheckResult(True, "")

    def _choices(self, ev: Evaluation, prefix: list[str]) -> list[Choice]:
        kernel, model = self._kernel_of(ev), self._placed(ev)
        if self.task.policy == "random":
            return random_choices(self.kb, self.ranker, kernel, ev.profile, self.rng, model)
        if self.task.policy == "exhaustive":
            return all_choices(self.kb, self.ranker, kernel, ev.profile, model)
        state = state_from_profile(ev.profile) if ev.profile else {}
        return htam_choices(self.ranker, state, prefix, kernel, ev.profile, model=model,
                            fingerprint=self.fingerprint)

    def _kernel_of(self, ev: Evaluation) -> Kernel:
        model = self._placed(ev)
        if model is not None:
            try:
                return model.kernel(self.task.kernel)
            except KeyError:
                pass
        return self.kernel

    def _placed(self, ev: Evaluation) -> Any:
        """``ev``'s source model read at the task's file's place: its text under the original's path, as the
        generator reads it (:class:`GenerationRequest` ``path``), so that the facts the ranking reads from the
        workspace are the original's. A candidate is written under ``--out`` (``candidates/<label>/``), where
        no program launches it: a kernel in a header, launched from the ``.cu`` file that includes it, would
        lose its launch there (the block a 2-D stencil tile is sized by, :func:`~htam_core.source.workspace.launch_unit`),
        and steps that need it would not be ranked though the generator makes them. Cached by text; ``None``
        without a model; the model itself when it cannot be re-read."""
        m = ev.model
        if m is None or not m.path or Path(m.path).resolve() == self.path.resolve():
            return m
        key = _text_hash(m.text)
        if key not in self._placed_models:
            try:
                self._placed_models[key] = parse_text(m.text, m.file_language, str(self.path.resolve()))
            except SourceError:
                self._placed_models[key] = m
        return self._placed_models[key]

    def _on_wait(self, line: str) -> None:
        """Progress while the LLM request waits ("waiting for <model> at <url>: 12 s of 60 s")."""
        step, best = self._wait_at
        self.emit(ProgressEvent(step, self.task.budget, None, None, best, line))

    def _next_candidate(self, text: str, ev: Evaluation, prefix: list[str], n: int,
                        at: int | None = None) -> tuple[Choice, Any | None, LLMEndpointError | None] | None:
        """The first choice (in policy order) that yields a candidate not tried yet, as ``(choice, candidate,
        None)``. ``text`` is the start (``at`` ``None``) or candidate ``at``; refusals name it (:class:`NotMade`).

        With the LLM engine, an endpoint fault comes back as ``(choice, None, error)``, and a choice whose every
        round produced no code as ``(choice, None, None)`` (no other strategy is asked this time): both are
        endpoint-fault steps that spend the budget, so a failing endpoint cannot spend requests beyond it.
        Configuration errors (no key, no model) are raised.
        """
        h = _text_hash(text)
        llm = self.task.engine == "llm"
        self._variants_left = None
        ranked = self._choices(ev, prefix)
        for choice in ranked:
            if not self.gpu and choice.strategy in self.kept_strategies:
                self._not_made(choice, prefix, at, "static mode: the loop already went on from this step; another "
                               "unmeasured variant of it would tell nothing new", refused=False)
                continue
            if (h, choice.strategy) in self.dead:
                continue
            if not llm and not choice.transform:
                s = self.kb.strategy(choice.strategy)
                self._not_made(choice, prefix, at, no_transform_message(s.title, s.guidance, "Run with --engine llm"))
                continue
            self._check_label, self._check_tries = f"{n:02d}-{choice.strategy.replace('.', '_')}", 0
            try:
                cands = self.generator.propose(self._request(choice, text, ev, None, ranked, prefix),
                                               check=self._check if llm else None)
            except LLMEndpointError as exc:
                return choice, None, exc  # the strategy stays available: the endpoint failed, not the strategy
            except GenerationError as exc:
                self.dead.add((h, choice.strategy))
                if llm:
                    raise  # ends the loop with one warning (run)
                self.warnings.append(f"{choice.strategy}: {exc}")
                continue
            if llm and not cands:
                self.dead.add((h, choice.strategy))
                return choice, None, None
            for _, why in getattr(self.generator, "skipped", []):
                self._not_made(choice, prefix, at, why)
            fresh = [c for c in cands if _text_hash(c.code) not in self.tried]
            if not fresh:
                self.dead.add((h, choice.strategy))
                if cands:
                    self._not_made(choice, prefix, at, "every candidate it makes was already evaluated in this run",
                                   refused=False)
                if llm:  # a request was spent on it: one step of the budget, never a silent re-ask
                    return choice, None, LLMRepeatError(
                        f"the reply repeats a kernel already evaluated in this run (asked for {choice.strategy})")
                continue
            if self.task.policy == "random":
                return choice, self.rng.choice(fresh), None
            informed = False  # the memory holds evidence on the variants (else the transform's order, a prior)
            if self.task.policy == "htam" and not llm and len(fresh) > 1:
                state = state_from_profile(ev.profile) if ev.profile else {}
                fresh, informed = order_variants_scored(self.ranker, state, prefix, choice.strategy, fresh,
                                                          self._kernel_of(ev), ev.profile, self._placed(ev))
            if not llm and hasattr(self.evaluator, "prefetch"):
                for other in fresh[1:1 + PREFETCH_VARIANTS]:  # the next variants compile while this one verifies
                    self.evaluator.prefetch(other.code)
            self._variants_left = (choice, list(fresh[1:1 + PREFETCH_VARIANTS])) if not llm and len(fresh) > 1 \
                and not informed else None
            return choice, fresh[0], None
        return None

    def _evaluate_candidate(self, cand: Any, label: str) -> tuple[Evaluation, Path]:
        """Evaluate a proposed candidate; one whose only numeric change is the order of its float additions
        (``reorders_only``) is checked at :data:`~htam_core.verify.correctness.REORDERED_SUM_FP32_TOL`."""
        reorders = bool(cand.params.get("changes_numerics") and cand.params.get("reorders_only"))
        return self.evaluator.evaluate(cand.code, label, fp32_tol=REORDERED_SUM_FP32_TOL if reorders else None)

    def _not_made(self, choice: Choice, prefix: list[str], at: int | None, reason: str, *,
                  refused: bool = True) -> None:
        """Note that the ranked step ``choice`` was passed over for the kernel reached by ``prefix`` (candidate
        ``at``, or the start when ``None``: the reason's line numbers are that file's), and why; ``refused``
        ``False``: the loop chose not to repeat a step it made (:attr:`NotMade.refused`)."""
        key = (choice.strategy, reason)
        if key not in self._not_made_seen:
            self._not_made_seen.add(key)
            kernel = "start" if not prefix else "after " + " → ".join(prefix)
            self.not_made.append(NotMade(choice.direction, choice.strategy, choice.transform, reason, kernel, at,
                                         refused))

    # -- counters in the background ------------------------------------------------------------------
    def _want_counters(self, text: str, ev: Evaluation, path: Path) -> None:
        """Queue the Nsight Compute counters of the kernel version ``text`` (evaluated as ``ev`` from the file
        ``path``, which ncu runs); never waits."""
        if self.counters is None or ev.profile is None or not ev.ok or not isinstance(self.evaluator, Evaluator):
            return
        harness = self.evaluator.harness_for(path)
        fut = self.counters.submit(text, ev.profile, harness, kernel=self._kernel_of(ev))
        if fut is not None:
            self._counter_jobs.append((ev, fut))

    def _take_counters(self) -> None:
        """Put the counters that arrived into their evaluations' profiles (the ranking reads them from then on)."""
        waiting = []
        for ev, fut in self._counter_jobs:
            prof = CountersStage.ready(fut)
            if prof is not None:
                ev.profile = prof
            elif not fut.done():
                waiting.append((ev, fut))
        self._counter_jobs = waiting

    def _stop_counters(self) -> None:
        """Take what arrived and stop the stage (a running ncu is killed), so the re-timing runs on a quiet GPU."""
        if self.counters is None:
            return
        self._take_counters()
        left = self.counters.stop()
        self._take_counters()
        if left:
            self.counters_note = (f"Nsight Compute counters of {left} kernel version(s) were still being collected "
                                  "when the search ended; the loop does not wait for them and stopped them before "
                                  "the fresh re-timing (a later run or the editor collects them)")
            self.warnings.append(self.counters_note)

    def _phases(self, wall_s: float, starts0: dict[str, float]) -> dict[str, Any]:
        """The run's phase times for ``report.json``."""
        phases = getattr(self.evaluator, "phases", None)
        starts = start_stats()
        n_starts = int(starts["starts"] - starts0["starts"])
        start_s = starts["seconds"] - starts0["seconds"]
        if phases is None:
            return {"wall_s": round(wall_s, 3), "process_starts": n_starts}
        if self.counters is not None:
            phases.add("ncu", self.counters.seconds, self.counters.runs)
        phases.add("process_start", start_s, n_starts)
        data = phases.to_json(wall_s)
        data["process_starts"] = n_starts
        data["ncu_runs"] = self.counters.runs if self.counters is not None else 0
        data["ncu_cache_hits"] = self.counters.hits if self.counters is not None else 0
        data["fresh_pids"] = list(getattr(self.evaluator, "fresh_pids", []))
        return data

    # -- the loop -----------------------------------------------------------------------------------
    def _progress(self, step: int, choice: Choice | None, best: float | None, msg: str) -> None:
        self.emit(ProgressEvent(step, self.task.budget, choice.direction if choice else None,
                                choice.strategy if choice else None, best, msg))

    def run(self) -> OptimizeResult:
        task = self.task
        # placeholder until the start is evaluated (Ctrl-C during its profile still writes a report)
        start_ev = Evaluation(False, None, "none", messages=["stopped before the starting kernel was evaluated"])
        cur = best = _Node(self.start_text, start_ev, [], [])  # the kernel the loop stands on, the best so far
        cancelled = False
        n = 0
        faults: list[StepRecord] = []  # the current run of consecutive endpoint faults
        gave_up = False
        t_wall, starts0 = time.monotonic(), start_stats()
        if hasattr(self.evaluator, "prestart"):
            self.evaluator.prestart()  # the GPU worker (torch imported) and the clean one for the re-timing
        try:
            self._progress(0, None, None, "profiling the starting kernel")
            start_ev, usable = self._evaluate_start()
            n = 0 if usable else task.budget  # nothing to derive candidates from
            cur = best = _Node(self.start_text, start_ev, [], [])
            trail: list[_Node] = []  # kernels the current one came from
            while n < task.budget:
                if self.cancel.is_set():
                    cancelled = True
                    break
                self._take_counters()
                if self._siblings and trail:  # the other variants of a step that just improved come first
                    n += 1
                    cur, best = self._sibling_step(n, start_ev, trail[-1], cur, best)
                    continue
                if task.engine == "llm":  # a request (and its repair rounds) can take a while
                    self._wait_at = (n, self._speedup(start_ev, best.ev))
                    self._progress(n, None, self._speedup(start_ev, best.ev),
                                   f"asking the LLM for candidate {n + 1}/{task.budget}")
                nxt = self._next_candidate(cur.text, cur.ev, cur.prefix, n + 1, cur.chain[-1] if cur.chain else None)
                while nxt is None and trail:
                    # nothing new from this kernel: go back to the kernel it was derived from and try its
                    # other steps (the search continues "from the candidate the policy chooses")
                    cur = trail.pop()
                    nxt = self._next_candidate(cur.text, cur.ev, cur.prefix, n + 1,
                                               cur.chain[-1] if cur.chain else None)
                if nxt is None:
                    self.warnings.append(f"stopped after {n} candidates: no step left that proposes a new "
                                         "candidate for this kernel or the kernels it was derived from")
                    break
                choice, cand, fault = nxt
                n += 1
                if cand is None:  # the endpoint gave no candidate: an endpoint fault, never the strategy's failure
                    rec = dataclasses.replace(self._endpoint_fault(n, choice, fault), parent=cur.chain[-1]
                                              if cur.chain else "start")
                    self.steps.append(rec)
                    faults.append(rec)
                    self._progress(n, None, self._speedup(start_ev, best.ev),
                                   f"candidate {n}: endpoint fault: {rec.messages[0]}")
                    if (fault is not None and fault.persistent) or len(faults) >= self.max_faults:
                        self.warnings.append(self._gave_up(faults, fault))
                        gave_up = True
                        break
                    continue
                faults = []
                variants_left = self._variants_left
                rec, ev, cand_path = self._evaluate_step(n, choice, cand, cur, start_ev, best.ev)
                if rec.accepted:
                    self.kept_strategies.add(choice.strategy)
                    trail.append(cur)
                    cur = _Node(cand.code, ev, (cur.prefix + [choice.strategy])[-PREFIX_LEN:], [*cur.chain, n])
                    best = self._new_best(best, cur, cand_path)
                    self._siblings = variants_left if self._siblings_first(choice, cur, variants_left) else None
                self._progress(n, None, self._speedup(start_ev, best.ev), f"candidate {n}: {_progress_status(rec)}")
        except (KeyboardInterrupt, LLMCancelledError):
            cancelled = True
        except GenerationError as exc:
            self.warnings.append(f"the LLM engine stopped: {exc}")
        if not gave_up and any(s.status == ENDPOINT_FAULT for s in self.steps):
            self.warnings.append(self._fault_note())  # faults that did not stop the run
        self._headline_note(start_ev, best.ev)
        self._stop_counters()
        reproduction = self._reproduce(start_ev, best.ev, best.text, cancelled)
        self._flush_wins(reproduction, set(best.chain))
        phases = self._phases(time.monotonic() - t_wall, starts0)
        return write_report(self.task, self.out, self.start_text, start_ev, best.text, best.ev, self.steps,
                            gpu=self.gpu, cancelled=cancelled, warnings=self.warnings,
                            language=self.kernel.language, measurements_reused=self.measurements_reused,
                            not_made=self.not_made, reproduction=reproduction,
                            best_step=best.chain[-1] if best.chain else None, phases=phases,
                            files=self.files_of.get(_text_hash(best.text), {}))

    def _evaluate_start(self) -> tuple[Evaluation, bool]:
        """Evaluate the starting kernel, always timed afresh (``reuse=False``: the suite's repeatability compares
        these times; its Nsight Compute counters follow in the background), and say whether candidates can be
        derived from it: not when it failed, nor when it was verified and does not match its reference (every
        candidate would be judged against the same broken reference or harness). The reason is the first
        warning; a nondeterministic start (float atomics) adds the note that its outputs are compared loosely."""
        start_ev, start_path = self.evaluator.evaluate(self.start_text, START_LABEL, use_ncu=False, reuse=False)
        self._want_counters(self.start_text, start_ev, start_path)
        usable = bool(start_ev.ok) and start_ev.correct is not False
        ref_fault = next((m for m in start_ev.messages if reference_failed(m)), None)
        if not start_ev.ok and ref_fault is not None:  # the harness is at fault, not the kernel
            self.warnings.insert(0, "the harness's reference could not be evaluated, so no candidate was tried (the "
                                 "starting kernel is not at fault; fix the reference in htam.toml or the program's "
                                 "assert): " + _brief(ref_fault))
        elif not start_ev.ok:
            self.warnings.insert(0, "the starting kernel failed, so no candidate was tried: "
                                 + "; ".join(_brief(m) for m in start_ev.messages[:3]))
        elif start_ev.correct is False:
            self.warnings.insert(0, start_mismatch_warning(start_ev.messages, self.path.name, self.task.kernel))
        self.warnings.extend(m for m in start_ev.messages if NONDETERMINISTIC in m)
        return start_ev, usable

    def _evaluate_step(self, n: int, choice: Choice, cand: Any, parent: _Node, start_ev: Evaluation,
                       best_ev: Evaluation) -> tuple[StepRecord, Evaluation, Path]:
        """Evaluate candidate ``n`` (``cand``, made by ``choice`` from ``parent``), judge it against ``parent``,
        append its step record and record it in the memory; returns the record, the evaluation and the
        candidate's file. ``best_ev``: the best so far, for the progress line."""
        self.tried.add(_text_hash(cand.code))
        files = {**self.files_of.get(_text_hash(parent.text), {}), **getattr(cand, "files", {})}
        if files:
            self.files_of[_text_hash(cand.code)] = files
        self._progress(n - 1, choice, self._speedup(start_ev, best_ev),
                       f"candidate {n}/{self.task.budget}: {choice.direction} → {choice.strategy}")
        label = f"{n:02d}-{choice.strategy.replace('.', '_')}"
        cached = self._checked.pop(_text_hash(cand.code), None)
        ev, cand_path = cached if cached else self._evaluate_candidate(cand, label)
        self.measurements_reused += int(ev.reused)
        self._checked.clear()
        rec = dataclasses.replace(self._judge(n, choice, cand, parent.text, parent.ev, start_ev, ev, cand_path),
                                  parent=parent.chain[-1] if parent.chain else "start")
        self.steps.append(rec)
        self._record(parent.prefix, parent.ev, choice, rec, ev)
        return rec, ev, cand_path

    def _new_best(self, best: _Node, cand: _Node, cand_path: Path) -> _Node:
        """``cand`` when it beats ``best`` (:meth:`_better`; its counters are then queued on a GPU), else ``best``.

        Static mode (nothing timed) has no time to compare: the best is the end of the chain the loop followed,
        the kernel with the most followed steps from the start (its lineage), the latest among equally long
        chains. A kernel made after the loop went back to an earlier one (a step from the start after a chain of
        three) is reported as followed, not as best.py."""
        if not self.gpu:
            return cand if len(cand.chain) >= len(best.chain) else best
        if not self._better(cand.ev, best.ev):
            return best
        if self.gpu:
            self._want_counters(cand.text, cand.ev, cand_path)
        return cand

    def _siblings_first(self, choice: Choice, cur: _Node, variants: tuple[Choice, list[Any]] | None) -> bool:
        """Whether the other ``variants`` of ``choice`` (the step that just made ``cur`` and improved it, GPU mode,
        not the random policy) go before the steps on ``cur``: when no step the rules engine can make on ``cur``
        ranks above ``choice`` did at its parent (a higher-ranked step on ``cur`` goes first; the variants stay
        open from the parent), or when the policy gives no scores."""
        if not (variants and variants[1] and self.gpu and self.task.policy != "random"):
            return False
        ahead = next((c for c in self._choices(cur.ev, cur.prefix)
                      if c.strategy != choice.strategy and c.transform and c.strategy not in self.kept_strategies), None)
        return ahead is None or ahead.score is None or choice.score is None or ahead.score <= choice.score

    def _sibling_step(self, n: int, start_ev: Evaluation, parent: _Node, cur: _Node, best: _Node
                      ) -> tuple[_Node, _Node]:
        """Candidate ``n``: the next other variant of the step that made ``cur`` from ``parent`` and improved it
        (GPU mode, rules engine: :attr:`_siblings`), tried before any step on ``cur``. The transform's variant
        order is a prior, not a measurement: the textbook 32x8 transpose tile beat the 32x32 variant that keeps
        the launch's block by 2x on an H100, and low-prior steps on the first variant (``__launch_bounds__``,
        ``restrict``, ``__ldg``) would otherwise spend the budget before it. Each variant spends one candidate of
        the budget, at most :data:`PREFETCH_VARIANTS` per step (those compiled ahead), only where the memory holds no
        evidence on the variants (:func:`~htam_core.optimize.policy.order_variants_scored`: its records are
        measurements, the transform's order is not) and no higher-ranked step waits on ``cur``
        (:meth:`_siblings_first`). It is judged against
        ``parent``; when it is a win and also faster than ``cur`` (:meth:`_better`), the loop stands on it
        instead; a win that is not faster than ``cur`` is not followed (said in its messages).

        Returns:
            The kernel the loop stands on and the best kernel, after this candidate.
        """
        assert self._siblings is not None
        choice, left = self._siblings
        cand = left.pop(0)
        if not left:
            self._siblings = None
        rec, ev, cand_path = self._evaluate_step(n, choice, cand, parent, start_ev, best.ev)
        if rec.accepted and self._better(ev, cur.ev):
            cur = _Node(cand.code, ev, cur.prefix, [*parent.chain, n])
            best = self._new_best(best, cur, cand_path)
        elif rec.accepted:
            self.steps[-1] = dataclasses.replace(rec, accepted=False, messages=[
                *rec.messages, f"a win over its parent, but not faster than candidate {cur.chain[-1]} (another "
                "variant of the same step): the loop stays on that one"])
        self._progress(n, None, self._speedup(start_ev, best.ev), f"candidate {n}: {_progress_status(rec)}")
        return cur, best

    def _reproduce(self, start: Evaluation, best: Evaluation, best_text: str, cancelled: bool) -> Reproduction:
        """Re-time the start and the best kernel interleaved in a fresh worker process and judge whether the
        reported speedup is reproduced (:mod:`htam_core.optimize.reproduce`)."""
        reported = self._speedup(start, best)
        if not self.gpu:
            return not_measured("static mode: no GPU, nothing was timed", self.steps)
        if best is start or best_text == self.start_text or not reported:
            return not_measured("no candidate beat the start, so there is no speedup to re-time", self.steps)
        if cancelled:
            return not_measured("cancelled before the re-timing, so the speedup is not confirmed", self.steps,
                                reported)
        self._progress(len(self.steps), None, reported, "re-timing the start and the best kernel in a fresh process")
        best_path = self.evaluator.write(best_text, "_best-retime")
        try:
            comp, why = self.evaluator.compare(self.start_text, best_path, fresh=True)
        except KeyboardInterrupt:
            return not_measured("cancelled during the re-timing, so the speedup is not confirmed", self.steps,
                                reported)
        except Exception as exc:  # noqa: BLE001 - the worker could not start: the speedup stays unconfirmed
            comp, why = None, f"the fresh worker could not start: {_brief(str(exc))}"
        rep = judge_reproduction(reported, comp, why, self.steps)
        if not rep.reproduced:
            self.warnings.insert(0, f"the best kernel's speedup was not reproduced: {rep.line()}; it is not "
                                 "reported as a win, --apply does not write it, and the memory records its steps "
                                 "as neutral")
        return rep

    def _flush_wins(self, rep: Reproduction, best_chain: set[int]) -> None:
        """Record the measured wins held back during the search. The steps that led to the best are recorded as
        wins only when the fresh re-timing reproduced the best's speedup; otherwise as neutral, with the
        spread and the reason. Kept steps off the best's chain keep their interleaved verdict."""
        pending, self._pending_wins = self._pending_wins, []
        for prefix, state, strategy, rec, device in pending:
            demote = rec.index in best_chain and not rep.reproduced
            if demote:
                outcome = dataclasses.replace(
                    outcome_of(rec.speedup, spread=rec.spread, note=rec.description[:200]), status="neutral",
                    note=f"{rec.description[:150]}; {rep.status} in a fresh process"[:300])
            else:
                outcome = outcome_of(rec.speedup, spread=rec.spread, note=rec.description[:200])
            self._store(prefix, state, strategy, outcome, device, rec.index, self._variant(rec))

    def _variant(self, rec: StepRecord) -> str | None:
        """The variant key of a step's candidate (rules engine only: an LLM candidate's parameters are its
        request's bookkeeping, not a variant)."""
        return variant_key(rec.params) if self.task.engine == "rules" else None

    def _endpoint_fault(self, n: int, choice: Choice, fault: LLMEndpointError | None) -> StepRecord:
        """The step record of an LLM endpoint fault: ``fault`` raised by the request, or (``None``) every round's
        reply came back without usable code. Its status is :data:`ENDPOINT_FAULT`: never recorded in the memory."""
        if fault is None:
            res = getattr(self.generator, "last_result", None)
            why = res.check.error_text if res is not None and res.check is not None else "no code in the reply"
            rounds = (res.repairs + 1) if res is not None else 1
            desc, kind = f"LLM endpoint fault: reply without usable code after {rounds} round(s)", "no_code"
        else:
            why, kind = _brief(str(fault)), fault.kind
            desc = f"LLM endpoint fault ({kind.replace('_', ' ')})"
        return StepRecord(index=n, direction=choice.direction, strategy=choice.strategy, transform=None,
                          description=desc, params={"fault": kind}, edit="", status=ENDPOINT_FAULT, correct=None,
                          verified_on="none", time_ms=None, speedup=None, speedup_vs_start=None, accepted=False,
                          evidence=choice.evidence, messages=[f"no candidate: {why}"], candidate_path=None,
                          score=choice.score)

    def _gave_up(self, faults: list[StepRecord], fault: LLMEndpointError | None) -> str:
        """The one line that says the loop stopped asking the LLM after endpoint faults."""
        last = faults[-1].messages[0].removeprefix("no candidate: ")
        if fault is not None and fault.persistent:
            return f"the LLM engine stopped: {last}"
        return (f"the LLM engine stopped after {len(faults)} consecutive endpoint faults (--llm-max-faults "
                f"{self.max_faults}); the last: {last}. They are kept out of the memory: no strategy is blamed")

    def _fault_note(self) -> str:
        """The note on endpoint faults that did not stop the run."""
        steps = [s for s in self.steps if s.status == ENDPOINT_FAULT]
        last = steps[-1].messages[0].removeprefix("no candidate: ")
        return (f"{len(steps)} LLM endpoint fault(s) gave no candidate (steps "
                f"{', '.join(str(s.index) for s in steps)}); they are kept out of the memory, so no strategy is "
                f"blamed for them. The last: {last}")

    @staticmethod
    def _speedup(start: Evaluation, ev: Evaluation) -> float | None:
        if start.time_ms and ev.time_ms:
            return _geomean_ratio(start.per_set_ms or [start.time_ms], ev.per_set_ms or [ev.time_ms])
        return None

    def _better(self, ev: Evaluation, best: Evaluation) -> bool:
        if self.gpu:
            if ev.time_ms is None or ev.correct is not True:
                return False
            if best.time_ms is None:
                return True
            r = _geomean_ratio(best.per_set_ms or [best.time_ms], ev.per_set_ms or [ev.time_ms])
            return r is not None and r > 1.0
        return True  # static mode: the followed chain is the best the static model can say (_new_best)

    def _strict(self, start: Evaluation, ev: Evaluation, cand_path: Path, reorders: bool = False) -> Evaluation:
        """A speedup over the start above 10x on a GPU must survive the stricter second verification
        (:func:`htam_core.verify.strict.strict_reverify`) before it counts; when it fails, the
        candidate is incorrect (rule ``strict-reverify``). ``reorders``: the candidate only reorders float sums
        (checked at the reordered-sum tolerance, as its first verification was)."""
        if not (ev.ok and ev.correct and self.harness is not None) or self.task.replay_table or \
                not hasattr(self.evaluator, "harness_for"):
            return ev  # a replay's table holds the verdict after this check
        if not strict.needs_strict_reverify(self._speedup(start, ev), gpu=self.gpu):
            return ev
        # the harness the first verification used: the candidate's file, the same tolerance (and oracle)
        h = self.evaluator.harness_for(Path(cand_path), REORDERED_SUM_FP32_TOL if reorders else None)
        if h is None:
            return ev
        res = strict.strict_reverify(h, gpu_index=self.task.gpu_index)
        if res.correct:
            return dataclasses.replace(ev, messages=[*ev.messages, f"{strict.STRICT_RULE}: passed ("
                                                     + "; ".join(res.messages[-1:]) + ")"])
        return dataclasses.replace(ev, correct=False, failure="incorrect", messages=[*ev.messages, *res.messages])

    def _judge(self, n: int, choice: Choice, cand: Any, parent_text: str, parent: Evaluation, start: Evaluation,
               ev: Evaluation, cand_path: Path) -> StepRecord:
        numerics = bool(cand.params.get("changes_numerics"))
        reorders = numerics and bool(cand.params.get("reorders_only"))
        ev = self._strict(start, ev, cand_path, reorders)
        speedup, spread, timing_msgs = None, None, []
        if self.gpu and ev.ok and ev.correct and ev.time_ms and parent.time_ms:
            speedup, spread, _, timing_msgs = self._gain(parent_text, parent, ev, cand_path)
        incorrect = ev.failure in ("refused", "incorrect")
        status = NOT_IN_TABLE if ev.failure == NOT_IN_TABLE else status_of(
            speedup, spread=spread, incorrect=incorrect, failed=not incorrect and (ev.failure == "failed" or not ev.ok))
        labelled = bool(ev.labels)
        if self.gpu:
            accepted = status == "win" and not labelled
        else:
            accepted = status == "neutral" and follows_in_static(self.task.engine, ev.correct, numerics, reorders)
        msgs = list(ev.messages) + timing_msgs
        if labelled:
            msgs.append("labelled " + ", ".join(ev.labels) + ": not counted as a plain speedup")
        if reorders:
            msgs.append("changes the order of float additions only (the same sum in exact arithmetic)" + (
                "" if self.gpu or ev.correct is not None
                else ": followed in static mode like any mechanical step, compiled but not checked (run on a GPU "
                     "to verify it within the tolerance)"))
        elif numerics:
            msgs.append("changes numerics (results may differ in the last bits: fast-math, reduced precision or a "
                        "rescaled accumulation)" + (
                "" if self.gpu or accepted or ev.correct is not None
                else ": not followed in static mode, where nothing can check its results (run on a GPU)"))
        return StepRecord(
            index=n, direction=choice.direction, strategy=choice.strategy,
            transform=cand.params.get("transform_id") or (choice.transform if self.task.engine == "rules" else None),
            description=cand.description,
            params={k: v for k, v in cand.params.items() if k not in ("usage",)},
            edit=_diff(parent_text, cand.code, self.path.name), status=status, correct=ev.correct,
            verified_on=ev.verified_on, time_ms=ev.time_ms, speedup=speedup,
            speedup_vs_start=self._speedup(start, ev) if self.gpu and ev.correct else None, accepted=accepted,
            evidence=choice.evidence, messages=msgs, candidate_path=str(cand_path), score=choice.score,
            spread=spread)

    def _gain(self, parent_text: str, parent: Evaluation, ev: Evaluation,
              cand_path: Path) -> tuple[float | None, float | None, str, list[str]]:
        """Speedup, spread, status and messages of a measured candidate: the parent and the candidate timed
        interleaved in one worker (:meth:`Evaluator.compare`); without that comparison, the two separate
        timings with the minimum spread, said so."""
        if SPREAD_RULE not in " ".join(self.warnings):
            self.warnings.append(f"win rule: {SPREAD_RULE}")
        comp, why = self.evaluator.compare(parent_text, cand_path)
        if comp is None:
            speedup = _geomean_ratio(parent.per_set_ms or [parent.time_ms], ev.per_set_ms or [ev.time_ms])
            return speedup, None, classify_gain(speedup, None), [
                f"{why}; speedup from separate timings, judged against the minimum spread {MIN_SPREAD:.0%}"]
        per_set = ", ".join(f"set {i}: {c.speedup:.3f}x ±{c.spread:.1%}" + (" (launch-bound)" if c.launch_bound
                                                                         else "") for i, c in enumerate(comp.sets))
        msgs = [f"interleaved timing: {comp.speedup:.3f}x, spread ±{comp.spread:.1%}, win threshold "
                f"{comp.threshold:.3f}x -> {comp.status} ({per_set})"]
        if comp.note:
            msgs.append(comp.note)
        return comp.speedup, comp.spread, comp.status, msgs

    def _headline_note(self, start: Evaluation, best: Evaluation) -> None:
        """Say which input sets the headline geomean leaves out as launch-bound (kernel time < 10 µs)."""
        if self.gpu and best is not start and start.per_set_ms and best.per_set_ms:
            note = headline_geomean(start.per_set_ms, best.per_set_ms).note
            if note:
                self.warnings.append(note)

    def _record(self, prefix: list[str], parent: Evaluation, choice: Choice, rec: StepRecord,
                ev: Evaluation) -> None:
        if not self.task.record or rec.status in NOT_LEARNED:
            return
        state = state_of_kernel(parent.profile, self._kernel_of(parent), self._placed(parent)) if parent.profile else {}
        device = (ev.profile or parent.profile).device if (ev.profile or parent.profile) else "unknown"
        if self.gpu and rec.status == "win":  # learned after the fresh re-timing of the best (_flush_wins)
            self._pending_wins.append((list(prefix), state, choice.strategy, rec, device))
            return
        outcome = outcome_of(rec.speedup, spread=rec.spread, failed=rec.status == "failed",
                             incorrect=rec.status == "incorrect", note=rec.description[:200])
        self._store(prefix, state, choice.strategy, outcome, device, rec.index, self._variant(rec))

    def _store(self, prefix: list[str], state: dict, strategy: str, outcome: Any, device: str, index: int,
               variant: str | None = None) -> None:
        """Write one outcome into the memory (a failure becomes a warning, never the loss of the run)."""
        try:
            stored = self.ranker.record(list(prefix), state, strategy, outcome, tried_fingerprint(self.fingerprint),
                                        device, variant)
            if stored is not None:
                self.recorded[index] = stored.uid  # --apply makes it a step of the file (adopt_applied)
            self.ranker.refresh()
        except Exception as exc:  # a memory problem must not lose the optimization
            self.warnings.append(f"could not record step {index} in the memory: {exc}")


def run_optimize(task: OptimizeTask, *, on_progress: Callable[[ProgressEvent], None] | None = None,
                 cancel: threading.Event | None = None) -> OptimizeResult:
    """Run the HTAM evolution loop on one kernel.

    Args:
        task: what to optimize (see :class:`OptimizeTask`).
        on_progress: called with a :class:`ProgressEvent` before and after every candidate.
        cancel: set it to stop after the current candidate; the best so far is kept and reported.

    Returns:
        The :class:`OptimizeResult`; the report files are written under ``task.resolved_out_dir()``.
        The user's file is never written here (``htam optimize --apply`` does that).

    Raises:
        OptimizeError: the task cannot start (missing file, unknown kernel, no harness (only the template guess)
            or an unusable one, bad settings, unusable memory).
    """
    loop = _Loop(task, on_progress, cancel)
    try:
        result = loop.run()
        result.recorded = dict(loop.recorded)
        return result
    finally:
        if loop.counters is not None:
            loop.counters.stop()
        close = getattr(loop.evaluator, "close", None)
        if close is not None:
            close()
        loop.store.close()


def _progress_status(rec: StepRecord) -> str:
    """A step's word in the progress line: its status, or "not measured" for a neutral step with no measured
    speedup (static mode), which would otherwise read as "measured, no change"."""
    if rec.status == "neutral" and rec.speedup is None:
        return "not measured" + (" (verified correct)" if rec.correct else "")
    return rec.status
