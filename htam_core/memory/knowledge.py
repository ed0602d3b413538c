"""The hand-written part of the Hierarchical Transition Graph: directions, strategies and priors.

It is loaded from the versioned data file ``knowledge.toml`` shipped in this package (the HTAM paper,
arXiv 2605.29734, also writes its schema and priors by hand; this text is our own). Loading validates
every cross-reference and parses every predicate, so a bad knowledge base fails at load with a message
that names the entry.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from htam_core.memory.facts import FACTS
from htam_core.memory.predicates import Predicate, PredicateError, parse_predicate
from htam_core.types.profile import BOTTLENECK_CLASSES

__all__ = ["Signal", "Direction", "Strategy", "TransitionPrior", "KnowledgeBase", "KnowledgeError",
           "load_knowledge"]

#: Languages a strategy may name.
LANGUAGES = ("cuda", "triton")


class KnowledgeError(ValueError):
    """The knowledge-base file is malformed; the message names the entry and the field."""


@dataclass(frozen=True)
class Signal:
    """A profile or feature signal that raises a prior.

    Attributes:
        when: predicate; the boost applies only when it is definitely true.
        boost: added to the prior, in log-speedup units.
        why: human-readable reason, used in rationales.
    """

    when: Predicate
    boost: float
    why: str


@dataclass(frozen=True)
class Direction:
    """A global node of the HTG: an optimization direction.

    Attributes:
        id: stable identifier (``"memory_access"``).
        name: display name (``"Memory Access"``).
        description: one sentence.
        signals: profile/feature signals that point to it.
    """

    id: str
    name: str
    description: str
    signals: tuple[Signal, ...] = ()


@dataclass(frozen=True)
class Strategy:
    """A local node of the HTG: a concrete strategy under one direction.

    Attributes:
        id: stable identifier; this is the ``step`` recorded in the store.
        title: short human title used in evidence lines ("vectorize loads (float4)").
        direction: id of its :class:`Direction`.
        languages: subset of ``("cuda", "triton")``.
        applies: applicability predicate over :data:`~htam_core.memory.facts.FACTS`.
        prior: base weight inside its direction, 0..1.
        signals: boosts to that weight.
        transform: id of the mechanical transform that implements it, or ``None``.
        ncu_rules: Nsight Compute rule names this strategy answers.
        risk: what can go wrong (numerics, races, alignment ...).
        guidance: instructions for an LLM.
        before, after: a short example.
    """

    id: str
    title: str
    direction: str
    languages: tuple[str, ...]
    applies: Predicate
    prior: float
    signals: tuple[Signal, ...]
    transform: str | None
    ncu_rules: tuple[str, ...]
    risk: str | None
    guidance: str
    before: str
    after: str

    def handles(self, language: str) -> bool:
        """Whether this strategy is listed for kernels of ``language`` exactly as named (``"cuda"``,
        ``"triton"``; a ``"cuda-in-python"`` kernel is not listed unless the caller maps it to its family)."""
        return language in self.languages


@dataclass(frozen=True)
class TransitionPrior:
    """A hand-written edge prior: after ``src``, doing ``dst`` is expected to give ``gain``.

    Attributes:
        level: ``"direction"`` or ``"strategy"``.
        src, dst: node ids at that level.
        gain: expected log speedup before any record exists.
        when, why, risk: the edge's note.
    """

    level: str
    src: str
    dst: str
    gain: float
    when: str
    why: str
    risk: str


@dataclass
class KnowledgeBase:
    """Directions, strategies and priors of one knowledge-base version.

    Attributes:
        version: integer version of the data file.
        directions: in file order.
        strategies: in file order.
        priors: bottleneck class -> direction id -> weight (log-speedup units).
        transitions: ``(level, src, dst)`` -> :class:`TransitionPrior`.
    """

    version: int
    directions: list[Direction]
    strategies: list[Strategy]
    priors: dict[str, dict[str, float]]
    transitions: dict[tuple[str, str, str], TransitionPrior] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._dir = {d.id: d for d in self.directions}
        self._strat = {s.id: s for s in self.strategies}

    def direction(self, direction_id: str) -> Direction:
        """The direction with that id. Raises KeyError with the known ids."""
        try:
            return self._dir[direction_id]
        except KeyError:
            raise KeyError(f"unknown direction {direction_id!r}; known: {', '.join(self._dir)}") from None

    def strategy(self, strategy_id: str) -> Strategy:
        """The strategy with that id. Raises KeyError with the known ids."""
        try:
            return self._strat[strategy_id]
        except KeyError:
            raise KeyError(f"unknown strategy {strategy_id!r}; known: {', '.join(self._strat)}") from None

    def has_strategy(self, strategy_id: str) -> bool:
        """Whether ``strategy_id`` names a strategy of this knowledge base."""
        return strategy_id in self._strat

    def has_direction(self, direction_id: str) -> bool:
        """Whether ``direction_id`` names a direction of this knowledge base."""
        return direction_id in self._dir

    def strategies_of(self, direction_id: str) -> list[Strategy]:
        """The strategies under ``direction_id``, in file order."""
        return [s for s in self.strategies if s.direction == direction_id]

    def prior_weight(self, bottleneck: str, direction_id: str) -> float:
        """Direction prior for a bottleneck class (``unknown`` row for unlisted classes)."""
        row = self.priors.get(bottleneck) or self.priors.get("unknown", {})
        return row.get(direction_id, 0.0)


def _require(entry: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in entry:
        raise KnowledgeError(f"{where}: missing field {key!r}")
    value = entry[key]
    if not isinstance(value, kind):
        raise KnowledgeError(f"{where}: field {key!r} has type {type(value).__name__}")
    return value


def _pred(text: str, where: str) -> Predicate:
    try:
        return parse_predicate(text, FACTS)
    except PredicateError as exc:
        raise KnowledgeError(f"{where}: {exc}") from None


def _signals(raw: list[dict[str, Any]], where: str) -> tuple[Signal, ...]:
    out = []
    for i, s in enumerate(raw):
        w = f"{where} signal {i + 1}"
        out.append(Signal(_pred(_require(s, "when", str, w), w), float(_require(s, "boost", (int, float), w)),
                          _require(s, "why", str, w)))
    return tuple(out)


def parse_knowledge(data: dict[str, Any]) -> KnowledgeBase:
    """Build and validate a :class:`KnowledgeBase` from parsed TOML.

    Raises:
        KnowledgeError: a missing or mistyped field, a duplicate id, an unknown reference, or a predicate
            that does not parse.
    """
    meta = _require(data, "meta", dict, "knowledge base")
    version = _require(meta, "version", int, "[meta]")
    directions: list[Direction] = []
    for i, d in enumerate(data.get("direction", [])):
        where = f"direction #{i + 1} ({d.get('id', '?')})"
        directions.append(Direction(_require(d, "id", str, where), _require(d, "name", str, where),
                                    _require(d, "description", str, where),
                                    _signals(d.get("signals", []), where)))
    dir_ids = [d.id for d in directions]
    if len(set(dir_ids)) != len(dir_ids):
        raise KnowledgeError("duplicate direction id")
    strategies: list[Strategy] = []
    for i, s in enumerate(data.get("strategy", [])):
        where = f"strategy #{i + 1} ({s.get('id', '?')})"
        direction = _require(s, "direction", str, where)
        if direction not in dir_ids:
            raise KnowledgeError(f"{where}: unknown direction {direction!r}")
        langs = tuple(_require(s, "languages", list, where))
        if not langs or any(lang not in LANGUAGES for lang in langs):
            raise KnowledgeError(f"{where}: languages must be a non-empty subset of {LANGUAGES}")
        prior = float(_require(s, "prior", (int, float), where))
        if not 0.0 <= prior <= 1.0:
            raise KnowledgeError(f"{where}: prior must be within 0..1")
        strategies.append(Strategy(
            id=_require(s, "id", str, where), title=_require(s, "title", str, where), direction=direction,
            languages=langs, applies=_pred(_require(s, "applies", str, where), where), prior=prior,
            signals=_signals(s.get("signals", []), where), transform=s.get("transform") or None,
            ncu_rules=tuple(s.get("ncu_rules", [])), risk=s.get("risk") or None,
            guidance=_require(s, "guidance", str, where).strip(), before=_require(s, "before", str, where),
            after=_require(s, "after", str, where)))
    strat_ids = [s.id for s in strategies]
    if len(set(strat_ids)) != len(strat_ids):
        dupes = sorted({x for x in strat_ids if strat_ids.count(x) > 1})
        raise KnowledgeError(f"duplicate strategy id(s): {', '.join(dupes)}")
    priors: dict[str, dict[str, float]] = {}
    for cls, row in _require(data, "priors", dict, "knowledge base").items():
        if cls not in BOTTLENECK_CLASSES:
            raise KnowledgeError(f"[priors.{cls}]: not a bottleneck class ({', '.join(BOTTLENECK_CLASSES)})")
        for did, w in row.items():
            if did not in dir_ids:
                raise KnowledgeError(f"[priors.{cls}]: unknown direction {did!r}")
            if not isinstance(w, int | float):
                raise KnowledgeError(f"[priors.{cls}].{did}: weight must be a number")
        priors[cls] = {did: float(w) for did, w in row.items()}
    if "unknown" not in priors:
        raise KnowledgeError("[priors.unknown] is required (used without a profile)")
    transitions: dict[tuple[str, str, str], TransitionPrior] = {}
    for i, t in enumerate(data.get("transition", [])):
        where = f"transition #{i + 1}"
        level = _require(t, "level", str, where)
        ids = dir_ids if level == "direction" else strat_ids if level == "strategy" else None
        if ids is None:
            raise KnowledgeError(f"{where}: level must be 'direction' or 'strategy'")
        src, dst = _require(t, "from", str, where), _require(t, "to", str, where)
        for node in (src, dst):
            if node not in ids:
                raise KnowledgeError(f"{where}: unknown {level} {node!r}")
        transitions[(level, src, dst)] = TransitionPrior(
            level, src, dst, float(_require(t, "gain", (int, float), where)), _require(t, "when", str, where),
            _require(t, "why", str, where), _require(t, "risk", str, where))
    return KnowledgeBase(version, directions, strategies, priors, transitions)


@functools.lru_cache(maxsize=4)
def _load_cached(path: str | None) -> KnowledgeBase:
    if path is None:
        text = resources.files("htam_core.memory").joinpath("knowledge.toml").read_text(encoding="utf-8")
        where = "htam_core/memory/knowledge.toml"
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise KnowledgeError(f"cannot read knowledge base {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise KnowledgeError(f"{path} is not a knowledge base: it is not UTF-8 text") from None
        where = path
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KnowledgeError(f"{where}: not valid TOML: {exc}") from None
    try:
        return parse_knowledge(data)
    except KnowledgeError as exc:
        raise KnowledgeError(f"{where}: {exc}") from None


def load_knowledge(path: str | Path | None = None) -> KnowledgeBase:
    """Load the knowledge base (the packaged ``knowledge.toml`` by default). Cached per path.

    Raises:
        KnowledgeError: unreadable, not TOML, or invalid (message names the entry).
    """
    return _load_cached(None if path is None else str(path))
