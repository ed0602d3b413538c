"""Build the chat messages for the LLM generator from HTAM memory (step 3 of an evolution step, "Generate").

The prompt carries what the HTAM paper gives its LLM: the kernel (or the KernelBench problem), the
profile summary, the chosen global direction, the retrieved local strategies with their guidance and
before/after examples, and the transition hints ("after X, Y paid off 7 times out of 9"). The text
lives in the template files under ``templates/``; this module only fills them.

Inputs are plain data (dicts and strings), so this module does not depend on the memory package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from htam_core.generate.templates import render
from htam_core.profile.result import Profile

#: Display name and fence tag per source language (``htam_core.source.model.Language`` plus "python").
LANGUAGES: dict[str, tuple[str, str]] = {
    "cuda": ("CUDA C++", "cuda"),
    "triton": ("Triton (Python)", "python"),
    "cuda-in-python": ("CUDA C++ held in Python (torch load_inline)", "python"),
    "python": ("Python", "python"),
}

#: Longest error text sent back to the model, in characters (the tail is kept: compilers print the cause last).
MAX_ERROR_CHARS = 4000


def language_info(language: str) -> tuple[str, str]:
    """``(display name, fence tag)`` for a language; unknown languages are shown as-is with no tag."""
    return LANGUAGES.get(language, (language, ""))


def is_kernelbench_problem(task: str | None) -> bool:
    """True when ``task`` is a KernelBench problem source (defines ``Model`` and ``get_inputs``)."""
    return bool(task) and "class Model" in task and "def get_inputs" in task  # type: ignore[operator]


def _fmt(value: float | None, unit: str = "", scale: float = 1.0, digits: int = 3) -> str:
    if value is None:
        return "not measured"
    return f"{value / scale:.{digits}g}{unit}"


def profile_summary(profile: Profile | None) -> str:
    """A short, plain-text profile summary; every field that was not measured reads "not measured".

    Units: time in ms, bandwidth in GB/s (bytes/s / 1e9), compute in TFLOP/s, occupancy and SOL in %.
    """
    if profile is None:
        return "No profile is available for this kernel (not measured)."
    p = profile
    lines = [f"- mode: {p.mode} ({p.device})"]
    lines.append(f"- kernel time: {_fmt(p.time_ms.median, ' ms') if p.time_ms else 'not measured'}")
    lines.append(f"- bottleneck: {p.bottleneck.cls}"
                 + (f" (also {', '.join(p.bottleneck.secondary)})" if p.bottleneck.secondary else ""))
    lines.extend(f"  - evidence: {e}" for e in p.bottleneck.evidence)
    if p.sol:
        lines.append(f"- speed of light: memory {_fmt(p.sol.get('memory_pct'), '%')}, "
                     f"compute {_fmt(p.sol.get('compute_pct'), '%')}")
    else:
        lines.append("- speed of light: not measured")
    lines.append(f"- DRAM bandwidth: {_fmt(p.bandwidth_bytes_per_s, ' GB/s', 1e9)}; "
                 f"compute: {_fmt(p.flops_per_s, ' TFLOP/s', 1e12)}; "
                 f"roofline fraction: {_fmt(p.roofline_fraction)}")
    occ_t = _fmt(p.theoretical_occupancy * 100 if p.theoretical_occupancy is not None else None, "%")
    occ_a = _fmt(p.achieved_occupancy * 100 if p.achieved_occupancy is not None else None, "%")
    lines.append(f"- occupancy: theoretical {occ_t}, achieved {occ_a}"
                 + (f" at {p.block_size} threads/block" if p.block_size else ""))
    lines.append(f"- registers/thread: {_fmt(p.registers)}; spills: {_fmt(p.spill_bytes, ' bytes')}; "
                 f"static shared memory: {_fmt(p.shared_bytes, ' bytes')}")
    for r in p.ncu_rules:
        est = r.get("estimated_speedup_pct")
        lines.append(f"- ncu rule {r.get('rule')}: {r.get('message')}"
                     + (f" (estimated speedup {est}%)" if est is not None else ""))
    lines.extend(f"- note: {w}" for w in p.warnings)
    return "\n".join(lines)


def _strategy_block(i: int, s: Mapping[str, Any], fence: str) -> str:
    before, after = s.get("example_before"), s.get("example_after")
    examples = (render("strategy_example", fence=fence, example_before=str(before).rstrip(),
                       example_after=str(after).rstrip()) if before and after else "")
    return render("strategy", index=i, name=s.get("name") or s.get("id", "?"), id=s.get("id", "?"),
                  guidance=s.get("guidance") or "(no guidance recorded)",
                  risk=s.get("risk") or "none recorded", examples=examples).rstrip()


def truncate_error(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """Keep the last ``limit`` characters of an error text, marking the cut."""
    text = text.strip()
    return text if len(text) <= limit else "[... earlier output cut ...]\n" + text[-limit:]


def build_messages(kernel_text: str, language: str, profile: Profile | None, direction: Mapping[str, Any],
                   strategies: Sequence[Mapping[str, Any]], transition_hints: Sequence[str],
                   task: str | None = None, error_feedback: str | None = None, *,
                   kernel_name: str | None = None) -> list[dict[str, str]]:
    """Chat messages (``[{"role": "system"|"user", "content": str}]``) for one generation step.

    Args:
        kernel_text: the current source file (or the current ``ModelNew`` candidate).
        language: ``"cuda"``, ``"triton"``, ``"cuda-in-python"`` or ``"python"``.
        profile: the kernel's profile (state s_t), or ``None`` when not profiled.
        direction: the chosen global node: ``{"name", "description"}``.
        strategies: retrieved local nodes, best first: ``{"id", "name", "guidance", "example_before",
            "example_after", "risk"}`` (missing keys are shown as "none recorded").
        transition_hints: sentences from the transition edges, e.g. "after X, Y paid off 7 of 9 times".
        task: a KernelBench problem source (then ``ModelNew`` is requested) or a free-form instruction;
            ``None`` means "make this kernel faster".
        error_feedback: the failure of the previous attempt (compiler output, mismatch report), if any.
        kernel_name: the kernel to optimize, named in the task and kept in the reply.

    Returns:
        The message list for ``chat.completions.create``.
    """
    lang_name, fence = language_info(language)
    if is_kernelbench_problem(task):
        task_text = render("kernelbench_task", language_name=lang_name, problem=str(task).rstrip())
    elif task:
        task_text = task.strip()
    else:
        who = f"`{kernel_name}`" if kernel_name else "in the file below"
        task_text = f"Make the kernel {who} faster on the GPU while keeping its results unchanged."
    strat_text = ("\n\n".join(_strategy_block(i, s, fence) for i, s in enumerate(strategies, 1))
                  if strategies else "No strategy retrieved: choose one that fits the direction.")
    hints = "\n".join(f"- {h}" for h in transition_hints) if transition_hints else \
        "- No transitions recorded yet for this state."
    error_section = (render("error_feedback", error_text=truncate_error(error_feedback))
                     if error_feedback else "")
    sig = f" (`{kernel_name}`)" if kernel_name else ""
    system = render("system", language_name=lang_name, fence=fence)
    user = render("user", task=task_text, language_name=lang_name, fence=fence,
                  kernel_text=kernel_text.rstrip(), profile_summary=profile_summary(profile),
                  direction_name=direction.get("name", "?"),
                  direction_description=direction.get("description") or "(no description)",
                  strategies=strat_text, transition_hints=hints, error_section=error_section,
                  signature_note=sig)
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}]


def repair_message(error_text: str, repair: int, max_repairs: int, language: str) -> dict[str, str]:
    """The user message that sends a failed check back to the model (repair round ``repair`` of ``max_repairs``)."""
    return {"role": "user", "content": render("repair", repair=repair, max_repairs=max_repairs,
                                              error_text=truncate_error(error_text),
                                              fence=language_info(language)[1]).strip()}
