"""Results files of the benchmarks: Markdown tables, JSON, and the speedup-against-trials plot.

Anything not measured is written as "not measured"; nothing is filled in. Targets are printed next
to the figures so that the table can be read against them.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from htam_core.bench.metrics import FAST_P, geomean

NM = "not measured"
#: The suite's targets.
TARGETS = {"geomean": 2.5, "roofline_memory": 0.7, "trials_ratio": 0.5, "repeatability_pct": 2.0}


def _x(v: float | None, digits: int = 3, suffix: str = "") -> str:
    if v is None:
        return NM
    if isinstance(v, float) and math.isinf(v):
        return "not reached"
    return f"{v:.{digits}g}{suffix}"


def _pct(v: float | None) -> str:
    return NM if v is None else f"{100 * v:.1f}%"


#: Longest status text in a table cell; longer text is shortened at a word boundary with an ellipsis.
STATUS_MAX_CHARS = 200


def cell_text(text: str, limit: int = STATUS_MAX_CHARS) -> str:
    """``text`` made safe for one Markdown table cell: pipes escaped, newlines folded, and, when longer than
    ``limit`` characters, cut at the last word boundary before it with an ellipsis (never mid-word)."""
    t = " ".join(str(text).split())
    if len(t) > limit:
        cut = t[:limit].rsplit(" ", 1)[0] if " " in t[:limit] else t[:limit]
        t = cut.rstrip(" ,;:") + " …"
    return t.replace("|", "\\|")


def _status(r: dict[str, Any]) -> str:
    return cell_text(r["status"] + (f": {r['error']}" if r.get("error") else ""))


def _per_set(r: dict[str, Any]) -> str:
    """The per-set column: ``start -> best`` ms for every input set, or "-" with one set or none measured."""
    a, b = r.get("start_per_set_ms") or [], r.get("best_per_set_ms") or []
    if len(a) < 2 or len(a) != len(b):
        return "-"
    return "; ".join(f"{_x(x, 4)} -> {_x(y, 4)}" for x, y in zip(a, b, strict=True))


def environment_lines(env: dict[str, Any]) -> list[str]:
    """Markdown bullet lines for the device and software versions."""
    dev = (f"- Device: {env.get('gpu')} x{env.get('gpu_count')}, driver {env.get('driver') or NM}"
           if env.get("gpu_count") else "- Device: none (static mode)")
    return [f"- Date: {env.get('date')}", dev,
            f"- Software: Python {env.get('python')}, torch {env.get('torch')}, triton {env.get('triton')}, "
            f"cupy {env.get('cupy') or 'not installed'}, htam {env.get('htam')}"]


def suite_markdown(doc: dict[str, Any], plot_name: str | None = None) -> str:
    """The suite's results as Markdown: aggregates per policy, then per kernel and policy."""
    env = doc.get("environment", {})
    cfg = doc.get("config", {})
    agg = doc["aggregates"]
    measured = any(a["kernels_measured"] for a in agg.values())
    timed = (f"{cfg.get('trials')} timed trials per candidate" if measured
             else "nothing was timed (static mode)")
    lines = ["## Naive-kernel suite", "", *environment_lines(env),
             f"- Budget: {cfg.get('budget')} candidates per kernel and policy (exhaustive: "
             f"{cfg.get('exhaustive_budget')}), {timed}, engine rules, seed {cfg.get('seed')}; wall time "
             f"{doc.get('wall_s', 0):.0f} s",
             "- `htam` and the ablations start from a memory built on the *other* kernels only (leave one out); "
             "`htam-cold` starts from an empty memory (it is the warm-up pass).",
             *([f"- `exhaustive` (knowledge-base order, budget {cfg.get('exhaustive_budget')}): the reference "
                "for trials-to-90%. It is not the best reachable: another policy can beat it."]
               if "exhaustive" in doc.get("policies", []) else []),
             *_reuse_lines(doc, measured), *_resumed_lines(doc), ""]
    if not measured:
        lines += ["**Nothing was measured: no GPU was used (static mode).** Every time, speedup and roofline "
                  "figure below is \"not measured\"; the runs only show that each kernel and policy runs end to "
                  "end (candidates compiled, Triton verified under the interpreter).", ""]
    lines += ["### Aggregates", "",
              f"Targets: HTAM geomean >= {TARGETS['geomean']}x over the naive start; >= "
              f"{int(TARGETS['roofline_memory'] * 100)}% of roofline on memory-bound kernels; HTAM's trials-to-90% "
              "at most half of random's.", "",
              "| policy | kernels measured | geomean speedup | median trials to 90% of exhaustive best | "
              "median roofline (memory-bound) | memory-bound >= 70% |", "|---|---|---|---|---|---|"]
    for p, a in agg.items():
        m70 = a.get("memory_bound_at_70pct")
        lines.append(f"| {p} | {a['kernels_measured']}/{a['kernels']} | {_x(a['geomean_speedup'], 3, 'x')} | "
                     f"{_x(a['median_trials_to_90'])} | {_pct(a['median_roofline_memory_bound'])} | "
                     f"{f'{m70[0]}/{m70[1]}' if m70 else NM} |")
    rep = doc.get("repeatability", {})
    lines += ["", f"Repeatability: the start kernel is timed afresh by every policy's run. Two separate runs of the "
              f"same kernel differ by {_x(rep.get('median_pair_pct'), 3, '%')} (median over kernels of the median "
              f"over pairs of runs; target <= {TARGETS['repeatability_pct']}%); the largest spread among all runs "
              f"of a kernel is {_x(rep.get('median_pct'), 3, '%')} (median over kernels).", ""]
    nfw = doc.get("no_fake_wins") or {}
    if nfw:
        lines += [f"**{nfw['line']}**: a kernel counts when, in every measured run, the best's speedup was "
                  "reproduced (at most 5% below) and above its spread by a re-timing in a fresh process (or no speedup "
                  "was claimed), and every kept step's gain exceeded its measured spread. A speedup that was not "
                  "reproduced counts as 1.0x in the speedup column (the search's figure is in the JSON's "
                  "`search_speedup`).", ""]
    verdict = _verdicts(agg)
    if verdict:
        lines += ["### Against the targets", "", *verdict, ""]
    lines += ["### Per kernel", "",
              "speedup: geomean over the input sets; ms: first input set (median); \"all sets ms\" gives every "
              "set's start -> best median.", "",
              "| kernel | lang | bound | policy | start ms | best ms | speedup | all sets ms (start -> best) | "
              "roofline (start -> best) | trials to 90% | fresh re-time | kept > spread | status |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        t90 = r["trials_to_90"]
        t90s = NM if not r["target_known"] else ("not reached" if t90 is None else str(t90))
        lines.append(f"| {r['kernel']} | {r['language']} | {r['bound'] or NM} | {r['policy']} | "
                     f"{_x(r['start_ms'], 4)} | {_x(r['best_ms'], 4)} | {_x(r['speedup'], 3, 'x')} | "
                     f"{_per_set(r)} | {_pct(r['start_roofline_fraction'])} -> {_pct(r['roofline_fraction'])} | "
                     f"{t90s} | {_fresh(r)} | {_kept(r)} | {_status(r)} |")
    if plot_name:
        lines += ["", f"![best speedup so far against trials, geomean over kernels, per policy]({plot_name})"]
    return "\n".join(lines) + "\n"


def _fresh(r: dict[str, Any]) -> str:
    """The fresh re-time cell: ``reproduced (1.97x, ratio 0.985)``, ``not reproduced (...)`` or not measured."""
    status = r.get("reproduction") or NM
    if r.get("fresh_speedup") is None:
        return status
    ratio = f", ratio {r['fresh_ratio']:.3f}" if r.get("fresh_ratio") is not None else ""
    return f"{status} ({r['fresh_speedup']:.3f}x{ratio})"


def _kept(r: dict[str, Any]) -> str:
    """The kept-steps cell: ``yes``, ``no`` or not measured."""
    k = r.get("kept_beyond_spread")
    return NM if k is None else ("yes" if k else "no")


def _reuse_lines(doc: dict[str, Any], measured: bool = True) -> list[str]:
    """The header line on the run's measurement cache (:mod:`htam_core.optimize.measure_cache`); in static
    mode (``measured`` false) it only says that nothing was timed, so nothing was measured or reused."""
    m = doc.get("measurements") or {}
    cfg = doc.get("config", {})
    if not m:
        return []
    off = cfg.get("reuse_measurements") is False
    if not measured:
        return [f"- Measurement reuse {'off (`--no-reuse`)' if off else 'on'}; nothing was timed (static mode), "
                "so no measurement was taken or reused."]
    if off:
        return ["- Every candidate was measured afresh (`--no-reuse`); every start kernel is timed afresh."]
    return ["- A candidate whose code is byte-identical to one measured earlier in this run (by any policy) "
            f"reuses that measurement ({m.get('reused', 0)} of {m.get('candidate_evaluations', 0)} candidate "
            "evaluations); every start kernel is timed afresh."]


def _resumed_lines(doc: dict[str, Any]) -> list[str]:
    """The header line saying how many tasks were resumed from an earlier run's results (the document's
    ``resumed`` entry, :func:`htam_core.bench.executors.resumed_summary`); none for a document without it."""
    r = doc.get("resumed")
    return [f"- {r['line']}"] if r and r.get("line") else []


def _verdicts(agg: dict[str, Any]) -> list[str]:
    out = []
    h = agg.get("htam")
    if h and h.get("geomean_speedup") is not None:
        g = h["geomean_speedup"]
        out.append(f"- HTAM geomean {g:.3g}x: {'met' if g >= TARGETS['geomean'] else 'missed'} "
                   f"(target {TARGETS['geomean']}x).")
    if h and h.get("memory_bound_at_70pct"):
        a, n = h["memory_bound_at_70pct"]
        out.append(f"- Memory-bound kernels at >= 70% of roofline under HTAM: {a} of {n}.")
    r = agg.get("random")
    if h and r and h.get("median_trials_to_90") is not None and r.get("median_trials_to_90") is not None:
        th, tr = h["median_trials_to_90"], r["median_trials_to_90"]
        ok = (th <= TARGETS["trials_ratio"] * tr) if math.isfinite(tr) else math.isfinite(th)
        out.append(f"- Median trials to 90%: HTAM {_x(th)}, random {_x(tr)}: "
                   f"{'met' if ok else 'missed'} (target: HTAM at most half of random's).")
    return out


def suite_plot(doc: dict[str, Any], path: str | Path) -> Path | None:
    """Plot the geomean (over measured kernels) of the best speedup so far against trials, one line per policy.

    Returns the PNG path, or ``None`` when nothing was measured (no plot is drawn from unmeasured data).
    """
    curves: dict[str, list[list[float]]] = {}
    for r in doc["rows"]:
        if r["measured"] and r["curve"] is not None:
            curves.setdefault(r["policy"], []).append([1.0, *r["curve"]])
    if not curves:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for p, cs in sorted(curves.items()):
        n = max(len(c) for c in cs)
        padded = [c + [c[-1]] * (n - len(c)) for c in cs]
        ys = [geomean(col[i] for col in padded) or 1.0 for i in range(n)]
        ax.plot(range(n), ys, marker="o", ms=3, label=f"{p} ({len(cs)} kernels)")
    return save_trials_plot(fig, ax, path, "best speedup so far over the naive start (geomean)",
                            "Naive-kernel suite: speedup against trials")


def save_trials_plot(fig: Any, ax: Any, path: str | Path, ylabel: str, title: str) -> Path:
    """Label a speedup-against-trials plot (x: trials), add its grid and legend, write it as a PNG (120 dpi)
    and close the figure; returns the path."""
    import matplotlib.pyplot as plt

    ax.set_xlabel("candidates evaluated (trials)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def kernelbench_markdown(doc: dict[str, Any]) -> str:
    """KernelBench results as Markdown: Correct, fast_p and geomean per level, then per problem."""
    env = doc.get("environment", {})
    cfg = doc.get("config", {})
    steps = cfg.get("steps")
    head = f"- Engine {cfg.get('engine')}, {steps} HTAM step{'' if steps == 1 else 's'} per problem; "
    if doc.get("measured"):
        head += ("eager reference timed here with KernelBench's timing (CUDA events, 3 warm-ups, L2 flushed "
                 f"before each trial, {cfg.get('timing_trials')} trials, mean); correctness over 5 trials seeded "
                 "from 42, atol = rtol = 1e-4 (fp32).")
    else:
        head += ("static mode: nothing was timed (neither the eager reference nor the solutions) and no final "
                 "verification ran; " + ("loop candidates were only checked under the Triton interpreter at the "
                                         "overridden sizes." if doc.get("sizes_overridden") else
                                         "without --size-overrides no problem runs on the CPU."))
    lines = ["## KernelBench runner", "", *environment_lines(env), head, *_resumed_lines(doc), ""]
    if doc.get("sizes_overridden"):
        lines += ["**Problem sizes were overridden (smoke test): these are not KernelBench results.**", ""]
    if not doc.get("measured"):
        lines += ["**Nothing was measured: no GPU was used (static mode).** Correct, fast_p and speedups are "
                  "\"not measured\".", ""]
    head = "| level | problems | Correct | " + " | ".join(f"fast_{p:g}" for p in FAST_P) + " | geomean (correct) |"
    lines += ["### Summary", "", head, "|" + "---|" * (4 + len(FAST_P))]
    for lv, s in sorted(doc["summary"].items()):
        fp = " | ".join(_pct(s["fast_p"].get(f"{p:g}")) for p in FAST_P)
        lines.append(f"| {lv} | {s['problems']} | {_pct(s['correct'])} | {fp} | {_x(s['geomean_speedup'], 3, 'x')} |")
    anchors = sorted({a for s in doc["summary"].values() for a in s.get("anchors", {})})
    if anchors:
        lines += _anchor_lines(doc, anchors)
    if any(lv.endswith("-heldout") for lv in doc["summary"]):
        lines += ["", "Rows `levelN-heldout` are start solutions kept out of any tuning (listed in "
                  "`bench/kernelbench_solutions/levelN/held_out.json`); they are not pooled into `levelN`."]
    lines += ["", "### Per problem", "",
              "| level | problem | start | correct | eager ms | ours ms | speedup over eager | start speedup | "
              + "".join(f"{a} |" for a in anchors) + " status |",
              "|---|---|---|---|---|---|---|---|" + "---|" * len(anchors) + "---|"]
    for r in doc["problems"]:
        corr = "not verified" if r["correct"] is None else ("yes" if r["correct"] else "no")
        lv = f"{r['level']}{' (held out)' if r.get('held_out') else ''}"
        cells = "".join(f" {_anchor_cell((r.get('anchors') or {}).get(a))} |" for a in anchors)
        lines.append(f"| {lv} | {r['name']} | {r.get('start') or '-'} | {corr} | {_x(r['eager_ms'], 4)} | "
                     f"{_x(r['new_ms'], 4)} | {_x(r['speedup'], 3, 'x')} | {_x(r.get('start_speedup'), 3, 'x')} |"
                     f"{cells} {_status(r)} |")
    return "\n".join(lines) + "\n"


def _anchor_cell(a: dict[str, Any] | None) -> str:
    if not a:
        return "not measured"
    if a.get("speedup") is not None and a.get("correct"):
        return f"{a['ms']:.4f} ms, {a['speedup']:.3g}x"
    if a.get("correct") is False:
        return f"incorrect (max abs err {a.get('max_abs_err')})"
    return cell_text(a.get("error") or a.get("status") or "not measured", 60)


def _anchor_lines(doc: dict[str, Any], anchors: list[str]) -> list[str]:
    """HTAM beside torch.compile: fast_1 and geomean over eager for each system, per level."""
    lines = ["", "### Beside torch.compile (same problems, same timer, same run)", "",
             "| level | system | measured | Correct | fast_1 | geomean over eager |", "|---|---|---|---|---|---|"]
    for lv, s in sorted(doc["summary"].items()):
        n = s["problems"]
        lines.append(f"| {lv} | eager PyTorch | {n if doc.get('measured') else 0} | - | "
                     f"{_pct(0.0) if doc.get('measured') else _pct(None)} | "
                     f"{_x(1.0 if doc.get('measured') else None, 3, 'x')} |")
        lines.append(f"| {lv} | HTAM | {n} | {_pct(s['correct'])} | {_pct(s['fast_p'].get('1'))} | "
                     f"{_x(s['geomean_speedup'], 3, 'x')} |")
        for a in anchors:
            a_s = s.get("anchors", {}).get(a) or {}
            lines.append(f"| {lv} | torch.compile {a.removeprefix('compile-')} | {a_s.get('measured', 0)} | "
                         f"{_pct(a_s.get('correct'))} | {_pct(a_s.get('fast_1'))} | "
                         f"{_x(a_s.get('geomean_speedup'), 3, 'x')} |")
    lines += ["", "fast_1 counts a problem when its result is correct and faster than eager; an anchor that "
              "was not measured (compile timed out, failed) counts as not fast. Anchors are timed with the "
              "same KernelBench timer, in a worker of their own, over the problem's eager time."]
    return lines


def overwrite_line(path: str | Path) -> str | None:
    """The console line saying that writing the report ``path`` (a results JSON) replaces an earlier one:
    ``overwrote <path>`` (with the Markdown of the same name beside it when there is one, which the bench
    commands rewrite right after the JSON), or ``None`` when nothing is there yet."""
    p = Path(path)
    if not p.exists():
        return None
    md = p.with_suffix(".md")
    return f"overwrote {p}" + (f" and {md.name}" if md.exists() else "")


def write_json(doc: dict[str, Any], path: str | Path, *, log: Callable[[str], None] | None = None) -> Path:
    """Write ``doc`` as indented JSON (infinities as the string "inf"), creating its folder.

    Args:
        doc: the results document; path: the file to write (replaced when it exists).
        log: where the one line of :func:`overwrite_line` goes when an earlier report is replaced (default:
            standard error).

    Raises:
        OSError: the file or its folder cannot be written.
    """
    def fix(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return "inf" if v > 0 else "-inf"
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    note = overwrite_line(p)
    p.write_text(json.dumps(fix(doc), indent=1, default=str) + "\n", encoding="utf-8")
    if note:
        (log or (lambda m: print(m, file=sys.stderr, flush=True)))(note)
    return p
