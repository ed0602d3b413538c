"""Let Triton's CPU interpreter read every constexpr spelling that Triton's compiler reads.

Triton's compiler marks a parameter as a compile-time constant when its annotation *contains* ``constexpr``
(``triton.runtime.jit.KernelParam.is_constexpr``), so ``BLOCK: tl.constexpr``, ``BLOCK: language.constexpr``
(``import triton.language as language``) and ``BLOCK: T.constexpr`` all compile on a GPU. The interpreter
(``TRITON_INTERPRET=1``, ``triton.runtime.interpreter.GridExecutor``) only accepts an annotation that normalizes to
exactly ``constexpr`` (``tl.constexpr`` or a bare ``constexpr``), and fails on the others with
``arange's arguments must be of type tl.constexpr``: valid code refused only because there is no GPU.

:func:`read_constexpr_spellings` patches the interpreter, in the process that runs the user's code (a worker or the
harness recorder, never the server), to apply the compiler's rule. It changes nothing for code the interpreter
already accepts.
"""

from __future__ import annotations

import inspect
import os
import re
from typing import Any

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_MARK = "_htam_reads_constexpr_spellings"


def _resolve(annotation: Any, scope: dict[str, Any]) -> Any:
    """A string annotation that names an object (``C``, ``language.constexpr``) resolved in the kernel's module,
    by name lookup and attribute access only (nothing is evaluated); else the annotation itself."""
    if not isinstance(annotation, str) or not _DOTTED.fullmatch(annotation.strip()):
        return annotation
    head, *rest = annotation.strip().split(".")
    if head not in scope:
        return annotation
    obj = scope[head]
    for part in rest:
        if not hasattr(obj, part):
            return annotation
        obj = getattr(obj, part)
    return obj


def _is_constexpr(annotation: Any, normalize: Any, scope: dict[str, Any]) -> bool:
    """The compiler's rule: ``"constexpr"`` in the normalized annotation (``KernelParam.is_constexpr``), the
    annotation read as the compiler sees it (the object a name refers to, as when the module is imported)."""
    if annotation is None or annotation is inspect.Parameter.empty:
        return False
    try:
        return "constexpr" in normalize(annotation) or "constexpr" in normalize(_resolve(annotation, scope))
    except Exception:  # noqa: BLE001 - an annotation Triton cannot normalize is not a constexpr
        return False


def read_constexpr_spellings() -> bool:
    """Make the Triton interpreter treat every parameter the compiler treats as ``constexpr`` as one.

    Does nothing unless ``TRITON_INTERPRET=1`` and Triton is importable; safe to call more than once.

    Returns:
        ``True`` when the interpreter is patched (now or earlier), ``False`` when there is nothing to patch
        (no interpreter mode, no Triton, or a Triton without ``GridExecutor``).

    Raises:
        Nothing: a Triton whose internals differ is left as it is.
    """
    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    try:
        from triton.runtime import interpreter
        from triton.runtime.jit import _normalize_ty
    except Exception:  # noqa: BLE001 - no Triton, or one without these internals
        return False
    executor = getattr(interpreter, "GridExecutor", None)
    if executor is None:
        return False
    if getattr(executor, _MARK, False):
        return True
    original = executor.__init__

    def __init__(self: Any, fn: Any, arg_names: Any, grid: Any, *args: Any, **kwargs: Any) -> None:
        original(self, fn, arg_names, grid, *args, **kwargs)
        try:
            annotations = inspect.get_annotations(fn)
            scope = dict(getattr(fn, "__globals__", {}))
            known = list(getattr(self, "constexprs", []))
        except Exception:  # noqa: BLE001 - leave the interpreter's own reading
            return
        extra = [n for n in arg_names if n not in known and _is_constexpr(annotations.get(n), _normalize_ty, scope)]
        if extra:
            self.constexprs = known + extra

    executor.__init__ = __init__
    setattr(executor, _MARK, True)
    return True
