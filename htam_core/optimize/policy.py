"""Which steps to try next: HTAM ranking, a random order, or the whole transform space.

A policy turns the current kernel and its state into an ordered list of :class:`Choice` objects; the loop
walks that list until a generator yields a candidate that was not tried yet. ``htam`` is the method
(docs/MEMORY.md); ``random`` and ``exhaustive`` are the baselines of the benchmark suite.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from htam_core.memory import KnowledgeBase, RankedStep, Ranker
from htam_core.memory.variants import variant_key
from htam_core.source.model import Kernel, SourceModel
from htam_core.types.language import traits
from htam_core.types.profile import Profile

C = TypeVar("C")


@dataclass
class Choice:
    """One step a policy proposes: a strategy of the knowledge base, with the ranker's view of it."""

    direction: str
    strategy: str
    transform: str | None
    score: float | None
    evidence: str
    rationale: str
    ranked: RankedStep | None = None


def _language(kernel: Kernel) -> str:
    return traits(kernel.language).family


def htam_choices(ranker: Ranker, state: dict[str, float], prefix: Sequence[str], kernel: Kernel,
                 profile: Profile | None, top: int = 64, model: SourceModel | None = None,
                 fingerprint: str | None = None) -> list[Choice]:
    """Every applicable step, in HTAM rank order (direction score, then strategy score); ``model``: the file the
    kernel was read from, ``fingerprint``: the kernel's memory id, so its own records at this node count as its
    own evidence (see :meth:`Ranker.rank`)."""
    ranked = ranker.rank(state, list(prefix), kernel.features, _language(kernel), profile, top=top,
                         kernel=kernel, model=model, fingerprint=fingerprint)
    return [Choice(r.direction, r.strategy, r.transform, r.score, r.evidence, r.rationale, r) for r in ranked]


def order_variants(ranker: Ranker, state: dict[str, float], prefix: Sequence[str], strategy: str,
                   candidates: Sequence[C], kernel: Kernel, profile: Profile | None,
                   model: SourceModel | None = None) -> list[C]:
    """The candidates (variants) one strategy proposed, best first by the memory's variant scores
    (:meth:`Ranker.rank_variants`, docs/MEMORY-LOG.md v10); ties keep the transform's order, so an empty memory, the
    ``no-local`` ablation and ``RankerConfig(variants=False)`` give the transform's order unchanged.

    Args:
        candidates: objects with a ``params`` mapping (the rules generator's candidates), in the transform's order.
    """
    return order_variants_scored(ranker, state, prefix, strategy, candidates, kernel, profile, model)[0]


def order_variants_scored(ranker: Ranker, state: dict[str, float], prefix: Sequence[str], strategy: str,
                          candidates: Sequence[C], kernel: Kernel, profile: Profile | None,
                          model: SourceModel | None = None) -> tuple[list[C], bool]:
    """:func:`order_variants`, and whether the memory holds evidence on the strategy's variants (a score that is
    not 0: records of the strategy, of these variants or shrunk toward the strategy's): ``False`` when the order is
    the transform's alone (an empty memory for the strategy, the ``no-local`` ablation, ``variants=False``), a
    prior the loop may check by trying the next variants of a step that improved (``_Loop._sibling_step``)."""
    keys = [variant_key(getattr(c, "params", None)) for c in candidates]
    scores = ranker.rank_variants(state, list(prefix), strategy, keys, kernel.features, _language(kernel), profile,
                                  kernel=kernel, model=model)
    order = sorted(range(len(candidates)), key=lambda i: -scores[i])
    return [candidates[i] for i in order], any(x != 0.0 for x in scores)


def random_choices(kb: KnowledgeBase, ranker: Ranker, kernel: Kernel, profile: Profile | None,
                   rng: random.Random, model: SourceModel | None = None) -> list[Choice]:
    """The same applicable strategies as HTAM sees, in a uniformly random order."""
    strategies = list(ranker.applicable(kernel.features, _language(kernel), profile, kernel, model))
    rng.shuffle(strategies)
    return [Choice(s.direction, s.id, s.transform, None, "random order (baseline)", "random policy")
            for s in strategies]


def all_choices(kb: KnowledgeBase, ranker: Ranker, kernel: Kernel, profile: Profile | None,
                model: SourceModel | None = None) -> list[Choice]:
    """Every applicable strategy, in knowledge-base order (for exhaustive search)."""
    return [Choice(s.direction, s.id, s.transform, None, "exhaustive search", "exhaustive policy")
            for s in ranker.applicable(kernel.features, _language(kernel), profile, kernel, model)]
