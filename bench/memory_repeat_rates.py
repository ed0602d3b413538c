"""How often the k-th try of one step from one node wins, per policy, from a finished replay's runs.

A strategy with parameters proposes several variants from one parent (block sizes, warp counts, tile shapes), and
the loop tries them one at a time. This reads every run of a replay's ``--work`` folder (``runs/*/report.json``)
and counts, per policy, the trials that were the 1st, 2nd and 3rd-or-later try of the same strategy from the same
parent, and how many of each were wins (the loop's win rule: a gain beyond the measured spread); a step the table
did not hold (``not_in_table``, never measured) is left out. It is the
measured basis of the ranker's v13 rule (docs/MEMORY-LOG.md, "v13"): if later tries of a step from one node win less
often than first tries, the kernel's own failed tries there are evidence about the next one.

Run from the repository root (CPU, seconds):
    python bench/memory_repeat_rates.py --work REPLAY_WORK [--out rates.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def repeat_rates(work: str | Path) -> dict[str, dict[str, dict[str, float | int]]]:
    """``{policy: {"1"|"2"|"3+": {"trials", "wins", "win_rate"}}}`` over every run under ``work``.

    Raises:
        SystemExit: ``work`` holds no replay runs.
    """
    from htam_core.bench.replay import policy_of_run_folder
    from htam_core.memory.records import NOT_IN_TABLE

    reports = sorted(Path(work).glob("runs/*/report.json"))
    if not reports:
        raise SystemExit(f"memory_repeat_rates: {work} holds no replay runs (runs/*/report.json)")
    counts: dict[str, Counter[tuple[str, bool]]] = defaultdict(Counter)
    for rp in reports:
        policy = policy_of_run_folder(rp.parent.name)
        try:
            steps = json.loads(rp.read_text(encoding="utf-8")).get("steps") or []
        except (OSError, ValueError):
            continue
        if policy is None:
            continue
        tried: Counter[tuple[Any, Any]] = Counter()
        for s in steps:
            if s.get("status") == NOT_IN_TABLE:
                continue  # never measured: neither a try that won nor one that did not
            k = (s.get("strategy"), s.get("parent"))
            tried[k] += 1
            nth = "1" if tried[k] == 1 else "2" if tried[k] == 2 else "3+"
            counts[policy][(nth, s.get("status") == "win")] += 1
    out: dict[str, dict[str, dict[str, float | int]]] = {}
    for policy, c in sorted(counts.items()):
        out[policy] = {}
        for nth in ("1", "2", "3+"):
            wins, n = c[(nth, True)], c[(nth, True)] + c[(nth, False)]
            out[policy][nth] = {"trials": n, "wins": wins, "win_rate": round(wins / n, 4) if n else float("nan")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, help="a finished `htam bench replay --work` folder")
    ap.add_argument("--out", help="write the rates as JSON here too")
    args = ap.parse_args()
    rates = repeat_rates(args.work)
    print("| policy | 1st try: wins / trials | 2nd | 3rd or later |")
    print("|---|---|---|---|")
    for policy, r in rates.items():
        cells = [f"{r[k]['wins']} / {r[k]['trials']} ({r[k]['win_rate']:.0%})" for k in ("1", "2", "3+")]
        print(f"| {policy} | " + " | ".join(cells) + " |")
    if args.out:
        Path(args.out).write_text(json.dumps(rates, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
