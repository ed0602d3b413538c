"""Why does warm HTAM not beat flat memory on a measured-space table? One line of evidence per kernel.

Replays ``htam``, ``flat`` and ``htam-cold`` (and the warm memory's teachers) through
:func:`htam_core.bench.replay.run_replay` in this process, with :meth:`htam_core.memory.ranker.Ranker.rank`
wrapped so that every ranking the loop asks for is kept: the top steps with their score parts (direction
prior, direction transition, direction exploration, local prior, local transition, local exploration) and
the evidence text, and (v10) :meth:`~htam_core.memory.ranker.Ranker.rank_variants` wrapped so that every ordering of a
strategy's variants is kept with its scores. Then, for every kernel where ``flat`` reaches 90 % of the table's best sooner than
``htam``, or ``htam`` is no better than ``flat`` while the start is below 90 % of the best, it writes what each
policy tried first, the table's measured candidates of that kernel (strategy: speedup over the start), and the
first ranking of ``htam`` and ``flat`` with their parts. Kernels whose start already reaches 90 % (every policy
needs 0 trials) are counted, not listed.

The method's constants are :class:`htam_core.memory.ranker.RankerConfig`'s defaults; ``--config k=v,...``
overrides them for the run (every ranker the loop builds gets them), so a change can be diagnosed before it
becomes the default.

Run from the repository root (CPU, about 3 minutes on 2 cores):
    python bench/memory_diagnose_replay.py --table bench/results/2026-12-01-nvidia-h200-space.jsonl \
        --out /tmp/htam-diagnose.md [--config shrink_n0=2.0] [--work /tmp/htam-diagnose]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

TOP = 5
PARTS = ("direction_prior", "direction_transition", "direction_exploration", "local_prior", "local_transition",
         "local_exploration")


def _set_defaults(overrides: dict[str, Any]) -> None:
    """Make ``overrides`` the defaults of ``RankerConfig`` for this process (every ranker the loop builds)."""
    import htam_core.memory.ranker as ranker

    names = [f.name for f in dataclasses.fields(ranker.RankerConfig)]
    d = list(ranker.RankerConfig.__init__.__defaults__)
    for k, v in overrides.items():
        if k not in names:
            raise SystemExit(f"memory_diagnose_replay: RankerConfig has no field {k!r} (fields: {', '.join(names)})")
        cur = d[names.index(k)]
        if v in ("none", "None"):  # an optional field switched off (e.g. quantile=none: the method before v12)
            d[names.index(k)] = None
        elif isinstance(cur, bool):
            d[names.index(k)] = v in ("1", "true", "True")
        else:
            d[names.index(k)] = float(v) if cur is None else type(cur)(v)
    ranker.RankerConfig.__init__.__defaults__ = tuple(d)


def _parse_config(text: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in filter(None, (text or "").split(",")):
        k, _, v = item.partition("=")
        out[k.strip()] = v.strip()
    return out


def capture(table: str, work: str, policies: list[str]) -> tuple[dict[str, Any], dict[tuple[str, str], list]]:
    """Run the replay with every ranking kept: ``(results document, {(kernel id, policy): [rankings]})``."""
    import htam_core.bench.suite as suite
    from htam_core.bench.replay import ReplayConfig, run_replay
    from htam_core.memory.ranker import Ranker

    rankings: dict[tuple[str, str], list] = defaultdict(list)
    current: dict[str, str] = {}
    orig_task, orig_rank, orig_variants = suite.run_suite_task, Ranker.rank, Ranker.rank_variants

    def task(t: dict[str, Any]) -> dict[str, Any]:
        current.update(kernel=t.get("replay_kernel") or t["kernel"], policy=t["policy_name"], seed=str(t["seed"]))
        return orig_task(t)

    def rank(self: Ranker, state: Any, prefix: Any, *a: Any, **kw: Any) -> list:
        out = orig_rank(self, state, prefix, *a, **kw)
        if current.get("seed") == "0":
            rankings[(current["kernel"], current["policy"])].append(
                {"prefix": list(prefix), "records": self._memory.n,
                 "top": [{"strategy": r.strategy, "direction": r.direction, "score": r.score,
                          "parts": {p: r.parts[p] for p in PARTS}, "evidence": r.evidence} for r in out[:TOP]]})
        return out

    def rank_variants(self: Ranker, state: Any, prefix: Any, strategy: str, variants: Any, *a: Any,
                      **kw: Any) -> list:
        out = orig_variants(self, state, prefix, strategy, variants, *a, **kw)
        if current.get("seed") == "0":
            rankings[(current["kernel"], current["policy"] + ":variants")].append(
                {"prefix": list(prefix), "strategy": strategy, "variants": list(zip(variants, out, strict=True))})
        return out

    suite.run_suite_task, Ranker.rank, Ranker.rank_variants = task, rank, rank_variants
    try:
        doc = run_replay(ReplayConfig(table=table, work=work, policies=policies, fresh=True), log=lambda m: None)
    finally:
        suite.run_suite_task, Ranker.rank, Ranker.rank_variants = orig_task, orig_rank, orig_variants
    return doc, rankings


def measured_candidates(table: str) -> dict[str, list[tuple[str, float | None]]]:
    """Per kernel id, the table's depth-1 candidates as ``(strategy, speedup over the start or None)``."""
    out: dict[str, list[tuple[str, float | None]]] = defaultdict(list)
    for line in Path(table).read_text().splitlines():
        r = json.loads(line)
        if r.get("type") == "node" and r.get("depth") == 1:
            out[r["kernel"]].append((r["strategy"], r.get("speedup_vs_start")))
    return out


