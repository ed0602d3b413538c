"""``htam optimize FILE --kernel NAME``: the HTAM evolution loop on one kernel."""

from __future__ import annotations

import argparse
import json
import os
import threading
from pathlib import Path

from htam_core.cli.errors import EXIT_IO, CLIError, UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``htam optimize``."""
    from htam_core.generate.config import add_llm_arguments
    from htam_core.memory import ABLATIONS
    from htam_core.optimize import POLICIES

    p = sub.add_parser("optimize", help="run the HTAM loop: profile, rank, generate, verify, time, record, repeat",
                       description="Optimize one kernel with HTAM. Writes report.json, report.md, speedup.png and "
                                   "best.<ext> to --out. Your file is changed only with --apply. Exit status: 0 "
                                   "when the loop ran, 1 when the starting kernel failed or does not match its "
                                   "reference (no candidate was tried; the notes say why), 2 on a usage error or "
                                   "an unusable harness.")
    p.add_argument("file", help="a .cu/.cuh or .py file")
    p.add_argument("--kernel", required=True, help="the kernel's name (htam kernels FILE lists them)")
    p.add_argument("--engine", choices=("rules", "llm"), default="rules",
                   help="rules: built-in mechanical transforms (default, no LLM); llm: an OpenAI-compatible model")
    p.add_argument("--budget", type=int, default=8, help="candidates to evaluate (default: 8)")
    p.add_argument("--policy", choices=POLICIES, default="htam", help="step policy (default: htam)")
    p.add_argument("--ablation", choices=ABLATIONS, help="HTAM ablation switch")
    p.add_argument("--out", help="output directory (default: htam-out/<file>-<kernel>)")
    p.add_argument("--memory", help="HTAM memory store (default: $HTAM_MEMORY or the user data dir)")
    p.add_argument("--seed", type=int, default=0, help="seed of the ranker and the random policy")
    p.add_argument("--static", action="store_true", help="never use the GPU, even when there is one")
    p.add_argument("--gpu", type=int, default=0, help="CUDA device index (default: 0)")
    p.add_argument("--trials", type=int, default=100, help="timed trials per candidate on the GPU (default: 100)")
    p.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute counters for the start kernel")
    p.add_argument("--no-record", action="store_true", help="do not write outcomes into the memory")
    p.add_argument("--apply", action="store_true", help="write the best kernel back into FILE")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_llm_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the loop with a terminal progress bar; Ctrl-C stops after the current candidate."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from htam_core.generate.config import llm_task_config
    from htam_core.generate.errors import LLMConfigError
    from htam_core.optimize import OptimizeError, OptimizeTask, ProgressEvent, run_optimize

    if not os.path.isfile(args.file):
        raise UsageError(f"no such file: {args.file}")
    if args.budget < 1:
        raise UsageError("--budget must be at least 1")
    try:
        llm = llm_task_config(args)
    except LLMConfigError as exc:
        raise UsageError(str(exc)) from None
    task = OptimizeTask(path=args.file, kernel=args.kernel, engine=args.engine, budget=args.budget,
                        policy=args.policy, ablation=args.ablation, out_dir=args.out, memory_path=args.memory,
                        seed=args.seed, static=True if args.static else None, gpu_index=args.gpu, llm=llm,
                        record=not args.no_record, trials=args.trials, use_ncu=not args.no_ncu)
    _check_out_dir(task.resolved_out_dir())
    console = Console(stderr=True)
    cancel = threading.Event()
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[best]}"), TimeElapsedColumn(), console=console,
                  disable=args.json or not console.is_terminal) as bar:
        tid = bar.add_task("optimize", total=task.budget, best="")

        def on_progress(e: ProgressEvent) -> None:
            best = f"best {e.best_speedup:.2f}×" if e.best_speedup else ""
            # messages carry file names, toml tables ([kernel.k]) and code: never rich markup
            bar.update(tid, completed=e.step, description=escape(e.message[:60]), best=best)
            if not console.is_terminal and not args.json:
                console.print(escape(f"[{e.step}/{e.total}] {e.message}"), highlight=False)

        try:
            result = run_optimize(task, on_progress=on_progress, cancel=cancel)
        except OptimizeError as exc:
            raise UsageError(str(exc)) from exc
    if args.apply and result.changed:
        Path(args.file).write_text(result.best_text, encoding="utf-8")
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
        return 0 if result.start_ok else 1
    for w in result.warnings:
        console.print(f"[yellow]note:[/yellow] {escape(w)}", markup=True, highlight=False, soft_wrap=True)
    print(result.summary)
    if result.cancelled:
        print("cancelled: kept the best kernel so far")
    print(f"report: {result.report_md}")
    if not result.start_ok:
        return 1  # nothing was tried: the start kernel failed or is wrong (the notes above say why)
    print(f"best kernel: {result.best_path}" + (" (written to " + args.file + ")" if args.apply and result.changed
                                                else ""))
    return 0


def _check_out_dir(out: Path) -> None:
    """Refuse an output folder that cannot be created or written, before any work is done (exit 4).

    Creates nothing: checks ``out`` when it exists, else its nearest existing parent folder (``os.access`` also
    reports a read-only file system).
    """
    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise CLIError(f"cannot create the output folder {out} (--out): {probe} is a file. Pass --out with a "
                       "folder you can write", EXIT_IO)
    if not os.access(probe, os.W_OK | os.X_OK):
        reason = "Read-only file system" if _read_only_fs(probe) else "Permission denied"
        raise CLIError(f"cannot create the output folder {out} (--out): {reason}. Pass --out with a folder you "
                       "can write", EXIT_IO)


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False
