"""Replay warm policies on a few kernels with the *full* leave-one-out memory of an earlier replay.

``htam bench replay --kernels a,b`` builds the warm memory from the teachers' replays of the listed kernels only,
so a subset run ranks from a smaller memory than the full replay does. To iterate on a change to the ranker, this
script reuses the teachers' exports of an earlier full replay (``WORK/exports`` of ``htam bench replay --work
WORK``: one JSON export per (kernel, teacher policy, seed)) and runs only the warm policies on the chosen kernels,
each importing every export except its own kernel's, exactly as :func:`htam_core.bench.replay.run_replay` does
in its second phase. The teachers are not re-run, so a change that moves ``htam-cold``'s own choices is only
seen by a full replay. It prints per kernel the trials-to-90 % and the first three strategies of each policy,
and writes the rows (with the first ranking of each run and its score parts) to ``--out`` as JSON, streamed one
line per run (flushed), so an interrupted run keeps what it finished. ``--config k=v`` overrides
:class:`htam_core.memory.ranker.RankerConfig`'s defaults for the run (as in ``memory_diagnose_replay.py``).

Run from the repository root (CPU; about 3 s per run on 2 cores):
    python bench/memory_subset_replay.py --table bench/results/2026-12-01-nvidia-h200-space-c8.jsonl \
        --exports /tmp/w-c8a/exports --kernels bmm_naive,stencil1d_r3 --policies htam,flat \
        --out /tmp/subset.jsonl [--config shrink_n0=2.0] [--max-seconds 600]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memory_diagnose_replay import PARTS, _parse_config, _set_defaults  # noqa: E402


def _slug(kid: str) -> str:
    return kid.replace("/", "_").replace("::", "-")


def run(table_path: str, exports: str, kernels: list[str], policies: list[str], work: str, out: str,
        max_seconds: float, budget: int = 8) -> list[dict[str, Any]]:
    """Run ``policies`` on ``kernels`` (ids or names) with the leave-one-out memory of ``exports``.

    Returns one row per run: kernel, family, policy, trials_to_90 (``None``: not reached), strategies tried,
    first ranking (top 5 with score parts). Raises ``SystemExit`` on an unknown kernel or policy.
    """
    from htam_core.bench import metrics
    from htam_core.bench.replay import REPLAY_POLICIES, SEEDED, _kernels, run_folder
    from htam_core.bench.suite import POLICY_SPECS, SuiteTask, run_suite_task
    from htam_core.memory.ranker import Ranker
    from htam_core.optimize.replay import load_table

    bad = [p for p in policies if p not in REPLAY_POLICIES or p in SEEDED]
    if bad:
        raise SystemExit(f"memory_subset_replay: not an unseeded replay policy: {', '.join(bad)}")
    table = load_table(table_path)
    from htam_core.bench.families import llmc_folder

    ks, gone = _kernels(table, kernels, llmc_folder(None))
    if gone:
        print(f"memory_subset_replay: left out, their files are not here: {', '.join(gone)}", file=sys.stderr)
    files = sorted(str(p) for p in Path(exports).glob("*.json"))
    if not files:
        raise SystemExit(f"memory_subset_replay: no exports in {exports} (run a full `htam bench replay` first)")
    captured: list[dict[str, Any]] = []
    orig_rank = Ranker.rank

    def rank(self: Ranker, state: Any, prefix: Any, *a: Any, **kw: Any) -> list:
        res = orig_rank(self, state, prefix, *a, **kw)
        if not captured:
            captured.append({"prefix": list(prefix), "top": [
                {"strategy": r.strategy, "score": round(r.score, 4),
                 "parts": {p: round(r.parts[p], 4) for p in PARTS}} for r in res[:5]]})
        return res

    Ranker.rank = rank  # type: ignore[method-assign]
    rows: list[dict[str, Any]] = []
    t0 = time.time()
    try:
        with open(out, "w") as fh:
            for k in ks:
                for p in policies:
                    if time.time() - t0 > max_seconds:
                        print(f"[subset] stopped: --max-seconds {max_seconds:g} spent", flush=True)
                        return rows
                    captured.clear()
                    slug = run_folder(k["id"], p, 0)
                    own = _slug(k["id"]) + "-"
                    t = SuiteTask(kernel=k["name"], path=k["path"], policy_name=p, budget=budget,
                                  out_dir=f"{work}/runs/{slug}", memory_path=f"{work}/stores/{slug}.sqlite3",
                                  memory_imports=[f for f in files if not Path(f).name.startswith(own)]
                                  if POLICY_SPECS[p][2] else [],
                                  record=True, seed=0, static=None, use_ncu=False, replay_table=table_path,
                                  replay_kernel=k["id"])
                    Path(f"{work}/stores").mkdir(parents=True, exist_ok=True)
                    r = run_suite_task(t.to_json())
                    steps = r.get("steps") or []
                    target = table.best_speedup(k["id"])
                    row = {"kernel": k["id"], "family": k["family"], "policy": p,
                           "trials_to_90": metrics.trials_to_fraction(
                               [s.get("speedup_vs_start") for s in steps], target),
                           "strategies": [s.get("strategy") for s in steps], "first_ranking": captured[:1]}
                    rows.append(row)
                    fh.write(json.dumps(row) + "\n")
                    fh.flush()
                    print(f"[subset] {k['name']} / {p}: trials-to-90 {row['trials_to_90']}, "
                          f"tried {', '.join(map(str, row['strategies'][:3]))}", flush=True)
    finally:
        Ranker.rank = orig_rank  # type: ignore[method-assign]
    return rows


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run, print the mean trials-to-90 per policy (9 = not reached); returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", required=True)
    ap.add_argument("--exports", required=True, help="WORK/exports of an earlier full `htam bench replay`")
    ap.add_argument("--kernels", required=True, help="kernel ids or names, comma-separated")
    ap.add_argument("--policies", default="htam,flat")
    ap.add_argument("--work", default="/tmp/htam-subset")
    ap.add_argument("--out", required=True, help="rows as JSON lines, one per run (streamed)")
    ap.add_argument("--config", help="RankerConfig overrides, k=v,k=v")
    ap.add_argument("--max-seconds", type=float, default=1e9, help="stop starting runs after this many seconds")
    args = ap.parse_args(argv)
    _set_defaults(_parse_config(args.config))
    rows = run(args.table, args.exports, args.kernels.split(","), args.policies.split(","), args.work, args.out,
               args.max_seconds)
    for p in args.policies.split(","):
        ts = [9 if r["trials_to_90"] is None else r["trials_to_90"] for r in rows if r["policy"] == p]
        if ts:
            print(f"[subset] {p}: mean trials-to-90 {sum(ts) / len(ts):.2f} over {len(ts)} kernels", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
