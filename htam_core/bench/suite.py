"""The naive-kernel suite: HTAM against baselines and ablations on every kernel of a suite folder.

A suite folder holds kernel files and one ``htam.toml`` whose ``[kernel.<name>]`` tables are their harnesses
(with ``bytes``/``flops``: the fewest DRAM bytes and FLOPs of one call, the roofline bound).

For every kernel and policy, :func:`run_suite_task` runs :func:`htam_core.optimize.run_optimize` with the
rules engine and a fixed budget. Policies (:data:`POLICY_SPECS`):

* ``htam``: the method, with a memory warmed up on the *other* kernels only (leave one out);
* ``htam-cold``: HTAM from an empty memory. Its runs are the warm-up pass: each records into a store of its
  own, exported to JSON; the ``htam`` run of kernel k imports every export except k's;
* ``random``: uniform random order over the same applicable transforms; ``exhaustive``: the candidates of the
  transform space in knowledge-base order, up to a fixed (larger) budget. It is the reference for
  trials-to-90%, not the best reachable: random or HTAM can beat it;
* the ablations of docs/MEMORY.md (**Ablations**), each with the same leave-one-out memory: ``flat``, ``no-local``,
  ``no-prefix``, ``no-position``, ``no-update`` and ``random-memory`` (the ranker's ``random`` switch).

Every (kernel, policy) pair is a :class:`SuiteTask`, a plain dict in and out, run by an executor
(:mod:`htam_core.bench.executors`: in this process, or on a Dask cluster), streamed to ``<work>/results.jsonl``
and resumed from it; every task records into its own store, merged at the end into ``<work>/memory.sqlite3``. Without a GPU everything runs in static mode and reports
"not measured" for times and speedups.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from htam_core.bench import DEFAULT_OUT, metrics
from htam_core.bench.parallel import cancel_at
from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.runner import cdiv
from htam_core.harness.spec import SPEC_FILENAME, is_function_reference, load_toml, parse_kernel_table
from htam_core.measure.gpu import compute_dtype
from htam_core.measure.peaks import get_peaks, peak_flops_for
from htam_core.runtime.worker import run_in_worker
from htam_core.source import load

#: Policy name -> (OptimizeTask.policy, OptimizeTask.ablation, uses the leave-one-out memory).
POLICY_SPECS: dict[str, tuple[str, str | None, bool]] = {
    "htam": ("htam", None, True),
    "htam-cold": ("htam", None, False),
    "random": ("random", None, False),
    "exhaustive": ("exhaustive", None, False),
    "flat": ("htam", "flat", True),
    "no-local": ("htam", "no-local", True),
    "no-prefix": ("htam", "no-prefix", True),
    "no-position": ("htam", "no-position", True),
    "no-update": ("htam", "no-update", True),
    "random-memory": ("htam", "random", True),
}
#: What ``--policies`` means when not given.
DEFAULT_POLICIES = ("htam", "random", "flat", "exhaustive")
#: Every ablation switch, for ``--policies all``.
ALL_POLICIES = tuple(POLICY_SPECS)


class SuiteError(Exception):
    """The suite cannot run (missing folder, no htam.toml, unknown kernel or policy); the message says how to
    fix it."""


@dataclass
class SuiteKernel:
    """One kernel of the suite.

    Attributes:
        name: the kernel's name (the ``[kernel.<name>]`` key).
        path: absolute path of its file.
        language: ``"triton"`` or ``"cuda"``.
        bytes_moved, flops: the roofline bound of one call on the first input set (``None`` when not given).
        sizes: the first input set's size symbols (the set whose median time is reported).
        compute_dtype: the dtype whose FLOP/s peak bounds it (``"tf32"`` for a Triton ``tl.dot`` on float32
            inputs; :func:`htam_core.measure.gpu.compute_dtype`), or ``None`` for the fp32 SIMT peak.
        harness_sha256: SHA-256 of its ``[kernel.<name>]`` table (canonical JSON): part of the task keys, so a
            changed harness runs again instead of resuming.
        depends: the files its results depend on (the kernel file, a ``reference = "ref.py:fn"`` module), whose
            content is part of the task keys (:func:`htam_core.bench.executors.task_key`).
    """

    name: str
    path: str
    language: str
    bytes_moved: float | None
    flops: float | None
    sizes: dict[str, Any] = field(default_factory=dict)
    compute_dtype: str | None = None
    harness_sha256: str | None = None
    depends: list[str] = field(default_factory=list)


def _eval_bound(expr: str | None, sizes: dict[str, Any]) -> float | None:
    if not expr:
        return None
    ns = {"__builtins__": {"min": min, "max": max, "int": int, "float": float, "abs": abs},
          "cdiv": cdiv, "math": math, **sizes}
    try:
        return float(eval(compile(expr, "bytes/flops", "eval"), ns))  # noqa: S307 - our own suite's table
    except Exception as exc:  # noqa: BLE001
        raise SuiteError(f"bytes/flops expression {expr!r} cannot be evaluated with sizes {sizes}: {exc}") from exc


def _compute_dtype(h: Harness, path: Path, name: str) -> str | None:
    """The compute dtype of a suite kernel for its FLOP/s bound (see :attr:`SuiteKernel.compute_dtype`)."""
    floats = [i.dtype for i in h.inputs if not i.is_scalar and str(i.dtype).startswith(("float", "bfloat"))]
    try:
        kernel = load(str(path)).kernel(name)
    except Exception:  # noqa: BLE001 - an unparsable file gets the plain fp32 bound
        kernel = None
    return compute_dtype(floats[0] if floats else None, kernel) if floats else None


def kernel_from_table(spec: Path, name: str, table: Any) -> SuiteKernel:
    """One suite kernel from its ``[kernel.<name>]`` table of ``spec`` (an ``htam.toml``), validated with the
    harness parser; its roofline bound is evaluated on the first input set.

    Raises:
        SuiteError: the table has no ``file``, names a file that does not exist, or is invalid.
    """
    if not isinstance(table, dict) or "file" not in table:
        raise SuiteError(f"{spec} [kernel.{name}] needs file = \"<kernel file>\" in a suite")
    path = (spec.parent / table["file"]).resolve()
    if not path.is_file():
        raise SuiteError(f"{spec} [kernel.{name}] names {table['file']}, which does not exist")
    try:
        h: Harness = parse_kernel_table(table, kernel=name, spec_path=spec, file_path=path)
    except HarnessError as exc:
        raise SuiteError(str(exc)) from exc
    sizes = dict(h.sizes[0]) if h.sizes else {}
    ref = table.get("reference")
    ref_file = ref.split(":")[0] if isinstance(ref, str) and is_function_reference(ref) else ""
    depends = [str(path)] + ([str((spec.parent / ref_file).resolve())] if ref_file.endswith(".py") else [])
    digest = hashlib.sha256(json.dumps(table, sort_keys=True, default=str).encode()).hexdigest()
    return SuiteKernel(name, str(path), h.language, _eval_bound(h.bytes_expr, sizes),
                       _eval_bound(h.flops_expr, sizes), sizes, _compute_dtype(h, path, name), digest, depends)


def load_suite(suite_dir: str | Path, kernels: list[str] | None = None) -> list[SuiteKernel]:
    """Read the suite's ``htam.toml`` and validate every table with the harness parser.

    Args:
        suite_dir: the folder holding ``htam.toml`` and the kernel files.
        kernels: keep only these names (in this order); ``None`` keeps all, in file order.

    Raises:
        SuiteError: no folder, no ``htam.toml``, an invalid table, or an unknown kernel name.
    """
    d = Path(suite_dir)
    spec = d / SPEC_FILENAME
    if not spec.is_file():
        raise SuiteError(f"no {SPEC_FILENAME} in {d}: a suite folder holds the kernels and one {SPEC_FILENAME} "
                         "with a [kernel.<name>] harness table per kernel (see bench/suite)")
    try:
        tables = load_toml(spec).get("kernel") or {}
    except HarnessError as exc:
        raise SuiteError(str(exc)) from exc
    out = [kernel_from_table(spec, name, table) for name, table in tables.items()]
    if kernels:
        by_name = {k.name: k for k in out}
        missing = [k for k in kernels if k not in by_name]
        if missing:
            raise SuiteError(f"unknown suite kernel(s) {', '.join(missing)}; the suite has: "
                             f"{', '.join(by_name)}")
        out = [by_name[k] for k in kernels]
    if not out:
        raise SuiteError(f"{spec} defines no [kernel.<name>] table")
    return out


def parse_policies(text: str | None) -> list[str]:
    """``"htam,random"`` -> the policy names; ``"all"`` -> every policy; ``None`` -> :data:`DEFAULT_POLICIES`.

    Raises:
        SuiteError: an unknown policy name, or a given but blank list (``" "``, ``","``); the message lists
            the known ones.
    """
    if text is None:
        return list(DEFAULT_POLICIES)
    if text.strip() == "all":
        return list(ALL_POLICIES)
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise SuiteError(f"--policies {text!r} names no policy; give a comma-separated list of: "
                         f"{', '.join(POLICY_SPECS)} (or all)")
    bad = [p for p in names if p not in POLICY_SPECS]
    if bad:
        raise SuiteError(f"unknown policy {', '.join(bad)}; known: {', '.join(POLICY_SPECS)} (or all)")
    return list(dict.fromkeys(names))


@dataclass
class SuiteTask:
    """One (kernel, policy) optimization: plain data, JSON in and out.

    Attributes:
        kernel, path: the kernel and its file.
        policy_name: a key of :data:`POLICY_SPECS`.
        budget: candidates to evaluate.
        out_dir: where run_optimize writes its report and candidates.
        memory_path: the SQLite store this run uses (created fresh by the orchestrator's layout).
        memory_imports: memory exports (JSON files) merged into the store before the run.
        export_to: write the store's export here after the run (the warm-up pass), or ``None``.
        record: record outcomes into the store during the run.
        seed, static, trials, use_ncu: see :class:`htam_core.optimize.OptimizeTask`.
        deadline: epoch seconds after which the task is skipped, or stops after its current candidate.
        measure_cache: the SQLite measurement cache shared by every task of the run (see
            :attr:`htam_core.optimize.OptimizeTask.measure_cache`), or ``None`` to measure every candidate.
        replay_table, replay_kernel: replay from a measured-space table (see
            :attr:`htam_core.optimize.OptimizeTask.replay_table`), or ``None`` to measure.
    """

    kernel: str
    path: str
    policy_name: str
    budget: int
    out_dir: str
    memory_path: str
    memory_imports: list[str] = field(default_factory=list)
    export_to: str | None = None
    record: bool = True
    seed: int = 0
    static: bool | None = None
    trials: int = 100
    use_ncu: bool = False
    deadline: float | None = None
    measure_cache: str | None = None
    replay_table: str | None = None
    replay_kernel: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return asdict(self)


def _merge_memory(path: str, imports: list[str]) -> int:
    # lazily: importing this module loads no torch (start-up speed)
    from htam_core.memory import open_store

    added = 0
    with open_store(path) as store:
        for f in imports:
            added += store.import_json(json.loads(Path(f).read_text(encoding="utf-8"))).added
    return added


def _export_memory(path: str, dest: str) -> None:
    # lazily: importing this module loads no torch (start-up speed)
    from htam_core.memory import open_store

    with open_store(path) as store:
        data = store.export()
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    Path(dest).write_text(json.dumps(data), encoding="utf-8")


def per_set_medians(report_json: str | Path) -> tuple[list[float] | None, list[float] | None]:
    """The start's and the best's median time of every input set (ms), read from a run's ``report.json``
    (``start_profile``/``best_profile`` ``extra.timing.per_set``, written by :mod:`htam_core.measure.gpu`).

    Returns ``(None, None)`` for a file that cannot be read, and ``None`` for a profile without per-set
    timing (static mode, or a timing method without sets); never raises.
    """
    try:
        data = json.loads(Path(report_json).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None

    def sets(key: str) -> list[float] | None:
        timing = ((data.get(key) or {}).get("extra") or {}).get("timing") or {}
        vals = [s.get("median") for s in timing.get("per_set") or []]
        return [float(v) for v in vals] if vals and all(isinstance(v, (int, float)) for v in vals) else None

    return sets("start_profile"), sets("best_profile")


def run_suite_task(task: dict[str, Any]) -> dict[str, Any]:
    """Run one :class:`SuiteTask` (given as its JSON dict) and return its outcome dict.

    Returns:
        ``{"kernel", "policy", "status": "ok"|"skipped"|"error", "mode", "measured", "start_ms", "best_ms",
        "start_per_set_ms", "best_per_set_ms", "best_speedup", "steps": [{"index", "strategy", "transform",
        "status", "correct", "time_ms", "speedup", "spread", "speedup_vs_start", "accepted"}],
        "reproduction", "memory_records_imported", "measurements_reused", "summary", "error", "wall_s"}``. Times are ms; ``None`` means not measured.
        ``start_ms``/``best_ms`` are the first input set's medians; ``*_per_set_ms`` list every input set's
        median (``None`` when not measured), from which ``best_speedup`` is the geomean ratio.
        ``measurements_reused`` counts candidates whose measurement came from the run's measurement cache.
        ``reproduction`` is the fresh-process re-timing of the best
        (:meth:`htam_core.optimize.reproduce.Reproduction.to_json`), or ``None``.
    """
    # imported per call: tests replace run_optimize, and importing this module loads no torch
    from htam_core.optimize import OptimizeError, OptimizeTask, run_optimize

    t = SuiteTask(**task)
    base: dict[str, Any] = {"kernel": t.kernel, "policy": t.policy_name, "status": "ok", "mode": None,
                            "measured": False, "start_ms": None, "best_ms": None, "start_per_set_ms": None,
                            "best_per_set_ms": None, "best_speedup": None, "reproduction": None,
                            "steps": [], "memory_records_imported": 0, "measurements_reused": 0,
                            "error": None, "wall_s": 0.0}
    if t.deadline is not None and time.time() >= t.deadline:
        return {**base, "status": "skipped", "error": "not run: the time budget (--max-minutes) was spent"}
    policy, ablation, _ = POLICY_SPECS[t.policy_name]
    t0 = time.time()
    with cancel_at(t.deadline) as cancel:
        try:
            # start-up cost: loads sqlite3 and 9 more project modules, only when this runs
            from htam_core.memory.store import remove_store_files

            remove_store_files(t.memory_path)  # afresh, also when a task whose worker died is run again
            Path(t.memory_path).parent.mkdir(parents=True, exist_ok=True)
            base["memory_records_imported"] = _merge_memory(t.memory_path, t.memory_imports)
            res = run_optimize(OptimizeTask(
                path=t.path, kernel=t.kernel, engine="rules", budget=t.budget, policy=policy, ablation=ablation,
                out_dir=t.out_dir, memory_path=t.memory_path, seed=t.seed, static=t.static, record=t.record,
                trials=t.trials, use_ncu=t.use_ncu, measure_cache=t.measure_cache, replay_table=t.replay_table,
                replay_kernel=t.replay_kernel), cancel=cancel)
            if t.export_to:
                _export_memory(t.memory_path, t.export_to)
        except OptimizeError as exc:
            return {**base, "status": "error", "error": str(exc), "wall_s": time.time() - t0}
    steps = [{"index": s.index, "strategy": s.strategy, "transform": s.transform, "status": s.status,
              "correct": s.correct, "time_ms": s.time_ms, "speedup": s.speedup, "spread": s.spread,
              "speedup_vs_start": s.speedup_vs_start, "accepted": s.accepted} for s in res.steps]
    start_sets, best_sets = per_set_medians(res.report_dir / "report.json") if res.measured else (None, None)
    return {**base, "mode": res.mode, "measured": res.measured, "start_ms": res.start_ms, "best_ms": res.best_ms,
            "start_per_set_ms": start_sets, "best_per_set_ms": best_sets, "best_speedup": res.best_speedup, "steps": steps, "cancelled": res.cancelled,
            "measurements_reused": res.measurements_reused,
            "reproduction": res.reproduction.to_json() if res.reproduction else None,
            "summary": res.summary, "wall_s": time.time() - t0}


# -- orchestration ----------------------------------------------------------------------------------------
@dataclass
class SuiteConfig:
    """Settings of one suite run (the CLI's options).

    Attributes:
        suite_dir: the suite folder; kernels: names to run (``None``: all).
        policies: policy names (keys of :data:`POLICY_SPECS`).
        budget: candidates per (kernel, policy); exhaustive_budget: for ``exhaustive``.
        out_dir: results folder; work_dir: stores, exports and per-run reports (default ``<out>/suite-work``).
        max_minutes: wall-clock budget; tasks that have not started by then are skipped, running ones stop
            after their current candidate.
        static: force static mode (True), or decide from the machine (None).
        trials: timed trials per candidate; use_ncu: Nsight Compute counters for start kernels and bests.
        seed: ranker and random-policy seed.
        reuse_measurements: share one measurement cache (``<work>/measure-cache.sqlite3``, emptied at the
            start of every run) between all tasks, so that a candidate byte-identical to one measured
            earlier in this run, by any policy, reuses that measurement; start kernels are always timed
            afresh.
        executor, scheduler, workers, worker_wait: how tasks run (:class:`htam_core.bench.executors.ExecutorOptions`).
        fresh: forget an earlier run in the same work folder: its results, its pooled memory
            (``<work>/memory.sqlite3``) and its per-task stores (default: resume, skipping every
            task whose key is in ``<work>/results.jsonl``; the key covers the task's settings, the kernel
            file's and reference module's content, its harness table, the memory exports it imports and
            whether a GPU is used, so an edited kernel or harness runs again).
    """

    suite_dir: str
    policies: list[str]
    kernels: list[str] | None = None
    budget: int = 8
    exhaustive_budget: int = 24
    out_dir: str = DEFAULT_OUT
    work_dir: str | None = None
    max_minutes: float | None = None
    static: bool | None = None
    trials: int = 100
    use_ncu: bool = False
    seed: int = 0
    reuse_measurements: bool = True
    executor: str = "local"
    scheduler: str | None = None
    workers: int = 2
    worker_wait: float = 60.0
    fresh: bool = False


#: File name of the run's measurement cache under the work folder.
MEASURE_CACHE_NAME = "measure-cache.sqlite3"
#: File name of the streamed results (one JSON line per finished task) under the work folder.
RESULTS_NAME = "results.jsonl"
#: Names of the suite's two phases in its progress lines; each counts its own tasks (docs/BENCH.md, "Executors").
WARM_UP_PHASE, POLICIES_PHASE = "warm-up", "policies"
#: File name of the run's pooled memory (every task's store merged at the end) under the work folder.
POOLED_MEMORY_NAME = "memory.sqlite3"


def _task(cfg: SuiteConfig, work: Path, k: SuiteKernel, policy: str, deadline: float | None,
          exports: dict[str, str]) -> SuiteTask:
    slug = f"{k.name}-{policy}"
    budget = cfg.exhaustive_budget if policy == "exhaustive" else cfg.budget
    _, _, warm = POLICY_SPECS[policy]
    imports = [p for name, p in sorted(exports.items()) if name != k.name] if warm else []
    return SuiteTask(kernel=k.name, path=k.path, policy_name=policy, budget=budget,
                     out_dir=str(work / "runs" / slug), memory_path=str(work / "stores" / f"{slug}.sqlite3"),
                     memory_imports=imports,
                     export_to=str(work / "exports" / f"{k.name}.json") if policy == "htam-cold" else None,
                     record=policy not in ("random", "exhaustive"), seed=cfg.seed, static=cfg.static,
                     trials=cfg.trials, use_ncu=cfg.use_ncu, deadline=deadline,
                     measure_cache=str(work / MEASURE_CACHE_NAME) if cfg.reuse_measurements else None)


def run_suite(cfg: SuiteConfig, *, log: Any = print) -> dict[str, Any]:
    """Run the whole suite: the warm-up pass (``htam-cold``), then every (kernel, policy) task.

    Args:
        cfg: the settings.
        log: called with one line per finished task.

    Returns:
        The results document (see :func:`summarize`), also written as JSON by the caller.

    Raises:
        SuiteError: bad suite folder, kernel or policy names.
    """
    # imported per call: tests replace run_tasks and visible_gpus
    from htam_core.bench.executors import (
        ExecutorError,
        ExecutorOptions,
        ResultLog,
        resumed_summary,
        run_tasks,
        shared_cluster,
        task_key,
    )
    from htam_core.bench.parallel import environment, visible_gpus

    kernels = load_suite(cfg.suite_dir, cfg.kernels)
    for p in cfg.policies:
        if p not in POLICY_SPECS:
            raise SuiteError(f"unknown policy {p!r}; known: {', '.join(POLICY_SPECS)}")
    gpus = [] if cfg.static else visible_gpus()
    env = environment(gpus)
    work = Path(cfg.work_dir) if cfg.work_dir else Path(cfg.out_dir) / "suite-work"
    created = [d for d in (work, *work.parents) if not d.exists()]  # removed again if the executor cannot start
    work.mkdir(parents=True, exist_ok=True)
    # lazily: importing this module loads no torch (start-up speed)
    from htam_core.optimize.measure_cache import remove_cache_files

    if cfg.fresh:  # start over: the results, the run's pooled memory and the per-task stores it pooled
        # start-up cost: loads sqlite3 and 9 more project modules, only when this runs
        from htam_core.memory.store import remove_store_files

        (work / RESULTS_NAME).unlink(missing_ok=True)
        remove_store_files(work / POOLED_MEMORY_NAME)
        shutil.rmtree(work / "stores", ignore_errors=True)
    log_file = ResultLog(work / RESULTS_NAME)
    if not log_file.done:
        remove_cache_files(work / MEASURE_CACHE_NAME)  # a fresh run never reuses an earlier run's numbers
    opts = ExecutorOptions(cfg.executor, tuple(gpus), cfg.scheduler, cfg.workers, cfg.worker_wait, log)
    t_start = time.time()
    deadline = t_start + cfg.max_minutes * 60 if cfg.max_minutes else None
    needs_warm = any(POLICY_SPECS[p][2] for p in cfg.policies)
    phase1 = [p for p in cfg.policies if p == "htam-cold"] or (["htam-cold"] if needs_warm else [])
    results: list[dict[str, Any]] = []
    stores: list[str] = []

    def done(r: dict[str, Any], progress: str) -> None:
        sp = r.get("best_speedup")
        log(f"[suite] {r.get('kernel')} / {r.get('policy')}: {r.get('status', 'error')}"
            + (f", best {sp:.3g}x" if isinstance(sp, float) else ", speedup not measured")
            + (f" ({r['error']})" if r.get("error") else "") + f" [{progress}]")

    by_name = {k.name: k for k in kernels}

    def key(t: SuiteTask) -> str:
        k = by_name[t.kernel]
        return task_key(f"{t.kernel}/{t.policy_name}", {**t.to_json(), "harness": k.harness_sha256,
                                                         "gpu": bool(gpus)}, [*k.depends, *t.memory_imports])

    def run(batch: list[SuiteTask], joined: ExecutorOptions, phase: str) -> list[dict[str, Any]]:
        keyed = [(key(t), t) for t in batch]
        out = run_tasks("htam_core.bench.suite:run_suite_task", [(k, t.to_json()) for k, t in keyed], joined,
                        log=log_file, on_done=done, phase=phase,
                        on_resumed=lambda text: log(f"[suite] resumed from {work / RESULTS_NAME} [{text}]"))
        stores.extend(t.memory_path for (_, t), r in zip(keyed, out, strict=True) if r.get("status") == "ok")
        return [{"kernel": t.kernel, "policy": t.policy_name, **r} for (_, t), r in zip(keyed, out, strict=True)]

    exports: dict[str, str] = {}
    try:
        with shared_cluster(opts) as joined:  # one cluster for both passes
            if phase1:
                warm = [_task(cfg, work, k, "htam-cold", deadline, {}) for k in kernels]
                results += run(warm, joined, WARM_UP_PHASE)
                exports = {t.kernel: t.export_to for t in warm if t.export_to and Path(t.export_to).is_file()}
            rest = [_task(cfg, work, k, p, deadline, exports) for k in kernels for p in cfg.policies
                    if p != "htam-cold"]
            results += run(rest, joined, POLICIES_PHASE)
    except ExecutorError:
        _remove_if_empty(created)  # no scheduler, no worker: leave no empty <out>/suite-work behind
        raise
    peaks = _peaks() if gpus else None
    doc = summarize(kernels, cfg.policies if "htam-cold" in cfg.policies or not phase1
                    else [*cfg.policies, "htam-cold"], results, peaks)
    doc["environment"] = env
    doc["config"] = {**asdict(cfg), "gpus": gpus}
    doc["memory"] = _pool_memory(work, [Path(p) for p in stores if Path(p).is_file()])
    doc["resumed"] = resumed_summary(log_file.resumed, len(results), work)
    doc["wall_s"] = time.time() - t_start
    return doc


def _remove_if_empty(created: list[Path]) -> None:
    """Remove the folders a run created (deepest first) as long as they hold nothing."""
    for d in created:
        try:
            d.rmdir()
        except OSError:
            return


def _pool_memory(work: Path, stores: list[Path]) -> dict[str, Any]:
    """Merge the stores of this run's tasks into ``<work>/memory.sqlite3``, the run's pooled memory: each task
    wrote only its own store, and only this process writes the pooled one."""
    # start-up cost: loads sqlite3 and 10 more project modules, only when this runs
    from htam_core.memory.merge import merge_files
    from htam_core.memory.store import MemoryStoreError

    target = work / POOLED_MEMORY_NAME
    try:
        rep = merge_files(stores, target) if stores else None
    except MemoryStoreError as exc:
        return {"path": str(target), "error": str(exc)}
    return {"path": str(target), "stores": len(stores), "added": rep.added if rep else 0,
            "conflicts": len(rep.conflicts) if rep else 0}


def _peaks() -> dict[str, Any] | None:
    """Measured peaks of GPU 0 (cached per device by :mod:`htam_core.measure.peaks`), or ``None``."""
    def call(target: str) -> dict[str, Any]:
        r = run_in_worker(target, {}, timeout_s=300, pool_key="gpu0", interpret=False, gpu_index=0)
        if not r.ok:
            raise RuntimeError(r.error.message if r.error else "worker failed")
        return r.value

    try:
        ident = call("htam_core.measure.peaks:device_identity")
        pk = get_peaks(ident["device"], ident["uuid"], lambda: call("htam_core.measure.peaks:measure_peaks"))
    except Exception as exc:  # noqa: BLE001 - the table says "not measured" then
        return {"error": str(exc)}
    return {"dram_bytes_per_s": pk.dram_bytes_per_s, "fp32_flops_per_s": pk.fp32_flops_per_s,
            "tf32_flops_per_s": pk.tf32_flops_per_s, "bf16_flops_per_s": pk.bf16_flops_per_s,
            "measured_at": pk.measured_at}


def summarize(kernels: list[SuiteKernel], policies: list[str], results: list[dict[str, Any]],
              peaks: dict[str, Any] | None) -> dict[str, Any]:
    """Per (kernel, policy) rows and per-policy aggregates from task outcomes.

    Rows: ``start_ms``, ``best_ms`` (first input set), ``start_per_set_ms``, ``best_per_set_ms`` (every
    input set, or ``None``), ``speedup`` (best over start, geomean over input sets as the loop measures it), ``roofline_fraction`` of the best (bound / best time, first input set), ``bound``
    (``"memory"``/``"compute"``), ``trials_to_90`` (against the exhaustive best; ``None`` = not reached or no
    exhaustive run: ``target_known`` says which), ``curve`` (best speedup so far after each trial).
    Aggregates per policy: ``geomean_speedup``, ``median_trials_to_90`` (``inf`` when most never reached it),
    ``median_roofline_memory_bound``, ``memory_bound_at_70pct`` (count and total), ``kernels_measured``.
    ``repeatability``: per kernel, the largest spread in percent between the start-kernel times of its
    separate runs (every policy times the same start kernel afresh), and the median over kernels
    (``median_pct``); also the median over pairs of runs of their difference, per kernel, and the median of
    that over kernels (``median_pair_pct``: two separate runs of the same kernel, the issue's measure).
    ``measurements``: ``{"reused", "candidate_evaluations"}``, candidates over every run whose measurement
    came from the run's measurement cache, and all candidates evaluated.
    """
    by = {(r.get("kernel"), r.get("policy")): r for r in results}
    dram = (peaks or {}).get("dram_bytes_per_s")
    fp32 = (peaks or {}).get("fp32_flops_per_s")
    rows: list[dict[str, Any]] = []
    for k in kernels:
        exh = by.get((k.name, "exhaustive"))
        target = exh.get("best_speedup") if exh and exh.get("measured") else None
        peak = peak_flops_for(k.compute_dtype, fp32, (peaks or {}).get("bf16_flops_per_s"),
                              (peaks or {}).get("tf32_flops_per_s"))
        bound_s = metrics.roofline_time_s(k.bytes_moved, k.flops, dram, peak)
        mem_s = (k.bytes_moved / dram) if (k.bytes_moved and dram) else None
        cmp_s = (k.flops / peak) if (k.flops and peak) else None
        bound = None if bound_s is None else ("memory" if (mem_s or 0) >= (cmp_s or 0) else "compute")
        for p in policies:
            r = by.get((k.name, p)) or {"status": "missing"}
            per_trial = [s.get("speedup_vs_start") for s in r.get("steps", [])]
            measured = bool(r.get("measured"))
            fake = no_fake_win(r)
            rows.append({
                "kernel": k.name, "language": k.language, "policy": p, "status": r.get("status", "error"),
                "error": r.get("error"), "mode": r.get("mode"), "measured": measured,
                "start_ms": r.get("start_ms"), "best_ms": r.get("best_ms"),
                "speedup": 1.0 if measured and fake["counted"] is False else r.get("best_speedup"),
                "search_speedup": r.get("best_speedup"), **fake,
                "start_per_set_ms": r.get("start_per_set_ms"), "best_per_set_ms": r.get("best_per_set_ms"),
                "roofline_fraction": metrics.roofline_fraction(r.get("best_ms"), bound_s) if measured else None,
                "start_roofline_fraction": metrics.roofline_fraction(r.get("start_ms"), bound_s)
                if measured else None,
                "bound": bound, "trials": len(r.get("steps", [])),
                "trials_to_90": metrics.trials_to_fraction(per_trial, target) if measured else None,
                "target_known": target is not None and measured,
                "curve": metrics.best_so_far(per_trial) if measured else None,
                "memory_records_imported": r.get("memory_records_imported", 0),
                "measurements_reused": r.get("measurements_reused", 0),
            })
    aggregates: dict[str, Any] = {}
    for p in policies:
        rs = [r for r in rows if r["policy"] == p]
        meas = [r for r in rs if r["measured"]]
        mem = [r["roofline_fraction"] for r in meas if r["bound"] == "memory" and r["roofline_fraction"] is not None]
        aggregates[p] = {
            "kernels": len(rs), "kernels_measured": len(meas),
            "geomean_speedup": metrics.geomean(r["speedup"] for r in meas),
            "median_trials_to_90": metrics.median_trials([r["trials_to_90"] for r in meas],
                                                         [r["target_known"] for r in meas]),
            "median_roofline_memory_bound": statistics.median(mem) if mem else None,
            "memory_bound_at_70pct": [sum(1 for f in mem if f >= 0.7), len(mem)] if mem else None,
            "no_fake_wins": [sum(1 for r in meas if r["no_fake_win"]), len(meas)],
        }
    rep: dict[str, float | None] = {}
    pair_rep: dict[str, float | None] = {}
    for k in kernels:
        starts = [r["start_ms"] for r in rows if r["kernel"] == k.name and r["measured"] and r["start_ms"]]
        rep[k.name] = metrics.spread_pct(min(starts), max(starts)) if len(starts) >= 2 else None
        pairs = [metrics.spread_pct(a, b) for i, a in enumerate(starts) for b in starts[i + 1:]]
        pair_rep[k.name] = statistics.median(pairs) if pairs else None  # type: ignore[type-var]
    spreads = sorted(v for v in rep.values() if v is not None)
    pair_spreads = sorted(v for v in pair_rep.values() if v is not None)
    return {"kernels": [asdict(k) for k in kernels], "policies": policies, "rows": rows,
            "aggregates": aggregates, "peaks": peaks, "results": results,
            "no_fake_wins": no_fake_wins(rows),
            "measurements": {"reused": sum(int(r.get("measurements_reused") or 0) for r in results),
                             "candidate_evaluations": sum(len(r.get("steps") or []) for r in results)},
            "repeatability": {"per_kernel_pct": rep,
                              "median_pct": statistics.median(spreads) if spreads else None,
                              "per_kernel_pair_pct": pair_rep,
                              "median_pair_pct": statistics.median(pair_spreads) if pair_spreads else None}}


def no_fake_win(r: dict[str, Any]) -> dict[str, Any]:
    """The no-fake-wins check of one run's outcome ``r`` (:func:`run_suite_task`'s dict).

    Returns:
        ``{"reproduction", "fresh_speedup", "fresh_ratio", "kept_beyond_spread", "no_fake_win", "counted"}``:
        the fresh-process re-timing's status (``"not measured"`` without a GPU or a re-timing), its speedup and
        its ratio to the reported one; whether every kept step's gain exceeded its measured spread;
        ``no_fake_win``: no claimed win is left unconfirmed (no speedup above 1 was reported, or it was
        reproduced) and no kept step lies inside its spread (``None`` when the run was not measured);
        ``counted``: ``False`` when the reported speedup was not reproduced, so the row counts the start (1.0x)
        instead.
    """
    rep = r.get("reproduction") or {}
    measured = bool(r.get("measured"))
    status = rep.get("status") or "not measured"
    claimed = isinstance(r.get("best_speedup"), float | int) and r["best_speedup"] > 1.0
    kept = rep.get("kept_beyond_spread")
    if not measured:
        ok = None
    else:
        ok = (not claimed or status == "reproduced") and kept is not False
    return {"reproduction": status, "fresh_speedup": rep.get("fresh"), "fresh_ratio": rep.get("ratio"),
            "kept_beyond_spread": kept, "no_fake_win": ok,
            "counted": False if claimed and status == "not reproduced" else None}


def no_fake_wins(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The suite's aggregate: a kernel is clean when every measured run of it passes :func:`no_fake_win`.

    Returns:
        ``{"clean", "kernels", "line"}``; ``line`` is ``"no fake wins: X of Y kernels"``, or says
        ``"not measured (static mode)"`` when no run was measured.
    """
    by: dict[str, list[bool]] = {}
    for r in rows:
        if r.get("measured") and r.get("no_fake_win") is not None:
            by.setdefault(r["kernel"], []).append(bool(r["no_fake_win"]))
    if not by:
        return {"clean": None, "kernels": 0, "line": "no fake wins: not measured (static mode: nothing was timed)"}
    clean = sum(1 for v in by.values() if all(v))
    return {"clean": clean, "kernels": len(by), "line": f"no fake wins: {clean} of {len(by)} kernels"}
