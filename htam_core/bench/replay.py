"""Policy replay over a measured-space table: sample efficiency of HTAM against random, flat and its ablations.

Every policy runs the real optimize loop (:func:`htam_core.bench.suite.run_suite_task`, the suite's task) with
``replay_table`` set, so measuring a candidate is a lookup in the table (:mod:`htam_core.optimize.replay`)
and nothing runs on a GPU. The loop's choices do not depend on its budget, so one run at the largest budget
gives the curve at every smaller one (its first ``b`` steps are the run at budget ``b``).

* The policies of ``memory_from`` run first on every kernel (``htam-cold`` from an empty memory, ``random``
  with every seed), each recording into a store of its own (exported); ``htam`` and the memory ablations of
  kernel k import the exports of the other kernels (:func:`warm_imports`). ``warm_leave_out = "family"`` (the
  default) leaves out k's whole family: the memory holds only kernels of other families, so a warm policy
  cannot win by recognizing a near copy of k (an audit found that the warm advantage over flat memory came
  from that). ``"kernel"`` leaves out k alone, the earlier rule, kept for comparison.
* ``random`` and ``random-memory`` run with ``seeds`` seeds; the figures are the mean over seeds with their
  spread (smallest and largest seed's figure).
* Ground truth: the table's exhaustive best per kernel (:meth:`Table.best_speedup`); a policy reaches 90 %
  at the first trial whose best-so-far speedup is at least 0.9 times it.

Per policy (and per family): mean and median trials-to-90 % (a kernel that never reaches it within the
budget counts as ``budget + 1`` in both; the report writes a figure such a kernel entered as a lower bound,
``≥ x``, and ``budget + 1`` itself as "never (within budget N)"), its 95 % bootstrap interval over kernels,
the geomean speedup after 1, 2, 4 and 8 trials, the sample-efficiency targets, and (:func:`paired`) the pairs
of policies compared kernel by kernel. A replay of a static table says "not measured".
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from htam_core.bench import metrics
from htam_core.bench.suite import POLICY_SPECS, SuiteTask
from htam_core.optimize.replay import NOT_IN_TABLE, Table, TableError, load_table, skipped_note
from htam_core.types.files import data_path

#: Policies of a replay, in report order (``exhaustive`` is the table itself).
REPLAY_POLICIES = ("htam", "htam-cold", "flat", "random", "no-local", "no-prefix", "no-position", "no-update",
                   "random-memory")
#: Policies whose outcome depends on a seed (run with every seed).
SEEDED = ("random", "random-memory")
#: Trial counts reported (the curve at these budgets).
REPORT_AT = (1, 2, 4, 8)
#: What the warm memory of kernel k leaves out: k's whole family (the default) or k alone.
WARM_LEAVE_OUT = ("family", "kernel")
#: The pairs of policies the report compares kernel by kernel, with what the second one switches off (or what
#: the first adds): ``(first, second, what the comparison isolates)``.
REPLAY_PAIRS = (
    ("htam", "flat", "the hierarchy (direction-level memory)"),
    ("htam", "htam-cold", "the warm memory"),
    ("htam", "random", "the ranking (priors and memory) against random order"),
    ("htam", "no-local", "strategy-level records"),
    ("htam", "no-prefix", "the history (transitions)"),
    ("htam", "no-position", "position weights of the history"),
    ("htam", "no-update", "learning within the run"),
    ("htam", "random-memory", "the records' outcomes"),
    ("flat", "htam-cold", "strategy-level records against the priors alone"),
)


def run_folder(kernel_id: str, policy: str, seed: int) -> str:
    """The name of one replay run's folder, store and export: ``<kernel id, path-safe>-<policy>-s<seed>``."""
    return f"{kernel_id.replace('/', '_').replace('::', '-')}-{policy}-s{seed}"


def policy_of_run_folder(name: str) -> str | None:
    """The policy of a :func:`run_folder` name (the longest replay policy that fits), or ``None``."""
    base = re.sub(r"-s\d+$", "", name)
    fits = [p for p in REPLAY_POLICIES if base.endswith("-" + p)]
    return max(fits, key=len) if fits else None


class ReplayError(Exception):
    """The replay cannot run (no table, unknown policy or kernel); the message says how to fix it."""


@dataclass
class ReplayConfig:
    """Settings of one replay.

    Attributes:
        table: the measured-space table; work: stores, exports, runs and ``results.jsonl`` (resumed).
        policies: names of :data:`REPLAY_POLICIES`; kernels: kernel ids or names (``None``: every kernel).
        budget: trials per run (the largest budget); seeds: seeds of the seeded policies.
        memory_from: the policies whose replays of the *other* kernels make the warm memory (``htam-cold``:
            HTAM's own experience; ``random``: the random explorer's, every seed). They run first.
        fresh: forget the results of an earlier replay in ``work``.
        llmc: llm.c's kernel folder (files not at their recorded path are read from it), or ``None``.
        warm_leave_out: ``"family"`` (the warm memory of kernel k holds no kernel of k's family) or ``"kernel"``
            (it holds every kernel but k); see :func:`warm_imports`.
    """

    table: str
    work: str
    policies: list[str] = field(default_factory=lambda: list(REPLAY_POLICIES))
    kernels: list[str] | None = None
    budget: int = 8
    seeds: int = 3
    memory_from: list[str] = field(default_factory=lambda: ["htam-cold", "random"])
    fresh: bool = False
    llmc: str | None = None
    warm_leave_out: str = "family"


