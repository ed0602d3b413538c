"""The optimization report: ``report.json``, ``report.md``, ``speedup.png`` and ``best.<ext>``.

Every number comes from the evaluation records; a time or speedup that was not measured on a GPU is
written as "not measured", never estimated, and a step without a measured speedup is "not measured", never
"kept". ``speedup.png`` exists only when something was timed. Every incorrect or failed candidate carries
its reason, and every ranked step the loop passed over carries the transform's refusal message.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htam_core.measure.stats import LAUNCH_BOUND_MS, SPREAD_RULE, headline_geomean
from htam_core.memory.records import ENDPOINT_FAULT
from htam_core.optimize.reproduce import Reproduction
from htam_core.optimize.task import NotMade, OptimizeResult, OptimizeTask, StepRecord, lineage
from htam_core.types.language import traits

if TYPE_CHECKING:
    from htam_core.optimize.evaluate import Evaluation


def geomean_ratio(parent: list[float], child: list[float]) -> float | None:
    """Geometric mean over input sets of ``parent_ms / child_ms`` (a speedup), or ``None`` without pairs.

    Launch-bound sets (both times under 10 µs) are left out unless every set is launch-bound
    (:func:`htam_core.measure.stats.headline_geomean`; the loop adds its note to the report)."""
    return headline_geomean(parent, child).speedup


def _per_set_line(start_ms: list[float], best_ms: list[float]) -> str:
    """``"geomean over sets 0, 2 of 3; set 0: 0.16 → 0.05 ms (3.11×), set 1: ... (launch-bound, left out)"``:
    the speedup of every input set and which ones the headline geomean counts
    (:func:`htam_core.measure.stats.headline_geomean`)."""
    h = headline_geomean(start_ms, best_ms)
    sets = []
    for i, (p, c) in enumerate(zip(start_ms, best_ms, strict=False)):
        if not (p and c):
            sets.append(f"set {i}: not measured")
            continue
        tag = ", launch-bound, left out" if i in h.launch_bound and i not in h.counted else ""
        sets.append(f"set {i}: {p:.4f} → {c:.4f} ms ({p / c:.2f}×{tag})")
    if len(start_ms) == 1:
        return sets[0].removeprefix("set 0: ") + " median"
    counted = ", ".join(str(i) for i in h.counted)
    return f"geomean over set(s) {counted} of {len(start_ms)}; medians " + ", ".join(sets)


def _kept_line(r: Reproduction, measured: bool, mode: str) -> str:
    """The answer of the header's "every kept step's gain exceeds its measured spread" line.

    Consistent with the summary: without timings (static mode) no step is kept as a measured win (the steps
    the loop followed are the static ranking's chain, said as such), so the answer is "not measured" with that
    reason, never "(N kept)" next to a summary that says none is kept. ``mode`` is the result's ``"static"`` or
    ``"gpu"``; ``measured`` whether the start was timed.
    """
    if not measured:
        followed = f"; the loop followed {r.followed_steps} step(s) of the static ranking" if r.followed_steps else ""
        why = "static mode" if mode == "static" else "nothing was timed"
        return f"not measured ({why}: no step is kept{followed})"
    if r.kept_beyond_spread is None:
        return f"not measured (no step with a measured gain is kept; {r.kept_steps} kept)"
    if r.kept_beyond_spread:
        return f"yes ({r.kept_steps} kept)"
    return (f"no: a kept step's spread was not measured or its gain is inside it (each step's spread is in "
            f"report.json) ({r.kept_steps} kept)")


def _lineage_text(path: list[StepRecord], kept: list[StepRecord], ext: str) -> str:
    """``"best.cu is candidate 4, made from the start by restrict_pointers (candidate 4)"`` and, when other
    accepted steps are not on that path, ``"; also followed, not in best.cu: ..."``.

    ``path`` is the best's :func:`htam_core.optimize.task.lineage`; ``kept`` every accepted step."""
    if not path:
        return f"best{ext} is the start"
    steps = " → ".join(f"{s.strategy} (candidate {s.index})" for s in path)
    text = f"best{ext} is candidate {path[-1].index}, made from the start by {steps}"
    on_path = {s.index for s in path}
    off = [s for s in kept if s.index not in on_path]
    if off:
        text += (f"; also followed, not in best{ext}: "
                 + ", ".join(f"{s.strategy} (candidate {s.index}, made from "
                             f"{'the start' if s.parent == 'start' else f'candidate {s.parent}'})" for s in off))
    return text


def _fmt_parent(s: StepRecord) -> str:
    return "start" if s.parent == "start" else str(s.parent)


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


def failure_reason(status: str, messages: list[str]) -> str | None:
    """One line saying why a candidate is ``incorrect`` or ``failed``, from its evaluation messages.

    Picks the verifier's mismatch line (``seed S, input set K: output I: ... max abs error ..., max rel error
    ...``), else a guard's refusal, else the first error line of a compile or runtime failure (Python traceback
    frames dropped). Returns ``None`` for other statuses.
    """
    if status not in ("incorrect", "failed"):
        return None
    lines = [ln.strip() for m in messages for ln in str(m).splitlines()
             if ln.strip() and not ln.startswith(("Traceback", "  File ", "    "))]
    for pick in (lambda ln: ln.startswith("seed ") and "output" in ln, lambda ln: ln.startswith("refused by guard"),
                 lambda ln: ln.startswith("seed "), lambda ln: "error" in ln.lower(), lambda ln: True):
        hit = next((ln for ln in lines if pick(ln)), None)
        if hit is not None:
            return hit if len(hit) <= 300 else hit[:300] + " …"
    return "no message from the verifier"


def _speedup_plot(path: Path, steps: list[StepRecord]) -> None:
    """Plot measured speedups over the start per candidate, the best-so-far line, and untimed candidates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
    xs = [s.index for s in steps]
    ys = [s.speedup_vs_start if s.speedup_vs_start is not None else float("nan") for s in steps]
    best: list[float] = []
    cur = 1.0
    for s in steps:
        if s.accepted and s.speedup_vs_start is not None:
            cur = max(cur, s.speedup_vs_start)
        best.append(cur)
    ax.plot(xs, ys, "o", label="candidate (vs start)")
    ax.step([0, *xs], [1.0, *best], where="post", label="best so far")
    untimed = [s.index for s in steps if s.speedup_vs_start is None]
    if untimed:  # incorrect, failed or untimed candidates: on the x axis, no speedup
        ax.plot(untimed, [0.02] * len(untimed), "x", color="tab:red", transform=ax.get_xaxis_transform(),
                label="incorrect, failed or not timed")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel("speedup over start (×)")
    ax.legend(loc="best", fontsize=8)
    ax.set_xlabel("candidate")
    ax.set_title("HTAM optimize: measured speedup per candidate")
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
                     "(geomean over the input sets that are not launch-bound; every set's speedup is in the "
                     "summary below)")
        lines.append("- the table's time is the first input set's median; its speedups are geomeans over all input "
                     "sets, against the kernel the candidate was derived from and against the start")
    else:
        lines.append("- start time, best time and speedup: not measured")
        lines.append(f"- on a GPU: every input set is timed and its speedup reported; a set under "
                     f"{LAUNCH_BOUND_MS * 1000:.0f} µs is launch-bound and left out of the headline geomean; "
                     f"{SPREAD_RULE}")
    if result.reproduction is not None:
        r = result.reproduction
        lines.append(f"- {r.line()}")
        lines.append(f"- every kept step's gain exceeds its measured spread: {_kept_line(r, result.measured, result.mode)}")
    if result.measurements_reused:
        lines.append(f"- {result.measurements_reused} of {len(result.steps)} candidates reused a "
                     "measurement: byte-identical code was measured earlier in this benchmark run; the start "
                     "was timed afresh")
    if result.cancelled:
        lines.append("- cancelled by the user: the best kernel so far is kept")
    lines += ["", result.summary, "", "| # | direction → strategy | edit | correct | time (ms) | speedup | vs start | "
              "kept | evidence | why (incorrect, failed or not followed) | made from |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in result.steps:
        not_followed = next((m for m in s.messages if "not followed" in m), "")  # static mode says why
        desc, ev, why = (_cell(t) for t in (s.description, s.evidence, s.reason or not_followed or "—"))
        lines.append(f"| {s.index} | {s.direction} → {s.strategy} | {desc} | {_fmt_correct(s)} | {_fmt_ms(s.time_ms)} "
                     f"| {_fmt_x(s.speedup)} | {_fmt_x(s.speedup_vs_start)} | {s.kept()} | {ev} | {why} | {_fmt_parent(s)} |")
    if result.not_made:
        lines += ["", "## Steps not made", "", "Ranked steps the loop passed over, and why no candidate was made:", ""]
        lines += [f"- {m.direction} → {m.strategy} ({'for the start kernel' if m.kernel == 'start' else m.kernel}): "
                  f"{_where(m)}{m.reason}" for m in result.not_made]
    if warnings:
        lines += ["", "## Notes", ""] + [f"- {w}" for w in warnings]
    if result.phases and result.phases.get("seconds"):
        secs = result.phases["seconds"]
        parts = ", ".join(f"{k.replace('_', ' ')} {v:.1f} s" for k, v in secs.items() if v)
        lines += ["", f"Time: {result.phases.get('wall_s') or 0:.1f} s in all" + (f" ({parts}; these overlap)"
                                                                                 if parts else "") + "."]
    plot = "`speedup.png`" if result.plot else f"no `speedup.png` ({result.plot_note})"
    lines += ["", f"Files: `report.json` (every step with its edit), {plot}, "
              f"`{result.best_path.name if result.best_path else 'best'}`, `candidates/`.", ""]
    return "\n".join(lines)


def steps_not_made(not_made: list[NotMade], steps: list[StepRecord]) -> list[NotMade]:
    """The passed-over steps of ``not_made`` that are steps not made: refusals, and passes of strategies that
    made no candidate anywhere in the run.

    When the loop passes over a step it already made in this run (static mode: "the loop already went on from
    this step"; "every candidate it makes was already evaluated"; :attr:`NotMade.refused` ``False``), the step
    was made: listing it under "Steps not made" would say the opposite of the table above it. A refusal
    (the transform cannot make it on that kernel) stays, since it says why that kernel has no such candidate.
    An LLM endpoint fault made no candidate, so it does not count as made.

    Args:
        not_made: the loop's passed-over steps, in the order it met them.
        steps: every evaluated step of the run.

    Returns:
        ``not_made`` without the non-refusal passes of strategies that made a candidate, order kept.
    """
    made = {s.strategy for s in steps if s.status != ENDPOINT_FAULT}
    return [m for m in not_made if m.refused or m.strategy not in made]


def _where(m: NotMade) -> str:
    """``"in candidate 02 (candidates/02-*): "`` for a refusal made on a candidate, so its line numbers can be
    found; ``""`` for one made on the start (the user's file)."""
    return "" if m.candidate is None else f"in candidate {m.candidate:02d} (`candidates/{m.candidate:02d}-*/`): "


def _cell(text: str) -> str:
    """``text`` as one markdown table cell (pipes escaped, newlines folded)."""
    return (text or "").replace("|", "\\|").replace("\n", " ")


def write_report(task: OptimizeTask, out: Path, start_text: str, start_ev: Evaluation, best_text: str,
                 best_ev: Evaluation, steps: list[StepRecord], *, gpu: bool, cancelled: bool, warnings: list[str],
                 language: str, measurements_reused: int = 0,
                 not_made: list[NotMade] | None = None, reproduction: Reproduction | None = None,
                 best_step: int | None = None, phases: dict[str, Any] | None = None,
                 files: Mapping[str, str] | None = None) -> OptimizeResult:
    """Write the report files under ``out`` and return the :class:`OptimizeResult`.

    ``speedup.png`` is written only when the candidates were timed (a GPU run whose start was timed); without
    a measurement there is nothing to plot, so it is not written (an old one in ``out`` is removed) and the
    report says why (``OptimizeResult.plot_note``). An ``incorrect`` or ``failed`` step without a
    ``reason`` gets one from :func:`failure_reason`.

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
        not_made: ranked steps the loop passed over, with their refusal reasons.
        reproduction: the fresh-process re-timing of the best (:mod:`htam_core.optimize.reproduce`); a best
            that was not reproduced is not reported as a win.
        best_step: the index of the step ``best_text`` is, or ``None`` (the start); the summary names its
            lineage (its parents back to the start) and the accepted steps off it.
        phases: where the run's time went (:class:`htam_core.optimize.phases.PhaseTimes` JSON plus the worker
            starts and the counters stage), written to ``report.json`` as ``"phases"``.
        files: other workspace files the best kernel's steps rewrote (its launcher), path -> text; each is
            written into ``out`` under its own name beside ``best.*`` (``OptimizeResult.launcher_paths``).

    Raises:
        ValueError: ``best_step`` or a parent is not among ``steps`` (:func:`htam_core.optimize.task.lineage`).
    """
    out.mkdir(parents=True, exist_ok=True)
    steps = [s if s.reason or s.status not in ("incorrect", "failed")
             else dataclasses.replace(s, reason=failure_reason(s.status, s.messages)) for s in steps]
    ext = Path(task.path).suffix or ".txt"
    best_path, launcher_paths, best_copy = _write_kernel_files(out, ext, best_text, files, Path(task.path).name)
    measured = gpu and start_ev.time_ms is not None
    best_speedup = None
    if measured and best_ev.time_ms and start_ev.time_ms:
        best_speedup = geomean_ratio(start_ev.per_set_ms or [start_ev.time_ms], best_ev.per_set_ms or
                                      [best_ev.time_ms])
    changed = best_text != start_text
    path = lineage(steps, best_step)
    start_ok = start_ev.ok and start_ev.correct is not False
    summary = _summary(start_ev, best_ev, steps, path, ext, language, gpu=gpu, measured=measured,
                       changed=changed, best_speedup=best_speedup, reproduction=reproduction)
    plot_path, plot_note = _plot_target(out, measured=measured, gpu=gpu, replay=bool(task.replay_table))
    report_md = out / "report.md"
    result = OptimizeResult(best_text=best_text, best_speedup=best_speedup, measured=measured, steps=steps,
                            report_dir=out, report_md=report_md, summary=summary, cancelled=cancelled,
                            changed=changed, start_ms=start_ev.time_ms if measured else None,
                            best_ms=best_ev.time_ms if measured else None, mode="gpu" if gpu else "static",
                            best_path=best_path, warnings=list(warnings), launcher_paths=launcher_paths,
                            measurements_reused=measurements_reused, start_ok=start_ok,
                            best_correct=best_ev.correct, best_verified_on=best_ev.verified_on,
                            not_made=steps_not_made(not_made or [], steps), plot=plot_path, plot_note=plot_note,
                            reproduction=reproduction, best_step=best_step, phases=phases,
                            best_lineage=[s.index for s in path], best_copy=best_copy)
    data = result.to_json()
    data["task"] = task.to_json()
    data["start_profile"] = start_ev.profile.to_json() if start_ev.profile else None
    data["best_profile"] = best_ev.profile.to_json() if best_ev.profile else None
    (out / "report.json").write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    report_md.write_text(_markdown(task, result, warnings), encoding="utf-8")
    if plot_path is not None:
        _speedup_plot(plot_path, steps)
    return result


def _write_kernel_files(out: Path, ext: str, best_text: str, files: Mapping[str, str] | None,
                        kernel_file: str = "") -> tuple[Path, list[Path], Path | None]:
    """Write ``best<ext>`` and each rewritten launcher (under its own name; ``launcher-<name>`` when it would be
    ``best<ext>``) into ``out``; return their paths. With launchers, the best kernel is also written under its own
    file name ``kernel_file`` (a launcher's ``#include "kernels.cuh"`` then finds it, so the pair builds as it is
    in ``out``); its path is the third value (``None`` without one)."""
    best_path = out / f"best{ext}"
    best_path.write_text(best_text, encoding="utf-8")
    launcher_paths = []
    for src, text in sorted((files or {}).items()):
        dest = out / Path(src).name
        if dest == best_path:
            dest = out / f"launcher-{Path(src).name}"
        dest.write_text(text, encoding="utf-8")
        launcher_paths.append(dest)
    own = out / kernel_file if kernel_file else None
    if not launcher_paths or own is None or own == best_path or own in launcher_paths:
        return best_path, launcher_paths, None
    own.write_text(best_text, encoding="utf-8")
    return best_path, launcher_paths, own


def _summary(start_ev: Evaluation, best_ev: Evaluation, steps: list[StepRecord], path: list[StepRecord], ext: str,
             language: str, *, gpu: bool, measured: bool, changed: bool, best_speedup: float | None,
             reproduction: Reproduction | None) -> str:
    """The report's summary paragraph (see :func:`write_report`), endpoint faults included."""
    kept = [s for s in steps if s.accepted]
    start_ok = start_ev.ok and start_ev.correct is not False
    if not start_ok and not steps:
        what = "does not match its reference" if start_ev.ok else "failed to compile or run"
        summary = (f"No candidate was tried: the starting kernel {what} (see the notes for why and what to fix). "
                   "best.* is the unchanged start.")
    elif gpu and not measured:
        summary = (f"The starting kernel could not be timed on the GPU, so none of the {len(steps)} candidates has "
                   "a measured speedup and none is kept; see the notes for why.")
    elif measured:
        if changed and best_speedup and reproduction is not None and reproduction.status == "not reproduced":
            summary = (f"No confirmed win: the best candidate measured {best_speedup:.2f}× faster than the start "
                       f"during the search, but the fresh-process re-timing did not reproduce it "
                       f"({reproduction.line().removeprefix('fresh-process re-timing: ')}); it is not reported as a "
                       f"win and --apply does not write it. best{ext} is that candidate, for inspection.")
        elif changed and best_speedup:
            summary = (f"Best correct kernel is {best_speedup:.2f}× faster than the start "
                       f"({_per_set_line(start_ev.per_set_ms or [start_ev.time_ms], best_ev.per_set_ms or [best_ev.time_ms])}"
                       f"; {start_ev.profile.device if start_ev.profile else 'GPU'}) "
                       f"after {len(steps)} candidates; {_lineage_text(path, kept, ext)}.")
        else:
            summary = f"No candidate beat the start ({_fmt_ms(start_ev.time_ms)} ms) in {len(steps)} candidates."
    else:
        verified = sum(1 for s in steps if s.correct is True)
        unverified = sum(1 for s in steps if s.correct is None and s.status not in ("incorrect", "failed",
                                                                                     ENDPOINT_FAULT))
        summary = (f"Static mode: {len(steps)} candidates, {verified} verified correct"
                   f"{' under the Triton interpreter' if traits(language).tiles else ''}, "
                   f"{unverified} unverified (compiled only: without a GPU nothing ran them), "
                   f"{sum(1 for s in steps if s.status in ('incorrect', 'failed'))} refused or failed; nothing was "
                   "timed, so every step is not measured and none is kept. "
                   + (f"The loop followed HTAM's ranking of the static state (not measured): "
                      f"{_lineage_text(path, kept, ext)}; not a measured improvement. " if kept else "")
                   + "Run on a GPU to measure it.")
    n_faults = sum(1 for s in steps if s.status == ENDPOINT_FAULT)
    if n_faults:
        summary += (f" {n_faults} of the {len(steps)} steps were LLM endpoint faults: no candidate, so they are not "
                    "counted against their strategies and were kept out of the memory.")
    return summary


def _plot_target(out: Path, *, measured: bool, gpu: bool, replay: bool) -> tuple[Path | None, str | None]:
    """Where ``speedup.png`` goes, or ``None`` and why it is not written (an old plot in ``out`` is removed: it
    would show another run's numbers)."""
    plot_path = out / "speedup.png"
    if measured and not replay:
        return plot_path, None
    if measured:
        note = "not written: a replay from a measured-space table (the benchmark plots the policies)"
    elif not gpu:
        note = "not written: nothing was timed (static mode: no GPU), so there is no speedup to plot"
    else:
        note = "not written: the starting kernel could not be timed, so there is no speedup to plot"
    plot_path.unlink(missing_ok=True)
    return None, note
