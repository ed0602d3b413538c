"""The functions of the unit a CUDA kernel calls that are pure: a call of one is a value, like ``fabsf(v)``.

A kernel often spells a per-element test or formula through a small helper of its own file::

    __device__ bool above(float v, float t) { return v > t; }
    ...
    s[tid] = (i < n && above(x[i], thr)) ? 1u : 0u;

A call of such a helper can be evaluated for another element, moved or repeated like the expression it returns,
when its body has no effect visible outside it and reads nothing that differs between threads for the same
arguments. :func:`pure_device_calls` names those of the kernel's calls: the callee is a ``__device__`` function
of the unit defined once (:func:`~htam_core.source.analysis.device_defs.device_functions`: ``__host__ __device__``,
``inline``, ``static``, ``__forceinline__`` ones too), and its body

- writes only its own locals and by-value parameters (a plain name, or an element or ``.`` field of a local array
  or struct), never through a pointer or a reference, a global or a ``static`` local; declares no ``__shared__``
  variable;
- calls only :data:`~htam_core.source.analysis.builtins.PURE_MATH`, casts and load intrinsics
  (:func:`~htam_core.source.analysis.syntax.effect_free_call`) and other such pure functions of the unit (no
  atomics, barriers, warp intrinsics, ``printf``; recursion is not followed);
- has no inline ``asm``, ``new``/``delete``, ``throw`` or lambda, and names no thread or block index or
  cooperative-groups query (its value is then the same in every thread for the same arguments).

Idea source: the "pure"/"const" function attributes of GCC and LLVM's ``readonly`` function effects, decided here
from the definition's syntax, conservatively (``False`` when in doubt).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from htam_core.source.analysis.builtins import PURE_MATH, plain_name
from htam_core.source.analysis.device_defs import device_functions
from htam_core.source.analysis.syntax import effect_free_call, of_type, text, unwrap_parens, walk

__all__ = ["pure_device_calls"]

#: Text that reads a thread's or block's index, or a cooperative-groups query, in a definition.
_READS_INDICES = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim|warpSize|this_grid|this_thread_block"
                            r"|thread_rank|tiled_partition|coalesced_threads)\b")
#: Node kinds whose presence in a body is an effect or cannot be followed.
_REFUSED = frozenset({"gnu_asm_expression", "asm_statement", "new_expression", "delete_expression",
                      "throw_statement", "lambda_expression", "goto_statement"})
#: Declarator kinds that bind a name to memory outside the function (a reference) or to its address.
_ALIASING = frozenset({"reference_declarator", "pointer_declarator"})


def pure_device_calls(root: Node, data: bytes, calls: tuple[str, ...]) -> tuple[str, ...]:
    """Of the functions ``calls`` a kernel calls (names, as in
    :attr:`~htam_core.source.analysis.facts.KernelFacts.device_calls`), those that are pure (module docstring), in
    the same order.

    Args:
        root: the unit's parse tree root.
        data: the unit's bytes.
        calls: the called names, without namespace or template arguments.

    Never raises for odd code: a definition that cannot be read is not pure.
    """
    devices = device_functions(root, data)
    known: dict[str, bool] = {}
    return tuple(c for c in calls if _pure(c, devices, data, known, frozenset()))


def _pure(name: str, devices: dict[str, Node], data: bytes, known: dict[str, bool], seen: frozenset[str]) -> bool:
    """The unit function ``name`` is pure (``known``: names decided; ``seen``: the call chain, to stop recursion)."""
    if name in known:
        return known[name]
    fn = devices.get(name)
    body = fn.child_by_field_name("body") if fn is not None else None
    ok = (fn is not None and body is not None and name not in seen and not fn.has_error
          and not _READS_INDICES.search(text(fn, data)) and _writes_local_only(fn, body, data)
          and all(n.type not in _REFUSED for n in walk(body)) and _no_outside_storage(body, data)
          and all(_pure_call(c, devices, data, known, seen | {name}) for c in of_type(body, "call_expression")))
    known[name] = ok
    return ok


def _callee(call: Node, data: bytes) -> str:
    """The called name without namespace or template arguments (``detail::above<float>`` -> ``above``)."""
    fn = call.child_by_field_name("function")
    return plain_name(text(fn, data)) if fn is not None else ""


def _pure_call(call: Node, devices: dict[str, Node], data: bytes, known: dict[str, bool],
               seen: frozenset[str]) -> bool:
    """The call only computes a value: :data:`PURE_MATH`, a cast or load intrinsic, or a pure unit function."""
    name = _callee(call, data)
    if name in PURE_MATH:
        return True
    if effect_free_call(call):
        return True  # a cast or load intrinsic (calls in its arguments are checked on their own)
    return name in devices and _pure(name, devices, data, known, seen)


def _declared_names(node: Node, data: bytes, aliasing: bool) -> set[str]:
    """The names declared by the declarations and parameters under ``node``: with ``aliasing``, only those
    declared as references or pointers; else only the plain ones (values, arrays, structs)."""
    out: set[str] = set()
    for d in [*of_type(node, "declaration"), *of_type(node, ("parameter_declaration",
                                                              "optional_parameter_declaration"))]:
        for dec in d.children_by_field_name("declarator"):
            kinds, inner = set(), dec
            while inner is not None and inner.type != "identifier":
                kinds.add(inner.type)
                inner = inner.child_by_field_name("declarator") or (
                    inner.named_children[0] if inner.type == "reference_declarator" and inner.named_children
                    else None)
            if inner is not None and bool(kinds & _ALIASING) == aliasing:
                out.add(text(inner, data))
    return out


def _writes_local_only(fn: Node, body: Node, data: bytes) -> bool:
    """Every assignment and increment in ``body`` writes a plain local or by-value parameter of ``fn`` (a name,
    or an element or ``.`` field of one), never memory through a pointer or reference, nor a global."""
    plain = _declared_names(fn, data, aliasing=False) - _declared_names(fn, data, aliasing=True)
    for w in of_type(body, ("assignment_expression", "update_expression")):
        target = w.child_by_field_name("left") or w.child_by_field_name("argument")
        node, element = unwrap_parens(target) if target is not None else None, False
        while node is not None and node.type in ("subscript_expression", "field_expression"):
            op = node.child_by_field_name("operator")
            if node.type == "field_expression" and (op is None or text(op, data) != "."):
                return False
            node, element = unwrap_parens(node.child_by_field_name("argument")), True  # type: ignore[arg-type]
        if node is None or node.type != "identifier" or text(node, data) not in plain:
            return False
        if element and not _local_array(fn, text(node, data), data):
            return False  # an element of a parameter (an array parameter is a pointer) is memory outside
    return True


def _local_array(fn: Node, name: str, data: bytes) -> bool:
    """``name`` is declared in ``fn``'s body or parameters as a value whose elements are its own (an array
    declared in the body, or a struct), not a pointer."""
    body = fn.child_by_field_name("body")
    for d in of_type(body, "declaration") if body is not None else []:
        for dec in d.children_by_field_name("declarator"):
            ids = [i for i in of_type(dec, "identifier") if text(i, data) == name]
            if ids and not any(k.type in _ALIASING for k in walk(dec)):
                return True
    return False


def _no_outside_storage(body: Node, data: bytes) -> bool:
    """No declaration of the body keeps state between calls or shares it with other threads (``static``,
    ``__shared__``)."""
    for d in of_type(body, "declaration"):
        head = data[d.start_byte:d.end_byte].split(b"=", 1)[0]
        if re.search(rb"\b(static|__shared__|extern)\b", head):
            return False
    return True
