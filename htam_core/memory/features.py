"""The state vector s_t and the key/query encoding phi(s, h) of transition attention.

The state is a small dict of named floats built from a :class:`~htam_core.types.profile.Profile`
(the method's definition: "phi is a normalized feature vector: the bottleneck class, SOL percentages,
occupancy, resources, and the recent steps one-hot with position-aware weights"). It is stored with every
record as JSON, so its keys are part of the store format: :data:`STATE_KEYS` and (v9) :data:`STRUCT_KEYS`.

phi(s, h) (our concrete design) is the concatenation of three unit-normalized blocks, each scaled so that
``q . k`` is a weighted sum of cosine similarities:

* state block (weight :data:`W_STATE`): the state vector;
* prefix-strategy block (weight :data:`W_PREFIX_STRATEGY`): the last ``k`` strategy ids one-hot, the
  step ``j`` places before the end weighted ``GAMMA ** j`` (the last step weighs 1);
* structure block (v9; it shares :data:`W_STATE` with the state block, half each, when both the query and the
  record have it): the kernel's structure, :data:`STRUCT_KEYS`, from the analysis layer's facts
  (:func:`structure_from_facts`). Records made before v9 lack it (``struct`` = 0): they compare on the state
  block alone, with its whole weight, so an old store ranks as before;
* prefix-direction block (weight :data:`W_PREFIX_DIRECTION`): the same over the steps' directions (the
  hierarchy; dropped in the ``flat`` ablation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from htam_core.profile.classify import state_vector
from htam_core.types.profile import BOTTLENECK_CLASSES, Profile

if TYPE_CHECKING:  # the array functions import numpy when called: importing the package stays light
    import numpy as np

    from htam_core.source.model import Kernel, SourceModel

__all__ = ["STATE_KEYS", "PREFIX_LEN", "GAMMA", "W_STATE", "W_PREFIX_STRATEGY", "W_PREFIX_DIRECTION",
           "STRUCT_KEYS", "state_from_profile", "state_of_kernel", "structure_from_facts", "with_structure", "has_structure",
           "bottleneck_of_state", "state_tensor", "position_weights", "prefix_block",
           "unit_rows"]

#: Keys of the state vector, in encoding order: the keys of :func:`htam_core.profile.classify.state_vector`
#: (the profiler owns the state; a test checks that the two agree).
STATE_KEYS: tuple[str, ...] = tuple(f"class={c}" for c in BOTTLENECK_CLASSES) + (
    "measured", "sol_memory", "sol_compute", "theoretical_occupancy", "achieved_occupancy", "registers",
    "spill", "shared")
#: Keys of the structure block (v9), stored in the same state dict: ``struct`` = 1 marks a record that has the
#: block (older records lack every key, read as 0); the others are 0/1 pattern flags of the kernel read off
#: :func:`htam_core.memory.facts.compute_facts` (the analysis layer), an unknown fact encodes as 0.
STRUCT_KEYS: tuple[str, ...] = (
    "struct", "lang=triton", "lang=cuda", "matmul_like", "reduction_like", "stencil_like", "transpose_like",
    "row_loop", "uses_shared", "uses_vector_types", "has_loop", "grid_stride_loop", "uses_atomics", "uses_math")
#: Fact of :data:`~htam_core.memory.facts.FACTS` behind each structure key (``struct`` and the language aside).
_STRUCT_FACTS = {"matmul_like": "matmul_like", "reduction_like": "reduction_like", "stencil_like": "stencil_like",
                 "transpose_like": "transpose_like", "row_loop": "uncoalesced_row_loop", "uses_shared": "uses_shared",
                 "uses_vector_types": "uses_vector_types", "has_loop": "has_loop",
                 "grid_stride_loop": "has_grid_stride_loop", "uses_atomics": "uses_atomics", "uses_math": "uses_math"}
#: How many of the most recent steps form the prefix h_t.
PREFIX_LEN = 4
#: Position decay: the step j places before the last weighs GAMMA ** j.
GAMMA = 0.5
#: Weights of the blocks in q . k (they sum to 1, so q . k is in [0, 1] for non-negative features).
W_STATE = 0.5
W_PREFIX_STRATEGY = 0.35
W_PREFIX_DIRECTION = 0.15


def _clip01(x: float | None) -> float:
    if x is None or not math.isfinite(float(x)):
        return 0.0
    return min(max(float(x), 0.0), 1.0)


def state_from_profile(profile: Profile | None) -> dict[str, float]:
    """The state vector s_t of a profile, as ``{key: float in [0, 1]}`` with keys :data:`STATE_KEYS`.

    One-hot bottleneck class (secondary classes 0.5), measured flag, speed-of-light percentages / 100,
    theoretical and achieved occupancy, registers / 255, spills > 0, static shared bytes / 228 KiB;
    unmeasured values encode as 0. The vector is :func:`htam_core.profile.classify.state_vector` (the
    profiler owns the classification), each entry clipped to [0, 1] (NaN and inf encode as 0).
    ``None`` gives the state of an unknown kernel (``class=unknown`` = 1).
    """
    if profile is None:
        return {k: (1.0 if k == "class=unknown" else 0.0) for k in STATE_KEYS}
    vec = state_vector(profile)
    return {k: _clip01(vec[k]) for k in STATE_KEYS}


def structure_from_facts(facts: Mapping[str, Any]) -> dict[str, float]:
    """The structure block of a kernel, ``{key: 0.0 | 1.0}`` with keys :data:`STRUCT_KEYS`, from its facts
    (:func:`htam_core.memory.facts.compute_facts`; a fact that is unknown, ``None``, encodes as 0).

    Raises:
        KeyError: ``facts`` lacks ``language`` or a fact of the block.
    """
    out = {"struct": 1.0, "lang=triton": float(facts["language"] == "triton"),
           "lang=cuda": float(facts["language"] == "cuda")}
    out.update({k: float(facts[f] is True) for k, f in _STRUCT_FACTS.items()})
    return out


def state_of_kernel(profile: Profile | None, kernel: Kernel, model: SourceModel | None = None) -> dict[str, float]:
    """The state a record stores (v9): :func:`state_from_profile` with the structure block of ``kernel`` (its
    facts from :func:`htam_core.memory.facts.compute_facts`, the analysis layer; ``model``: the file it was read
    from, for the facts of the ``__device__`` functions it calls).

    Raises:
        ValueError: the kernel's language is unknown.
    """
    from htam_core.memory.facts import compute_facts  # the analysis layer; imported when a record is made

    return with_structure(state_from_profile(profile), compute_facts(kernel.features, kernel.language, profile,
                                                                     kernel, model))


def with_structure(state: Mapping[str, float], facts: Mapping[str, Any]) -> dict[str, float]:
    """``state`` with the structure block of ``facts`` added (kept as it is when it already has one)."""
    return dict(state) if has_structure(state) else {**state, **structure_from_facts(facts)}


def has_structure(state: Mapping[str, Any]) -> bool:
    """Whether a state dict carries the structure block (``struct`` = 1; records older than v9 do not)."""
    return float(state.get("struct", 0.0) or 0.0) > 0.0


def bottleneck_of_state(state: Mapping[str, Any]) -> str:
    """The bottleneck class encoded in a state dict (the largest one-hot entry), else ``"unknown"``."""
    best, best_v = "unknown", 0.0
    for c in BOTTLENECK_CLASSES:
        v = float(state.get(f"class={c}", 0.0) or 0.0)
        if v > best_v:
            best, best_v = c, v
    return best


def state_tensor(states: Sequence[Mapping[str, Any]], keys: Sequence[str] = STATE_KEYS) -> np.ndarray:
    """``[len(states), len(keys)]`` float64 numpy array of the states (missing keys are 0)."""
    import numpy as np  # function-level for start-up speed (see TYPE_CHECKING above)

    rows = [[float(s.get(k, 0.0) or 0.0) for k in keys] for s in states]
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(keys))


def position_weights(length: int, use_position: bool = True) -> list[float]:
    """Weights of the ``length`` prefix positions, oldest first: ``GAMMA ** (length - 1 - j)``, or all 1."""
    if not use_position:
        return [1.0] * length
    return [GAMMA ** (length - 1 - j) for j in range(length)]


def prefix_block(index: np.ndarray, lengths: np.ndarray, width: int, use_position: bool) -> np.ndarray:
    """Weighted one-hot encoding of prefixes.

    Args:
        index: ``[N, PREFIX_LEN]`` int64 array of vocabulary indices, oldest first, left-aligned,
            ``-1`` for padding or unknown ids.
        lengths: ``[N]`` prefix lengths (padding excluded; unknown ids still count as positions).
        width: vocabulary size.
        use_position: apply :func:`position_weights`; ``False`` weighs every position 1.

    Returns:
        ``[N, width]`` float64 array (not normalized).
    """
    import numpy as np  # function-level for start-up speed

    n = index.shape[0]
    pos = np.broadcast_to(np.arange(index.shape[1], dtype=np.float64)[None, :], index.shape)
    if use_position:
        weights = GAMMA ** (lengths.astype(np.float64)[:, None] - 1 - pos)
    else:
        weights = np.ones(index.shape, dtype=np.float64)
    valid = (index >= 0) & (pos < lengths[:, None])
    weights = np.where(valid, weights, 0.0)
    out = np.zeros((n, width + 1), dtype=np.float64)
    rows = np.broadcast_to(np.arange(n)[:, None], index.shape)
    np.add.at(out, (rows, np.where(valid, index, width)), weights)  # positions in order, as a scatter-add
    return out[:, :width]


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Each row of a ``[..., D]`` float64 array divided by its L2 norm (zero rows stay zero)."""
    import numpy as np  # function-level for start-up speed

    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.where(norm > 0, x / np.maximum(norm, 1e-12), 0.0)
