"""Text shown to the user: hover Markdown, code-action titles, diagnostics of profile facts.

Pure functions of engine objects (no LSP types), so they are easy to test and to reuse.
"""

from __future__ import annotations

import math
import time
from typing import Any

from htam_core.editor.history import AppliedStep
from htam_core.editor.profiles import ProfileView
from htam_core.editor.ranking import Analysis, unranked_reason
from htam_core.source import Kernel
from htam_core.types.profile import Profile

#: Theoretical occupancy under which a diagnostic is shown (fraction of the maximum warps per SM).
LOW_OCCUPANCY = 0.5

_LANG = {"cuda": "CUDA kernel", "triton": "Triton kernel", "cuda-in-python": "CUDA kernel (Python string)"}


def gain_text(step: Any) -> str:
    """``+35% (7/9)`` from the memory's statistics, or ``prior`` when nothing was measured."""
    if step.expected_gain is None:
        return "prior" if not step.trials else f"prior ({step.trials} unmeasured)"
    return f"{step.expected_gain * 100:+.0f}% ({step.wins}/{step.trials})"


def action_title(step: Any, position: int | None = None, note: str = "") -> str:
    """``HTAM 1 · Memory access → vectorize loads (float4) · +35% (7/9)``; the number is ``position`` (the
    action's place in the list, 1-based: steps that cannot be made are left out of it), else the step's rank.
    ``note`` follows the step's title in parentheses (``launch not found: correct for any grid``)."""
    title = f"{step.title} ({note})" if note else step.title
    return f"HTAM {position or step.rank} · {step.direction_name} → {title} · {gain_text(step)}"


def _dynamic_shared(p: Profile) -> bool:
    """The launch passes dynamic shared memory: a number above 0, or an expression that is not a constant."""
    dyn = p.extra.get("dynamic_shared") or {}
    return bool(dyn) and dyn.get("bytes") != 0


def _pct(x: float | None) -> str:
    return "not measured" if x is None else f"{x * 100:.0f}%"


def _ago(t: float) -> str:
    dt = max(0.0, time.time() - t)
    if dt < 90:
        return f"{dt:.0f} s ago"
    if dt < 5400:
        return f"{dt / 60:.0f} min ago"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def analysis_view(live: ProfileView, analysis: Analysis | None, kernel_hash: str) -> ProfileView:
    """The profile to show beside ``analysis``'s ranking: the entry the ranking used (so that the profile and the
    recommendation shown together belong together), ``running`` from ``live`` and ``stale`` against the current
    kernel version ``kernel_hash``. Without an analysis, ``live`` itself."""
    if analysis is None:
        return live
    entry = analysis.entry
    return ProfileView(entry, entry is not None and entry.content_hash != kernel_hash, live.running)