def _fmt_t(t: int | None) -> str:
    return "never" if t is None else str(t)


def _ranking_table(rk: dict[str, Any]) -> list[str]:
    lines = ["| # | strategy | score | d.prior | d.trans | d.expl | l.prior | l.trans | l.expl | evidence |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(rk["top"], 1):
        p = r["parts"]
        lines.append(f"| {i} | {r['strategy']} | {r['score']:.3f} | " + " | ".join(f"{p[k]:+.3f}" for k in PARTS)
                     + f" | {r['evidence']} |")
    return lines


def report(doc: dict[str, Any], rankings: dict[tuple[str, str], list], cands: dict[str, list]) -> str:
    """The findings document (Markdown)."""
    rows = {(r["kernel"], r["policy"]): r for r in doc["rows"] if r["seed"] == 0}
    kernels = [k["id"] for k in doc["kernels"]]
    fam = {k["id"]: k["family"] for k in doc["kernels"]}
    lines = ["# Why warm HTAM does not beat flat memory: per-kernel evidence", ""]
    trivially, listed, worse, tie, better = 0, 0, 0, 0, 0
    body: list[str] = []
    for kid in kernels:
        h, f, c = rows.get((kid, "htam")), rows.get((kid, "flat")), rows.get((kid, "htam-cold"))
        if not h or not f or h["target"] is None:
            continue
        th, tf = h["trials_to_90"], f["trials_to_90"]
        nh, nf = 9 if th is None else th, 9 if tf is None else tf
        if nh == 0 and nf == 0:
            trivially += 1
            continue
        if nh < nf:
            better += 1
            continue
        worse += nh > nf
        tie += nh == nf
        listed += 1
        body += [f"## {fam[kid]} / {kid.split('::')[-1]}", "",
                 f"- best in table {h['target']:.2f}x (90 %: {0.9 * h['target']:.2f}x); measured candidates: "
                 + ", ".join(f"{s} " + (f"x{v:.2f}" if v else "n/a") for s, v in cands.get(kid, [])),
                 f"- trials to 90 %: htam {_fmt_t(th)}, flat {_fmt_t(tf)}, htam-cold {_fmt_t(c and c['trials_to_90'])}",
                 f"- htam tried: {', '.join(map(str, h['strategies'][:4]))}"
                 f" (steps not in the table: {h.get('not_in_table', 0)})",
                 f"- flat tried: {', '.join(map(str, f['strategies'][:4]))}",
                 *([f"- htam-cold tried: {', '.join(map(str, c['strategies'][:4]))}"] if c else []), ""]
        for pol in ("htam", "flat"):
            rk = rankings.get((kid, pol))
            if rk:
                body += [f"{pol}'s first ranking ({rk[0]['records']} records in memory):", "",
                         *_ranking_table(rk[0]), ""]
            for v in rankings.get((kid, f"{pol}:variants"), [])[:2]:  # v10: how the strategy's variants were ordered
                after = " → ".join(v["prefix"]) or "the start"
                body += [f"{pol}'s variants of {v['strategy']} at {after} (transform's order, score): "
                         + ", ".join(f"`{k}` {sc:+.3f}" for k, sc in v["variants"]), ""]
    lines += [f"Kernels measured: {sum(1 for k in kernels if rows.get((k, 'htam')) and rows[(k, 'htam')]['target'])};"
              f" start already at 90 % (0 trials for every policy): {trivially}; htam sooner than flat: {better}; "
              f"tie: {tie}; flat sooner: {worse}. Listed below: {listed}.", "", *body]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Capture the rankings, write the findings; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", required=True)
    ap.add_argument("--out", required=True, help="the findings (Markdown); the rankings go next to it as .json")
    ap.add_argument("--work", default="/tmp/htam-diagnose")
    ap.add_argument("--config", help="RankerConfig overrides, k=v,k=v")
    args = ap.parse_args(argv)
    _set_defaults(_parse_config(args.config))
    shutil.rmtree(args.work, ignore_errors=True)
    doc, rankings = capture(args.table, args.work, ["htam", "htam-cold", "flat"])
    Path(args.out).write_text(report(doc, rankings, measured_candidates(args.table)))
    Path(args.out).with_suffix(".json").write_text(json.dumps(
        {f"{k}|{p}": v for (k, p), v in rankings.items()}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
