"""Which ranked steps can be made on a kernel as it is now: checked once per kernel version, then cached.

A ranked strategy is one of three things for the kernel under the cursor:

* **makeable**: its mechanical transform makes a validated edit of this kernel version (the rules engine's
  :class:`~htam_core.editor.proposals.Proposal`, made here and kept with the verdict: resolving the code action
  returns it, never running the transform again), so it is offered as a code action;
* **advice**: it has no mechanical transform, so the rules engine can never write it; it is shown in the hover
  with how to apply it by hand (and offered as a code action only when the LLM engine is configured);
* **not applicable**: its transform refuses this kernel (the refusal sentence says why); it is not offered.

:class:`Makeability` keeps the verdicts per ``(kernel version, file version, strategy)`` (the kernel's
:func:`~htam_core.editor.profiles.content_hash` and a hash of the file's text: a transform may read the rest of
the file, e.g. another launch that shares the block-size macro), so that the transforms run at most once per
version and strategy, off the event loop (a verdict another thread is computing is waited for, not computed
twice). :func:`plan` splits one
ranking into the code actions, the advice and the skipped steps, from those verdicts, checking lazily in rank
order only as far as the list needs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from htam_core.editor.profiles import content_hash
from htam_core.editor.proposals import Proposal, Proposals, propose_step
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms.registry import is_structural
from htam_core.types.text import first_sentence

__all__ = ["LLM_HINT", "Makeability", "Plan", "Verdict", "check", "plan", "warm_up"]

#: How the editor user gets the LLM engine (the end of the refusal of a strategy with no transform).
LLM_HINT = 'Set htam.engine to "llm"'


@dataclass(frozen=True)
class Verdict:
    """Whether the rules engine makes one strategy on one kernel version.

    Attributes:
        strategy: the knowledge-base strategy id.
        makeable: the strategy's transform makes at least one validated edit of this kernel version.
        advice: the strategy has no mechanical transform (only a person or the LLM can write it).
        structural: the strategy's transform is of kind ``"structural"`` (registry :data:`KINDS`).
        reason: why it cannot be made (one sentence), ``None`` when makeable.
        how: for advice, how to apply it by hand (the first sentence of its guidance), else ``""``.
        proposal: the rules engine's :class:`~htam_core.editor.proposals.Proposal` made by the check (what
            resolving the code action returns), ``None`` for an unknown strategy.
    """

    strategy: str
    makeable: bool
    advice: bool
    structural: bool
    reason: str | None = None
    how: str = ""
    proposal: Proposal | None = field(default=None, compare=False, repr=False)


def _how(guidance: str) -> str:
    """The first sentence of a strategy's guidance, on one line."""
    return first_sentence(guidance)


def check(strategy: Any, model: SourceModel, kernel: Kernel, *, llm_hint: str = LLM_HINT) -> Verdict:
    """The :class:`Verdict` of the knowledge-base :class:`~htam_core.memory.Strategy` ``strategy`` on ``kernel``
    of ``model``, with the rules engine's :class:`~htam_core.editor.proposals.Proposal` (blocking: it runs the
    transform and validates its candidates). Never raises.

    ``llm_hint``: how the reader gets the LLM engine (the end of the refusal of a strategy with no transform; see
    :func:`~htam_core.transforms.registry.no_transform_message`)."""
    p = propose_step(model, kernel, strategy, None, None, engine="rules", llm_hint=llm_hint)
    if not strategy.transform:
        return Verdict(strategy.id, False, True, False, p.reason or "", _how(strategy.guidance), p)
    return Verdict(strategy.id, p.ok, False, is_structural(strategy.transform),
                   None if p.ok else (p.reason or "the transform made no edit"), "", p)


_WARM_CUDA = ("__global__ void htam_warm(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; "
              "if (i < n) x[i] = 2.0f * x[i]; }\nvoid launch(float* x, int n) { htam_warm<<<(n + 255) / 256, 256>>>"
              "(x, n); }\n")
_WARM_TRITON = ("import triton\nimport triton.language as tl\n\n@triton.jit\ndef htam_warm(x_ptr, n, BLOCK: "
                "tl.constexpr):\n    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs, "
                "mask=offs < n)\n    tl.store(x_ptr + offs, x * 2.0, mask=offs < n)\n")


def warm_up() -> None:
    """Load every transform module and the analysis layer (sympy) by checking two tiny kernels (blocking; about
    as long as the imports), so that the first kernel version an editor checks costs only its own transforms."""
    from htam_core.source import parse_text
    from htam_core.transforms.registry import all_transforms, propose

    for text, lang, tid in ((_WARM_CUDA, "cuda", "cuda.restrict_const"), (_WARM_TRITON, "python", "triton.cache_hints")):
        model = parse_text(text, lang)  # type: ignore[arg-type]
        if model.kernels:
            propose(tid, model, model.kernels[0])
    all_transforms()


