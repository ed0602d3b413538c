"""A ranked step made into edits: one :class:`Proposal` per (kernel version, strategy), made once and reused.

The step's strategy goes to :func:`htam_core.generate.registry.create` (``"rules"``: the strategy's mechanical
transform, validated by the transforms registry; ``"llm"``: the OpenAI-compatible generator with the strategy's
guidance and the ranker's evidence as a transition hint). The generator's edits
(:class:`~htam_core.generate.edits.FileEdits`: the kernel's file and any other file the step changes) are the
proposal's edits as they are: nothing is re-diffed. A step that cannot be made is a :class:`Proposal` with
``ok=False`` and a reason for the user, never an exception.

:class:`Proposals` keeps them per version: the code-action list makes the rules engine's proposals while it checks
which steps can be made (:mod:`htam_core.editor.makeable`), and resolving an action returns the same proposal; the
LLM's proposal is made on the first resolve and kept for the next. A changed document is a new version (the key
holds a hash of the file's text), so its proposals are made again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from htam_core.generate.edits import FileEdits
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms.base import TextEdit
from htam_core.types.profile import Profile

__all__ = ["Proposal", "Proposals", "propose_step"]


@dataclass(frozen=True)
class Proposal:
    """A ranked step turned into edits, or the reason it cannot be.

    Attributes:
        strategy: the knowledge-base strategy id.
        ok: an edit exists.
        edits: the edits by file (``FileEdits.path is None``: the kernel's own file), byte offsets into the texts the
            step was proposed for.
        description: what the edit does.
        reason: why there is no edit (shown to the user), when not ``ok``.
        params: the transform's parameters, or the LLM call's metadata.
        title_note: a few words the action's title adds (``"launch in main.cpp edited too"``, ``"launch not
            found: correct for any grid"``), ``""`` when there is nothing to say.
    """

    strategy: str
    ok: bool
    edits: tuple[FileEdits, ...] = ()
    description: str = ""
    reason: str | None = None
    params: dict[str, Any] = field(default_factory=dict, compare=False)
    title_note: str = ""

    def kernel_edits(self) -> list[TextEdit]:
        """The edits of the kernel's own file (byte offsets into the text the step was proposed for)."""
        return [e for f in self.edits if f.path is None for e in f.edits]

    @classmethod
    def refused(cls, strategy: str, reason: str) -> Proposal:
        """A step that cannot be made, and why (one sentence for the user)."""
        return cls(strategy, False, reason=reason)


def _request(model: SourceModel, kernel: Kernel, strat: Any, direction: Any, profile: Profile | None,
             evidence: str) -> Any:
    # start-up cost: the generators load with the first proposal, not when the server imports the editor layer
    from htam_core.generate.registry import GenerationRequest

    d = {"name": direction.name, "description": direction.description} if direction is not None else {}
    return GenerationRequest(
        kernel_text=model.text, language=kernel.language, kernel_name=kernel.key, profile=profile, direction=d,
        strategies=[{"id": strat.id, "name": strat.title, "guidance": strat.guidance, "example_before": strat.before,
                     "example_after": strat.after, "risk": strat.risk, "transform": strat.transform}],
        transition_hints=[evidence] if evidence else [], model=model)


def propose_step(model: SourceModel, kernel: Kernel, strat: Any, direction: Any, profile: Profile | None, *,
                 engine: str = "rules", llm: Any = None, evidence: str = "",
                 llm_hint: str = 'Set htam.engine to "llm"') -> Proposal:
    """Turn the strategy ``strat`` (a knowledge-base :class:`~htam_core.memory.Strategy` of ``direction``, or
    ``None`` for the rules engine, which does not read it) into a :class:`Proposal` for ``kernel`` of ``model``
    (blocking: call it off the event loop).

    Args:
        engine: ``"rules"`` or ``"llm"`` (a generator kind of :mod:`htam_core.generate.registry`).
        llm: the :class:`htam_core.generate.config.LLMConfig` of the LLM engine (``None``: from the environment).
        evidence: the ranker's evidence line, passed to the LLM as a transition hint.
        llm_hint: how the reader gets the LLM engine, ending the refusal of a strategy with no transform.

    Returns:
        the proposal; never raises for a step that cannot be made.
    """
    # start-up cost: the generators, the parser and (below) the transforms load with the first proposal, not when
    # the server imports the editor layer
    from htam_core.generate.config import LLMConfig
    from htam_core.generate.errors import GenerationError
    from htam_core.generate.registry import create
    from htam_core.source import parse_text

    def no(why: str) -> Proposal:
        return Proposal.refused(strat.id, why)

    if kernel.incomplete or model.stale:
        return no(f"{kernel.key} does not parse yet (it is incomplete); finish it first")
    if engine != "llm" and not strat.transform:
        from htam_core.transforms.registry import no_transform_message  # start-up cost, as above

        return no(no_transform_message(strat.title, strat.guidance, llm_hint))
    try:
        if engine == "llm":
            from htam_core.runtime.cache import cache_root  # LLM engine only

            gen = create("llm", config=llm if llm is not None else LLMConfig(), log_dir=cache_root() / "llm")
        else:
            gen = create(engine)
        cands = gen.propose(_request(model, kernel, strat, direction, profile, evidence))
    except GenerationError as exc:
        return no(f"{'the LLM' if engine == 'llm' else 'the rules engine'} could not write “{strat.title}”: {exc}")
    if not cands:
        skipped = getattr(gen, "skipped", None)
        if engine != "llm":
            # the generator's refusal is already the whole sentence (transforms.registry.resolve_step)
            return no(skipped[0][1] if skipped else f"“{strat.title}” does not apply to {kernel.key}")
        return no(f"the LLM reply for “{strat.title}” held no code")
    cand = cands[0]
    if not cand.edits or (cand.code == model.text and not cand.files):  # a launcher-only step edits the launcher
        return no(f"the {engine} engine returned the file unchanged for “{strat.title}”")
    if engine == "llm":  # transforms validate their own output; a model's reply must keep the kernel
        new_model = parse_text(cand.code, model.file_language, model.path)
        if not any(k.answers_to(kernel.key) and not k.incomplete for k in new_model.kernels):
            return no(f"the LLM's version of the file no longer holds a complete kernel {kernel.key}; nothing was "
                      "changed")
    return Proposal(strat.id, True, tuple(cand.edits), cand.description, None, dict(cand.params),
                    cand.title_note)


class Proposals:
    """Values per key, each made once (a second caller of a key being made waits for it). Thread safe.

    The editor keys proposals by ``(kernel version, engine, strategy id)``
    (:meth:`htam_core.editor.makeable.Makeability.version` is the version).

    Args:
        size: how many values are kept (least recently used ones are dropped).
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._cache: OrderedDict[Hashable, Any] = OrderedDict()
        self._making: dict[Hashable, Future] = {}
        self.made = 0  #: how many values were made (not read from the cache)

    def peek(self, key: Hashable) -> Any | None:
        """The value of ``key``, or ``None`` when it is not made yet (never makes it)."""
        with self._lock:
            return self._cache.get(key)

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value of ``key``, made by ``make()`` (blocking) when it is not cached; ``make`` runs at most once per
        key while the value stays cached, even when several threads ask at once.

        Raises:
            whatever ``make`` raises (then nothing is cached, and the callers waiting for it get the same error).
        """
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            fut = self._making.get(key)
            owner = fut is None
            if owner:
                fut = self._making[key] = Future()
        assert fut is not None
        if not owner:
            return fut.result()
        try:
            value = make()
        except BaseException as exc:
            with self._lock:
                self._making.pop(key, None)
            fut.set_exception(exc)
            raise
        with self._lock:
            self.made += 1
            self._cache[key] = value
            self._making.pop(key, None)
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        fut.set_result(value)
        return value

    def clear(self) -> None:
        """Forget every value (the knowledge base or the engine changed)."""
        with self._lock:
            self._cache.clear()
