"""``htam bench suite|kernelbench``: the naive-kernel suite and the KernelBench runner.

``htam bench suite`` runs HTAM, its baselines and its ablations on every kernel of a suite folder and writes
(``<out>`` is ``./htam-bench-out`` unless ``--out`` is given; the last line gives the absolute path)
``<out>/<date>-<gpu>-suite.json``, ``...-suite.md`` and ``...-suite.png``. ``htam bench kernelbench`` runs
KernelBench problems from a ``problems.jsonl`` and writes ``<out>/<date>-<gpu>-kernelbench.json`` and ``.md``.
Without a GPU both run in static mode and say "not measured" wherever a figure would need one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from htam_core.bench import DEFAULT_OUT
from htam_core.bench import kernelbench as kbm
from htam_core.bench.kernelbench import KBConfig, KernelBenchError, parse_anchors, run_kernelbench
from htam_core.cli.errors import UsageError, require_path
from htam_core.generate.config import add_llm_arguments, llm_task_config
from htam_core.generate.errors import LLMConfigError
from htam_core.types.files import data_path

_OUT_HELP = (f"results folder (default: ./{DEFAULT_OUT} in the current directory; pass --out bench/results to add "
             "the run to the repository's committed results)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``htam bench`` with its two actions."""
    p = sub.add_parser("bench", help="benchmarks: the naive-kernel suite and the KernelBench runner",
                       description="Measure HTAM against baselines (suite) and on KernelBench problems.")
    acts = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = acts.add_parser("suite", help="HTAM vs random, flat, ablations and exhaustive search on the suite")
    s.add_argument("--suite", default="bench/suite", help="suite folder with htam.toml (default: bench/suite)")
    s.add_argument("--policies", default=None,
                   help="comma-separated: htam, htam-cold, random, exhaustive, flat, no-local, no-prefix, "
                        "no-position, no-update, random-memory, or all (default: htam,random,flat,exhaustive)")
    s.add_argument("--kernels", default=None, help="comma-separated kernel names (default: all)")
    s.add_argument("--budget", type=int, default=8, help="candidates per kernel and policy (default: 8)")
    s.add_argument("--exhaustive-budget", type=int, default=24,
                   help="candidates for the exhaustive policy (default: 24)")
    s.add_argument("--trials", type=int, default=100, help="timed trials per candidate (default: 100)")
    s.add_argument("--ncu", action="store_true", help="collect Nsight Compute counters (slower)")
    s.add_argument("--max-minutes", type=float, default=None, help="wall-clock budget for the whole run")
    s.add_argument("--out", default=DEFAULT_OUT, help=_OUT_HELP)
    s.add_argument("--work", default=None, help="folder for stores and run reports (default: <out>/suite-work)")
    s.add_argument("--static", action="store_true", help="never use the GPU")
    s.add_argument("--seed", type=int, default=0, help="seed of the ranker and the random policy")
    s.add_argument("--no-reuse", action="store_true",
                   help="measure every candidate, even one byte-identical to a candidate another policy "
                        "measured earlier in this run (default: reuse that measurement; start kernels are "
                        "always timed)")
    _add_executor_arguments(s)
    s.set_defaults(func=run_suite_cmd)
    sp = acts.add_parser("space", help="measure each kernel's candidate space once into a table (for replay)")
    sp.add_argument("--manifest", action="append", default=None,
                    help="family manifest (JSON list of {file, kernel, family, lang}); repeatable")
    sp.add_argument("--suite", action="append", default=None,
                    help="suite folder with htam.toml (its manifest.json gives the families); repeatable")
    sp.add_argument("--llmc", default=None, metavar="DIR",
                    help="the llm.c corpus folder: its kernels listed in the manifest join their families")
    sp.add_argument("--out", required=True, help="the table (JSONL; a rerun with the same --out resumes it)")
    sp.add_argument("--depth", type=int, default=2, help="steps from the start (default: 2)")
    sp.add_argument("--max-candidates", type=int, default=10, help="candidates per kernel (default: 10)")
    sp.add_argument("--trials", type=int, default=50, help="timed trials per candidate (default: 50)")
    sp.add_argument("--max-minutes", type=float, default=None, help="wall-clock budget; stops cleanly, resumable")
    sp.add_argument("--kernels", default=None, help="comma-separated kernel names or ids (default: all)")
    sp.add_argument("--static", action="store_true", help="never use the GPU (times not measured)")
    sp.add_argument("--fill", default=None, metavar="LIST",
                    help="measure the candidates of a fill list (from `htam bench misses`) instead of exploring")
    sp.set_defaults(func=run_space_cmd)
    ms = acts.add_parser("misses", help="list the candidates a replay asked for that its table does not hold "
                                        "(a fill list for `htam bench space --fill`)")
    ms.add_argument("--table", required=True, help="the table the replay read")
    ms.add_argument("--work", required=True, help="the replay's --work folder")
    ms.add_argument("--out", required=True, help="the fill list to write (JSONL)")
    ms.set_defaults(func=run_misses_cmd)
    rp = acts.add_parser("replay", help="replay every policy from a measured-space table (no GPU needed)")
    rp.add_argument("--table", required=True, help="the table written by `htam bench space`")
    rp.add_argument("--policies", default=None, help="comma-separated (default: all replay policies)")
    rp.add_argument("--kernels", default=None, help="comma-separated kernel names or ids (default: all)")
    rp.add_argument("--budget", type=int, default=8, help="trials per run, the largest budget (default: 8)")
    rp.add_argument("--seeds", type=int, default=3, help="seeds of random and random-memory (default: 3)")
    rp.add_argument("--out", default=DEFAULT_OUT, help=_OUT_HELP)
    rp.add_argument("--work", default=None, help="stores and runs (default: <out>/replay-work-<table stem>)")
    rp.add_argument("--fresh", action="store_true", help="forget the finished runs of an earlier replay")
    rp.add_argument("--llmc", default=None, metavar="DIR",
                    help="llm.c's kernel folder: table kernels whose file is not at its recorded path are read "
                         "from a file of the same name there ($HTAM_LLMC overrides it); kernels found nowhere "
                         "are left out, and the report lists them")
    rp.add_argument("--warm-leave-out", choices=("family", "kernel"), default="family",
                    help="what the warm memory of kernel k leaves out: k's whole family (default; the memory "
                         "then holds no near relative of k) or k alone (the earlier rule, for comparison)")
    rp.set_defaults(func=run_replay_cmd)
    k = acts.add_parser("kernelbench", help="run KernelBench problems: Correct, fast_p, geomean over eager")
    k.add_argument("--problems", default=None,
                   help="problems.jsonl (KernelBench problems, one JSON object per line with level, problem_id, "
                        "name, code); default: the KernelBench data beside the checkout "
                        "(python bench/data_paths.py kernelbench), and the run is skipped (exit 0) when that "
                        "default is absent; a file named here that does not exist is an error (exit 2)")
    k.add_argument("--levels", default="1", help="comma-separated levels (default: 1)")
    k.add_argument("--ids", default=None, help="comma-separated problem ids (default: every problem that has a "
                                               "start solution, or every problem with --engine llm)")
    k.add_argument("--engine", choices=("rules", "llm"), default="rules",
                   help="rules: start from --start-solutions and apply mechanical transforms; llm: an "
                        "OpenAI-compatible model writes and improves ModelNew")
    k.add_argument("--start-solutions", default="bench/kernelbench_solutions",
                   help="folder with level<N>/<id>_<name>.py ModelNew files (default: bench/kernelbench_solutions)")
    k.add_argument("--steps", type=int, default=6, help="HTAM steps per problem (default: 6, as in the paper)")
    k.add_argument("--trials", type=int, default=100, help="timed trials for eager and final timing (default: 100)")
    k.add_argument("--loop-trials", type=int, default=20, help="timed trials per candidate inside the loop")
    k.add_argument("--memory", default=None, help="HTAM memory store (default: a fresh store for this run)")
    k.add_argument("--size-overrides", default=None,
                   help="JSON file {\"<level>/<id>\": {\"name\": value}} that shrinks module-level sizes, e.g. "
                        "bench/kernelbench_small_sizes.json (CPU smoke "
                        "tests only: the results are then marked as not KernelBench)")
    k.add_argument("--max-minutes", type=float, default=None, help="wall-clock budget for the whole run")
    k.add_argument("--anchors", default=None,
                   help="torch.compile anchors timed beside HTAM on the same problems with the same timer (GPU "
                        "only: without one they read \"not measured\"): comma-separated from compile-default,"
                        "compile-max-autotune,compile-max-autotune-no-cudagraphs, or all (default: none)")
    k.add_argument("--compile-timeout", type=float, default=180.0, metavar="S",
                   help="per-problem limit of one anchor's compile, seconds (default: 180); past it the anchor "
                        "reads \"not measured: compile timed out\"")
    k.add_argument("--out", default=DEFAULT_OUT, help=_OUT_HELP)
    k.add_argument("--static", action="store_true", help="never use the GPU")
    add_llm_arguments(k)
    _add_executor_arguments(k)
    k.set_defaults(func=run_kernelbench_cmd)


