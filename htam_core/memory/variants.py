"""The variant key: which concrete candidate of a strategy a record holds, in a form comparable across kernels.

A strategy with parameters proposes several candidates from one parent (block sizes, vector widths, tile shapes,
cache modifiers): its *variants*. The memory credits a variant (``RankerConfig.variants``, docs/MEMORY-LOG.md, v10)
by the key of its parameters, so the key must name what two kernels can share and drop what names one kernel's
own code. The rules (ours; they read the parameter dictionaries the transforms put on their candidates):

* the generator's bookkeeping (``transform_id``, ``changes_numerics``, ``reorders_only``) is dropped: it is the same for every
  variant of a strategy;
* a value that is a dict, or a list of anything but numbers, names the kernel's own variables, loads or loops
  (``{"params": ["x", "y"]}``, ``{"loads": ["tl.load(...)"]}``): dropped;
* a list of numbers under a key that names source positions (``line``, ``lines``, ``loops``) is dropped too;
  other lists of numbers (a block shape ``[32, 8]``) are kept;
* a numeric ``previous`` next to exactly one other numeric parameter is the kernel's own value of a parameter the
  kernel names (a Triton ``BLOCK_N``): the pair becomes ``scale`` = new / previous, since the name and the
  absolute value are the kernel's, and the change relative to it is what transfers;
* keys ``previous_*`` next to an absolute value (``previous_block``) are dropped: the launch configuration's
  absolute value is comparable across kernels (a block of 256 threads), the previous one is the parent's state;
* numbers are rounded to 6 significant digits; the key is the canonical JSON of what is left (sorted keys).

An empty result is the key ``"{}"`` (a strategy with one variant); no parameters at all (an LLM candidate, a
record older than v10) is ``None``: no variant evidence.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["variant_key"]

#: Generator bookkeeping in a candidate's parameters (not a variant's choice).
_BOOKKEEPING = frozenset({"transform_id", "changes_numerics", "reorders_only"})
#: Keys whose number lists are source positions of one kernel.
_POSITIONS = frozenset({"line", "lines", "loops"})


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _round(v: float) -> float | int:
    if isinstance(v, int):
        return v
    r = float(f"{v:.6g}")
    return int(r) if r.is_integer() else r


def variant_key(params: Mapping[str, Any] | None) -> str | None:
    """The variant key of a candidate's parameters (see the module docstring for the rules).

    Args:
        params: the candidate's parameters (``Candidate.params`` of the rules generator, or a step record's
            ``params``), or ``None``.

    Returns:
        canonical JSON (``'{"block": [256]}'``, ``'{"scale": 4}'``, ``'{}'``), or ``None`` when ``params`` is
        ``None`` or empty (nothing is known about the variant).
    """
    if not params:
        return None
    kept: dict[str, Any] = {}
    for k, v in params.items():
        k = str(k)
        if k in _BOOKKEEPING:
            continue
        if isinstance(v, list | tuple):
            if k in _POSITIONS or not v or not all(_number(x) for x in v):
                continue
            kept[k] = [_round(x) for x in v]
        elif isinstance(v, dict):
            continue
        elif _number(v):
            kept[k] = _round(v)
        elif v is None or isinstance(v, bool | str):
            kept[k] = v
    if _number(kept.get("previous")):
        others = [k for k, v in kept.items() if k != "previous" and _number(v)]
        if len(others) == 1 and kept["previous"] != 0:
            kept["scale"] = _round(kept.pop(others[0]) / kept.pop("previous"))
    for k in [k for k in kept if k.startswith("previous_")]:
        del kept[k]
    return json.dumps(kept, sort_keys=True, separators=(",", ":"))
