"""Summarize a (partial) run of ``bench/bench_llm_guidance.py``: per policy, Correct% with a Wilson interval,
step-made%, endpoint faults, repeats, tokens in and out, tokens per second.

Reads ``<run>/results.jsonl`` (one line per kernel and policy) and, for step-made, the candidate files the run
kept under ``<run>/runs`` beside their starts. Writes ``summary.json`` and ``README.md`` into ``--dest`` and copies
``results.jsonl`` (and ``tokens_per_s.json`` when there) next to them, so the committed folder is the run's raw
lines plus their reading.

- Correct% = correct candidates / candidates (a candidate: a reply or transform whose code was checked under the
  Triton interpreter; replies without code, endpoint faults and repeats are not candidates), with a 95% Wilson
  score interval (Wilson 1927: the interval of choice for a binomial proportion at small n).
- Step-made% = candidates that made the step they were asked for / candidates whose strategy has a fact-based
  check (:mod:`htam_core.verify.step_made`); the number checked is given beside it.
- kernels with one correct candidate or more, per policy, out of the kernels run.

Usage::

    python bench/llm_guidance_summary.py RUN_DIR [RUN_DIR ...] --dest bench/results/NAME --command "the benchmark's command"
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from htam_core.verify.step_made import step_made_files  # noqa: E402

POLICY_ORDER = ("htam", "flat", "none", "rules")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval of ``k`` successes in ``n`` trials (fractions in [0, 1]); ``None`` for ``n == 0``."""
    if n <= 0:
        return None
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def _start_path(rec: dict[str, Any], run: Path) -> Path:
    start = Path(rec.get("start") or "")
    return start if start.is_absolute() else (run / start if (run / start).is_file() else REPO / start)


def _steps_made(rec: dict[str, Any], run: Path) -> tuple[int, int]:
    """``(made, checked)`` over the line's candidates: each candidate against its start, for the strategy asked."""
    made = checked = 0
    if not rec.get("start"):
        return 0, 0
    start = _start_path(rec, run)
    for s in rec.get("steps") or []:
        cand = s.get("candidate")
        if s.get("status") == "endpoint_fault" or not cand:
            continue
        verdict = step_made_files(s["strategy"], start, run / cand, rec["kernel_name"])
        if verdict is not None:
            checked += 1
            made += verdict
    return made, checked


def summarize(*runs: Path) -> dict[str, Any]:
    """Per-policy totals of the runs at ``runs`` (one run, or e.g. the LLM policies' run and a rules-only run
    beside it; see the module docstring for each figure)."""
    last: dict[tuple[str, str], tuple[dict[str, Any], Path]] = {}  # a pair run again: the last line counts
    for run in runs:
        if not (run / "results.jsonl").is_file():
            continue
        for x in (run / "results.jsonl").read_text().splitlines():
            if x.strip():
                r = json.loads(x)
                last[(r["kernel"], r["policy"])] = (r, run)
    lines = [r for r, _ in last.values()]
    run_of = {id(r): run for r, run in last.values()}
    out: dict[str, Any] = {}
    for pol in [p for p in POLICY_ORDER if any(r["policy"] == p for r in lines)]:
        rs = [r for r in lines if r["policy"] == pol]
        ok = [r for r in rs if r.get("status") == "ok"]
        cands = sum(r.get("candidates", 0) for r in ok)
        correct = sum(r.get("correct", 0) for r in ok)
        made = checked = 0
        for r in ok:
            m, c = _steps_made(r, run_of[id(r)])
            made, checked = made + m, checked + c
        rep = [r.get("replies") or {} for r in ok]
        tin = sum(x.get("prompt_tokens", 0) for x in rep)
        tout = sum(x.get("completion_tokens", 0) for x in rep)
        secs = sum(x.get("reply_s", 0.0) for x in rep)
        ci = wilson(correct, cands)
        out[pol] = {
            "kernels": len(rs), "errors": len(rs) - len(ok), "candidates": cands, "correct": correct,
            "correct_pct": round(100 * correct / cands, 1) if cands else None,
            "correct_ci95": [round(100 * ci[0], 1), round(100 * ci[1], 1)] if ci else None,
            "kernels_with_correct": sum(1 for r in ok if r.get("correct", 0) > 0),
            "step_made": made, "step_checked": checked,
            "step_made_pct": round(100 * made / checked, 1) if checked else None,
            "endpoint_faults": sum(r.get("endpoint_faults", 0) for r in ok),
            "repeats": sum(r.get("already_evaluated", 0) for r in ok),
            "requests": sum(x.get("requests", 0) for x in rep), "replies": sum(x.get("replies", 0) for x in rep),
            "replies_checked": sum(x.get("checked", 0) for x in rep),
            "replies_no_code": sum(x.get("no_code", 0) for x in rep),
            "replies_error": sum(x.get("errors", 0) for x in rep),
            "replies_unaccounted": sum(x.get("unaccounted", 0) for x in rep),
            "tokens_in": tin, "tokens_out": tout,
            "tokens_per_s": round(tout / secs, 2) if secs > 0 else None,
            "wall_s": round(sum(r.get("wall_s", 0.0) for r in rs), 1),
        }
    return {"lines": len(lines), "kernels": sorted({r["kernel"] for r in lines}), "policies": out,
            "model": next((r["model"] for r in lines if r.get("model")), None)}