def _add_executor_arguments(p: argparse.ArgumentParser) -> None:
    """``--executor local|dask``, ``--scheduler ADDRESS``, ``--workers N``, ``--worker-wait S`` and ``--fresh``
    (docs/BENCH.md)."""
    # start-up cost: loads psutil, sympy, tomllib, tree_sitter and 44 more project modules, only when this runs
    from htam_core.bench.executors import EXECUTORS

    p.add_argument("--executor", choices=tuple(EXECUTORS), default="local",
                   help="local: in this process (several visible GPUs: one Dask worker per GPU on this host); "
                        "dask: Dask distributed, a LocalCluster with the visible GPUs or --scheduler's cluster")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="join the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786); needs --executor dask")
    p.add_argument("--workers", type=int, default=None,
                   help="with --executor dask on a machine without a GPU: CPU worker processes of the LocalCluster "
                        "(default: 2; with GPUs there is one worker per GPU)")
    p.add_argument("--worker-wait", type=float, default=None, metavar="SECONDS",
                   help="with --scheduler: how long to wait for a first worker of that cluster (default: 60)")
    p.add_argument("--fresh", action="store_true",
                   help="start over: forget the finished tasks of an earlier run in the same output folder "
                        "(default: resume, skipping them)")


def _executor_settings(args: argparse.Namespace) -> dict:
    """The executor settings of the parsed options. Raises UsageError for inconsistent ones."""
    # start-up cost: loads psutil, sympy, tomllib, tree_sitter and 44 more project modules, only when this runs
    from htam_core.bench.executors import ExecutorError, check_scheduler_address

    if args.scheduler and args.executor != "dask":
        raise UsageError("--scheduler needs --executor dask")
    if args.workers is not None and (args.executor != "dask" or args.scheduler):
        raise UsageError("--workers sets the size of the LocalCluster that --executor dask starts; the local "
                         "executor runs tasks in this process (one Dask worker per GPU with several GPUs) and "
                         "--scheduler's cluster has its own workers: drop --workers or use --executor dask")
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.worker_wait is not None and not args.scheduler:
        raise UsageError("--worker-wait is how long to wait for the workers of --scheduler's cluster; give "
                         "--scheduler ADDRESS or drop --worker-wait")
    if args.worker_wait is not None and not (0 < args.worker_wait < float("inf")):  # also nan
        raise UsageError("--worker-wait must be a positive number of seconds")
    if args.scheduler:
        try:
            check_scheduler_address(args.scheduler)
        except ExecutorError as exc:
            raise UsageError(str(exc)) from None
    return {"executor": args.executor, "scheduler": args.scheduler, "workers": args.workers or 2,
            "worker_wait": 60.0 if args.worker_wait is None else args.worker_wait, "fresh": args.fresh}


