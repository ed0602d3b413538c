"""Resolving a ranked step into an edit of the editor's text, through the generator registry.

The step's strategy goes to :func:`htam_core.generate.registry.create` (``"rules"``: the strategy's mechanical
transform, validated by the transforms registry; ``"llm"``: the OpenAI-compatible generator with the strategy's
guidance and the ranker's evidence as a transition hint). The new file becomes **one** minimal edit
(:func:`minimal_edit`), so that an editor applies one small change and one undo reverts it. A step that cannot
be made is a :class:`Resolution` with ``ok=False`` and a reason for the user, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms.base import TextEdit
from htam_core.types.profile import Profile

__all__ = ["Resolution", "minimal_edit", "resolve_step"]


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix (binary search over slice comparisons: C speed on large files)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def minimal_edit(old: str, new: str) -> TextEdit:
    """One byte-offset :class:`TextEdit` turning ``old`` into ``new``: the span between their common prefix
    and common suffix (never splitting a UTF-8 character), so that an editor applies one small change."""
    a = old.encode("utf-8", errors="surrogatepass")
    b = new.encode("utf-8", errors="surrogatepass")
    p = _common_prefix(a, b)
    while p > 0 and p < len(a) and (a[p] & 0xC0) == 0x80:
        p -= 1
    s = _common_suffix(a, b, min(len(a), len(b)) - p)
    while s > 0 and (a[len(a) - s] & 0xC0) == 0x80:
        s -= 1
    return TextEdit(p, len(a) - s, b[p:len(b) - s].decode("utf-8", errors="surrogatepass"))


@dataclass
class Resolution:
    """A ranked step turned into an edit, or the reason it cannot be.

    Attributes:
        ok: an edit exists.
        edits: byte-offset edits on the model's text.
        new_text: the whole file after the edits.
        description: what the edit does.
        reason: why there is no edit (shown to the user), when not ``ok``.
        params: the transform's parameters, or the LLM call's metadata.
        file_edits: edits of other workspace files (the kernel's launch in a host file), path -> byte-offset
            edits of the file's text on disk; the step is one change over all of them.
        files: those files' whole new texts, path -> text (an editor checks that the file on disk still gives
            them before it applies ``file_edits``).
        title_note: where the launch was edited, or that the form is correct for any grid; ``""`` otherwise.
    """

    ok: bool
    edits: list[TextEdit] = field(default_factory=list)
    new_text: str | None = None
    description: str = ""
    reason: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    file_edits: dict[str, list[TextEdit]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    title_note: str = ""


def _request(model: SourceModel, kernel: Kernel, strat: Any, direction: Any, profile: Profile | None,
             evidence: str) -> Any:
    from htam_core.generate.registry import GenerationRequest

    return GenerationRequest(
        kernel_text=model.text, language=kernel.language, kernel_name=kernel.name, profile=profile,
        direction={"name": direction.name, "description": direction.description},
        strategies=[{"id": strat.id, "name": strat.title, "guidance": strat.guidance, "example_before": strat.before,
                     "example_after": strat.after, "risk": strat.risk, "transform": strat.transform}],
        transition_hints=[evidence] if evidence else [], model=model)


def resolve_step(model: SourceModel, kernel: Kernel, strat: Any, direction: Any, profile: Profile | None, *,
                 engine: str = "rules", llm: Any = None, evidence: str = "") -> Resolution:
    """Turn the strategy ``strat`` (a knowledge-base :class:`~htam_core.memory.Strategy` of ``direction``) into
    an edit of ``model`` for ``kernel`` (blocking: call it off the event loop).

    Args:
        engine: ``"rules"`` or ``"llm"`` (a generator kind of :mod:`htam_core.generate.registry`).
        llm: the :class:`htam_core.generate.config.LLMConfig` of the LLM engine (``None``: from the environment).
        evidence: the ranker's evidence line, passed to the LLM as a transition hint.

    Returns:
        the :class:`Resolution`; never raises for a step that cannot be made.
    """
    from htam_core.generate.config import LLMConfig
    from htam_core.generate.errors import GenerationError
    from htam_core.generate.registry import create
    from htam_core.source import parse_text

    if kernel.incomplete or model.stale:
        return Resolution(False, reason=f"{kernel.name} does not parse yet (it is incomplete); finish it first")
    if engine != "llm" and not strat.transform:
        from htam_core.transforms.registry import no_transform_message

        return Resolution(False, reason=no_transform_message(strat.title, strat.guidance, 'Set htam.engine to "llm"'))
    try:
        if engine == "llm":
            from htam_core.runtime.cache import cache_root

            gen = create("llm", config=llm if llm is not None else LLMConfig(), log_dir=cache_root() / "llm")
        else:
            gen = create(engine)
        cands = gen.propose(_request(model, kernel, strat, direction, profile, evidence))
    except GenerationError as exc:
        who = "the LLM" if engine == "llm" else "the rules engine"
        return Resolution(False, reason=f"{who} could not write “{strat.title}”: {exc}")
    if not cands:
        skipped = getattr(gen, "skipped", None)
        if engine != "llm":
            # the generator's refusal is already the whole sentence (transforms.registry.resolve_step)
            why = skipped[0][1] if skipped else f"“{strat.title}” does not apply to {kernel.name}"
            return Resolution(False, reason=why)
        return Resolution(False, reason=f"the LLM reply for “{strat.title}” held no code")
    cand = cands[0]
    if cand.code == model.text and not cand.files:
        return Resolution(False, reason=f"the {engine} engine returned the file unchanged for “{strat.title}”")
    if engine == "llm":  # transforms validate their own output; a model's reply must keep the kernel
        new_model = parse_text(cand.code, model.file_language, model.path)
        if not any(k.answers_to(kernel.name) and not k.incomplete for k in new_model.kernels):
            return Resolution(False, reason=f"the LLM's version of the file no longer holds a complete kernel "
                                            f"{kernel.name}; nothing was changed")
    edits = [minimal_edit(model.text, cand.code)] if cand.code != model.text else []
    return Resolution(True, edits, cand.code, cand.description, None, dict(cand.params),
                      dict(cand.file_edits), dict(cand.files), cand.title_note)
