"""The optimization report: ``report.json``, ``report.md``, ``speedup.png`` and ``best.<ext>``.

Every number comes from the evaluation records; a time or speedup that was not measured on a GPU is
written as "not measured", never estimated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from htam_core.measure.stats import headline_geomean
from htam_core.memory.records import ENDPOINT_FAULT
from htam_core.optimize.task import OptimizeResult, OptimizeTask, StepRecord

if TYPE_CHECKING:
    from htam_core.optimize.evaluate import Evaluation


def geomean_ratio(parent: list[float], child: list[float]) -> float | None:
    """Geometric mean over input sets of ``parent_ms / child_ms`` (a speedup), or ``None`` without pairs.

    Launch-bound sets (both times under 10 µs) are left out unless every set is launch-bound
    (:func:`htam_core.measure.stats.headline_geomean`; the loop adds its note to the report)."""
    return headline_geomean(parent, child).speedup


def _fmt_ms(v: float | None) -> str:
    return "not measured" if v is None else f"{v:.4f}"


def _fmt_x(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}×"


def _fmt_correct(s: StepRecord) -> str:
    if s.status == ENDPOINT_FAULT:
        return "endpoint fault (no candidate)"
    if s.correct is True:
        return f"yes ({s.verified_on})"
    if s.correct is False:
        return "no"
    return f"unverified ({s.verified_on})"


def _speedup_plot(path: Path, steps: list[StepRecord], measured: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
    xs = [s.index for s in steps]
    if measured:
        ys = [s.speedup_vs_start if s.speedup_vs_start is not None else float("nan") for s in steps]
        best: list[float] = []
        cur = 1.0
        for s in steps:
            if s.accepted and s.speedup_vs_start is not None:
                cur = max(cur, s.speedup_vs_start)
            best.append(cur)
        ax.plot(xs, ys, "o", label="candidate (vs start)")
        ax.step([0, *xs], [1.0, *best], where="post", label="best so far")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_ylabel("speedup over start (×)")
        ax.legend(loc="best", fontsize=8)
    else:
        colors = {"neutral": "tab:blue", "incorrect": "tab:red", "failed": "tab:orange"}
        ax.scatter(xs, [1.0] * len(xs), c=[colors.get(s.status, "tab:grey") for s in steps])
        ax.text(0.5, 0.7, "static mode: nothing was timed (no GPU)", ha="center", transform=ax.transAxes)
        ax.set_yticks([])
    ax.set_xlabel("candidate")
    ax.set_title("HTAM optimize: speedup per step")
    ax.set_xlim(-0.5, max(xs, default=0) + 0.5)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _markdown(task: OptimizeTask, result: OptimizeResult, warnings: list[str]) -> str:
    lines = [f"# HTAM optimize: `{task.kernel}` in `{task.path}`", ""]
    if result.measured:
        note = ""
    elif result.mode == "gpu":
        note = " — the starting kernel could not be timed (see Notes), so no speedup below is measured"
    else:
        note = " — nothing was timed: no GPU, so no time or speedup below is measured"
    lines.append(f"- mode: **{result.mode}**{note}")
    lines.append(f"- engine: {task.engine}, policy: {task.policy}"
                 + (f", ablation: {task.ablation}" if task.ablation else "") + f", budget: {task.budget}")
    if result.measured:
        lines.append(f"- start: {_fmt_ms(result.start_ms)} ms; best: {_fmt_ms(result.best_ms)} ms (median on the first "
                     f"input set); speedup: {_fmt_x(result.best_speedup) if result.best_speedup else 'none'} "
                     "(geomean over every input set of the harness)")
        lines.append("- the table's time is the first input set's median; its speedups are geomeans over all input "
                     "sets, against the kernel the candidate was derived from and against the start")
    else:
        lines.append("- start time, best time and speedup: not measured")
    if result.measurements_reused:
        lines.append(f"- {result.measurements_reused} of {len(result.steps)} candidates reused a "
                     "measurement: byte-identical code was measured earlier in this benchmark run; the start "
                     "was timed afresh")
    if result.cancelled:
        lines.append("- cancelled by the user: the best kernel so far is kept")
    lines += ["", result.summary, "", "| # | direction → strategy | edit | correct | time (ms) | speedup | vs start | "
              "kept | evidence |", "|---|---|---|---|---|---|---|---|---|"]
    for s in result.steps:
        desc = s.description.replace("|", "\\|").replace("\n", " ")
        ev = (s.evidence or "").replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {s.index} | {s.direction} → {s.strategy} | {desc} | {_fmt_correct(s)} | {_fmt_ms(s.time_ms)} "
                     f"| {_fmt_x(s.speedup)} | {_fmt_x(s.speedup_vs_start)} | {'yes' if s.accepted else 'no'} "
                     f"| {ev} |")
    if warnings:
        lines += ["", "## Notes", ""] + [f"- {w}" for w in warnings]
    lines += ["", "Files: `report.json` (every step with its edit), `speedup.png`, "
              f"`{result.best_path.name if result.best_path else 'best'}`, `candidates/`.", ""]
    return "\n".join(lines)


def write_report(task: OptimizeTask, out: Path, start_text: str, start_ev: Evaluation, best_text: str,
                 best_ev: Evaluation, steps: list[StepRecord], *, gpu: bool, cancelled: bool, warnings: list[str],
                 language: str, measurements_reused: int = 0) -> OptimizeResult:
    """Write the report files under ``out`` and return the :class:`OptimizeResult`.

    Args:
        task: the task.
        out: output directory (created).
        start_text, start_ev: the starting kernel file and its evaluation.
        best_text, best_ev: the best kernel file and its evaluation.
        steps: every evaluated candidate.
        gpu: candidates were timed on a GPU.
        cancelled: the user stopped the run.
        warnings: notes for the report.
        language: the kernel's language (for the summary).
        measurements_reused: candidates answered from the measurement cache.
    """
    out.mkdir(parents=True, exist_ok=True)
    ext = Path(task.path).suffix or ".txt"
    best_path = out / f"best{ext}"
    best_path.write_text(best_text, encoding="utf-8")
    measured = gpu and start_ev.time_ms is not None
    best_speedup = None
    if measured and best_ev.time_ms and start_ev.time_ms:
        best_speedup = geomean_ratio(start_ev.per_set_ms or [start_ev.time_ms], best_ev.per_set_ms or
                                      [best_ev.time_ms])
    changed = best_text != start_text
    kept = [s for s in steps if s.accepted]
    start_ok = start_ev.ok and start_ev.correct is not False
    if not start_ok and not steps:
        what = "does not match its reference" if start_ev.ok else "failed to compile or run"
        summary = (f"No candidate was tried: the starting kernel {what} (see the notes for why and what to fix). "
                   "best.* is the unchanged start.")
    elif gpu and not measured:
        summary = (f"The starting kernel could not be timed on the GPU, so none of the {len(steps)} candidates has "
                   "a measured speedup; see the notes for why.")
    elif measured:
        if changed and best_speedup:
            nsets = max(1, len(start_ev.per_set_ms))
            over = f"geomean over {nsets} input sets; first set " if nsets > 1 else ""
            summary = (f"Best correct kernel is {best_speedup:.2f}× faster than the start "
                       f"({over}{start_ev.time_ms:.4f} → {best_ev.time_ms:.4f} ms median, "
                       f"{start_ev.profile.device if start_ev.profile else 'GPU'}) "
                       f"after {len(steps)} candidates; kept steps: "
                       f"{', '.join(s.strategy for s in kept) or 'none'}.")
        else:
            summary = f"No candidate beat the start ({_fmt_ms(start_ev.time_ms)} ms) in {len(steps)} candidates."
    else:
        verified = sum(1 for s in steps if s.correct is True)
        unverified = sum(1 for s in steps if s.correct is None and s.status not in ("incorrect", "failed",
                                                                                     ENDPOINT_FAULT))
        summary = (f"Static mode: {len(steps)} candidates, {verified} verified correct"
                   f"{' under the Triton interpreter' if language == 'triton' else ''}, "
                   f"{unverified} unverified (compiled only, no GPU or no harness), "
                   f"{sum(1 for s in steps if s.status in ('incorrect', 'failed'))} refused or failed; nothing was "
                   f"timed. The kept chain ({', '.join(s.strategy for s in kept) or 'none'}) follows HTAM's ranking "
                   "of the static state; run on a GPU to measure it.")
    n_faults = sum(1 for s in steps if s.status == ENDPOINT_FAULT)
    if n_faults:
        summary += (f" {n_faults} of the {len(steps)} steps were LLM endpoint faults: no candidate, so they are not "
                    "counted against their strategies and were kept out of the memory.")
    report_md = out / "report.md"
    result = OptimizeResult(best_text=best_text, best_speedup=best_speedup, measured=measured, steps=steps,
                            report_dir=out, report_md=report_md, summary=summary, cancelled=cancelled,
                            changed=changed, start_ms=start_ev.time_ms if measured else None,
                            best_ms=best_ev.time_ms if measured else None, mode="gpu" if gpu else "static",
                            best_path=best_path, warnings=list(warnings),
                            measurements_reused=measurements_reused, start_ok=start_ok)
    data = result.to_json()
    data["task"] = task.to_json()
    data["start_profile"] = start_ev.profile.to_json() if start_ev.profile else None
    data["best_profile"] = best_ev.profile.to_json() if best_ev.profile else None
    (out / "report.json").write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    report_md.write_text(_markdown(task, result, warnings), encoding="utf-8")
    _speedup_plot(out / "speedup.png", steps, measured)
    return result