def profile_lines(view: ProfileView, incomplete: bool = False) -> list[str]:
    """Markdown lines of the profile section (what is known; never waits). ``incomplete``: the kernel does not
    parse yet, so no profile is offered until it does."""
    e = view.entry
    if e is None:
        if incomplete:
            return ["**Profile:** none yet — it can run once the kernel parses"]
        return ["**Profile:** none yet — " + ("profiling in the background…" if view.running
                                                 else "run “HTAM: Profile kernel” (the file must be saved)")]
    if e.profile is None:
        out = [f"**Profile failed** ({_ago(e.finished)}): {e.error}"]
        out += [f"    {d}" for d in e.details[:5]]
        return out
    p: Profile = e.profile
    tags = [_kind_tag(p)]
    if e.pending:
        tags.append(f"{e.pending} follow" + ("…" if view.running and not view.stale else " on the next profile"))
    if view.stale:
        tags.append("**stale**: the kernel changed since" + (", re-profiling…" if view.running else
                                                             "; save or run “HTAM: Profile kernel”"))
    elif view.running and not e.pending:  # a stage that follows already says what is running
        tags.append("re-profiling…")
    out = [f"**Profile** ({'; '.join(tags)}; {_ago(e.finished)})", "", "| | |", "|---|---|"]
    if p.time_ms is not None:
        out.append(f"| time | {p.time_ms.median:.4g} ms median (min {p.time_ms.min:.4g}, max {p.time_ms.max:.4g})"
                   + timing_text(p) + " |")
    else:
        out.append("| time | not measured" + timing_text(p) + " |")
    if p.harness:
        out.append(f"| harness | {p.harness} |")
    roof = []
    if p.roofline_fraction is not None:
        roof.append(f"{p.roofline_fraction * 100:.0f}% of attainable")
    if p.sol:
        roof.append(", ".join(f"SOL {k.replace('_pct', '')} {v:.0f}%" for k, v in p.sol.items() if v is not None))
    if p.bandwidth_bytes_per_s is not None:
        roof.append(f"{p.bandwidth_bytes_per_s / 1e9:.0f} GB/s")
    if p.flops_per_s is not None:
        roof.append(f"{p.flops_per_s / 1e12:.2f} TFLOP/s")
    out.append(f"| roofline | {'; '.join(roof) if roof else 'not measured'} |")
    out.append(f"| bottleneck | **{p.bottleneck.cls}**"
               + (f" (also {', '.join(p.bottleneck.secondary)})" if p.bottleneck.secondary else "") + " |")
    occ = f"theoretical {_pct(p.theoretical_occupancy)}"
    if p.block_size:
        occ += f" at {p.block_size} threads/block"
    occ += f", achieved {_pct(p.achieved_occupancy)}"
    out.append(f"| occupancy | {occ} |")
    regs = "unknown" if p.registers is None else f"{p.registers}/thread"
    spill = "unknown" if p.spill_bytes is None else f"{p.spill_bytes} B"
    out.append(f"| registers | {regs}, spills {spill}"
               + (f", shared {p.shared_text()}" if p.shared_bytes or _dynamic_shared(p) else "") + " |")
    if p.bottleneck.evidence:
        out += ["", "Evidence: " + "; ".join(p.bottleneck.evidence[:4])]
    warns = [w for w in p.warnings if not w.startswith(("static profile:", "source-only profile:",
                                                       "ncu counters follow"))]
    if warns:
        out += ["", "Notes: " + "; ".join(warns[:3])]
    return out


def _kind_tag(p: Profile) -> str:
    """What kind of profile ``p`` is, honestly: measured, compiled only, or source only."""
    if p.mode == "gpu":
        return f"measured on {p.device}"
    if p.extra.get("stage") == "source":
        return "static: from the source only, not compiled yet"
    return "static: compiled only, no GPU measurement"


def timing_text(p: Profile) -> str:
    """`` · <timer method> · CUPTI <ms> (<agreement>)`` for a measured profile, ``""`` without timing."""
    t = p.extra.get("timing") if isinstance(p.extra, dict) else None
    if not isinstance(t, dict) or not t.get("method"):
        return ""
    out = f" · timer: {t['method']}"
    c, a = t.get("cupti_ms"), t.get("agreement")
    if c is not None:
        out += f" · CUPTI {c:.4g} ms" + (f" ({a * 100:+.1f}%)" if a is not None else "")
    elif "cupti_ms" in t:
        out += " · CUPTI not cross-checked"
    if t.get("refused"):
        out += f" · refused: {t['refused']}"
    return out


def outcome_text(a: AppliedStep) -> str:
    """One line for an applied step's outcome."""
    if a.outcome is None:
        return a.pending or "pending"
    o = a.outcome
    if o.measured and o.speedup is not None:
        return f"{o.status}, {o.speedup:.2f}× measured"
    return f"{o.status}" + (f" ({o.note})" if o.note else "")


def advice_lines(advice: list[tuple[Any, Any]], engine: str) -> list[str]:
    """Markdown of the ranked strategies that have no mechanical transform (``(RankedStep, Verdict)`` pairs):
    each with its direction, how to apply it by hand and, with the LLM engine, that its code action asks the
    model to write it."""
    if not advice:
        return []
    out = ["", "**Advice** (no mechanical transform" + ("; the code action asks the LLM to write it)" if engine == "llm"
                                                      else "; apply by hand, or set htam.engine to llm)"), ""]
    for s, v in advice:
        out.append(f"- {s.direction_name} → **{s.title}** · expected {gain_text(s)}")
        if v.how:
            out.append(f"  - How: {v.how}" + (f" Risk: {s.risk}" if s.risk else ""))
    return out


