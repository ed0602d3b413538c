"""``htam optimize FILE --kernel NAME``: the HTAM evolution loop on one kernel."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from htam_core.cli.errors import (
    EXIT_APPLY_REFUSED,
    EXIT_INTERRUPTED,
    EXIT_IO,
    CLIError,
    UsageError,
    require_source,
    was_interrupted,
)
from htam_core.cli.kernel_arg import add_kernel_argument, resolve_kernel

if TYPE_CHECKING:
    from htam_core.optimize import OptimizeResult

#: Exit status when ``--apply`` refuses to write the file (nothing verified and measured to write).
APPLY_REFUSED = EXIT_APPLY_REFUSED


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``htam optimize``."""
    from htam_core.generate.config import add_llm_arguments
    from htam_core.memory import ABLATIONS
    from htam_core.optimize import POLICIES

    p = sub.add_parser("optimize", help="run the HTAM loop: profile, rank, generate, verify, time, record, repeat",
                       description="Optimize one kernel with HTAM. Writes report.json, report.md, best.<ext> and, "
                                   "when candidates were timed on a GPU, speedup.png to --out. Your file is changed "
                                   "only with --apply, and only by a kernel verified correct on the GPU with a "
                                   "measured speedup (--apply-unverified writes the best candidate anyway, saying "
                                   "so). Exit status: 0 when the loop ran (and, with --apply, the file was "
                                   "written), 1 when the starting kernel failed or does not match its reference "
                                   "(no candidate was tried; the notes say why), 2 on a usage error or a "
                                   f"missing or unusable harness (nothing is tried), {APPLY_REFUSED} when --apply refused to write the file "
                                   "(one line says why; the file is unchanged).")
    p.add_argument("file", help="a .cu/.cuh or .py file")
    add_kernel_argument(p, "the kernel's name")
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
    p.add_argument("--no-ncu", action="store_true", help="no Nsight Compute counters (by default they are collected in the background "
                   "for the start kernel and each new best; the loop never waits for them)")
    p.add_argument("--no-record", action="store_true", help="do not write outcomes into the memory")
    apply = p.add_mutually_exclusive_group()
    apply.add_argument("--apply", action="store_true",
                       help="write the best kernel into FILE when it was verified correct on the GPU and measured "
                            f"faster than the start; otherwise refuse (exit {APPLY_REFUSED}) and leave FILE as it is")
    apply.add_argument("--apply-unverified", action="store_true",
                       help="write the best candidate into FILE even when it is not verified or not measured "
                            "(static mode); the output says so")
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

    require_source(args.file)
    args.kernel = resolve_kernel(args.file, args.kernel, "optimize")
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
    before = Path(args.file).read_bytes()
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
    if was_interrupted():  # Ctrl-C: the report so far is written; the boundary says "interrupted" (exit 130)
        return EXIT_INTERRUPTED
    applied, apply_line = _apply(args, result, before)
    if applied and (why := _adopt_applied(args, result)):
        result.warnings.append(why)
    if args.json:
        print(json.dumps({**result.to_json(), "applied": applied}, indent=2, default=str))
    else:
        for w in result.warnings:
            console.print(f"[yellow]note:[/yellow] {escape(w)}", markup=True, highlight=False, soft_wrap=True)
        print(result.summary)
        if result.not_made:
            print(f"{len(result.not_made)} ranked step(s) were not made; report.md says why for each")
        if result.cancelled:
            print("cancelled: the best kernel so far is in the report folder")
        print(f"report: {result.report_md}")
        if result.start_ok:
            print(f"best kernel: {result.best_path}")
            for lp in result.launcher_paths:
                print(f"its launcher: {lp}")
            if result.best_copy is not None:
                print(f"the best kernel again as {result.best_copy} (the name its launcher includes)")
    if apply_line:
        print(apply_line, file=sys.stdout if applied else sys.stderr)
    if not result.start_ok:
        return 1  # nothing was tried: the start kernel failed or is wrong (the notes above say why)
    if (args.apply or args.apply_unverified) and not applied:
        return APPLY_REFUSED
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
def _adopt_applied(args: argparse.Namespace, result: OptimizeResult) -> str | None:
    """After ``--apply`` wrote the best kernel into the file: make the memory records of the steps that made it
    (:attr:`OptimizeResult.best_lineage`, recorded under the kernel's tried id) steps of the file's own history
    (:meth:`~htam_core.memory.store.Store.adopt`), so the editor's "Last steps" and ranking prefix hold them; the
    other candidates stay tried only. Returns a one-line note when the memory cannot be written, else ``None``."""
    uids = [result.recorded[i] for i in result.best_lineage if i in result.recorded]
    if not uids:
        return None
    # imported here, like the optimizer itself: `htam --help` and the other commands start without the memory code
    from htam_core.memory.store import open_store

    try:
        open_store(args.memory).adopt(uids)
    except Exception as exc:  # the file is written; a memory problem must not turn that into a failure
        return f"the applied steps could not be marked as the file's in the memory: {exc}"
    return None


def _apply(args: argparse.Namespace, result: OptimizeResult, before: bytes) -> tuple[bool, str | None]:
    """Write the best kernel into the user's file when ``--apply`` allows it; ``(written, one line)``.

    ``--apply`` writes only a kernel verified correct on the GPU with a measured speedup
    (:meth:`OptimizeResult.apply_refusal`); ``--apply-unverified`` writes the best candidate even without
    that, and says so. Neither writes when nothing changed, or when the file changed on disk during the run.
    """
    if not (args.apply or args.apply_unverified):
        return False, None
    flag = "--apply" if args.apply else "--apply-unverified"
    keep = f"{args.file} is unchanged"
    if not result.start_ok:
        return False, f"htam: {flag}: not written: the starting kernel failed or does not match its reference; {keep}"
    refusal = result.apply_refusal()
    if not result.changed:
        why = refusal or "no candidate was measured faster than the start"
        return False, f"htam: {flag}: not written: no candidate to write ({why}); {keep}"
    if Path(args.file).read_bytes() != before:
        return False, (f"htam: {flag}: not written: {args.file} changed on disk during the run, so it was not "
                       f"overwritten (the best kernel is in {result.best_path})")
    if refusal and args.apply:
        return False, (f"htam: --apply refused: {refusal}; {keep} (the best candidate is in {result.best_path}; "
                       "--apply-unverified writes it anyway)")
    Path(args.file).write_text(result.best_text, encoding="utf-8")
    if refusal:
        return True, f"htam: --apply-unverified: wrote the best candidate into {args.file} UNVERIFIED: {refusal}"
    return True, (f"htam: --apply: wrote the best kernel into {args.file} (verified on the GPU, "
                  f"{result.best_speedup:.2f}× faster than the start)")
