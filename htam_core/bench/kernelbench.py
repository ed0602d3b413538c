"""The KernelBench runner: HTAM on KernelBench problems, scored as KernelBench scores (KernelBench's ``src/eval.py`` and its fast_p metric).

Problems come from a JSON Lines file (``level``, ``problem_id``, ``name``, ``code`` per line; the
benchmark scripts' default location is in ``bench/data_paths.py``). For each problem, :func:`run_kb_task`:

1. writes the problem's code as ``<stem>_ref.py`` next to a copy of the start solution ``<stem>.py`` in a
   temporary work folder (the problem code is third-party: it is never written into the results or the repo);
2. starts from the naive solution in ``--start-solutions/level<N>/<id>_<name>.py`` (engine ``rules``), or asks
   the LLM for a first ``ModelNew`` when there is none (engine ``llm``);
3. runs the HTAM loop (:func:`htam_core.optimize.run_optimize`) for ``steps`` candidates;
4. on a GPU, verifies the best solution and times eager PyTorch, the start solution and the best solution in
   a worker process with KernelBench's semantics (:mod:`htam_core.bench.kb_eval`).

Scores (:mod:`htam_core.bench.metrics`): Correct, fast_p for p in {0, 0.5, 0.8, 1, 1.5, 2} over all problems
run, and the geomean speedup over eager over the correct ones. Without a GPU nothing is timed or verified
at full size, and every score is "not measured".
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from htam_core.bench import DEFAULT_OUT, metrics
from htam_core.bench.kb_eval import COMPILE_ANCHORS
from htam_core.bench.parallel import cancel_at, environment, visible_gpus
from htam_core.generate.config import LLMConfig
from htam_core.generate.errors import GenerationError
from htam_core.generate.llm import CheckResult, LLMGenerator
from htam_core.generate.prompt import build_messages
from htam_core.memory import open_store
from htam_core.memory.store import read_records, remove_store_files
from htam_core.optimize import OptimizeError, OptimizeTask, run_optimize
from htam_core.profile.api import gpu_available
from htam_core.runtime.worker import WorkerResult, close_pool, run_in_worker
from htam_core.source import load, parse_text
from htam_core.types.language import traits

#: The small sizes shipped for CPU smoke runs of the start solutions of levels 1 and 2 (``--size-overrides``).
SMALL_SIZES_HINT = "bench/kernelbench_small_sizes.json"



def _default_problems() -> Path:
    """Where the KernelBench problems file is read from when ``--problems`` is not given.

    The location of the third-party data (never in the repository) is written in one place, the checkout's
    ``bench/data_paths.py`` (``python bench/data_paths.py kernelbench`` prints it); this reads that script's
    constant. Outside a checkout (an installed package without ``bench/``) the default is ``problems.jsonl``
    in the working folder. Raises nothing: a broken script falls back to that same name.
    """
    script = Path(__file__).resolve().parents[2] / "bench" / "data_paths.py"
    try:
        spec = importlib.util.spec_from_file_location("htam_bench_data_paths", script)
        if spec is None or spec.loader is None or not script.is_file():
            return Path("problems.jsonl")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return Path(mod.KERNELBENCH_PROBLEMS)
    except Exception:  # noqa: BLE001 - any failure of the optional script means "no default location"
        return Path("problems.jsonl")


#: Where the KernelBench problems file is read from when ``--problems`` is not given (see ``_default_problems``).
DEFAULT_PROBLEMS = _default_problems()

#: Why a torch.compile anchor reads "not measured" on a run without a GPU (kept short: it is a report cell).
ANCHORS_NEED_GPU = "not measured: no GPU (anchors are timed on a GPU)"


class KernelBenchError(Exception):
    """The runner cannot start (malformed problems file, bad settings); the message says what to fix."""


@dataclass
class Problem:
    """One KernelBench problem (``code`` defines ``Model``, ``get_inputs`` and ``get_init_inputs``)."""

    level: int
    problem_id: int
    name: str
    code: str


#: The fields of one line of a problems file, in the order the messages name them.
PROBLEM_FIELDS = ("level", "problem_id", "name", "code")

#: What a problems file line must be, for the message about a line that is not one.
_NEEDS = "needs a JSON object with level and problem_id (integers), name and code (strings)"


def _json_kind(v: Any) -> str:
    """What a JSON value is, in words (``"an array"``, ``"null"``), for a message about a bad line."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string"}.get(type(v), "a number")