def _stamp_paths(out: Path, env: dict, kind: str) -> tuple[Path, Path, Path]:
    # start-up cost: loads psutil and 3 more project modules, only when this runs
    from htam_core.bench.parallel import gpu_slug

    stem = f"{env['date']}-{gpu_slug(env)}-{kind}"
    return out / f"{stem}.json", out / f"{stem}.md", out / f"{stem}.png"


def run_suite_cmd(args: argparse.Namespace) -> int:
    """Run the suite and write its results; prints the Markdown path."""
    from htam_core.bench.executors import ExecutorError
    from htam_core.bench.report import suite_markdown, suite_plot, write_json
    from htam_core.bench.suite import SuiteConfig, SuiteError, parse_policies, run_suite

    require_path(args.suite, "suite folder (one holding htam.toml; --suite)", folder=True)
    if args.budget < 1 or args.exhaustive_budget < 1:
        raise UsageError("--budget and --exhaustive-budget must be at least 1")
    if args.trials < 5:
        raise UsageError("--trials must be at least 5")
    try:
        policies = parse_policies(args.policies)
        cfg = SuiteConfig(suite_dir=args.suite, policies=policies,
                          kernels=[k.strip() for k in args.kernels.split(",") if k.strip()] if args.kernels else None,
                          budget=args.budget, exhaustive_budget=args.exhaustive_budget, out_dir=args.out,
                          work_dir=args.work, max_minutes=args.max_minutes, static=True if args.static else None,
                          trials=args.trials, use_ncu=args.ncu, seed=args.seed,
                          reuse_measurements=not args.no_reuse, **_executor_settings(args))
        print(f"[suite] results go to {Path(args.out).resolve()}", file=sys.stderr, flush=True)
        doc = run_suite(cfg, log=lambda m: print(m, file=sys.stderr, flush=True))
    except (SuiteError, ExecutorError) as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out)
    jp, mp, pp = _stamp_paths(out, doc["environment"], "suite")
    plot = suite_plot(doc, pp)
    write_json(doc, jp)
    mp.write_text(suite_markdown(doc, plot.name if plot else None), encoding="utf-8")
    print(f"suite results: {mp.resolve()} ({jp.name}{', ' + plot.name if plot else ', no plot: nothing measured'})")
    return 0


