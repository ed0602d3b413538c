"""Combine KernelBench result JSONs of one configuration run over several device calls into one result.

A device call has a time limit, so a level's problems can be split over calls (``HTAM_KB_IDS`` picks the ones
left). This reads the calls' ``*-kernelbench.json`` files (oldest first), keeps each problem's latest record
that ran, recomputes Correct / fast_p / geomean and the torch.compile columns
(:func:`htam_core.bench.kernelbench.combine_runs`), and writes the combined JSON and Markdown.

    python bench/combine_kernelbench.py RUN1.json RUN2.json --out bench/results/DIR/combined
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from htam_core.bench.kernelbench import KernelBenchError, combine_runs  # noqa: E402
from htam_core.bench.report import kernelbench_markdown, write_json  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, combine, write ``<out>.json`` and ``<out>.md``; 0 on success, 2 with one line on
    bad input (unreadable JSON, runs that cannot be pooled)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="result JSON files, oldest first")
    ap.add_argument("--out", required=True, help="output path without suffix")
    a = ap.parse_args(argv)
    try:
        docs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in a.runs]
        doc = combine_runs(docs)
    except (OSError, ValueError, KernelBenchError) as exc:
        print(f"combine_kernelbench: {exc}", file=sys.stderr)
        return 2
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(doc, out.with_suffix(".json"))
    out.with_suffix(".md").write_text(kernelbench_markdown(doc), encoding="utf-8")
    print(f"combined {len(doc['problems'])} problems: {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