def _problem_from_line(line: str) -> Problem | str:
    """The problem one line of a problems file holds, or why it holds none (in words: no Python error text)."""
    try:
        d = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"the line is not JSON (column {exc.colno})"
    if not isinstance(d, dict):
        return f"the line is {_json_kind(d)}, not an object"
    missing = [k for k in PROBLEM_FIELDS if k not in d]
    if missing:
        return f"missing {', '.join(missing)}"
    wrong = []
    ints: dict[str, int] = {}
    for k in ("level", "problem_id"):
        v = d[k]
        if isinstance(v, int) and not isinstance(v, bool):
            ints[k] = v
        elif isinstance(v, str) and v.strip().isdigit():
            ints[k] = int(v)
        else:
            wrong.append(f"{k} is {_json_kind(v)}, not an integer")
    wrong += [f"{k} is {_json_kind(d[k])}, not a string" for k in ("name", "code") if not isinstance(d[k], str)]
    if wrong:
        return "; ".join(wrong)
    return Problem(ints["level"], ints["problem_id"], d["name"], d["code"])


def load_problems(path: str | Path, levels: list[int] | None = None, ids: list[int] | None = None) -> list[Problem]:
    """Read ``problems.jsonl``, keeping ``levels`` and ``ids`` (``None`` keeps all), sorted by level and id.

    Args:
        path: the JSON Lines file: one object per line with ``level``, ``problem_id`` (integers), ``name`` and
            ``code`` (strings); blank lines are ignored.
        levels: the levels to keep (``None``: all).
        ids: the problem ids to keep (``None``: all).

    Raises:
        KernelBenchError: unreadable file, or lines that are not problems: one line of text,
            ``FILE:LINE: not a KernelBench problem (needs ...): <why>``, naming the first bad line and how many
            others there are (never Python's own error text).
    """
    out = []
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except OSError as exc:
        raise KernelBenchError(f"cannot read {path}: {exc.strerror or 'not readable'}") from None
    except UnicodeDecodeError:
        raise KernelBenchError(f"{path} is not a problems file: it is not UTF-8 text") from None
    bad: list[tuple[int, str]] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        p = _problem_from_line(line)
        if isinstance(p, str):
            bad.append((n, p))
        elif (levels is None or p.level in levels) and (ids is None or p.problem_id in ids):
            out.append(p)
    if bad:
        n, why = bad[0]
        text = f"{path}:{n}: not a KernelBench problem ({_NEEDS}): {why}"
        if len(bad) > 1:
            more = [str(m) for m, _ in bad[1:6]]
            text += (f"; {len(bad) - 1} more bad line{'s' if len(bad) > 2 else ''} "
                     f"({', '.join(more)}{', ...' if len(bad) > 6 else ''})")
        raise KernelBenchError(text)
    return sorted(out, key=lambda p: (p.level, p.problem_id))


def find_start_solution(root: str | Path, level: int, problem_id: int) -> Path | None:
    """``<root>/level<level>/<problem_id>_*.py``, or ``None``."""
    d = Path(root) / f"level{level}"
    hits = sorted(d.glob(f"{problem_id}_*.py")) if d.is_dir() else []
    return hits[0] if hits else None


def reference_code(problem: Problem, overrides: dict[str, Any] | None) -> str:
    """The problem's code, with module-level size constants reassigned at its end when ``overrides`` is given
    (smoke tests on a CPU only: ``get_inputs`` reads the globals when it is called)."""
    if not overrides:
        return problem.code
    extra = "\n".join(f"{k} = {v!r}" for k, v in overrides.items())
    return f"{problem.code.rstrip()}\n\n# size overrides (smoke test, not KernelBench sizes)\n{extra}\n"


@dataclass
class KBTask:
    """One problem's run: plain data in and out (see :func:`run_kb_task`).

    ``memory_path`` is the store the loop records into. With a concurrent executor each task has a store of its
    own, replaced at the start and seeded with the records of ``memory_seed`` (the run memory as it was when
    the run started, read without modifying it); the run merges them at the end.
    """

    level: int
    problem_id: int
    name: str
    code: str
    start_path: str | None
    work_dir: str
    engine: str = "rules"
    steps: int = 6
    memory_path: str | None = None
    timing_trials: int = 100
    loop_trials: int = 20
    static: bool | None = None
    llm: dict[str, Any] | None = None
    overrides: dict[str, Any] | None = None
    deadline: float | None = None
    memory_seed: str | None = None
    anchors: list[str] = field(default_factory=list)
    compile_timeout_s: float = 180.0
    held_out: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return asdict(self)


def _first_kernel(path: Path) -> str | None:
    try:
        model = load(path)
    except Exception:  # noqa: BLE001 - an unparsable start is reported by the caller
        return None
    ks = [k for k in model.kernels if traits(k.language).file_language == "python"]
    return ks[0].name if ks else None


