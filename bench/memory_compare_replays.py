"""Compare two ``htam bench replay`` results row by row: are two replays the same (another checkout, another
folder, a missing corpus), and where do they differ?

Usage:
    python bench/memory_compare_replays.py A.json B.json [--ignore status,error] [--policies htam,flat]

Prints each policy's mean trials-to-90 % in both, then every (kernel, policy, seed) row whose trials-to-90 %, tried
strategies or best-so-far curve differ (the fields in ``--ignore`` are left out of the comparison), and the count.
Exits 1 when a row differs, 0 when none does, 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def rows(path: str) -> tuple[dict[str, Any], dict[tuple[str, str, int], dict[str, Any]]]:
    """The results document of ``path`` and its rows keyed by (kernel id, policy, seed)."""
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    return doc, {(r["kernel"], r["policy"], r["seed"]): r for r in doc["rows"]}


def differing(a: dict[tuple[str, str, int], dict[str, Any]], b: dict[tuple[str, str, int], dict[str, Any]],
              ignore: set[str]) -> list[tuple[str, str, int]]:
    """Keys whose rows differ in any field but ``ignore`` (a key missing on one side differs)."""
    def strip(r: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if r is None else {k: v for k, v in r.items() if k not in ignore}

    return sorted(k for k in set(a) | set(b) if strip(a.get(k)) != strip(b.get(k)))


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--ignore", default="", help="comma-separated row fields left out of the comparison")
    ap.add_argument("--policies", default=None, help="comma-separated policies to compare (default: all)")
    args = ap.parse_args(argv)
    try:
        da, ra = rows(args.a)
        db, rb = rows(args.b)
    except (OSError, ValueError, KeyError) as exc:
        print(f"memory_compare_replays: cannot read a replay result: {exc}", file=sys.stderr)
        return 2
    if args.policies:
        keep = set(args.policies.split(","))
        ra = {k: v for k, v in ra.items() if k[1] in keep}
        rb = {k: v for k, v in rb.items() if k[1] in keep}
    for p in sorted({k[1] for k in ra} | {k[1] for k in rb}):
        fa = da.get("aggregates", {}).get(p, {}).get("mean_trials_to_90")
        fb = db.get("aggregates", {}).get(p, {}).get("mean_trials_to_90")
        print(f"{p}: mean trials-to-90 {fa} | {fb}")
    diff = differing(ra, rb, set(filter(None, args.ignore.split(","))))
    for k in diff:
        x, y = ra.get(k) or {}, rb.get(k) or {}
        print(f"differs {k}: {x.get('trials_to_90')} {x.get('strategies', [])[:4]} | "
              f"{y.get('trials_to_90')} {y.get('strategies', [])[:4]}")
    print(f"{len(diff)} of {len(set(ra) | set(rb))} rows differ")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
