"""The effect of each change to the HTAM ranker on the synthetic family (the table of docs/MEMORY-LOG.md, "Changes").

The environment is the one of ``tests/memory/test_synthetic_transition.py`` (its ``speedup`` rule on the
committed static table ``tests/bench/fixtures/synthetic_space_static.jsonl``), replayed through
:func:`htam_core.bench.replay.run_replay` once per variant of :class:`htam_core.memory.ranker.RankerConfig`
(``credit``, ``start_token``, ``direction_best``) and of the warm memory's teachers (``memory_from``). Each
variant prints one line: per policy, the mean trials-to-90 % and the geomean speedup after 2 trials. The
variant's constants become the defaults of ``RankerConfig`` for the run (every ranker the loop builds gets
them). CPU only, about a minute per variant.

Run from the repository root:  python bench/memory_changes_synthetic.py [--work /tmp/htam-memory-changes]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VARIANTS = [
    ("v0 before, memory from htam-cold", {"credit": 0.0, "start_token": False, "direction_best": False, "pool_local": False, "structure": False},
     ["htam-cold"]),
    ("v1 before, memory from htam-cold + random", {"credit": 0.0, "start_token": False, "direction_best": False, "pool_local": False, "structure": False},
     ["htam-cold", "random"]),
    ("v2 + start token", {"credit": 0.0, "start_token": True, "direction_best": False, "pool_local": False, "structure": False}, ["htam-cold", "random"]),
    ("v3 + transition credit", {"credit": 0.9, "start_token": True, "direction_best": False, "pool_local": False, "structure": False},
     ["htam-cold", "random"]),
    ("v4 + direction = best strategy", {"credit": 0.9, "start_token": True, "direction_best": True, "pool_local": False, "structure": False},
     ["htam-cold", "random"]),
    ("v5 = v4, memory from htam-cold only", {"credit": 0.9, "start_token": True, "direction_best": True, "pool_local": False, "structure": False},
     ["htam-cold"]),
    ("v6 = v4 without the start token", {"credit": 0.9, "start_token": False, "direction_best": True, "pool_local": False, "structure": False},
     ["htam-cold", "random"]),
    ("v7 = v4 without transition credit", {"credit": 0.0, "start_token": True, "direction_best": True, "pool_local": False, "structure": False},
     ["htam-cold", "random"]),
    ("v8 = v4 + own evidence shrinks the direction term",
     {"credit": 0.9, "start_token": True, "direction_best": True, "pool_local": True, "structure": False},
     ["htam-cold", "random"]),
    ("v9 = v8 + the kernel's structure block in the state (now)",
     {"credit": 0.9, "start_token": True, "direction_best": True, "pool_local": True, "structure": True},
     ["htam-cold", "random"]),
]


def _rule():
    """The ``speedup`` rule of the synthetic-family test (one definition, imported from the test file)."""
    path = REPO / "tests" / "memory" / "test_synthetic_transition.py"
    spec = importlib.util.spec_from_file_location("synthetic_family", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.speedup


def main(argv: list[str] | None = None) -> int:
    """Replay every variant and print its line; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/htam-memory-changes", help="scratch folder (emptied per variant)")
    ap.add_argument("--policies", default="htam,htam-cold,flat,no-prefix,random")
    ap.add_argument("--only", help="comma-separated variant prefixes to run (e.g. v4,v8; default: every variant)")
    args = ap.parse_args(argv)
    import htam_core.memory.ranker as ranker
    from htam_core.bench.replay import ReplayConfig, run_replay
    from htam_core.bench.space import synthesize_table

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    table = work / "synthetic.jsonl"
    synthesize_table(REPO / "tests" / "bench" / "fixtures" / "synthetic_space_static.jsonl", table, _rule())
    names = [f.name for f in dataclasses.fields(ranker.RankerConfig)]
    defaults = ranker.RankerConfig.__init__.__defaults__
    try:
        wanted = [w for w in (args.only or "").split(",") if w]
        for label, consts, teachers in VARIANTS:
            if wanted and label.split()[0] not in wanted:
                continue
            d = list(defaults)
            for k, v in consts.items():
                d[names.index(k)] = v
            ranker.RankerConfig.__init__.__defaults__ = tuple(d)
            shutil.rmtree(work / "replay", ignore_errors=True)
            doc = run_replay(ReplayConfig(table=str(table), work=str(work / "replay"),
                                          policies=args.policies.split(","), seeds=3, memory_from=teachers,
                                          warm_leave_out="kernel"),
                             log=lambda m: None)
            agg = doc["aggregates"]
            cells = ", ".join(f"{p} {agg[p]['mean_trials_to_90']:.2f} / {agg[p]['geomean_at']['2']:.3f}x"
                              for p in doc["policies"])
            print(f"{label}: {cells}", flush=True)
    finally:
        ranker.RankerConfig.__init__.__defaults__ = defaults
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