def _llm_first(task: KBTask, ref: Path, dest: Path) -> str:
    """Ask the LLM for a first ``ModelNew`` (with repair rounds on a parse/shape check); returns its code.

    Raises:
        GenerationError: the endpoint failed; KernelBenchError: no usable code came back.
    """
    def check(code: str) -> CheckResult:
        m = parse_text(code, "python")
        if "class ModelNew" not in code:
            return CheckResult(False, "the file must define class ModelNew(nn.Module)")
        if not [k for k in m.kernels if traits(k.language).file_language == "python"]:
            return CheckResult(False, "ModelNew must launch a custom Triton (@triton.jit) or CUDA kernel")
        return CheckResult(True, "")

    gen = LLMGenerator(LLMConfig(**(task.llm or {})), log_dir=dest.parent)
    msgs = build_messages(ref.read_text(encoding="utf-8"), "triton", None,
                          {"name": "First kernel", "description": "write a first correct custom kernel"}, [], [],
                          task=task.code)
    res = gen.generate_with_repair(msgs, check, language="python")
    if not res.code or not (res.check and res.check.ok):
        raise KernelBenchError("the LLM gave no usable first ModelNew: "
                               + (res.check.error_text if res.check else "no code"))
    return res.code


def _stem(name: str) -> str:
    return "p_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def run_kb_task(task: dict[str, Any]) -> dict[str, Any]:
    """Run one :class:`KBTask` (given as its JSON dict).

    Returns:
        ``{"level", "problem_id", "name", "start", "engine", "status": "ok"|"skipped"|"error", "error",
        "kernel", "mode", "correct", "eager_ms", "new_ms", "start_ms", "speedup", "start_speedup",
        "loop_best_speedup", "steps", "eager", "new", "start_timing", "messages", "wall_s"}``; times in ms
        (KernelBench means), ``None`` = not measured.
    """
    t = KBTask(**task)
    base: dict[str, Any] = {
        "level": t.level, "problem_id": t.problem_id, "name": t.name, "engine": t.engine,
        "start": Path(t.start_path).name if t.start_path else None, "status": "ok", "error": None, "kernel": None,
        "mode": None, "correct": None, "eager_ms": None, "new_ms": None, "start_ms": None, "speedup": None,
        "start_speedup": None, "loop_best_speedup": None, "steps": [], "messages": [], "wall_s": 0.0}
    if t.anchors:  # every record says why an anchor it asked for has no figure (replaced when one is timed)
        base["anchors"] = anchors_not_measured(t.anchors, "not measured: the problem's final evaluation did not run")
    if t.deadline is not None and time.time() >= t.deadline:
        if t.anchors:
            base["anchors"] = anchors_not_measured(t.anchors, "not measured: the time budget was spent")
        return {**base, "status": "skipped", "error": "not run: the time budget (--max-minutes) was spent"}
    t0 = time.time()
    work = Path(t.work_dir) / f"level{t.level}" / f"{t.problem_id}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    stem = _stem(Path(t.start_path).stem if t.start_path else t.name)
    ref = work / f"{stem}_ref.py"
    cand = work / f"{stem}.py"
    ref.write_text(reference_code(Problem(t.level, t.problem_id, t.name, t.code), t.overrides), encoding="utf-8")
    budget = t.steps
    try:
        if t.start_path:
            shutil.copyfile(t.start_path, cand)
        elif t.engine == "llm":
            cand.write_text(_llm_first(t, ref, cand), encoding="utf-8")
            budget = max(0, t.steps - 1)  # the first generation is one of the steps
        else:
            return {**base, "status": "skipped", "error": "no start solution (engine rules)"}
    except (GenerationError, KernelBenchError) as exc:
        return {**base, "status": "error", "error": f"first generation failed: {exc}", "wall_s": time.time() - t0}
    start_copy = work / f"{stem}_start.py"
    shutil.copyfile(cand, start_copy)
    kernel = _first_kernel(cand)
    if kernel is None:
        return {**base, "status": "error", "error": "the start solution has no Triton or CUDA kernel",
                "wall_s": time.time() - t0}
    base["kernel"] = kernel
    gpu = t.static is not True and gpu_available()
    if not gpu and t.anchors:
        base["anchors"] = anchors_not_measured(t.anchors, ANCHORS_NEED_GPU)
    if not gpu and not t.overrides:
        return {**base, "mode": "static", "status": "skipped", "wall_s": time.time() - t0,
                "error": f"no GPU: KernelBench sizes (GBs of input) are not run on the CPU interpreter; for a "
                         f"CPU smoke run pass --size-overrides FILE with small sizes for {t.level}/{t.problem_id} "
                         f"(e.g. {SMALL_SIZES_HINT})"}
    best = cand
    if t.memory_seed and t.memory_path:
        _seed_store(t.memory_path, t.memory_seed)
    with cancel_at(t.deadline) as cancel:
        try:
            if budget > 0:
                res = run_optimize(OptimizeTask(path=str(cand), kernel=kernel, engine=t.engine, budget=budget,
                                                policy="htam", out_dir=str(work / "htam-out"), memory_path=t.memory_path,
                                                static=t.static, llm=t.llm, trials=t.loop_trials, use_ncu=False),
                                   cancel=cancel)
                base.update(mode=res.mode, loop_best_speedup=res.best_speedup,
                            steps=[{"index": s.index, "strategy": s.strategy, "status": s.status, "correct": s.correct,
                                    "speedup_vs_start": s.speedup_vs_start} for s in res.steps])
                if res.best_path and res.changed:
                    best = work / f"{stem}_best.py"  # next to the reference, so the pair stays a KernelBench pair
                    shutil.copyfile(res.best_path, best)
        except OptimizeError as exc:
            return {**base, "status": "error", "error": str(exc), "wall_s": time.time() - t0}
    base["mode"] = "gpu" if gpu else "static"
    if gpu:
        r, base["retried_after_oom"] = _final_evaluation(t, str(best), str(ref), str(start_copy))
        if not r.ok:
            err = r.error
            return {**base, "status": "error", "correct": False,
                    "error": f"final evaluation failed: {err.kind if err else '?'}: {err.message if err else ''}"[:500],
                    "wall_s": time.time() - t0}
        v = r.value
        eager = (v.get("eager") or {}).get("mean")
        new = (v.get("new") or {}).get("mean")
        st = (v.get("start") or {}).get("mean")
        base.update(correct=bool(v.get("correct")), eager_ms=eager, new_ms=new, start_ms=st,
                    speedup=(eager / new) if (eager and new) else None,
                    start_speedup=(eager / st) if (eager and st) else None, messages=v.get("messages", []),
                    eager=v.get("eager"), new=v.get("new"), start_timing=v.get("start"), device=v.get("device"),
                    start_correct=v.get("start_correct"))
        base["anchors"] = {a: run_anchor(t, a, str(start_copy), str(ref), eager) for a in t.anchors}
    return {**base, "wall_s": time.time() - t0}


