"""Small readers of Triton calls and assignments, shared by the Triton analysis modules (:mod:`.triton`,
:mod:`.triton_types`): the short name of a callee, whether it is a ``triton.language`` call, a call's keyword and
positional arguments, and the assignments to a name.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from htam_core.source.analysis.syntax import of_type, text

__all__ = ["_is_tl", "_kw", "_positional", "_short", "assignments_to"]

_TL_CALLEE = re.compile(r"(tl|triton\.language)(\.\w+)+")


def _short(callee: str) -> str:
    return callee.rsplit(".", 1)[-1]


def _is_tl(callee: str) -> bool:
    """True for ``tl.sum``, ``tl.math.exp``, ``triton.language.dot`` (not ``tl.load(p).to``)."""
    return _TL_CALLEE.fullmatch(callee) is not None


def _kw(call: Node, name: str, src: bytes) -> Node | None:
    args = call.child_by_field_name("arguments")
    for a in args.named_children if args is not None else []:
        if a.type == "keyword_argument" and text(a.child_by_field_name("name"), src) == name:
            return a.child_by_field_name("value")
    return None


def _positional(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    return [a for a in (args.named_children if args is not None else []) if a.type not in ("keyword_argument", "comment")]


def assignments_to(scope: Node, name: str, src: bytes) -> list[Node]:
    """The assignments, plain or augmented, to the name ``name`` (``name = v``, ``name += v``) under ``scope``."""
    out = []
    for a in of_type(scope, ("assignment", "augmented_assignment")):
        left = a.child_by_field_name("left")
        if left is not None and left.type == "identifier" and text(left, src) == name:
            out.append(a)
    return out