class Makeability:
    """Verdicts per ``(kernel version, strategy id)``, each computed once (with its proposal). Thread safe.

    Args:
        strategy: ``strategy(step_id) -> Strategy`` (raises ``KeyError`` for an unknown id).
        size: how many verdicts are kept (least recently used ones are dropped).
    """

    def __init__(self, strategy: Callable[[str], Any], size: int = 4096) -> None:
        self._strategy = strategy
        self._cache = Proposals(size)

    @property
    def checks(self) -> int:
        """How many verdicts were computed (not read from the cache)."""
        return self._cache.made

    @staticmethod
    def version(model: SourceModel, kernel: Kernel) -> str:
        """The version a verdict belongs to: the kernel's content hash and the file text's hash."""
        text = hashlib.sha256(model.text.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]
        return f"{content_hash(kernel)}:{text}:{kernel.key}"

    def peek(self, model: SourceModel, kernel: Kernel, step_ids: Sequence[str]) -> dict[str, Verdict] | None:
        """The cached verdicts of ``step_ids`` on ``kernel`` of ``model``, or ``None`` when one is not known yet
        (never runs a transform)."""
        get = self.cached(model, kernel)
        out = {s: get(s) for s in step_ids}
        return None if any(v is None for v in out.values()) else out  # type: ignore[return-value]

    def cached(self, model: SourceModel, kernel: Kernel) -> Callable[[str], Verdict | None]:
        """A function giving the cached verdict of one step id on ``kernel`` of ``model``, or ``None`` (never runs a
        transform)."""
        h = self.version(model, kernel)
        return lambda step_id: self._cache.peek((h, step_id))

    def computing(self, model: SourceModel, kernel: Kernel) -> Callable[[str], Verdict]:
        """A function giving the verdict of one step id on ``kernel`` of ``model``, computed when not cached
        (blocking)."""
        return lambda step_id: self.verdicts(model, kernel, [step_id])[step_id]

    def verdicts(self, model: SourceModel, kernel: Kernel, step_ids: Sequence[str]) -> dict[str, Verdict]:
        """The verdict of each of ``step_ids`` on ``kernel`` (one of ``model.kernels``), computing the ones not
        cached (blocking: call it off the event loop; a verdict being computed by another thread is waited for).
        An unknown strategy id is advice-less and not makeable."""
        h = self.version(model, kernel)
        return {sid: self._cache.get((h, sid), lambda sid=sid: self._check(sid, model, kernel)) for sid in step_ids}

    def _check(self, step_id: str, model: SourceModel, kernel: Kernel) -> Verdict:
        try:
            return check(self._strategy(step_id), model, kernel)
        except KeyError as exc:
            return Verdict(step_id, False, False, False, str(exc.args[0]))

    def clear(self) -> None:
        """Forget every verdict (the knowledge base was reloaded)."""
        self._cache.clear()


@dataclass
class Plan:
    """One ranking split by what can be made.

    Attributes:
        actions: ranked steps offered as code actions, best first (at most ``top``).
        advice: ranked strategies with no mechanical transform, with their verdicts (shown in the hover).
        skipped: ranked steps whose transform refuses this kernel, with their verdicts (not offered).
        verdicts: step id -> :class:`Verdict` of every ranked step looked at.
        complete: every verdict the plan needed was known (``False``: a verdict function gave ``None``).
    """

    actions: list[Any] = field(default_factory=list)
    advice: list[tuple[Any, Verdict]] = field(default_factory=list)
    skipped: list[tuple[Any, Verdict]] = field(default_factory=list)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    complete: bool = True


def plan(steps: Sequence[Any], verdicts: dict[str, Verdict] | Callable[[str], Verdict | None], top: int, *,
         llm: bool, need: int | None = None) -> Plan:
    """Split the ranked ``steps`` (:class:`~htam_core.memory.RankedStep`, best first) by their verdicts.

    Args:
        verdicts: step id -> :class:`Verdict`, or a function giving the verdict of one step id (``None``: not
            known; the plan stops there). A function is asked lazily, in rank order, only until ``top`` actions
            are found and the first ``top`` ranks are seen, so that a kernel version runs few transforms.
        top: how many code actions at most; advice is kept from the first ``top`` ranked steps only.
        llm: the LLM engine is configured: every ranked step, advice included, is offered as a code action
            (the model writes it); otherwise only makeable steps are.
        need: stop checking transforms once this many actions are found (the hover needs only the first: its
            recommendation is the list's first action whatever ``top`` is); the advice of the first ``top`` ranks
            is still collected (it runs no transform). ``None``: ``top``.
    """
    verdict_of = verdicts.get if isinstance(verdicts, dict) else verdicts
    need = top if need is None else min(need, top)
    out = Plan()
    for i, s in enumerate(steps):
        if len(out.actions) >= need and i >= top:
            break
        if len(out.actions) >= need and getattr(s, "transform", None):
            continue  # enough actions: only the advice (no transform) of the first ranks is still wanted
        v = verdict_of(s.strategy)
        if v is None:
            out.complete = False
            break
        out.verdicts[s.strategy] = v
        if v.advice:
            if i < top:
                out.advice.append((s, v))
            if llm and len(out.actions) < top:
                out.actions.append(s)
        elif v.makeable or llm:
            if len(out.actions) < top:
                out.actions.append(s)
        else:
            out.skipped.append((s, v))
    return out
