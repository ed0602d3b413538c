"""Triton ``tl.constexpr`` values as HTAM reads, carries and shows them.

A constexpr may hold any value Triton accepts: an int, a float, a bool, ``None``, a string (``ACTIVATION="silu"``)
or a Triton dtype (``OUT_DTYPE=tl.float16``). The static compile runs in a worker that speaks JSON, so a dtype
travels as the marker ``{"triton_dtype": "float16"}`` (the attribute name of ``triton.language``) and becomes
``tl.float16`` again in the worker (:func:`to_triton`); the other values are JSON as they are.

Values are read from source text with :func:`ast.literal_eval` (never executed), plus the dtype spellings
``tl.X`` / ``triton.language.X`` / ``language.X``. :data:`UNKNOWN` stands for "no value", since ``None`` is one.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Final

__all__ = ["UNKNOWN", "constexpr_text", "dtype_value", "is_constexpr_value", "is_dtype", "parse_cli_value",
           "from_triton", "read_constexpr", "to_triton"]


class _Unknown:
    """The one "value not known" marker (``None`` is a constexpr value of its own)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


#: No value known for a constexpr expression.
UNKNOWN: Final = _Unknown()

#: The element types of ``triton.language`` a constexpr may name.
_DTYPE = re.compile(r"(?:bfloat16|u?int(?:1|8|16|32|64)|float(?:16|32|64)|float8\w+)")
#: The modules a dtype is spelled from: ``tl.float16``, ``triton.language.float16``, ``language.float16``.
_DTYPE_MODULES = frozenset({"tl", "triton.language", "language"})
_KEY = "triton_dtype"


def dtype_value(name: str) -> dict[str, str]:
    """The JSON form of the Triton dtype ``triton.language.<name>`` (``"float16"`` -> ``{"triton_dtype":
    "float16"}``)."""
    return {_KEY: name}


def is_dtype(v: Any) -> bool:
    """True for the JSON form of a Triton dtype (:func:`dtype_value`)."""
    return isinstance(v, dict) and set(v) == {_KEY} and isinstance(v[_KEY], str)


def is_constexpr_value(v: Any) -> bool:
    """True for a value a constexpr may hold in HTAM's form: int, float, bool, str, ``None`` or a dtype marker."""
    return v is None or isinstance(v, bool | int | float | str) or is_dtype(v)


def _dtype_name(text: str) -> str | None:
    module, _, attr = text.strip().rpartition(".")
    return attr if module.replace(" ", "") in _DTYPE_MODULES and _DTYPE.fullmatch(attr) else None


def read_constexpr(text: str | None) -> Any:
    """The constexpr value a Python expression spells, or :data:`UNKNOWN`.

    Args:
        text: source text such as ``"128"``, ``"'silu'"``, ``"True"``, ``"None"``, ``"tl.float16"``.

    Returns:
        an int/float/bool/str/``None`` (a literal), a dtype marker (:func:`dtype_value`), else :data:`UNKNOWN`
        (a name, a call, anything that needs evaluating). Raises nothing.
    """
    if text is None:
        return UNKNOWN
    name = _dtype_name(text)
    if name is not None:
        return dtype_value(name)
    try:
        v = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return UNKNOWN
    return v if v is None or isinstance(v, bool | int | float | str) else UNKNOWN


def parse_cli_value(text: str) -> Any:
    """A ``--constexpr NAME=VALUE`` value: a Python literal when it is one (``1024``, ``0.5``, ``True``, ``None``,
    ``'silu'``), a dtype for ``tl.float16``, else the text itself as a string (``silu``)."""
    v = read_constexpr(text)
    return text.strip() if v is UNKNOWN else v


def constexpr_text(v: Any) -> str:
    """A constexpr value as the user would write it: ``128``, ``'silu'``, ``None``, ``tl.float16``."""
    if is_dtype(v):
        return f"tl.{v[_KEY]}"
    return repr(v) if isinstance(v, str) else str(v)


def to_triton(v: Any) -> Any:
    """A value in HTAM's form as Triton takes it: a dtype marker becomes ``triton.language.<name>`` (imports
    Triton: call it in the compile worker only); anything else is returned as it is.

    Raises:
        ValueError: the marker names no dtype of this Triton.
    """
    if not is_dtype(v):
        return v
    import triton.language as tl

    d = getattr(tl, v[_KEY], None)
    if not isinstance(d, tl.dtype):
        raise ValueError(f"triton.language has no dtype {v[_KEY]!r}")
    return d


def from_triton(v: Any) -> Any:
    """A value Triton holds (a default, an autotune config's) in HTAM's JSON form: a ``tl.dtype`` becomes its
    marker; a plain value stays; anything else becomes its ``repr``."""
    if is_constexpr_value(v) and not isinstance(v, dict):
        return v
    import triton.language as tl

    if isinstance(v, tl.dtype):
        name = next((n for n in dir(tl) if _DTYPE.fullmatch(n) and getattr(tl, n) == v), None)
        if name is not None:
            return dtype_value(name)
    return repr(v)
