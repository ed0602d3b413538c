"""Pack the correct candidates of a ``bench/bench_llm_guidance.py`` run into one folder that travels to a GPU machine.

The benchmark checks candidates under the Triton interpreter (no GPU); their speed is measured later, on a GPU,
by ``bench/llm_guidance_gpu.py`` (the ``llmgpu`` stage of ``bench/gpu_session.sh``). Candidates are text files, so
this copies, per (kernel, policy), every candidate verified correct, and per kernel its start with what its harness
needs: the start file itself (a ``bench/suite`` kernel: its ``htam.toml`` goes with it) or, for a KernelBench pair,
the start copy and its ``<stem>_ref.py`` reference. With ``--full-sizes`` (the default when the problems file is
there) a KernelBench reference is rewritten at the problem's own sizes, not the small CPU sizes of the run, so the
GPU times the sizes KernelBench uses.

Layout of ``DEST``::

    manifest.json                 {"run": ..., "entries": [{policy, kernel, kernel_name, strategy, start, candidate}]}
    starts/<slug>/<start file>    (+ <stem>_ref.py, or htam.toml)
    cands/<policy>/<slug>/<n>-<strategy>.py

Usage::

    python bench/llm_guidance_pack.py RUN_DIR [RUN_DIR ...] --dest DEST [--small-sizes]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.data_paths import KERNELBENCH_PROBLEMS  # noqa: E402
from htam_core.bench.kernelbench import find_start_solution, load_problems, reference_code  # noqa: E402


def _full_size_refs() -> dict[str, str]:
    """KernelBench level-1 references at their own sizes, by the start's file name (empty without the problems)."""
    problems = Path(os.environ.get("HTAM_KB_PROBLEMS") or KERNELBENCH_PROBLEMS)
    if not problems.is_file():
        return {}
    out = {}
    for p in load_problems(problems, levels=[1]):
        start = find_start_solution(REPO / "bench/kernelbench_solutions", 1, p.problem_id)
        if start:
            out[start.name] = reference_code(p, None)
    return out


def _copy_start(rec: dict[str, Any], run: Path, dest: Path, refs: dict[str, str]) -> str:
    """Copy the line's start (and its harness files) under ``dest/starts/<slug>``; its path relative to ``dest``."""
    slug = rec["kernel"].replace("/", "__")
    d = dest / "starts" / slug
    d.mkdir(parents=True, exist_ok=True)
    start = Path(rec["start"])
    src = start if start.is_absolute() else (run / start if (run / start).is_file() else REPO / start)
    shutil.copyfile(src, d / src.name)
    ref = src.with_name(src.stem + "_ref.py")
    if ref.is_file():
        full = refs.get(rec["kernel"].split("/", 1)[-1])
        (d / ref.name).write_text(full if full is not None else ref.read_text())
    elif (src.parent / "htam.toml").is_file():
        shutil.copyfile(src.parent / "htam.toml", d / "htam.toml")
    return str((d / src.name).relative_to(dest))


def pack(run: Path | list[Path], dest: Path, *, full_sizes: bool = True) -> dict[str, Any]:
    """Pack the correct candidates of ``run`` (one run folder, or several: e.g. the LLM policies' and a rules-only
    run) into ``dest``; returns the manifest (also written as JSON). A line whose candidate files are not in its
    run folder (resumed from a run made on another machine) is listed under ``missing``, one line each, and the
    rest is packed."""
    runs = [run] if isinstance(run, Path) else list(run)
    lines = [(json.loads(x), r) for r in runs if (r / "results.jsonl").is_file()
             for x in (r / "results.jsonl").read_text().splitlines() if x.strip()]
    refs = _full_size_refs() if full_sizes else {}
    entries: list[dict[str, Any]] = []
    missing: list[str] = []
    starts: dict[str, str] = {}
    for rec, run in lines:
        if rec.get("status") != "ok" or not rec.get("start"):
            continue
        good = [s for s in rec.get("steps") or [] if s.get("correct") is True and s.get("candidate")]
        gone = [s for s in good if not (run / s["candidate"]).is_file()]
        if gone:  # a line resumed from an earlier machine's run: its files stayed there
            missing.append(f"{rec['kernel']} ({rec['policy']}): {len(gone)} candidate file(s) not in {run}")
            good = [s for s in good if s not in gone]
        if not good:
            continue
        if rec["kernel"] not in starts:
            starts[rec["kernel"]] = _copy_start(rec, run, dest, refs)
        slug = rec["kernel"].replace("/", "__")
        for n, s in enumerate(good, 1):
            cdir = dest / "cands" / rec["policy"] / slug
            cdir.mkdir(parents=True, exist_ok=True)
            c = cdir / f"{n}-{s['strategy']}.py"
            shutil.copyfile(run / s["candidate"], c)
            entries.append({"policy": rec["policy"], "kernel": rec["kernel"], "kernel_name": rec["kernel_name"],
                            "strategy": s["strategy"], "start": starts[rec["kernel"]],
                            "candidate": str(c.relative_to(dest)), "model": rec.get("model")})
    man = {"runs": [str(r) for r in runs], "full_sizes": bool(refs), "entries": entries, "missing": missing}
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "manifest.json").write_text(json.dumps(man, indent=1) + "\n")
    return man


def main(argv: list[str] | None = None) -> int:
    """Pack; print how many candidates per policy; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, nargs="+", help="the benchmark's --out folder(s)")
    ap.add_argument("--dest", type=Path, required=True, help="the pack's folder")
    ap.add_argument("--small-sizes", action="store_true", help="keep the run's small CPU sizes for KernelBench")
    args = ap.parse_args(argv)
    if not any((r / "results.jsonl").is_file() for r in args.run):
        print(f"no results.jsonl in {', '.join(map(str, args.run))}", file=sys.stderr)
        return 2
    man = pack(args.run, args.dest, full_sizes=not args.small_sizes)
    per: dict[str, int] = {}
    for e in man["entries"]:
        per[e["policy"]] = per.get(e["policy"], 0) + 1
    for m in man["missing"]:
        print(f"not packed: {m}", file=sys.stderr)
    print(f"packed {len(man['entries'])} correct candidates into {args.dest} ({per}); "
          f"KernelBench references at {'KernelBench' if man['full_sizes'] else 'the run'} sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
