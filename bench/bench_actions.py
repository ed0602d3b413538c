"""Makeable actions on a folder of kernels: of the code actions the editor lists, how many resolve to
an edit, and which kernels with a known pattern get a structural step.

For every ``.cu``/``.cuh``/``.py`` file of each folder given (not recursive), every kernel is ranked as the editor
ranks it before its profile lands, its code actions are listed (only steps that can be made on the kernel as it
is, :mod:`htam_core.editor.makeable`) and each listed action is resolved through the click path
(:func:`htam_core.editor.audit.count_kernel`). CPU only, no GPU, no compile. Folders are read in place and never
copied; a folder that does not exist is skipped with one line. Results stream to ``<out>.json`` after each file
(``--max-seconds`` stops cleanly with the files counted so far) and a Markdown table goes to ``<out>.md``.

    python bench/bench_actions.py tests/fixtures/corpus bench/suite DEV_CORPUS LLMC_CORPUS \
        --out bench/results/actions-2026-12-01

A folder outside the repository is named in the results by its last two path components (``external
corpus/llmc``), and every file by its name, so that the committed results hold no machine paths.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from htam_core.editor.audit import KernelCount, count_file  # noqa: E402
from htam_core.editor.session import Session  # noqa: E402

SUFFIXES = (".cu", ".cuh", ".py")


def _label(folder: Path) -> str:
    """``folder`` relative to the repository, or ``external <last two components>`` outside it."""
    f = folder.resolve()
    try:
        return f.relative_to(REPO).as_posix()
    except ValueError:
        return "external " + "/".join(f.parts[-2:])


def _public(c: KernelCount) -> dict[str, Any]:
    """The JSON of a count with the file named by its name only."""
    return {**c.to_json(), "file": Path(c.file).name}


def _summary(counts: list[KernelCount]) -> dict[str, Any]:
    ok = [c for c in counts if c.kernel and not c.error]
    listed = sum(len(c.listed) for c in ok)
    made = sum(len(c.made) for c in ok)
    patterned = [c for c in ok if c.pattern]
    return {"kernels": len(ok), "errors": len([c for c in counts if c.error]), "listed": listed, "made": made,
            "made_fraction": round(made / listed, 4) if listed else None,
            "first_action_made": sum(1 for c in ok if c.listed and c.listed[0] in c.made),
            "with_actions": sum(1 for c in ok if c.listed),
            "known_pattern": len(patterned),
            "known_pattern_with_structural": sum(1 for c in patterned if c.structural),
            "pattern_already_fixed": [f"{Path(c.file).name}:{c.kernel} ({c.pattern})"
                                      for c in patterned if not c.structural and c.fixed],
            "known_pattern_without_structural": [f"{Path(c.file).name}:{c.kernel} ({c.pattern})"
                                                 for c in patterned if not c.structural and not c.fixed]}


def _markdown(folders: dict[str, dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = ["# Makeable code actions", "", f"- date: {meta['date']}", f"- machine: {meta['machine']} (CPU only, no "
             "GPU, no compile: the editor's list before a profile lands)", f"- command: `{meta['command']}`",
             f"- top N: {meta['top']}; a *structural* step is a transform of kind `structural` "
             "(`htam_core.transforms.registry.KINDS`); a launch-parameter, hint-only or math step is not",
             "- pattern: from the predicate facts (`htam_core.editor.audit.known_pattern`), which come from the "
             "analysis layer (`htam_core.source.analysis`): matmul_like (a loop summing products of two pointers "
             "indexed by the loop variable with different strides or thread dimensions; tl.dot), transpose_like, "
             "reduction_like with exp (softmax), reduction_like (an accumulation loop, a shared-memory tree, a "
             "warp shuffle / cg::reduce / accumulating atomic, tl.sum ...). A file's later kernels are often "
             "already the fast versions. For each known-pattern kernel without a structural step, every "
             "structural strategy of its language is listed with its transform's refusal. Not seen by the facts (so "
             "not labelled): a reduction inside a `__device__` helper the kernel calls (llm.c's softmax "
             "helpers), accumulation into a local array (`acc[k] += s[k]`) and scatter-adds into global memory "
             "inside a loop (`dwte[ix * C + c] += ...`)", ""]
    for folder, data in folders.items():
        lines += [f"## {folder}", ""]
        if data.get("skipped"):
            lines += [f"skipped: {data['skipped']}", ""]
            continue
        s = data["summary"]
        frac = "n/a" if s["made_fraction"] is None else f"{s['made_fraction'] * 100:.0f}%"
        lines += [f"- kernels: {s['kernels']} ({s['errors']} not counted: incomplete or unreadable)",
                  f"- listed actions that resolve to an edit: {s['made']}/{s['listed']} ({frac})",
                  f"- first listed action makeable: {s['first_action_made']}/{s['with_actions']} kernels with "
                  "actions",
                  f"- kernels with a known pattern that get a structural step: "
                  f"{s['known_pattern_with_structural']}/{s['known_pattern']}"
                  + (f"; pattern already fixed (no step left, `htam_core.editor.audit.already_fixed`): "
                     f"{len(s['pattern_already_fixed'])}" if s["pattern_already_fixed"] else "")
                  + (f"; without: {', '.join(s['known_pattern_without_structural'])}"
                     if s["known_pattern_without_structural"] else ""),
                  "", "| file | kernel | pattern | made / listed | structural | advice (hover) | skipped: why |",
                  "|---|---|---|---|---|---|---|"]
        for c in data["kernels"]:
            if c["error"]:
                lines.append(f"| {Path(c['file']).name} | {c['kernel']} | | not counted: {c['error']} | | | |")
                continue
            skipped = "; ".join(f"{sid}: {why[:90]}" for sid, why in c["skipped"][:3]).replace("|", "\\|")
            fails = "".join(f" FAILED {sid}: {why}" for sid, why in c["failed"]).replace("|", "\\|")
            lines.append(f"| {Path(c['file']).name} | {c['kernel']} | {c['pattern'] or '-'} | "
                         f"{len(c['made'])}/{len(c['listed'])}{fails} | {', '.join(c['structural']) or '-'} | "
                         f"{', '.join(c['advice']) or '-'} | {skipped or '-'} |")
        lines.append("")
        fixed = [c for c in data["kernels"] if not c["error"] and c["pattern"] and not c["structural"]
                 and c.get("fixed")]
        if fixed:
            lines += ["### Pattern already fixed: the fact that shows it", ""]
            lines += [f"- **{Path(c['file']).name}:{c['kernel']}** ({c['pattern']}): {c['fixed']}" for c in fixed]
            lines.append("")
        missing = [c for c in data["kernels"] if not c["error"] and c["pattern"] and not c["structural"]
                   and not c.get("fixed")]
        if missing:
            lines += ["### Known-pattern kernels without a structural step: what each structural transform says",
                      ""]
            for c in missing:
                lines.append(f"- **{Path(c['file']).name}:{c['kernel']}** ({c['pattern']})")
                lines += [f"  - {sid}: {why}".replace("\n", " ") for sid, why in c.get("refusals", [])]
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Count the folders and write ``<out>.json`` (after every file) and ``<out>.md``. Returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", help="folders of kernel files (read in place, never copied)")
    ap.add_argument("--out", default=f"bench/results/actions-{time.strftime('%Y-%m-%d')}",
                    help="output path without suffix (default bench/results/actions-<date>)")
    ap.add_argument("--top", type=int, default=5, help="code actions listed per kernel (htam.topN, default 5)")
    ap.add_argument("--max-seconds", type=float, default=None, help="stop after this long, results so far kept")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.node() or "unknown",
            "command": "python bench/bench_actions.py " + " ".join(
                _label(Path(a)) if not a.startswith("-") and (Path(a).is_absolute() or Path(a).exists()) else a
                for a in (sys.argv[1:] if argv is None else argv)),
            "top": args.top}
    folders: dict[str, dict[str, Any]] = {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        session = Session(memory_path=str(Path(tmp) / "memory.sqlite3"), static=True)  # priors only, no records
        session.warm_up()
        try:
            for arg in args.folders:
                d, folder = Path(arg), _label(Path(arg))
                if not d.is_dir():
                    folders[folder] = {"skipped": f"{folder} does not exist"}
                    print(f"skip {folder}: not found", flush=True)
                    continue
                counts: list[KernelCount] = []
                for f in sorted(p for p in d.iterdir() if p.suffix in SUFFIXES):
                    if args.max_seconds is not None and time.monotonic() - t0 > args.max_seconds:
                        print(f"stop: --max-seconds {args.max_seconds} reached", flush=True)
                        meta["stopped_early"] = True
                        break
                    file_counts = [c for c in count_file(session, str(f), args.top) if c.kernel or c.error]
                    counts += file_counts
                    for c in file_counts:
                        print(c.line(), flush=True)
                    folders[folder] = {"summary": _summary(counts), "kernels": [_public(c) for c in counts]}
                    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "folders": folders}, indent=1))
                folders[folder] = {"summary": _summary(counts), "kernels": [_public(c) for c in counts]}
                print(f"{folder}: {json.dumps(folders[folder]['summary'])}", flush=True)
        finally:
            session.close()
    meta["wall_s"] = round(time.monotonic() - t0, 1)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "folders": folders}, indent=1))
    out.with_suffix(".md").write_text(_markdown(folders, meta))
    print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.json')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