def hover_markdown(kernel: Kernel, view: ProfileView, steps: list[Any], history: list[AppliedStep], *,
                   ready: bool, engine: str, stale_model: bool = False, memory_error: str | None = None,
                   advice: list[tuple[Any, Any]] | None = None, harness: str | None = None,
                   tried: list[AppliedStep] | None = None) -> str:
    """The hover of one kernel: where its harness came from (``harness``: one line, or ``None`` while the
    helper process is still finding it), profile, recommended next step (``steps[0]``: the first code action),
    advice (``(RankedStep, Verdict)`` pairs of strategies with no mechanical transform, see
    :func:`advice_lines`), last steps (``history``: the steps applied to the file), and apart from them the
    candidates ``htam optimize`` tried on copies and did not apply (``tried``)."""
    kind = _LANG.get(kernel.language, kernel.language)
    head = f"### HTAM · `{kernel.key}` — {kind}, lines {kernel.start_line}–{kernel.end_line}"
    out = [head, ""]
    if kernel.incomplete:
        out += ["*The kernel is incomplete (still being typed): edits and profiles wait until it parses.*", ""]
    if stale_model:
        out += ["*The file does not parse: showing the last good parse.*", ""]
    out += profile_lines(view, kernel.incomplete)
    out += ["", f"**Harness:** {harness}" if harness else "**Harness:** checking in the background…", ""]
    unranked = unranked_reason(kernel)
    if unranked:
        out.append(f"**Recommended next step:** none: {unranked}.")
    elif not ready:
        out.append("**Recommended next step:** loading the HTAM memory…")
    elif not steps:
        out.append("**Recommended next step:** no mechanical step of the knowledge base applies to this kernel"
                   + (" (see the advice below)." if advice else "."))
    else:
        s = steps[0]
        out.append(f"**Recommended next step:** {s.direction_name} → **{s.title}** · expected {gain_text(s)}")
        out.append("")
        out.append(f"- Evidence: {s.evidence}")
        out.append(f"- Why: {s.rationale}")
        how = f"mechanical transform `{s.transform}`" if s.transform else (
            "written by the LLM" if engine == "llm" else "no mechanical transform (set htam.engine to llm)")
        out.append(f"- How: {how}" + (f"; risk: {s.risk}" if s.risk else ""))
    if ready and not unranked:
        out += advice_lines(advice or [], engine)
    if memory_error:
        out += ["", f"*Memory unavailable: {memory_error}*"]
    if history:
        out += ["", "**Last steps**", ""]
        for a in history[-5:][::-1]:
            out.append(f"- {a.title} — {outcome_text(a)} ({_ago(a.time)})")
    if tried:
        out += ["", "**Tried by htam optimize, not applied**", ""]
        out += [f"- {a.title} — {outcome_text(a)} ({_ago(a.time)})" for a in tried[-3:][::-1]]
    return "\n".join(out)


def profile_facts(p: Profile) -> list[tuple[str, str, str]]:
    """Facts worth attention as ``(severity, code, message)``; severity ``"warning"`` or ``"information"``.

    A launch that cannot run at all comes first (``cannot-launch``: the block needs more threads, registers or
    shared memory than the target gives), then register spills (ptxas), theoretical occupancy under
    :data:`LOW_OCCUPANCY`, and each Nsight Compute rule that fired (with its estimated speedup when ncu gives one).
    """
    out: list[tuple[str, str, str]] = []
    launch = p.extra.get("launch") if isinstance(p.extra, dict) else None
    if isinstance(launch, dict) and launch.get("fits") is False:
        out.append(("warning", "cannot-launch",
                    f"cannot launch on {launch.get('target', 'this GPU')}: {'; '.join(launch.get('reasons') or [])}"))
    if p.spill_bytes:
        out.append(("warning", "register-spill",
                    f"register spills: {p.spill_bytes} B spilled to local memory ({p.registers} registers/thread)"))
    occ = p.theoretical_occupancy
    if occ is not None and occ < LOW_OCCUPANCY:
        lim = (p.extra.get("occupancy") or {}).get("limiter") if isinstance(p.extra, dict) else None
        out.append(("information", "low-occupancy",
                    f"low theoretical occupancy: {occ * 100:.0f}%" + (f" (limited by {lim})" if lim else "")
                    + (f" at {p.block_size} threads/block" if p.block_size else "")))
    for r in p.ncu_rules:
        est = r.get("estimated_speedup_pct")
        msg = f"ncu {r.get('rule', '?')}: {r.get('message', '')}".strip()
        if isinstance(est, int | float) and math.isfinite(est):
            msg += f" (estimated speedup {est:.0f}%)"
        out.append(("information", "ncu-rule", msg))
    return out
