"""CUDA's built-in memory functions, told apart from a user's helpers that share a prefix.

A call of an atomic function reads and writes the element its first argument points to, and a load intrinsic
reads it; the analysis layer counts such a call as an access. A user's ``__device__`` helper whose name starts the
same way (``atomicAggInc(counter)``, ``__ldWrapper(p)``) is not one: what it does with a pointer is not known
from the call, so the pointer escapes. The one place these names are matched. Also the math functions whose call
is a value (:data:`PURE_MATH`).
"""

from __future__ import annotations

import re

__all__ = ["ATOMIC_BUILTIN", "LOAD_BUILTIN", "PURE_MATH", "is_atomic_builtin", "is_load_builtin", "plain_name"]


def plain_name(fn: str) -> str:
    """``::atomicAdd<float>`` -> ``atomicAdd``, ``detail::above<float>`` -> ``above``: a called name as written, without
    namespace or template arguments."""
    return fn.split("<", 1)[0].rsplit("::", 1)[-1].strip()


#: CUDA's atomic functions (CUDA C++ Programming Guide, "Atomic Functions"), with their ``_block``/``_system``
#: scopes: a call of one reads and writes the element its first argument points to. A user's helper whose name
#: merely starts with ``atomic`` (``atomicAggInc(counter)``) is not one: what it does with a pointer is unknown.
ATOMIC_BUILTIN = re.compile(r"(?:atomic(?:Add|Sub|Exch|Min|Max|Inc|Dec|CAS|And|Or|Xor)(?:_block|_system)?"
                            r"|__nv_atomic_\w+)")
#: The load intrinsics that read the element their argument points to (``__ldg``, ``__ldcg``, ``__ldca``,
#: ``__ldcs``, ``__ldlu``, ``__ldcv``; CUDA C++ Programming Guide, "Read-Only Data Cache Load Function", "Load
#: Functions Using Cache Hints").
LOAD_BUILTIN = re.compile(r"__ld(?:g|cg|ca|cs|lu|cv)")
#: CUDA math functions without effect whose value depends on their arguments only (CUDA Math API): a
#: per-element expression (a block load's value, a guard term) and a pure helper of the unit may call them.
PURE_MATH = frozenset({"fabsf", "fabs", "abs", "sqrtf", "sqrt", "expf", "exp", "__expf", "logf", "log", "__logf",
                       "tanhf", "tanh", "fmaxf", "fminf", "fmax", "fmin", "max", "min"})


def is_atomic_builtin(fn: str) -> bool:
    """``fn`` (a called function's text, ``atomicAdd`` or ``::atomicAdd``) is one of CUDA's atomic functions
    (:data:`ATOMIC_BUILTIN`)."""
    return ATOMIC_BUILTIN.fullmatch(plain_name(fn)) is not None


def is_load_builtin(fn: str) -> bool:
    """``fn`` is one of CUDA's load intrinsics (:data:`LOAD_BUILTIN`)."""
    return LOAD_BUILTIN.fullmatch(plain_name(fn)) is not None