def warm_imports(kernel: dict[str, Any], exports: list[tuple[str, str]], family_of: dict[str, str],
                 leave_out: str = "family") -> list[str]:
    """The teachers' exports a warm run of ``kernel`` imports: leave-one-out memory.

    Args:
        kernel: the kernel replayed, a dict with ``id`` and ``family`` (as :func:`run_replay` lists kernels).
        exports: ``(kernel id, export path)`` of every teacher run (one per kernel, teacher policy and seed).
        family_of: kernel id -> family, for every kernel of ``exports``.
        leave_out: ``"kernel"``: every export but ``kernel``'s own; ``"family"``: only the exports of kernels of
            another family (the family's other members are near relatives: the same pattern, often the same
            best strategy, so a memory that holds them measures recognition of a relative, not transfer).

    Returns:
        The export paths, sorted (the order a task key reads them in).

    Raises:
        ReplayError: ``leave_out`` is neither ``"kernel"`` nor ``"family"``.
    """
    if leave_out not in WARM_LEAVE_OUT:
        raise ReplayError(f"--warm-leave-out takes {' or '.join(WARM_LEAVE_OUT)}, not {leave_out!r}")
    fam = kernel["family"]
    return sorted(p for kid, p in exports if kid != kernel["id"]
                  and (leave_out == "kernel" or family_of.get(kid) != fam))


def _source(path: str, llmc: Path | None) -> str | None:
    """Where the kernel file of a table row is: its recorded path (relative to the current folder) when it
    exists, else a file of the same name in the llm.c folder ``llmc`` (the table records where the build read
    llm.c's third-party files, which need not be where they are now); ``None`` when neither exists."""
    if Path(path).is_file():
        return path
    if llmc is not None and (llmc / Path(path).name).is_file():
        return str(llmc / Path(path).name)
    return None


def _kernels(table: Table, wanted: list[str] | None, llmc: Path | None = None
             ) -> tuple[list[dict[str, Any]], list[str]]:
    """The table's kernels to replay (``wanted``: ids or names, all when ``None``) and the ids of those whose
    file is missing (left out). The id stays the table's; ``path`` is where the file was found."""
    starts = list(table.starts.values())  # one per kernel, also where its file changed and was measured again
    ks = [{"id": r["kernel"], "name": r.get("name") or r["kernel"].split("::")[-1],
           "path": _source(r["kernel"].rsplit("::", 1)[0], llmc), "family": r.get("family") or "suite"}
          for r in starts]
    ks.sort(key=lambda k: (k["family"], k["id"]))
    if wanted:
        keep = [k for k in ks if k["id"] in wanted or k["name"] in wanted]
        missing = [w for w in wanted if not any(w in (k["id"], k["name"]) for k in ks)]
        if missing:
            raise ReplayError(f"the table has no kernel {', '.join(missing)}")
        ks = keep
    if not ks:
        raise ReplayError(f"{table.path} holds no kernel (build it with `htam bench space`)")
    missing_files = [k["id"] for k in ks if k["path"] is None]
    ks = [k for k in ks if k["path"] is not None]
    if not ks:
        raise ReplayError(f"none of the table's kernel files is here (e.g. {missing_files[0].rsplit('::', 1)[0]}): "
                          "run from the folder the table was built in (paths are relative to it), and give "
                          "llm.c's folder with --llmc DIR")
    return ks, missing_files


