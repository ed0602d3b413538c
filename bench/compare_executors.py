"""Do two suite runs agree? ``--executor dask`` against ``--executor local`` on the same suite.

Each run is a ``htam bench suite`` results JSON (``<out>/<date>-<gpu>-suite.json``). For every (kernel, policy)
present in both, the script compares:

* the start kernel's median time and the best kernel's median time (relative difference in percent), against the
  noise threshold: ``max(--min-noise-pct, 3 x the larger run-to-run spread the runs themselves measured)``, where the
  spread is the suite's own repeatability figure for that kernel (the start kernel is timed afresh by every policy)
  or, when that is unknown, ``--min-noise-pct`` alone;
* the published speedup of each run (the best kernel's re-timing in a fresh process), the same way;
* the steps each run kept (the transform names of the accepted steps). Different kept steps are reported, not
  failed: a step whose gain is near the noise threshold may be kept in one run and not in the other.

A pair "agrees" when both times, and both published speedups where both runs have one, are within the threshold. Static-mode runs (no times) are compared on the steps
only. Output: a Markdown table and a JSON file.

    python bench/compare_executors.py LOCAL.json DASK.json --out bench/results/executors-h200-<date>
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from htam_core.types.files import read_data_text


def _rows(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["kernel"], r["policy"]): r for r in doc.get("results", []) if r.get("status") == "ok"}


def _kept(r: dict[str, Any]) -> list[str]:
    return [s.get("transform") or s.get("strategy") or "?" for s in r.get("steps", []) if s.get("accepted")]


def _fresh(r: dict[str, Any]) -> float | None:
    """The published speedup: the fresh-process re-timing of the best kernel (None when there was none)."""
    v = (r.get("reproduction") or {}).get("fresh")
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


def _rel_pct(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a <= 0 or b <= 0:
        return None
    return abs(a - b) / min(a, b) * 100.0


def _spread(doc: dict[str, Any], kernel: str) -> float | None:
    rep = (doc.get("repeatability") or {}).get("per_kernel_pct") or {}
    v = rep.get(kernel)
    return float(v) if isinstance(v, (int, float)) else None


def compare(a: dict[str, Any], b: dict[str, Any], min_noise_pct: float = 3.0) -> dict[str, Any]:
    """Compare two suite result documents (the JSON ``htam bench suite`` writes).

    Args:
        a, b: the parsed JSON of two runs (e.g. ``--executor local`` and ``--executor dask``).
        min_noise_pct: the smallest noise threshold in percent.

    Returns:
        ``{"pairs": [...], "agree": int, "compared": int, "steps_differ": int}``; a pair has the kernel, policy,
        both runs' start and best medians (ms), their relative differences (%), the threshold and ``agrees``.
    """
    ra, rb = _rows(a), _rows(b)
    pairs: list[dict[str, Any]] = []
    for key in sorted(set(ra) & set(rb)):
        x, y = ra[key], rb[key]
        spreads = [s for s in (_spread(a, key[0]), _spread(b, key[0])) if s is not None]
        threshold = max(min_noise_pct, 3.0 * max(spreads)) if spreads else min_noise_pct
        d_start = _rel_pct(x.get("start_ms"), y.get("start_ms"))
        d_best = _rel_pct(x.get("best_ms"), y.get("best_ms"))
        d_fresh = _rel_pct(_fresh(x), _fresh(y))
        measured = d_start is not None and d_best is not None
        pairs.append({"kernel": key[0], "policy": key[1], "measured": measured,
                      "start_ms": [x.get("start_ms"), y.get("start_ms")],
                      "best_ms": [x.get("best_ms"), y.get("best_ms")],
                      "fresh_speedup": [_fresh(x), _fresh(y)], "fresh_diff_pct": d_fresh,
                      "start_diff_pct": d_start, "best_diff_pct": d_best, "threshold_pct": threshold,
                      "kept": [_kept(x), _kept(y)], "same_steps": _kept(x) == _kept(y),
                      "agrees": (d_start <= threshold and d_best <= threshold
                                 and (d_fresh is None or d_fresh <= threshold)) if measured
                      else _kept(x) == _kept(y)})
    return {"pairs": pairs, "compared": len(pairs), "agree": sum(p["agrees"] for p in pairs),
            "steps_differ": sum(not p["same_steps"] for p in pairs),
            "only_in_first": sorted(f"{k}/{p}" for k, p in set(ra) - set(rb)),
            "only_in_second": sorted(f"{k}/{p}" for k, p in set(rb) - set(ra))}


def _fmt(v: float | None, nd: int = 4, unit: str = "") -> str:
    return "not measured" if v is None else f"{v:.{nd}g}{unit}"


def markdown(res: dict[str, Any], names: tuple[str, str], header: list[str]) -> str:
    """The comparison as a Markdown table, with ``header`` lines (device, date, command) on top."""
    out = ["## Suite: two executors compared", "", *header, "",
           f"{res['agree']} of {res['compared']} (kernel, policy) pairs agree within the noise threshold; "
           f"kept steps differ in {res['steps_differ']}.", "",
           f"| kernel | policy | start ms ({names[0]} / {names[1]}) | best ms ({names[0]} / {names[1]}) | "
           f"start diff | best diff | fresh re-timed speedup ({names[0]} / {names[1]}) | fresh diff | threshold | "
           "same kept steps | agrees |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in res["pairs"]:
        out.append(f"| {p['kernel']} | {p['policy']} | {_fmt(p['start_ms'][0])} / {_fmt(p['start_ms'][1])} | "
                   f"{_fmt(p['best_ms'][0])} / {_fmt(p['best_ms'][1])} | {_fmt(p['start_diff_pct'], 2, '%')} | "
                   f"{_fmt(p['best_diff_pct'], 2, '%')} | "
                   f"{_fmt(p['fresh_speedup'][0], 3, 'x')} / {_fmt(p['fresh_speedup'][1], 3, 'x')} | "
                   f"{_fmt(p['fresh_diff_pct'], 2, '%')} | {p['threshold_pct']:.1f}% | "
                   f"{'yes' if p['same_steps'] else 'no: ' + ' / '.join(','.join(k) or '-' for k in p['kept'])} | "
                   f"{'yes' if p['agrees'] else 'no'} |")
    for label, key in (("only in the first run", "only_in_first"), ("only in the second run", "only_in_second")):
        if res[key]:
            out += ["", f"Pairs {label}: {', '.join(res[key])}"]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("first", type=Path, help="suite results JSON of the first run (e.g. --executor local)")
    ap.add_argument("second", type=Path, help="suite results JSON of the second run (e.g. --executor dask)")
    ap.add_argument("--names", default="local,dask", help="labels of the two runs (default: local,dask)")
    ap.add_argument("--min-noise-pct", type=float, default=3.0, help="smallest noise threshold (default: 3)")
    ap.add_argument("--header", action="append", default=[], help="a line above the table (device, date, command)")
    ap.add_argument("--out", type=Path, help="write OUT.md and OUT.json (default: print the table)")
    a = ap.parse_args(argv)
    try:
        docs = [json.loads(read_data_text(p)) for p in (a.first, a.second)]  # .json or .json.gz
    except (OSError, json.JSONDecodeError) as exc:
        print(f"compare_executors: cannot read the suite results: {exc}", file=sys.stderr)
        return 2
    res = compare(docs[0], docs[1], a.min_noise_pct)
    names = tuple(a.names.split(",", 1)) if "," in a.names else ("first", "second")
    md = markdown(res, names, a.header)  # type: ignore[arg-type]
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.with_suffix(".md").write_text(md)
        a.out.with_suffix(".json").write_text(json.dumps(res, indent=1))
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