def _final_evaluation(t: KBTask, candidate: str, reference: str, start: str) -> tuple[WorkerResult, bool]:
    """Verify and time the problem's best candidate, its start and eager (:func:`kb_eval.evaluate_problem`) in
    the GPU's worker. On a CUDA out-of-memory error the GPU's workers (the evaluation's and each anchor's) are
    stopped, which frees every byte they held, and the evaluation runs once more in a fresh worker: KernelBench's
    inputs are GiBs, and a problem that fits alone must not fail for what earlier problems left behind.

    Returns:
        the worker's result and whether it is the retry's.
    """
    def run() -> WorkerResult:
        return run_in_worker("htam_core.bench.kb_eval:evaluate_problem",
                             {"candidate": candidate, "reference": reference, "start": start,
                              "trials": t.timing_trials}, timeout_s=900, pool_key="gpu0", interpret=False, gpu_index=0)

    r = run()
    if r.ok or r.error is None or r.error.kind != "oom":
        return r, False
    for key in ["gpu0", *(f"gpu0-{a}" for a in t.anchors)]:
        close_pool(key)
    return run(), True


#: The time one anchor's timing takes beyond its compile limit (eager and the compiled model, 100 trials each).
_ANCHOR_TIMING_S = 60.0


def _unmeasured_anchor(error: str | None) -> dict[str, Any]:
    """An anchor's record with no figure (the shape :func:`run_anchor` returns), ``error`` saying why."""
    return {"status": "not measured", "correct": None, "ms": None, "speedup": None, "compile_s": None,
            "max_abs_err": None, "error": error}


def anchors_not_measured(anchors: list[str], why: str) -> dict[str, dict[str, Any]]:
    """A "not measured" record for each of ``anchors`` (the shape :func:`run_anchor` returns), with ``why``
    (``"not measured: ..."``, short enough for a report cell) as its error.

    Args:
        anchors: names of :data:`htam_core.bench.kb_eval.COMPILE_ANCHORS`.
        why: the reason no anchor was timed, e.g. :data:`ANCHORS_NEED_GPU`.
    """
    return {a: _unmeasured_anchor(why) for a in anchors}


def run_anchor(t: KBTask, anchor: str, candidate: str, reference: str, eager_ms: float | None) -> dict[str, Any]:
    """Time the torch.compile ``anchor`` (:data:`htam_core.bench.kb_eval.COMPILE_ANCHORS`) on the task's problem
    in a worker of its own (a compile that runs past ``t.compile_timeout_s`` is killed there and reported as
    "not measured: compile timed out", and the problem's other figures stay).

    Returns:
        ``{"status", "correct", "ms", "speedup" (over the problem's eager time), "compile_s", "max_abs_err",
        "error"}``; ``ms``/``speedup`` are ``None`` when not measured.
    """
    rec = _unmeasured_anchor(None)
    if t.deadline is not None and time.time() >= t.deadline:
        return {**rec, "error": "not measured: the time budget (--max-minutes) was spent"}
    r = run_in_worker("htam_core.bench.kb_eval:evaluate_compiled",
                      {"candidate": candidate, "reference": reference, "anchor": anchor, "trials": t.timing_trials},
                      timeout_s=t.compile_timeout_s + _ANCHOR_TIMING_S, pool_key=f"gpu0-{anchor}",
                      interpret=False, gpu_index=0)
    if not r.ok:
        err = r.error
        if err is not None and err.kind == "timeout":
            return {**rec, "error": f"not measured: compile timed out (limit {t.compile_timeout_s:g} s)"}
        return {**rec, "status": "failed",
                "error": f"{err.kind if err else '?'}: {err.message if err else ''}"[:300]}
    v = r.value
    ms = (v.get("timing") or {}).get("mean")
    return {**rec, "status": v.get("status"), "correct": v.get("correct"), "ms": ms, "compile_s": v.get("compile_s"),
            "max_abs_err": v.get("max_abs_err"), "error": v.get("error"), "anchor_eager_ms": (v.get("eager") or {}).get("mean"),
            "speedup": (eager_ms / ms) if (eager_ms and ms) else None}


