"""Before and after a change to the HTAM ranker, on the families it was tuned on and on the held-out ones.

Reads two results documents of ``htam bench replay`` (the ``-replay.json`` files; the same table, the method
before and after the change) and writes one Markdown page: the sample-efficiency targets before and after; every
policy at budgets 1, 2, 4 and 8 over all kernels; then the same over the tuned families together and over the
held-out families together (the split is given, never chosen from the results); then the mean trials-to-90 %
of every policy per family. A change is kept only when the held-out families do not get worse
(docs/MEMORY-LOG.md, "Changes to the method").

Run from the repository root:
    python bench/memory_heldout_report.py --before BEFORE-replay.json --after AFTER-replay.json \
        --tuned elementwise,reduce,stencil --out OUT.md [--command "how the two replays were made"]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from htam_core.bench.replay import group_aggregates, policy_table


def _targets(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    lines = ["| target | before | met | after | met |", "|---|---|---|---|---|"]
    after_t = {t["target"]: t for t in after["targets"]}
    for t in before["targets"]:
        a = after_t.get(t["target"]) or {}

        def met(x: dict[str, Any]) -> str:
            return "not measured" if x.get("met") is None else "yes" if x["met"] else "NO"

        lines.append(f"| {t['target']} | {t['value']} | {met(t)} | {a.get('value')} | {met(a)} |")
    return lines


def _per_family(before: dict[str, Any], after: dict[str, Any], tuned: list[str]) -> list[str]:
    pols = before["policies"]
    lines = ["| family | split | " + " | ".join(pols) + " |", "|---|---|" + "---|" * len(pols)]
    for f in before["families"]:
        cells = []
        for p in pols:
            b = (before["per_family"][f].get(p) or {}).get("mean_trials_to_90")
            a = (after["per_family"][f].get(p) or {}).get("mean_trials_to_90")
            cells.append("n/a" if b is None or a is None else f"{b:.2f} → {a:.2f}")
        lines.append(f"| {f} | {'tuned' if f in tuned else 'held out'} | " + " | ".join(cells) + " |")
    return lines


def report(before: dict[str, Any], after: dict[str, Any], tuned: list[str], command: str | None = None) -> str:
    """The before/after page (Markdown) for a change tuned on ``tuned``; the other families are held out."""
    held = [f for f in before["families"] if f not in tuned]
    budget = before["budget"]
    out = ["# HTAM before and after the change: tuned and held-out families", "",
           f"- Tuned on: {', '.join(tuned)}. Held out: {', '.join(held)} (the families in sorted order, "
           "alternately; fixed before any change was measured).",
           f"- Budget {budget}; seeded policies over {before['config']['seeds']} seeds: mean, [min–max] over seeds. "
           f"A kernel that never reaches 90 % counts as {budget + 1} trials.",
           *([f"- Command: `{command}`"] if command else []), "", "## Targets (all kernels)", "",
           *_targets(before, after), "", "## Mean trials-to-90 % per family (before → after)", "",
           *_per_family(before, after, tuned)]
    for title, fams in (("All kernels", before["families"]), (f"Tuned families ({', '.join(tuned)})", tuned),
                        (f"Held-out families ({', '.join(held)})", held)):
        for when, doc in (("before", before), ("after", after)):
            out += ["", f"## {title}, {when}", "", *policy_table(group_aggregates(doc, fams), budget)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the page; returns 0, or 2 with one line on a bad input."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--tuned", required=True, help="comma-separated families the change was tuned on")
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", help="how the replays were made (written on the page)")
    args = ap.parse_args(argv)
    try:
        before, after = (json.loads(Path(p).read_text()) for p in (args.before, args.after))
        text = report(before, after, [f for f in args.tuned.split(",") if f], args.command)
    except (OSError, ValueError, KeyError) as exc:
        print(f"memory_heldout_report: {exc}", file=sys.stderr)
        return 2
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