def _names(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def run_space_cmd(args: argparse.Namespace) -> int:
    """Build (or resume) a measured-space table; prints where it is."""
    # start-up cost: loads psutil, sqlite3, sympy, tomllib, tree_sitter and 112 more project modules, only when this runs
    from htam_core.bench.space import SpaceConfig, SpaceError, build_space, kernels_of_suite, load_manifest

    if args.depth < 1 or args.max_candidates < 1:
        raise UsageError("--depth and --max-candidates must be at least 1")
    if not args.manifest and not args.suite:
        raise UsageError("give --manifest FILE or --suite DIR (e.g. --suite bench/suite)")
    if args.fill:
        require_path(args.fill, "fill list (--fill, written by htam bench misses)")
    for m in args.manifest or []:
        require_path(m, "family manifest (--manifest, e.g. bench/families/manifest.json)")
    for d in args.suite or []:
        require_path(d, "suite folder (one holding htam.toml; --suite)", folder=True)
    try:
        kernels = [k for m in args.manifest or [] for k in load_manifest(m, args.llmc)]
        kernels += [k for d in args.suite or [] for k in kernels_of_suite(d)]
        kernels = list({k.id: k for k in kernels}.values())  # a kernel named by two sources is explored once
        wanted = _names(args.kernels)
        if wanted:
            kernels = [k for k in kernels if k.name in wanted or k.id in wanted]
        if not kernels:
            raise UsageError("no kernel to explore (check --kernels)")
        res = build_space(SpaceConfig(kernels=kernels, out=args.out, depth=args.depth,
                                      max_candidates=args.max_candidates, max_minutes=args.max_minutes,
                                      static=True if args.static else None, trials=args.trials,
                                      fill=args.fill),
                          log=lambda m: print(m, file=sys.stderr, flush=True))
    except SpaceError as exc:
        raise UsageError(str(exc)) from None
    more = ", stopped by --max-minutes: rerun to go on" if res["stopped"] else ""
    if args.fill:
        print(f"space table: {args.out} ({res['measured']} new evaluations from the fill list {args.fill}{more})")
    else:
        print(f"space table: {args.out} ({res['kernels_done']}/{res['kernels_total']} kernels done, "
              f"{res['measured']} new evaluations{more})")
    return 0


def run_misses_cmd(args: argparse.Namespace) -> int:
    """Write the fill list of a replay: what its policies asked for that the table does not hold."""
    from collections import Counter

    # start-up cost: loads psutil, sqlite3, sympy, tomllib, tree_sitter and 111 more project modules, only when this runs
    from htam_core.bench.table_fill import FillError, collect_misses, write_misses
    from htam_core.optimize.replay import TableError, load_table, skipped_note

    require_path(data_path(args.table), "measured-space table (--table, written by htam bench space)")
    require_path(args.work, "replay work folder (--work of htam bench replay)", folder=True)
    try:
        table = load_table(args.table)
        misses = collect_misses(args.work, table)
    except (FillError, TableError) as exc:
        raise UsageError(str(exc)) from None
    if note := skipped_note(args.table, table.skipped):
        print(note, file=sys.stderr)
    try:
        out = write_misses(args.out, misses, table=args.table)
    except FillError as exc:
        raise UsageError(str(exc)) from None
    by = Counter(p for m in misses for p in m.asked_by)
    print(f"fill list: {out} ({len(misses)} candidates over {len({m.kernel for m in misses})} kernels; asked by "
          + (", ".join(f"{p} {n}" for p, n in by.most_common()) or "no policy") + ")")
    return 0


def run_replay_cmd(args: argparse.Namespace) -> int:
    """Replay the policies from a table and write ``<out>/<table stem>-replay.json``, ``.md`` and ``.png``."""
    from htam_core.bench.executors import ExecutorError
    from htam_core.bench.replay import (
        REPLAY_POLICIES,
        ReplayConfig,
        ReplayError,
        replay_markdown,
        replay_plot,
        run_replay,
    )
    from htam_core.bench.report import write_json

    require_path(data_path(args.table), "measured-space table (--table, written by htam bench space)")
    out = Path(args.out)
    stem = Path(args.table).name.removesuffix(".gz").removesuffix(".jsonl")
    try:
        doc = run_replay(ReplayConfig(table=args.table, work=args.work or str(out / f"replay-work-{stem}"),
                                      policies=_names(args.policies) or list(REPLAY_POLICIES),
                                      kernels=_names(args.kernels), budget=args.budget, seeds=args.seeds,
                                      fresh=args.fresh, llmc=args.llmc, warm_leave_out=args.warm_leave_out),
                         log=lambda m: print(m, file=sys.stderr, flush=True))
    except (ReplayError, ExecutorError) as exc:
        raise UsageError(str(exc)) from None
    out.mkdir(parents=True, exist_ok=True)
    jp, mp, pp = out / f"{stem}-replay.json", out / f"{stem}-replay.md", out / f"{stem}-replay.png"
    plot = replay_plot(doc, pp)
    write_json(doc, jp)
    mp.write_text(replay_markdown(doc, plot.name if plot else None), encoding="utf-8")
    print(f"replay results: {mp.resolve()} ({jp.name}{', ' + plot.name if plot else ', no plot: nothing measured'})")
    return 0


def _ints(text: str | None, what: str) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{what} must be comma-separated integers, got {text!r}") from None


def _is_default_problems(path: str, default: Path) -> bool:
    """Whether ``path`` names the default problems file (the same file, however it is spelled)."""
    try:
        return Path(path).resolve() == default.resolve()
    except (OSError, RuntimeError):
        return False


def run_kernelbench_cmd(args: argparse.Namespace) -> int:
    """Run KernelBench problems and write the results.

    A ``--problems`` file that does not exist is a usage error (exit 2). The default problems file (no
    ``--problems``, or ``--problems`` naming that same path, as ``bench/run_gpu_bench.sh`` does) being absent
    is a clean skip with one warning line (exit 0): the third-party data is not on every machine.

    Raises:
        UsageError: bad options, a named problems file that does not exist, a malformed problems file, or no
            problem to run.
    """
    from htam_core.bench.executors import ExecutorError
    from htam_core.bench.report import kernelbench_markdown, write_json

    if args.steps < 1:
        raise UsageError("--steps must be at least 1")
    levels = _ints(args.levels, "--levels") or [1]
    overrides = None
    if args.size_overrides:
        try:
            overrides = json.loads(Path(args.size_overrides).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UsageError(f"cannot read --size-overrides {args.size_overrides}: {exc}") from None
    try:
        llm = llm_task_config(args)
    except LLMConfigError as exc:
        raise UsageError(str(exc)) from None
    try:
        anchors = parse_anchors(args.anchors)
    except KernelBenchError as exc:
        raise UsageError(str(exc)) from None
    if args.compile_timeout <= 0:
        raise UsageError("--compile-timeout must be positive")
    executor = _executor_settings(args)
    default = kbm.DEFAULT_PROBLEMS
    problems = args.problems if args.problems is not None else str(default)
    if not Path(problems).exists() and _is_default_problems(problems, default):
        # a clean skip (exit 0): bench/run_gpu_bench.sh runs on machines without the third-party data
        print(f"htam: warning: KernelBench skipped: no problems file at the default location {default} (the "
              "KernelBench data is not on this machine); pass --problems PATH to a problems.jsonl (one JSON "
              "object per line with level, problem_id, name, code)", file=sys.stderr)
        return 0
    require_path(problems, "KernelBench problems file (problems.jsonl: one JSON object per line with level, "
                           "problem_id, name, code; --problems)")
    kcfg = KBConfig(problems=problems, levels=levels, ids=_ints(args.ids, "--ids"), engine=args.engine,
                    start_solutions=args.start_solutions, steps=args.steps, timing_trials=args.trials,
                    loop_trials=args.loop_trials, out_dir=args.out, memory_path=args.memory,
                    size_overrides=overrides, max_minutes=args.max_minutes, static=True if args.static else None,
                    llm=llm, anchors=anchors, compile_timeout_s=args.compile_timeout, **executor)
    try:  # run_kernelbench says where the results go once the input is known good
        doc = run_kernelbench(kcfg, log=lambda m: print(m, file=sys.stderr, flush=True))
    except (KernelBenchError, ExecutorError) as exc:
        raise UsageError(str(exc)) from None
    jp, mp, _ = _stamp_paths(Path(args.out), doc["environment"], "kernelbench")
    write_json(doc, jp)
    mp.write_text(kernelbench_markdown(doc), encoding="utf-8")
    print(f"kernelbench results: {mp.resolve()} ({jp.name})")
    return 0
