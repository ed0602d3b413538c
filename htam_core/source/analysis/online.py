"""Loops that already keep a softmax's statistics online: a running max and a sum rescaled to it in one pass.

The online softmax recurrence (Milakov and Gimelshein, "Online normalizer calculation for softmax", 2018) keeps,
per loop step, ``m_new = max(m, x)`` and ``s = s * exp(m - m_new) + exp(x - m_new)``, then ``m = m_new``. A loop of
that form has nothing left for the step that merges a max pass and a sum pass: it is the merged form. This module
finds such loops for CUDA (``fmaxf``/``max`` and ``expf``/``__expf``/``exp2f``) and Triton (``tl.maximum`` and
``tl.exp``/``tl.exp2``) from the tree alone, so that the transforms and the editor's audit read one fact
(:class:`~htam_core.source.analysis.facts.OnlineStat`).
"""

from __future__ import annotations

from collections.abc import Iterable

from tree_sitter import Node

from htam_core.source.analysis.macros import call_alias
from htam_core.source.analysis.syntax import of_type, text, unwrap_parens

__all__ = ["MAX_CALLS", "EXP_CALLS", "online_pairs"]

#: Short names of the calls that take the larger of two values (``tl.maximum``, ``fmaxf``, ``max`` ...).
MAX_CALLS = frozenset({"maximum", "fmaxf", "fmax", "max"})
#: Short names of the exponentials a softmax rescales with.
EXP_CALLS = frozenset({"exp", "exp2", "expf", "__expf", "exp2f", "__exp2f"})

_ASSIGN = ("assignment", "assignment_expression", "init_declarator")


def _short(fn: str) -> str:
    """``tl.math.exp`` -> ``exp``, ``std::max<float>`` -> ``max``."""
    return fn.split("<", 1)[0].replace("::", ".").split(".")[-1].strip()


def _assignments(body: Node, src: bytes) -> list[tuple[str, str, Node]]:
    """``(target, operator, value)`` of every plain or compound assignment and initialized declaration in
    ``body`` whose target is a plain name (``=``, ``+=`` ...; a declaration counts as ``=``)."""
    out: list[tuple[str, str, Node]] = []
    for a in of_type(body, _ASSIGN + ("augmented_assignment",)):
        if a.type == "init_declarator":
            left, right, op = a.child_by_field_name("declarator"), a.child_by_field_name("value"), "="
        else:
            left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
            op_node = a.child_by_field_name("operator")
            op = text(op_node, src) if op_node is not None else "="
        if left is None or right is None or unwrap_parens(left).type != "identifier":
            continue
        out.append((text(unwrap_parens(left), src), op, right))
    return out


def _calls(node: Node, names: Iterable[str], src: bytes) -> list[Node]:
    """The calls under ``node`` (itself included) whose short function name is in ``names``."""
    wanted = set(names)
    return [c for c in of_type(node, ("call", "call_expression"))
            if _short(text(c.child_by_field_name("function"), src)) in wanted
            or (c.type == "call_expression" and _short(call_alias(c) or "") in wanted)]


def _args(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    return [a for a in args.named_children if a.type not in ("comment", "keyword_argument")] if args else []


def _branch_names(cond: Node, src: bytes) -> set[str]:
    """The two names of ``(a > b ? a : b)`` (C's ``?:``; parentheses stripped)."""
    return {text(unwrap_parens(cond.child_by_field_name(f)), src) for f in ("consequence", "alternative")}


def _select_max(node: Node, src: bytes) -> list[Node]:
    """The ``(a > b ? a : b)`` / ``(a < b ? b : a)`` max selections under ``node`` (C), names only."""
    out = []
    for c in of_type(node, "conditional_expression"):
        test = unwrap_parens(c.child_by_field_name("condition")) if c.child_by_field_name("condition") else None
        if test is None or test.type != "binary_expression":
            continue
        op = text(test.child_by_field_name("operator"), src)
        left, right = (text(unwrap_parens(test.child_by_field_name(f)), src) for f in ("left", "right"))
        yes, no = (text(unwrap_parens(c.child_by_field_name(f)), src) for f in ("consequence", "alternative"))
        if (op in (">", ">=") and (yes, no) == (left, right)) or (op in ("<", "<=") and (yes, no) == (right, left)):
            out.append(c)
    return out


def online_pairs(loop: Node, src: bytes) -> list[tuple[str, str]]:
    """``(max name, sum name)`` of each online max/sum pair kept by ``loop`` (a ``for``/``while`` node of a CUDA
    or Python tree; ``src`` the buffer its offsets index): a name ``m`` updated in the loop from ``max(m, …)``
    (directly, or through ``m_new = max(m, …)`` and ``m = m_new``) and a name ``s`` updated as ``s * exp(a - b)
    + …`` with ``{a, b}`` the old and the new max. Empty when the loop keeps none."""
    body = loop.child_by_field_name("body")
    if body is None:
        return []
    assigns = _assignments(body, src)
    plain = {(t, text(unwrap_parens(v), src)) for t, op, v in assigns if op == "=" and unwrap_parens(v).type ==
             "identifier"}
    maxes: dict[str, str] = {}  # new-max name -> the running max it updates
    for t, _op, v in assigns:
        for c in _calls(v, MAX_CALLS, src) + _select_max(v, src):
            names = {text(unwrap_parens(a), src) for a in _args(c) if unwrap_parens(a).type == "identifier"} \
                if c.type != "conditional_expression" else _branch_names(c, src)
            for m in names:
                if t == m or (m, t) in plain:
                    maxes[t] = m
    out: list[tuple[str, str]] = []
    for t, op, v in assigns:
        if op != "=" or v.type not in ("binary_operator", "binary_expression"):
            continue
        for e in _calls(v, EXP_CALLS, src):
            args = _args(e)
            arg = unwrap_parens(args[0]) if args else None
            if arg is None or arg.type not in ("binary_operator", "binary_expression"):
                continue
            sides = {text(unwrap_parens(arg.child_by_field_name(f)), src) for f in ("left", "right")}
            pair = None
            for new, old in maxes.items():
                olds = {old} | {p for p, q in plain if q == old}  # `m_prev = m` saved before an in-place update
                if new in sides and len(sides) == 2 and sides - {new} <= olds - {new}:
                    pair = (new, old)
            scaled = False  # the exp multiplies the sum itself: `s * exp(…)`, `s * tl.where(c, 1, exp(…))`
            n = e
            while n is not None and n != v.parent and not scaled:
                if n.type in ("binary_operator", "binary_expression") and \
                        text(n.child_by_field_name("operator"), src) == "*":
                    scaled = t in {text(unwrap_parens(n.child_by_field_name(f)), src) for f in ("left", "right")}
                n = n.parent
            if pair is not None and scaled and (pair[1], t) not in out:
                out.append((pair[1], t))
    return out