def _seed_store(path: str, seed: str) -> None:
    """Replace the task's own store ``path`` by one holding the records of the store ``seed`` (if it exists)."""
    p = Path(path)
    remove_store_files(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open_store(p) as store:
        if Path(seed).is_file():
            store.merge_records(read_records(seed))


def _not_among(ids: list[int], levels: list[int], path: str, in_levels: list[Problem]) -> str:
    """The error for ``--ids`` that name no problem of the selected levels."""
    have = sorted(p.problem_id for p in in_levels)
    span = f" (ids {have[0]} to {have[-1]})" if have else ""
    return (f"no problem to run: the asked ids {ids} are not among the problems of levels {levels} in {path}, "
            f"which has {len(have)} problems for those levels{span}; check --ids and --levels")


def left_out_line(skipped: list[dict[str, Any]], start_solutions: str | Path) -> str:
    """The console line for asked problems left out because they have no start solution (engine rules).

    Args:
        skipped: ``{"level", "problem_id", "name"}`` of each problem left out.
        start_solutions: the ``--start-solutions`` folder that was searched.
    """
    by: dict[int, list[int]] = {}
    for r in skipped:
        by.setdefault(int(r["level"]), []).append(int(r["problem_id"]))
    n = sum(len(v) for v in by.values())
    what = " and ".join(f"{', '.join(str(i) for i in sorted(v))} of level {lv}" for lv, v in sorted(by.items()))
    folder = Path(start_solutions) / (f"level{next(iter(by))}" if len(by) == 1 else "level<N>")
    return (f"[kernelbench] left out {'id' if n == 1 else 'ids'} {what}: no starting solution under {folder} "
            "(a <id>_<name>.py file; engine rules needs one); add one or run them with --engine llm")


def correct_text(correct: bool | None) -> str:
    """The final verdict in words: ``"correct"``, ``"incorrect"`` or ``"not verified"`` (``None``: no GPU
    verification ran)."""
    return "not verified" if correct is None else ("correct" if correct else "incorrect")


def progress_line(r: dict[str, Any]) -> str:
    """One console line for a finished problem record (see :func:`run_kb_task`)."""
    status = r.get("status", "error")
    sp = r.get("speedup")
    text = f"[kernelbench] L{r.get('level')} {r.get('name')}: {status}"
    if status != "skipped":
        text += f", {correct_text(r.get('correct'))}"
        if r.get("mode") == "static" and r.get("correct") is None:
            verified = sum(1 for s in r.get("steps") or [] if s.get("correct") is True)
            text += (f" (static mode: nothing timed; {verified} of {len(r.get('steps') or [])} loop candidates "
                     "verified correct at the smoke sizes)")
    if isinstance(sp, float):
        text += f", {sp:.3g}x over eager"
    return text + (f" ({r['error']})" if r.get("error") else "")


@dataclass
class KBConfig:
    """Settings of one KernelBench run (the CLI's options); see :mod:`htam_core.cli.bench`.

    ``executor``, ``scheduler``, ``workers``, ``worker_wait``: how tasks run (:class:`htam_core.bench.executors.ExecutorOptions`).
    Results stream to ``<out>/kernelbench-work/results.jsonl`` (no problem code in it) and a rerun resumes from
    it unless ``fresh``.
    """

    problems: str
    levels: list[int]
    ids: list[int] | None = None
    engine: str = "rules"
    start_solutions: str = "bench/kernelbench_solutions"
    steps: int = 6
    timing_trials: int = 100
    loop_trials: int = 20
    out_dir: str = DEFAULT_OUT
    memory_path: str | None = None
    size_overrides: dict[str, dict[str, Any]] | None = None
    max_minutes: float | None = None
    static: bool | None = None
    llm: dict[str, Any] | None = None
    work_dir: str | None = field(default=None)
    executor: str = "local"
    scheduler: str | None = None
    workers: int = 2
    worker_wait: float = 60.0
    fresh: bool = False
    anchors: list[str] = field(default_factory=list)
    compile_timeout_s: float = 180.0


def parse_anchors(text: str | None) -> list[str]:
    """The torch.compile anchors ``--anchors`` names: comma-separated names of
    :data:`htam_core.bench.kb_eval.COMPILE_ANCHORS` (in the order given, repeats dropped) or ``all``.

    Args:
        text: the option's value; ``None`` (not given) names no anchor.

    Raises:
        KernelBenchError: a value given but naming nothing (``""``, ``" "``, ``",,"``) or an unknown name; the
            message lists the known anchors.
    """
    known = f"known: {', '.join(COMPILE_ANCHORS)}, or all"
    if text is None:
        return []
    if text.strip() == "all":
        return list(COMPILE_ANCHORS)
    names = [a.strip() for a in text.split(",") if a.strip()]
    if not names:
        raise KernelBenchError(f"--anchors {text!r} names no anchor; give a comma-separated list ({known})")
    bad = [a for a in names if a not in COMPILE_ANCHORS]
    if bad:
        raise KernelBenchError(f"unknown --anchors {', '.join(bad)}; {known}")
    return list(dict.fromkeys(names))


def held_out_ids(start_solutions: str | Path, level: int) -> set[int]:
    """The problem ids of ``<start_solutions>/level<N>/held_out.json`` (``{"ids": [...]}``): start solutions
    kept out of any tuning and reported apart; empty when the file is absent.

    Raises:
        KernelBenchError: the file is not JSON with a list of integer ``ids``.
    """
    p = Path(start_solutions) / f"level{level}" / "held_out.json"
    if not p.is_file():
        return set()
    try:
        ids = json.loads(p.read_text(encoding="utf-8"))["ids"]
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise TypeError(f"ids is {ids!r}, not a list of integers")
        return set(ids)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise KernelBenchError(f"{p}: expected {{\"ids\": [problem ids]}} ({exc})") from None


def anchor_score(records: list[dict[str, Any]], anchor: str) -> dict[str, Any]:
    """fast_1 and geomean over eager of the torch.compile ``anchor`` over problem records (its own correctness
    decides, as for HTAM's solutions; a compile that was not measured counts as not correct for fast_1 and is
    left out of the geomean), with how many were measured."""
    pairs = [((r.get("anchors") or {}).get(anchor, {}).get("correct"),
              (r.get("anchors") or {}).get(anchor, {}).get("speedup")) for r in records]
    measured = sum(1 for c, s in pairs if c is not None)
    return {"measured": measured, "fast_1": metrics.fast_p(pairs, 1.0) if measured else None,
            "geomean_speedup": metrics.geomean_correct(pairs) if measured else None,
            "correct": metrics.correct_rate(pairs) if measured else None}


def score(records: list[dict[str, Any]], anchors: list[str] | None = None) -> dict[str, Any]:
    """Correct, fast_p and geomean (KernelBench's definitions) over problem records with ``correct`` and
    ``speedup``; ``None`` everywhere when nothing was verified.

    Args:
        records: problem records (:func:`run_kb_task`).
        anchors: torch.compile anchors the run asked for: each is scored (as "not measured", 0 measured, when
            no record has it) beside those the records hold.
    """
    pairs = [(r.get("correct"), r.get("speedup")) for r in records]
    anchors = sorted({a for r in records for a in (r.get("anchors") or {})} | set(anchors or []))
    return {"problems": len(records), "correct": metrics.correct_rate(pairs),
            "fast_p": {f"{p:g}": metrics.fast_p(pairs, p) for p in metrics.FAST_P},
            "geomean_speedup": metrics.geomean_correct(pairs),
            "anchors": {a: anchor_score(records, a) for a in anchors}}


def run_kernelbench(cfg: KBConfig, *, log: Any = print) -> dict[str, Any]:
    """Run every selected problem and score them per level.

    Asked ids (``cfg.ids``) without a start solution (engine rules) are left out with one ``log`` line naming
    them; asked torch.compile anchors on a run without a GPU get one ``log`` line saying they were not timed, and
    their records and summary say "not measured".

    Args:
        cfg: the run's settings.
        log: called with each console line.

    Returns:
        The result document: ``problems`` (records of :func:`run_kb_task`), ``summary`` (:func:`summarize`),
        ``measured``, ``environment``, ``not_run_without_start``, ``config`` and more.

    Raises:
        KernelBenchError: malformed problems file, unknown engine or anchor, or no problem selected.
    """
    from htam_core.bench.executors import ExecutorOptions, ResultLog, resumed_summary, run_tasks, task_key

    if cfg.engine not in ("rules", "llm"):
        raise KernelBenchError(f"unknown engine {cfg.engine!r}; expected rules or llm")
    unknown = [a for a in cfg.anchors if a not in COMPILE_ANCHORS]
    if unknown:
        raise KernelBenchError(f"unknown anchor(s) {', '.join(repr(a) for a in unknown)}; known: "
                               f"{', '.join(COMPILE_ANCHORS)}")
    in_levels = load_problems(cfg.problems, cfg.levels)
    problems = [p for p in in_levels if not cfg.ids or p.problem_id in cfg.ids]
    if cfg.ids:
        found = {p.problem_id for p in problems}
        missing = [i for i in cfg.ids if i not in found]
        if not problems:
            raise KernelBenchError(_not_among(cfg.ids, cfg.levels, cfg.problems, in_levels))
        if missing:
            log(f"[kernelbench] ids {missing} are not among the problems of levels {cfg.levels} in "
                f"{cfg.problems}; running the others")
    chosen: list[tuple[Problem, Path | None]] = []
    skipped: list[dict[str, Any]] = []
    held = {lv: held_out_ids(cfg.start_solutions, lv) for lv in cfg.levels}
    for p in problems:
        start = find_start_solution(cfg.start_solutions, p.level, p.problem_id)
        if start is None and cfg.engine == "rules":
            if cfg.ids:
                skipped.append({"level": p.level, "problem_id": p.problem_id, "name": p.name})
            continue
        chosen.append((p, start))
    if not chosen:
        if not in_levels:
            raise KernelBenchError(f"no problem to run: {cfg.problems} has no problem of levels {cfg.levels}")
        what = (f"none of the asked ids {cfg.ids} of levels {cfg.levels}" if cfg.ids
                else f"none of the {len(in_levels)} problems of levels {cfg.levels}")
        raise KernelBenchError(f"no problem to run: {what} has a start solution in {cfg.start_solutions} "
                               "(engine rules); add level<N>/<id>_<name>.py files or use --engine llm")
    if skipped:
        log(left_out_line(skipped, cfg.start_solutions))
    # the work folder only once the input is known good: a refused run leaves no temporary folder behind
    work = Path(cfg.work_dir) if cfg.work_dir else Path(tempfile.mkdtemp(prefix="htam-kb-"))
    work.mkdir(parents=True, exist_ok=True)
    memory = cfg.memory_path or str(work / "memory.sqlite3")  # default: a memory for this run only
    t_start = time.time()
    deadline = t_start + cfg.max_minutes * 60 if cfg.max_minutes else None
    tasks = [KBTask(p.level, p.problem_id, p.name, p.code, str(start) if start else None, str(work), cfg.engine,
                    cfg.steps, memory, cfg.timing_trials, cfg.loop_trials, cfg.static, cfg.llm,
                    (cfg.size_overrides or {}).get(f"{p.level}/{p.problem_id}"), deadline,
                    anchors=list(cfg.anchors), compile_timeout_s=cfg.compile_timeout_s,
                    held_out=p.problem_id in held.get(p.level, set()))
             for p, start in chosen]
    gpus = [] if cfg.static else visible_gpus()
    # said up front when it is certain (--static, or no GPU here and no remote cluster), else after the run
    anchors_said = bool(cfg.anchors) and (cfg.static is True or (not gpus and not cfg.scheduler))
    if anchors_said:
        log(f"[kernelbench] torch.compile anchors {', '.join(cfg.anchors)} need a GPU and are not timed "
            f"({'--static' if cfg.static else 'no GPU visible'}): the report and the JSON say \"not measured\" "
            "for them")
    log(f"[kernelbench] results go to {Path(cfg.out_dir).resolve()}")
    opts = ExecutorOptions(cfg.executor, tuple(gpus), cfg.scheduler, cfg.workers, cfg.worker_wait, log)
    state = Path(cfg.out_dir) / "kernelbench-work"
    if cfg.fresh:  # the per-task stores go too; the pooled store is this run's own temporary one unless
        # --memory named a store of the user's, which is never deleted (its records are the user's)
        (state / "results.jsonl").unlink(missing_ok=True)
        shutil.rmtree(state / "stores", ignore_errors=True)
    # one process, one task at a time: the run memory is shared along the run (what one problem teaches is
    # used on the next); concurrent tasks each record into a store of their own, merged at the end
    concurrent = cfg.executor != "local" or len(gpus) > 1
    if concurrent:
        for t in tasks:
            t.memory_seed, t.memory_path = memory, str(state / "stores" / f"L{t.level}-{t.problem_id}.sqlite3")

    def done(r: dict[str, Any], progress: str) -> None:
        log(f"{progress_line(r)} [{progress}]")

    # the key covers the problem code (in the task), the start solution's content and whether a GPU is used
    keyed = [(task_key(f"L{t.level}/{t.problem_id}", {**t.to_json(), "work_dir": None, "memory_path": None,
                                                      "memory_seed": None, "gpu": bool(gpus)}, [t.start_path]), t)
             for t in tasks]
    rlog = ResultLog(state / "results.jsonl")
    try:
        out = run_tasks("htam_core.bench.kernelbench:run_kb_task", [(k, t.to_json()) for k, t in keyed], opts,
                        log=rlog, on_done=done,
                        on_resumed=lambda text: log(f"[kernelbench] resumed from {rlog.path} [{text}]"))
    except BaseException:  # no scheduler, no worker, Ctrl-C: the run's temporary folder goes all the same
        if not cfg.work_dir:
            shutil.rmtree(work, ignore_errors=True)
        raise
    results = [{"level": t.level, "problem_id": t.problem_id, "name": t.name, "held_out": t.held_out, **r}
               for (_, t), r in zip(keyed, out, strict=True)]
    pooled = None
    if concurrent:
        from htam_core.memory.merge import merge_files

        stores = [Path(t.memory_path) for t in tasks if t.memory_path and Path(t.memory_path).is_file()]
        rep = merge_files(stores, memory) if stores else None
        pooled = {"path": memory, "stores": len(stores), "added": rep.added if rep else 0,
                  "conflicts": len(rep.conflicts) if rep else 0}
    if not cfg.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    levels = summarize(results, cfg.anchors)
    measured = any(r.get("mode") == "gpu" for r in results)
    if cfg.anchors and not anchors_said and not measured:
        log(f"[kernelbench] torch.compile anchors {', '.join(cfg.anchors)} need a GPU and were not timed: no "
            "problem ran on a GPU; the report and the JSON say \"not measured\" for them")
    env = environment(gpus)
    return {"problems": results, "summary": levels, "measured": measured, "environment": env,
            "not_run_without_start": skipped, "sizes_overridden": bool(cfg.size_overrides), "memory": pooled,
            "resumed": resumed_summary(rlog.resumed, len(results), state),
            "config": {k: v for k, v in asdict(cfg).items() if k not in ("llm", "size_overrides")}
            | {"gpus": gpus, "llm_model": (cfg.llm or {}).get("model")}, "wall_s": time.time() - t_start}


def summarize(results: list[dict[str, Any]], anchors: list[str] | None = None) -> dict[str, Any]:
    """The per-level summary of problem records: ``{"level<N>": score, "level<N>-heldout": score}``, held-out
    problems (kept out of any tuning) scored apart and never pooled, ``skipped`` records left out.

    Args:
        results: problem records (:func:`run_kb_task`).
        anchors: the torch.compile anchors the run asked for, scored in every level even when none was timed
            (so a report without a GPU says "not measured" for them instead of leaving them out).
    """
    levels: dict[str, Any] = {}
    for lv in sorted({r.get("level") for r in results}):
        rs = [r for r in results if r.get("level") == lv and r.get("status") != "skipped"]
        levels[f"level{lv}"] = score([r for r in rs if not r.get("held_out")], anchors)
        if any(r.get("held_out") for r in rs):
            levels[f"level{lv}-heldout"] = score([r for r in rs if r.get("held_out")], anchors)
    return levels


def combine_runs(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One result document from runs of the same problems split over several calls (a device call's time
    budget cut the first one): per (level, problem), the latest run's record that was not ``skipped`` wins, and
    the summary is recomputed over the combined records.

    Args:
        docs: result documents of :func:`run_kernelbench` (their JSON), oldest first; the first one's
            environment and config head the result, and ``combined_from`` lists every run's date and problems.

    Raises:
        KernelBenchError: no document, a run that was not measured beside one that was, or runs of
            different engines or step counts (their figures cannot be pooled).
    """
    if not docs:
        raise KernelBenchError("nothing to combine: give at least one KernelBench result JSON")
    if len({bool(d.get("measured")) for d in docs}) > 1:
        raise KernelBenchError("cannot combine a measured run with a static one")
    keys = ("engine", "steps", "timing_trials", "anchors")
    if len({tuple(str((d.get("config") or {}).get(k)) for k in keys) for d in docs}) > 1:
        raise KernelBenchError(f"the runs differ in {', '.join(keys)}: their figures cannot be pooled")
    by: dict[tuple[Any, Any], dict[str, Any]] = {}
    for d in docs:
        for r in d.get("problems") or []:
            k = (r.get("level"), r.get("problem_id"))
            if k not in by or r.get("status") != "skipped":
                by[k] = r
    results = sorted(by.values(), key=lambda r: (r.get("level") or 0, r.get("problem_id") or 0))
    ran = [{"date": (d.get("environment") or {}).get("date"), "wall_s": d.get("wall_s"),
            "problems": [r.get("problem_id") for r in d.get("problems") or [] if r.get("status") != "skipped"]}
           for d in docs]
    line = (f"combined from {len(docs)} runs (" + "; ".join(
        f"{x['date']}: problems {', '.join(str(i) for i in x['problems']) or 'none'}" for x in ran)
        + "): each problem's record is its latest run's")
    asked = (docs[0].get("config") or {}).get("anchors") or []
    return {**docs[0], "problems": results, "summary": summarize(results, list(asked)), "combined_from": ran,
            "resumed": {"tasks": 0, "total": len(results), "line": line},
            "wall_s": sum(float(d.get("wall_s") or 0.0) for d in docs)}