def _fmt(v: Any) -> str:
    return "" if v is None else str(v)


def markdown(s: dict[str, Any], device: str, date: str, command: str, note: str = "") -> str:
    """The README of a summary: device, date, command, an optional note, then one row per policy."""
    rows = ["| Policy | kernels | candidates | correct | Correct% [95% CI] | kernels with a correct one | "
            "step made (checked) | endpoint faults | repeats | replies (checked / no code / error / unaccounted) | "
            "tokens in / out | tok/s |", "|" + "---|" * 12]
    for pol, p in s["policies"].items():
        ci = p["correct_ci95"]
        pct = f"{p['correct_pct']}% [{ci[0]}, {ci[1]}]" if ci else "n/a"
        made = f"{p['step_made']}/{p['step_checked']}" + (f" ({p['step_made_pct']}%)" if p["step_checked"] else "")
        reps = (f"{p['replies']} ({p['replies_checked']} / {p['replies_no_code']} / {p['replies_error']} / "
                f"{p['replies_unaccounted']})") if pol != "rules" else "(no LLM)"
        toks = f"{p['tokens_in']} / {p['tokens_out']}" if pol != "rules" else ""
        rows.append(f"| {pol} | {p['kernels']} | {p['candidates']} | {p['correct']} | {pct} | "
                    f"{p['kernels_with_correct']}/{p['kernels']} | {made} | {p['endpoint_faults']} | {p['repeats']} | "
                    f"{reps} | {toks} | {_fmt(p['tokens_per_s'])} |")
    return "\n".join([
        f"# LLM guidance benchmark, {s['model'] or 'rules only'}, {device} ({date})", "",
        *([note, ""] if note else []),
        f"{s['lines']} (kernel, policy) lines over {len(s['kernels'])} kernels; budget 3; Triton candidates checked "
        "under the Triton interpreter (nothing timed here). Generated by `bench/llm_guidance_summary.py` from "
        "`results.jsonl`.", "", "```sh", command, "```", "", *rows, "",
        "Correct% is correct candidates over candidates, with a 95% Wilson interval. A candidate is a reply (or "
        "transform) whose code was checked; replies without code, endpoint faults and repeats (a reply whose kernel "
        "was already evaluated in the run: it spends a request and, in lines run since 2026-12-06 08:40 UTC, one step "
        "of the budget) are not candidates. Step made: "
        "candidates whose facts show the step they were asked for (`htam_core/verify/step_made.py`), out of those "
        "whose strategy has such a check. tok/s: completion tokens over the requests' wall time, prompt "
        "processing included.", ""])


def main(argv: list[str] | None = None) -> int:
    """Write the summary of a run into ``--dest``; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, nargs="+", help="the benchmark's --out folder(s)")
    ap.add_argument("--dest", type=Path, required=True)
    ap.add_argument("--device", default="CPU (2 cores, shared)")
    ap.add_argument("--command", default="python bench/bench_llm_guidance.py ...")
    ap.add_argument("--model", default=None, help="the model's name in the title (default: the lines' model)")
    ap.add_argument("--note", default="", help="a paragraph placed under the title (e.g. PARTIAL: ...)")
    args = ap.parse_args(argv)
    if not any((r / "results.jsonl").is_file() for r in args.run):
        print(f"no results.jsonl in {', '.join(map(str, args.run))}", file=sys.stderr)
        return 2
    s = summarize(*args.run)
    if args.model:
        s["model"] = args.model
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    args.dest.mkdir(parents=True, exist_ok=True)
    (args.dest / "summary.json").write_text(json.dumps({**s, "device": args.device, "date": date,
                                                         "command": args.command}, indent=1) + "\n")
    (args.dest / "README.md").write_text(markdown(s, args.device, date, args.command, args.note))
    if all(run.resolve() != args.dest.resolve() for run in args.run):
        with (args.dest / "results.jsonl").open("w") as fh:  # the raw lines of every run, in order
            for run in args.run:
                if (run / "results.jsonl").is_file():
                    fh.write((run / "results.jsonl").read_text())
    tps = next((r / "tokens_per_s.json" for r in args.run if (r / "tokens_per_s.json").is_file()), None)
    if tps is not None and tps.parent.resolve() != args.dest.resolve():
        shutil.copyfile(tps, args.dest / "tokens_per_s.json")
    print((args.dest / "README.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
