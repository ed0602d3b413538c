"""Per-kernel trials-to-90 % of a replay, and the means over a named set of kernels and over the rest.

Where a policy's mean is decided by a few kernels (docs/MEMORY-LOG.md, "v13": eight kernels hold most of HTAM warm's
trials), this prints, as a Markdown table, every measured kernel's mean trials-to-90 % per policy (9 = not reached
in 8 trials; seeded policies averaged over their seeds) and the two means.

Run from the repository root (CPU, seconds):
    python bench/memory_split_kernels.py REPLAY.json KERNEL,KERNEL,... [--policies htam,flat,...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

NOT_REACHED = 9


def per_kernel(replay: str | Path) -> dict[str, dict[str, float]]:
    """``{kernel name: {policy: mean trials-to-90}}`` over the measured kernels of a replay JSON
    (``htam bench replay``'s ``*-replay.json``).

    Raises:
        SystemExit: the file cannot be read or is not a replay.
    """
    try:
        doc = json.loads(Path(replay).read_text(encoding="utf-8"))
        rows = doc["rows"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"memory_split_kernels: {replay} is not a replay JSON ({exc})") from None
    acc: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("target") is None:
            continue
        t = r.get("trials_to_90")
        acc[r["kernel"].split("::")[-1]][r["policy"]].append(NOT_REACHED if t is None else int(t))
    return {k: {p: sum(v) / len(v) for p, v in ps.items()} for k, ps in acc.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("replay", help="a replay JSON of `htam bench replay`")
    ap.add_argument("kernels", help="comma-separated kernel names of the set")
    ap.add_argument("--policies", default="htam,htam-cold,flat,random,no-prefix,no-update")
    args = ap.parse_args()
    table = per_kernel(args.replay)
    pols = args.policies.split(",")
    chosen = list(dict.fromkeys(k for k in args.kernels.split(",") if k))
    unknown = [k for k in chosen if k not in table]
    if unknown:
        raise SystemExit(f"memory_split_kernels: not a measured kernel of the replay: {', '.join(unknown)}")
    if not chosen:
        raise SystemExit("memory_split_kernels: name at least one kernel")
    print("| kernel | " + " | ".join(pols) + " |")
    print("|---|" + "---|" * len(pols))
    for k in sorted(table):
        print(f"| {k} | " + " | ".join(f"{table[k].get(p, float('nan')):.2f}" for p in pols) + " |")
    rest = [k for k in table if k not in chosen]
    for name, ks in ((f"the {len(chosen)} named", chosen), (f"the other {len(rest)}", rest)):
        if not ks:
            continue
        means = [sum(table[k].get(p, float("nan")) for k in ks) / len(ks) for p in pols]
        print(f"| **mean over {name}** | " + " | ".join(f"{m:.2f}" for m in means) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
