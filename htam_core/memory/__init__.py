"""HTAM memory: the Hierarchical Transition Graph, its knowledge base, the SQLite store and the ranker.

Public API::

    load_knowledge() -> KnowledgeBase
    open_store(path=None, workspace=None, on_corrupt="error") -> Store
    Store.record(prefix, state, step, outcome, fingerprint, device) -> Record
    Ranker(kb, store, seed=0, ablation=None).rank(state, prefix, features, language, profile, top=5)
        -> list[RankedStep]
    state_from_profile(profile) -> dict[str, float]

See docs/MEMORY.md for the method, the formulas and the choices made where the HTAM paper leaves them open.

The ranker's names (:data:`ABLATIONS`, :class:`RankedStep`, :class:`Ranker`, :class:`RankerConfig`) are imported
on first use: the ranker imports numpy and the analysis layer, which importing the package (the language server's
start-up, its source-only profile) does not need. The ranker never imports torch.
"""

from typing import Any

from htam_core.memory.features import STATE_KEYS, STRUCT_KEYS, state_from_profile, state_of_kernel
from htam_core.memory.knowledge import (
    Direction,
    KnowledgeBase,
    KnowledgeError,
    Strategy,
    TransitionPrior,
    load_knowledge,
)
from htam_core.memory.predicates import PredicateError, parse_predicate
from htam_core.memory.records import Outcome, Record, Stats, outcome_value
from htam_core.memory.store import MemoryStoreError, Store, default_store_path, open_store

__all__ = [
    "ABLATIONS", "STATE_KEYS", "Direction", "KnowledgeBase", "KnowledgeError", "MemoryStoreError", "Outcome",
    "PredicateError", "RankedStep", "Ranker", "RankerConfig", "Record", "Stats", "Store", "Strategy",
    "TransitionPrior", "default_store_path", "load_knowledge", "open_store", "outcome_value",
    "parse_predicate", "state_from_profile", "state_of_kernel", "STRUCT_KEYS",
]

_RANKER_NAMES = ("ABLATIONS", "RankedStep", "Ranker", "RankerConfig")


def __getattr__(name: str) -> Any:
    """The ranker's names of :data:`__all__` (PEP 562), imported when first asked for.

    Raises:
        AttributeError: ``name`` is not one of them.
    """
    if name in _RANKER_NAMES:
        from htam_core.memory import ranker  # function-level for start-up speed (see the module docstring)

        return getattr(ranker, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