def run_replay(cfg: ReplayConfig, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Replay every policy on every kernel of the table; returns the results document (:func:`summarize`).

    Raises:
        ReplayError: unreadable table, unknown policy or kernel.
    """
    from htam_core.bench.executors import ExecutorOptions, ResultLog, file_digest, run_tasks, task_key

    bad = [p for p in cfg.policies if p not in REPLAY_POLICIES]
    if bad:
        raise ReplayError(f"unknown policy {', '.join(bad)}; known: {', '.join(REPLAY_POLICIES)}")
    if cfg.budget < 1 or cfg.seeds < 1:
        raise ReplayError("--budget and --seeds must be at least 1")
    if cfg.warm_leave_out not in WARM_LEAVE_OUT:
        raise ReplayError(f"--warm-leave-out takes {' or '.join(WARM_LEAVE_OUT)}, not {cfg.warm_leave_out!r}")
    try:
        table = load_table(cfg.table)
    except TableError as exc:
        raise ReplayError(str(exc)) from exc
    if note := skipped_note(cfg.table, table.skipped):
        log(note)
    from htam_core.bench.families import llmc_folder

    kernels, missing_files = _kernels(table, cfg.kernels, llmc_folder(cfg.llmc))
    if missing_files:
        log(f"[replay] {len(missing_files)} kernel(s) left out, their files are not here: "
            f"{', '.join(missing_files[:3])}{', ...' if len(missing_files) > 3 else ''} (for llm.c's kernels, "
            "give its folder with --llmc DIR or $HTAM_LLMC)")
    work = Path(cfg.work)
    work.mkdir(parents=True, exist_ok=True)
    if cfg.fresh:
        (work / "results.jsonl").unlink(missing_ok=True)
    rlog = ResultLog(work / "results.jsonl")
    opts = ExecutorOptions("local", (), None, 1)
    t0 = time.time()
    table_path = str(data_path(cfg.table).resolve())
    table_digest = file_digest(table_path)
    family_of = {k["id"]: k["family"] for k in kernels}

    def task(k: dict[str, Any], policy: str, seed: int, exports: list[tuple[str, str]]) -> SuiteTask:
        slug = run_folder(k["id"], policy, seed)
        warm = POLICY_SPECS[policy][2]
        teaches = policy in cfg.memory_from
        return SuiteTask(kernel=k["name"], path=k["path"], policy_name=policy, budget=cfg.budget,
                         out_dir=str(work / "runs" / slug), memory_path=str(work / "stores" / f"{slug}.sqlite3"),
                         memory_imports=warm_imports(k, exports, family_of, cfg.warm_leave_out) if warm else [],
                         export_to=str(work / "exports" / f"{slug}.json") if teaches else None,
                         record=policy != "random" or teaches, seed=seed, static=None, use_ncu=False,
                         replay_table=table_path, replay_kernel=k["id"])

    def done(r: dict[str, Any], progress: str) -> None:
        sp = r.get("best_speedup")
        why = str(r.get("error") or "").strip().splitlines()
        log(f"[replay] {r.get('kernel')} / {r.get('policy')}: {r.get('status')}"
            + (f", best {sp:.3g}x" if isinstance(sp, float) else ", not measured")
            + (f" ({why[0][:160]})" if why and r.get("status") != "ok" else "") + f" [{progress}]")

    def run(batch: list[tuple[dict[str, Any], int, SuiteTask]]) -> list[dict[str, Any]]:
        # the key covers the table's content (what a replay reads) and the memory exports it imports
        keyed = [(task_key(f"{k['id']}/{t.policy_name}/{seed}", {**t.to_json(), "table": table_digest},
                           t.memory_imports), t) for k, seed, t in batch]
        out = run_tasks("htam_core.bench.suite:run_suite_task", [(key, t.to_json()) for key, t in keyed], opts,
                        log=rlog, on_done=done)
        return [{**r, "kernel_id": k["id"], "family": k["family"], "policy": t.policy_name, "seed": seed}
                for (k, seed, t), r in zip(batch, out, strict=True)]

    seeds = {p: list(range(cfg.seeds)) if p in SEEDED else [0] for p in cfg.policies}
    needs_warm = any(POLICY_SPECS[p][2] for p in cfg.policies)
    bad = [p for p in cfg.memory_from if p not in ("htam-cold", "random")]
    if bad:
        raise ReplayError(f"--memory-from takes htam-cold and/or random, not {', '.join(bad)}")
    teachers = [p for p in REPLAY_POLICIES if p in cfg.memory_from] if needs_warm else []
    first = [p for p in REPLAY_POLICIES if p in teachers or p in cfg.policies and p == "htam-cold"]
    seeds.update({p: seeds.get(p) or (list(range(cfg.seeds)) if p in SEEDED else [0]) for p in first})
    results: list[dict[str, Any]] = []
    phase1 = [(k, s, task(k, p, s, [])) for p in first for k in kernels for s in seeds[p]]
    results += run(phase1)
    exports = [(k["id"], t.export_to) for k, _, t in phase1 if t.export_to and Path(t.export_to).is_file()]
    rest = [(k, s, task(k, p, s, exports)) for p in cfg.policies if p not in first for k in kernels
            for s in seeds[p]]
    results += run(rest)
    doc = summarize(table, kernels, [p for p in REPLAY_POLICIES if p in cfg.policies or p in first], results,
                    cfg.budget)
    doc["config"] = asdict(cfg)
    doc["kernels_left_out"] = missing_files
    doc["table"] = {"path": cfg.table, "measured": table.measured, "environment": table.header.get("environment"),
                    "config": table.header.get("config"), "lines_skipped": table.skipped}
    doc["wall_s"] = time.time() - t0
    return doc


def _curve(r: dict[str, Any], budget: int) -> list[float]:
    """Best speedup so far after each of ``budget`` trials (a run that stopped early keeps its last value)."""
    c = metrics.best_so_far([s.get("speedup_vs_start") for s in r.get("steps") or []])
    return (c + [c[-1] if c else 1.0] * budget)[:budget]


def _stats(rows: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    """The figures of one group of rows of one seed (see the module docstring).

    A kernel that never reaches 90 % within ``budget`` trials counts as ``budget + 1`` trials in the mean and
    in the median alike (a censored value: all that is known is "more than the budget"), so the two figures
    read the same way; ``median_censored`` says whether such a kernel is one the median is made of (the median
    is then a lower bound; over seeds, :func:`_over_seeds` makes it the share of seeds where it is);
    ``steps`` is every trial of the rows (``None`` when a row does not say), the base of ``not_in_table_steps``.
    """
    known = [r for r in rows if r["target"] is not None]
    t90 = [budget + 1 if r["trials_to_90"] is None else r["trials_to_90"] for r in known]
    geo = {str(b): metrics.geomean(r["curve"][b - 1] for r in known) for b in REPORT_AT if b <= budget}
    steps = [r.get("trials") for r in rows]
    mid = sorted(t90)[(len(t90) - 1) // 2:len(t90) // 2 + 1]  # the one or two values the median is made of
    return {"kernels": len(rows), "kernels_measured": len(known),
            "mean_trials_to_90": statistics.mean(t90) if t90 else None,
            "median_trials_to_90": statistics.median(t90) if t90 else None,
            "median_censored": any(t > budget for t in mid) if t90 else None,
            "reached_90": sum(1 for t in t90 if t <= budget), "geomean_at": geo,
            "not_in_table_steps": sum(r["not_in_table"] for r in rows),
            "steps": sum(steps) if all(isinstance(n, int) for n in steps) else None}


def _over_seeds(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean over seeds of each figure, with ``spread``: ``[min, max]`` over seeds (absent for one seed)."""
    def agg(vals: list[Any]) -> Any:
        xs = [v for v in vals if isinstance(v, (int, float)) and math.isfinite(v)]
        if len(xs) != len(vals) or not xs:
            return vals[0] if len(set(map(str, vals))) == 1 else None
        return statistics.mean(xs)

    out: dict[str, Any] = {}
    for key in per_seed[0]:
        vals = [s[key] for s in per_seed]
        if isinstance(vals[0], dict):
            out[key] = {k: agg([v[k] for v in vals]) for k in vals[0]}
        else:
            out[key] = agg(vals)
    if len(per_seed) > 1:
        out["seeds"] = len(per_seed)
        out["spread"] = {"mean_trials_to_90": _minmax([s["mean_trials_to_90"] for s in per_seed]),
                         "median_trials_to_90": _minmax([s["median_trials_to_90"] for s in per_seed]),
                         **{f"geomean_at_{b}": _minmax([s["geomean_at"].get(b) for s in per_seed])
                            for b in per_seed[0]["geomean_at"]}}
    return out


def _minmax(vals: list[Any]) -> list[float] | None:
    xs = [v for v in vals if isinstance(v, (int, float))]
    return [min(xs), max(xs)] if xs else None


def summarize(table: Table, kernels: list[dict[str, Any]], policies: list[str], results: list[dict[str, Any]],
              budget: int) -> dict[str, Any]:
    """Rows per (kernel, policy, seed) and aggregates per policy and per (family, policy), with the targets."""
    fam = {k["id"]: k["family"] for k in kernels}
    rows = []
    for r in results:
        target = table.best_speedup(r["kernel_id"]) if table.measured else None
        steps = r.get("steps") or []
        curve = _curve(r, budget) if table.measured else None
        rows.append({"kernel": r["kernel_id"], "family": fam.get(r["kernel_id"]), "policy": r["policy"],
                     "seed": r["seed"], "status": r.get("status"), "error": r.get("error"), "target": target,
                     "curve": curve, "trials": len(steps),
                     "trials_to_90": metrics.trials_to_fraction([s.get("speedup_vs_start") for s in steps], target)
                     if target is not None else None,
                     "not_in_table": sum(1 for s in steps if s.get("status") == NOT_IN_TABLE),
                     "strategies": [s.get("strategy") for s in steps]})
    families = sorted({k["family"] for k in kernels})

    def group(pred: Callable[[dict[str, Any]], bool], policy: str) -> dict[str, Any]:
        return _group([r for r in rows if r["policy"] == policy and pred(r)], budget)

    agg = {p: group(lambda r: True, p) for p in policies}
    per_family = {f: {p: group(lambda r, f=f: r["family"] == f, p) for p in policies} for f in families}
    return {"measured": table.measured, "budget": budget, "policies": policies, "families": families,
            "kernels": kernels, "rows": rows, "aggregates": agg, "per_family": per_family,
            "targets": targets(agg), "paired": paired(rows, policies, budget), "results": results}


def per_kernel_trials(rows: list[dict[str, Any]], budget: int) -> dict[str, float]:
    """Kernel id -> trials-to-90 % of the measured ``rows`` (of one policy): ``budget + 1`` where 90 % was not
    reached, the mean over seeds for a seeded policy. Rows without a target (not measured) are left out."""
    by: dict[str, list[int]] = {}
    for r in rows:
        if r["target"] is not None:
            by.setdefault(r["kernel"], []).append(budget + 1 if r["trials_to_90"] is None else r["trials_to_90"])
    return {k: statistics.mean(v) for k, v in by.items()}


def _group(rs: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    """The figures of one policy's rows ``rs`` (every seed): :func:`_over_seeds` of :func:`_stats` per seed, plus
    ``mean_trials_to_90_ci``, the 95 % percentile bootstrap interval over kernels
    (:func:`htam_core.bench.metrics.bootstrap_mean_ci`) of the per-kernel figures of :func:`per_kernel_trials`."""
    if not rs:
        return {}
    seeds = sorted({r["seed"] for r in rs})
    out = _over_seeds([_stats([r for r in rs if r["seed"] == s], budget) for s in seeds])
    ci = metrics.bootstrap_mean_ci(list(per_kernel_trials(rs, budget).values()))
    out["mean_trials_to_90_ci"] = list(ci) if ci else None
    return out


def paired(rows: list[dict[str, Any]], policies: list[str], budget: int) -> list[dict[str, Any]]:
    """For each pair of :data:`REPLAY_PAIRS` whose policies were both replayed, the kernel-by-kernel comparison
    of their trials-to-90 % (:func:`htam_core.bench.metrics.paired_counts`: better/worse/tied counts for the
    first policy, the mean difference in trials with its bootstrap interval, the sign test), over the measured
    kernels both ran. Each entry: ``first``, ``second``, ``isolates`` and those figures."""
    per = {p: per_kernel_trials([r for r in rows if r["policy"] == p], budget) for p in policies}
    return [{"first": a, "second": b, "isolates": what, **metrics.paired_counts(per[a], per[b])}
            for a, b, what in REPLAY_PAIRS if a in per and b in per]


def group_aggregates(doc: dict[str, Any], families: list[str]) -> dict[str, dict[str, Any]]:
    """Per policy, the figures of :func:`summarize` over the kernels of several ``families`` together (e.g. the
    families a change to the method was tuned on, or the held-out ones), from a results document's rows.

    Raises:
        ReplayError: a family the document does not hold.
    """
    missing = [f for f in families if f not in doc["families"]]
    if missing:
        raise ReplayError(f"the replay has no family {', '.join(missing)} (it has {', '.join(doc['families'])})")
    return {p: _group([r for r in doc["rows"] if r["policy"] == p and r["family"] in families], doc["budget"])
            for p in doc["policies"]}


def policy_table(aggs: dict[str, dict[str, Any]], budget: int) -> list[str]:
    """The Markdown table of :func:`replay_markdown` (header and one line per policy) for ``{policy: figures}``."""
    head_cells = " | ".join(f"geomean @{b}" for b in REPORT_AT if b <= budget)
    return [f"| policy | kernels measured | mean trials-to-90% | median trials-to-90% | 95% CI of the mean | "
            f"{head_cells} | steps not in table |", "|" + "---|" * (6 + len([b for b in REPORT_AT if b <= budget])),
            *(_line(p, a, budget) for p, a in aggs.items())]


def targets(agg: dict[str, Any]) -> list[dict[str, Any]]:
    """The sample-efficiency targets, each ``{"target", "value", "met"}`` (``met`` ``None`` when not measured)."""
    def g(p: str, key: str, b: str | None = None) -> float | None:
        a = agg.get(p) or {}
        v = (a.get("geomean_at") or {}).get(b) if b else a.get(key)
        return v if isinstance(v, (int, float)) else None

    out = []
    w, rnd, flat = g("htam", "mean_trials_to_90"), g("random", "mean_trials_to_90"), g("flat", "mean_trials_to_90")
    for name, lhs, rhs, factor in (("warm mean trials-to-90 <= 0.5x random", w, rnd, 0.5),
                                   ("warm mean trials-to-90 <= 0.8x flat", w, flat, 0.8)):
        out.append({"target": name, "value": None if lhs is None or rhs is None else
                    f"{lhs:.2f} vs {factor}x{rhs:.2f} = {factor * rhs:.2f}",
                    "ratio": None if lhs is None or not rhs else lhs / rhs,
                    "met": None if lhs is None or rhs is None else lhs <= factor * rhs})
    w2, c2 = g("htam", "", "2"), g("htam-cold", "", "2")
    out.append({"target": "warm beats cold at budget 2", "value": None if w2 is None or c2 is None else
                f"{w2:.3f}x vs {c2:.3f}x", "met": None if w2 is None or c2 is None else w2 > c2})
    w4, r8 = g("htam", "", "4"), g("random", "", "8")
    out.append({"target": "warm geomean at budget 4 >= random at budget 8", "value": None if w4 is None or r8 is None
                else f"{w4:.3f}x vs {r8:.3f}x", "met": None if w4 is None or r8 is None else w4 >= r8})
    return out


# -- report --------------------------------------------------------------------------------------------------
def _f(v: Any, fmt: str = ".2f", unit: str = "") -> str:
    if v is None:
        return "not measured"
    if isinstance(v, float) and math.isinf(v):
        return "never"
    return f"{v:{fmt}}{unit}"


def _trials(v: Any, budget: int, lower_bound: bool, fmt: str) -> str:
    """A trials-to-90 % figure: "not measured" when missing, "never (within budget N)" when it is the censored
    value ``budget + 1`` itself (no kernel, or for a median most kernels, reached 90 % in ``budget`` trials),
    ``≥ x`` when a censored kernel entered it (the true figure is at least ``x``), else ``x``."""
    if not isinstance(v, (int, float)):
        return "not measured"
    if v >= budget + 1:
        return f"never (within budget {budget})"
    return f"{'≥ ' if lower_bound else ''}{v:{fmt}}"


def _spread_end(v: float, budget: int, fmt: str) -> str:
    return "never" if v >= budget + 1 else f"{v:{fmt}}"


def _count(v: Any) -> str:
    """A count, or a mean of counts over seeds: a whole number as such, else two decimals."""
    if not isinstance(v, (int, float)):
        return "not measured"
    return str(round(v)) if float(v).is_integer() else f"{v:.2f}"


def _line(p: str, a: dict[str, Any], budget: int) -> str:
    """One row of :func:`policy_table`: policy ``p``'s figures ``a`` (from :func:`summarize`) at ``budget``."""
    sp = a.get("spread") or {}
    # a censored kernel (never reached 90 %) entered the mean when fewer kernels reached it than were measured,
    # and the median when it is one of the median's middle values in some seed (documents written before
    # ``median_censored`` existed: when a seed's median is above the budget, as finite trials are at most it)
    mean_low = (a.get("reached_90") or 0) < (a.get("kernels_measured") or 0)
    med = a.get("median_trials_to_90")
    med_low = a.get("median_censored")
    if med_low is None:
        med_low = max([*(sp.get("median_trials_to_90") or []), *([med] if isinstance(med, (int, float)) else [])],
                      default=0) > budget
    cells = [_trials(a.get("mean_trials_to_90"), budget, mean_low, ".2f"), _trials(med, budget, bool(med_low), ".1f")]
    for i, (key, fmt) in enumerate((("mean_trials_to_90", ".2f"), ("median_trials_to_90", ".1f"))):
        if sp.get(key):
            cells[i] += f" [{_spread_end(sp[key][0], budget, fmt)}–{_spread_end(sp[key][1], budget, fmt)}]"
    ci = a.get("mean_trials_to_90_ci")
    cells.append(f"{ci[0]:.2f}–{ci[1]:.2f}" if ci else "not measured" if "mean_trials_to_90_ci" in a or not a
                 else "not computed")  # "not computed": a document written before the interval existed
    for b in REPORT_AT:
        if b > budget:
            continue
        c = _f((a.get("geomean_at") or {}).get(str(b)), ".3f", "×")
        s = sp.get(f"geomean_at_{b}")
        cells.append(c + (f" [{s[0]:.3f}–{s[1]:.3f}]" if s else ""))
    nit, steps = a.get("not_in_table_steps", 0), a.get("steps")
    cells.append(_count(nit) + (f" ({100 * nit / steps:.1f}%)" if isinstance(nit, (int, float))
                                and isinstance(steps, (int, float)) and steps > 0 else ""))
    return f"| {p} | {a.get('kernels_measured', 0)}/{a.get('kernels', 0)} | " + " | ".join(cells) + " |"


def _rel(path: str | None) -> str:
    """``path`` relative to the current folder or to the repository when it lies under one of them (the
    table's kernel paths are relative to the folder it was built in), else as given."""
    if not path:
        return str(path)
    p = Path(path)
    if p.is_absolute():
        for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
            try:
                return str(p.resolve().relative_to(base.resolve()))
            except ValueError:
                continue
    return str(p)


def _build_settings(config: dict[str, Any] | None) -> str:
    """The table build's settings (the header's ``config``, from :class:`htam_core.bench.space.SpaceConfig`)
    in words: ``key = value`` for those not at their default, paths relative where possible. ``out`` (where
    the build wrote the table, often a path on the machine that built it) is left out: the report names the
    table it read."""
    import dataclasses

    from htam_core.bench.space import SpaceConfig

    defaults = {f.name: f.default for f in dataclasses.fields(SpaceConfig) if f.default is not dataclasses.MISSING}

    def word(k: str, v: Any) -> str:
        if isinstance(v, bool):
            v = "yes" if v else "no"
        elif v is None:
            v = "none"
        elif k in ("work", "fill"):
            v = _rel(str(v))
        return f"{k} = {v}"

    shown = {k: v for k, v in (config or {}).items() if k not in ("out", "kernels")}
    if not shown:
        return "build settings not recorded"
    changed = [word(k, v) for k, v in shown.items() if k not in defaults or v != defaults[k]]
    if not changed:
        return "built with `htam bench space`'s default settings (" + ", ".join(
            word(k, v) for k, v in shown.items() if v is not None) + ")"
    return "built with " + ", ".join(changed) + " (other settings at their defaults)"


def _warm_memory_line(doc: dict[str, Any]) -> str:
    """The header line on the warm memory, saying what :func:`run_replay` did: the policies of ``memory_from``
    replay the *replayed* kernels (those chosen with ``--kernels`` whose files were found, else every kernel of
    the table found here), and each warm policy on kernel k imports their records of the other replayed
    kernels: those of other families (``warm_leave_out = "family"``; a document written before the setting
    existed was ``"kernel"``) or every kernel but k."""
    cfg = doc.get("config") or {}
    warm = [p for p in doc["policies"] if POLICY_SPECS.get(p, ("", None, False))[2]]
    if not warm:
        return "- Warm memory: none of the replayed policies starts from one."
    teachers = [p for p in REPLAY_POLICIES if p in (cfg.get("memory_from") or [])]
    n = len(doc["kernels"])
    who = (f"the records of {', '.join(teachers) or 'no policy'}{' (every seed)' if 'random' in teachers else ''}")
    if cfg.get("warm_leave_out", "kernel") == "family":
        sizes = {f: sum(1 for k in doc["kernels"] if k["family"] == f) for f in doc["families"]}
        line = (f"- Warm memory ({', '.join(warm)}): leave-one-family-out over the {n} replayed "
                f"kernel{'s' * (n != 1)}: on each kernel, {who} on the replayed kernels of the other families, "
                "never the kernel's own family (--warm-leave-out family).")
        empty = [f for f, c in sizes.items() if c == n]
    else:
        line = (f"- Warm memory ({', '.join(warm)}): leave-one-out over the {n} replayed kernel{'s' * (n != 1)}: "
                f"on each kernel, {who} on the other {n - 1} replayed "
                f"kernel{'s' * (n != 2)}, never the kernel's own (--warm-leave-out kernel: the memory holds "
                "the kernel's near relatives of its family).")
        empty = []
    if cfg.get("kernels"):
        line += (" Only the kernels chosen with --kernels were replayed, so the memory was built from them "
                 "alone; the table's other kernels taught nothing.")
    if doc.get("kernels_left_out"):
        line += " The kernels left out (files not found) taught nothing."
    if n == 1:
        line += f" With one kernel replayed that memory was empty: {', '.join(warm)} started as cold as htam-cold."
    elif empty:
        line += (f" Every replayed kernel is of one family ({empty[0]}), so that memory was empty: "
                 f"{', '.join(warm)} started as cold as htam-cold.")
    return line


def replay_markdown(doc: dict[str, Any], plot_name: str | None = None) -> str:
    """The replay's results as Markdown: the header (table, build settings, ground truth, warm memory), the
    targets, the per-policy table, the per-family tables.

    Args:
        doc: the results document of :func:`run_replay` (``config``, ``table``, ``kernels_left_out`` set).
        plot_name: the plot's file name beside the Markdown, or ``None`` for no plot.

    Raises:
        KeyError: ``doc`` is not a results document of :func:`run_replay`.
    """
    budget = doc["budget"]
    tab = doc["table"]
    env = tab.get("environment") or {}
    hdr = "\n".join(policy_table({}, budget))
    if not tab["measured"]:
        where = "static: nothing measured"
    elif tab.get("synthetic") or not env.get("gpu_count"):
        where = "synthetic times: its header records no GPU"
    else:
        count, date = env["gpu_count"], env.get("date")
        where = (f"measured on {env.get('gpu') or 'a GPU'}{f' x{count}' if count > 1 else ''}"
                 f"{f', {date}' if date else ''}")
    lines = ["# Policy replay over a measured-space table", "",
             f"- Table: `{_rel(tab['path'])}` ({where}); {_build_settings(tab.get('config'))}.",
             f"- {len(doc['kernels'])} kernels in {len(doc['families'])} families; budget {budget}; seeded "
             f"policies ({', '.join(SEEDED)}) over {doc['config']['seeds']} seeds: mean, [min–max] over seeds."
             + (f" Left out, their files were not found: {len(doc['kernels_left_out'])} "
                f"({', '.join(doc['kernels_left_out'])})." if doc.get("kernels_left_out") else ""),
             "- Ground truth: the table's exhaustive best per kernel. A kernel that never reaches 90 % of it "
             f"within the budget counts as {budget + 1} trials (more than the budget) in the mean and in the "
             f"median alike: a figure such a kernel entered is a lower bound, written ≥ x; \"never (within "
             f"budget {budget})\" is a figure of {budget + 1} (no kernel reached 90 %, or for the median most "
             "did not).",
             _warm_memory_line(doc),
             "- Steps not in table: candidates a policy asked for that the table does not hold (they count as "
             "not measured), with their share of all the policy's steps.",
             f"- 95% CI of the mean: percentile bootstrap over the measured kernels ({metrics.BOOTSTRAP_RESAMPLES:,} "
             f"resamples, numpy seed {metrics.BOOTSTRAP_SEED}) of the mean trials-to-90 %, a kernel's figure being "
             "its mean over seeds for a seeded policy. It says how much the mean would move on another draw of "
             "kernels like these; the table holds one measurement per candidate, so timing noise is not in it.",
             ""]
    if not doc["measured"]:
        lines += ["Static table: no time was measured, so every figure is not measured.", ""]
    lines += ["## Targets", "", "| target | value | met |", "|---|---|---|"]
    for t in doc["targets"]:
        lines.append(f"| {t['target']} | {t['value'] or 'not measured'} | "
                     f"{'not measured' if t['met'] is None else 'yes' if t['met'] else 'NO'} |")
    lines += ["", "## Per policy", "", hdr]
    lines += [_line(p, doc["aggregates"].get(p) or {}, budget) for p in doc["policies"]]
    lines += paired_markdown(doc.get("paired"))
    if plot_name:
        lines += ["", f"![speedup vs trials]({plot_name})"]
    for f in doc["families"]:
        lines += ["", f"## Family {f}", "", hdr]
        lines += [_line(p, doc["per_family"][f].get(p) or {}, budget) for p in doc["policies"]]
    return "\n".join(lines) + "\n"


def paired_markdown(pairs: list[dict[str, Any]] | None) -> list[str]:
    """The report's section on the pairs of policies compared kernel by kernel (:func:`paired`), as Markdown
    lines (none for ``None``, a document written before the comparison existed)."""
    if pairs is None:
        return []
    out = ["", "## Paired, kernel by kernel", "",
           "Trials-to-90 % of the first policy against the second on each measured kernel both ran (a seeded "
           "policy's figure is its mean over seeds): better = the first needs fewer trials. The mean difference "
           "is first minus second (negative: the first is better), with its 95 % percentile bootstrap interval "
           "over kernels; the sign test is two-sided and exact, over the kernels that differ.", ""]
    if not any(p["kernels"] for p in pairs):
        return [*out, "Nothing measured: no pair compared."]
    out += ["| first | second | what it isolates | kernels | better | worse | tied | mean difference [95% CI] | "
            "sign test p |", "|---|---|---|---|---|---|---|---|---|"]
    for p in pairs:
        d, ci = p["mean_difference"], p["mean_difference_ci"]
        diff = "not measured" if d is None else f"{d:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")
        out.append(f"| {p['first']} | {p['second']} | {p['isolates']} | {p['kernels']} | {p['better']} | "
                   f"{p['worse']} | {p['tied']} | {diff} | {p['sign_test_p']:.3g} |")
    return out


def replay_plot(doc: dict[str, Any], path: str | Path) -> Path | None:
    """Geomean best-so-far speedup against trials, one line per policy (seeded ones: mean over seeds with a
    band from the lowest to the highest seed). ``None`` (no file) for a static table."""
    if not doc["measured"]:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budget = doc["budget"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    xs = list(range(budget + 1))
    for p in doc["policies"]:
        rs = [r for r in doc["rows"] if r["policy"] == p and r["curve"] is not None and r["target"] is not None]
        seeds = sorted({r["seed"] for r in rs})
        per_seed = [[metrics.geomean(([1.0, *r["curve"]])[i] for r in rs if r["seed"] == s) or 1.0 for i in xs]
                    for s in seeds]
        if not per_seed:
            continue
        ys = [statistics.mean(c[i] for c in per_seed) for i in xs]
        (ln,) = ax.plot(xs, ys, marker="o", ms=3, label=p + (f" ({len(seeds)} seeds)" if len(seeds) > 1 else ""))
        if len(seeds) > 1:
            ax.fill_between(xs, [min(c[i] for c in per_seed) for i in xs], [max(c[i] for c in per_seed) for i in xs],
                            color=ln.get_color(), alpha=0.15)
    from htam_core.bench.report import save_trials_plot

    return save_trials_plot(fig, ax, path, "best speedup so far over the start (geomean)",
                            "Policy replay: speedup against trials")
