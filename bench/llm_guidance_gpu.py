"""Time the packed correct candidates of the LLM guidance benchmark on a GPU: speedups per policy, with a CI.

Input: a folder made by ``bench/llm_guidance_pack.py`` (``manifest.json``, ``starts/``, ``cands/``). For each
candidate, on the GPU: the start's harness is found as ``htam optimize`` finds it (a KernelBench ``_ref.py``
pair, or the suite's ``htam.toml``); the candidate is verified against it on the GPU (an interpreter verdict
is not a GPU one); a correct candidate is then timed against its start interleaved, in a *fresh* worker process
(:meth:`htam_core.optimize.evaluate.Evaluator.compare` with ``fresh=True``, the project's timer and its spread
rule). Per policy: the geometric mean of the speedups with a 95% percentile-bootstrap interval over candidates
(on the logs), the number of wins by the spread rule, and fast_1 (the share of the policy's kernels with a
correct candidate faster than its start, by the spread rule).

Resumable: one JSON line per candidate in ``<out>/timings.jsonl``; a rerun skips those already there.
``--max-minutes`` stops before starting a candidate past the limit (the stage's limit is a few minutes).

Usage::

    python bench/llm_guidance_gpu.py PACK --out OUT [--max-minutes 7] [--trials 50]
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

from htam_core.bench.metrics import bootstrap_mean_ci, geomean  # noqa: E402
from htam_core.harness import find_harness  # noqa: E402
from htam_core.optimize.evaluate import Evaluator  # noqa: E402
from htam_core.profile.api import gpu_available  # noqa: E402

POLICY_ORDER = ("htam", "flat", "none", "rules")


def _key(e: dict[str, Any]) -> str:
    return e["candidate"]


def time_one(pack: Path, e: dict[str, Any], work: Path, trials: int) -> dict[str, Any]:
    """Verify and time one candidate against its start on GPU 0; the result line (never raises for a bad one)."""
    start_src = pack / e["start"]
    wd = work / e["candidate"].replace("/", "__").removesuffix(".py")
    if wd.exists():
        shutil.rmtree(wd)
    (wd / "start").mkdir(parents=True)
    for f in start_src.parent.iterdir():  # the start with its reference or htam.toml
        shutil.copyfile(f, wd / "start" / f.name)
    start = wd / "start" / start_src.name
    text = start.read_text()
    line: dict[str, Any] = {**e}
    t0 = time.time()
    try:
        harness = find_harness(start, e["kernel_name"])
    except Exception as exc:  # noqa: BLE001 - any harness failure is this candidate's row, not the run's end
        return {**line, "status": "no harness", "error": str(exc)[:300]}
    ev = Evaluator(start, e["kernel_name"], harness, gpu=True, workdir=wd / "cands", original_text=text,
                   trials=trials)
    try:
        verdict, path = ev.evaluate((pack / e["candidate"]).read_text(), "cand", reuse=False)
        line["gpu_correct"] = verdict.correct if verdict.failure != "failed" else None
        if verdict.correct is not True:
            status = {"failed": "failed on GPU", "incorrect": "incorrect on GPU", "refused": "refused"}.get(
                verdict.failure or "", "unverified")
            return {**line, "status": status,
                    "messages": [str(m)[:300] for m in verdict.messages[:3]], "s": round(time.time() - t0, 1)}
        cmp, why = ev.compare(text, path, fresh=True)
        if cmp is None:
            return {**line, "status": "not timed", "error": why[:300], "s": round(time.time() - t0, 1)}
        return {**line, "status": "timed", "speedup": cmp.speedup, "spread": cmp.spread, "verdict": cmp.status,
                "methods": cmp.methods, "s": round(time.time() - t0, 1)}
    except Exception as exc:  # noqa: BLE001 - a crashing candidate is its row's failure
        return {**line, "status": "failed", "error": f"{type(exc).__name__}: {exc}"[:300],
                "s": round(time.time() - t0, 1)}
    finally:
        ev.close()


def per_policy(rows: list[dict[str, Any]], manifest: dict[str, Any]) -> dict[str, Any]:
    """Speedup statistics per policy from the timing rows (see the module docstring)."""
    out: dict[str, Any] = {}
    kernels_per_policy: dict[str, set[str]] = {}
    for e in manifest["entries"]:
        kernels_per_policy.setdefault(e["policy"], set()).add(e["kernel"])
    for pol in [p for p in POLICY_ORDER if p in kernels_per_policy]:
        rs = [r for r in rows if r["policy"] == pol]
        sp = [r["speedup"] for r in rs if r.get("status") == "timed" and r.get("speedup", 0) > 0]
        logs = [math.log(x) for x in sp]
        ci = bootstrap_mean_ci(logs) if len(logs) >= 2 else None
        fast = {r["kernel"] for r in rs if r.get("verdict") == "win"}
        out[pol] = {"candidates": len(rs), "timed": len(sp),
                    "incorrect_on_gpu": sum(1 for r in rs if r.get("gpu_correct") is False),
                    "failed_on_gpu": sum(1 for r in rs if r.get("status") in ("failed on GPU", "failed", "no harness",
                                                                             "not timed")),
                    "geomean_speedup": round(geomean(sp), 3) if sp else None,
                    "geomean_ci95": [round(math.exp(ci[0]), 3), round(math.exp(ci[1]), 3)] if ci else None,
                    "wins": sum(1 for r in rs if r.get("verdict") == "win"),
                    "kernels_with_correct": len(kernels_per_policy[pol]),
                    "fast_1_kernels": len(fast), "best": round(max(sp), 3) if sp else None}
    return out


def _markdown(stats: dict[str, Any], device: str, date: str, command: str, n_rows: int, n_all: int) -> str:
    rows = ["| Policy | correct candidates (CPU) | timed on GPU | incorrect on GPU | geomean speedup [95% CI] | "
            "wins (spread rule) | kernels faster than start / with a correct candidate | best |",
            "|" + "---|" * 8]
    for pol, s in stats.items():
        ci = f" [{s['geomean_ci95'][0]}, {s['geomean_ci95'][1]}]" if s["geomean_ci95"] else ""
        rows.append(f"| {pol} | {s['candidates']} | {s['timed']} | {s['incorrect_on_gpu']} | "
                    f"{s['geomean_speedup'] if s['geomean_speedup'] is not None else 'n/a'}{ci} | {s['wins']} | "
                    f"{s['fast_1_kernels']}/{s['kernels_with_correct']} | {s['best'] or ''} |")
    return "\n".join([f"# LLM guidance benchmark: GPU speedups of the correct candidates ({device}, {date})", "",
                      f"{n_rows} of {n_all} packed candidates measured. Each candidate verified on the GPU, then "
                      "timed against its start interleaved in a fresh worker process (the project's timer). "
                      "Speedup = start / candidate; geomean over candidates with a 95% bootstrap CI on the logs.",
                      "", "```sh", command, "```", "", *rows, ""])


def main(argv: list[str] | None = None) -> int:
    """Time the pack (resumably) and write ``timings.jsonl``, ``summary.json`` and ``README.md`` into ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pack", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-minutes", type=float, default=7.0)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--device", default="")
    ap.add_argument("--command", default="STAGES=llmgpu bash bench/gpu_session.sh")
    args = ap.parse_args(argv)
    man_path = args.pack / "manifest.json"
    if not man_path.is_file():
        print(f"no manifest.json in {args.pack}: run bench/llm_guidance_pack.py first", file=sys.stderr)
        return 2
    if not gpu_available():
        print("no GPU here: run this on the GPU machine (STAGES=llmgpu bash bench/gpu_session.sh)", file=sys.stderr)
        return 2
    manifest = json.loads(man_path.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "timings.jsonl"
    done = {_key(json.loads(x)) for x in log.read_text().splitlines() if x.strip()} if log.is_file() else set()
    t_end = time.time() + 60 * args.max_minutes
    # the LLM policies' candidates first: they are few, and a stage that runs out of time leaves rules rows out
    for e in sorted(manifest["entries"], key=lambda x: x["policy"] == "rules"):
        if _key(e) in done:
            continue
        if time.time() > t_end:
            print(f"--max-minutes {args.max_minutes} reached: the rest waits for a rerun", flush=True)
            break
        row = time_one(args.pack, e, args.out / "work", args.trials)
        with log.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"{e['policy']} {e['kernel']} {e['strategy']}: {row['status']} {row.get('speedup', '')}", flush=True)
    rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.is_file() else []
    stats = per_policy(rows, manifest)
    date = time.strftime("%Y-%m-%d", time.gmtime())
    (args.out / "summary.json").write_text(json.dumps({"device": args.device, "date": date, "command": args.command,
                                                       "policies": stats}, indent=1) + "\n")
    (args.out / "README.md").write_text(_markdown(stats, args.device or "GPU", date, args.command, len(rows),
                                                  len(manifest["entries"])))
    print((args.out / "README.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
