"""A small declarative predicate language for strategy applicability and prior signals.

The knowledge base (``knowledge.toml``) says *when* a strategy applies with a one-line predicate such as
``"matmul_like and not uses_shared"`` or ``"'UncoalescedGlobalAccess' in ncu_rules or block_size < 128"``.
Predicates are parsed here into a tiny AST and evaluated against a dict of *facts*
(:mod:`htam_core.memory.facts`). Nothing is ever passed to ``eval``: the grammar has no calls, no
attribute access and no names other than the fact vocabulary, which is checked when the knowledge base
loads.

Grammar (``expr`` is the start symbol)::

    expr    := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | cmp
    cmp     := operand (OP operand)?           OP: == != < <= > >= in
    operand := NAME | NUMBER | 'string' | "string" | true | false | "[" operand ("," operand)* "]"
             | "(" expr ")"

Semantics are three-valued (Kleene): a fact may be ``None`` (unknown, e.g. a profile metric that was not
measured, or a kernel attribute when only features are known). A comparison with an unknown operand is
unknown; ``and`` is false if any side is false, ``or`` is true if any side is true, ``not`` of unknown is
unknown. The ranker treats a strategy as applicable unless its predicate is definitely false, and a prior
signal as firing only when its predicate is definitely true. ``x in L`` tests membership when ``L`` is a
list (fact or literal) and substring when it is a string.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PredicateError", "Predicate", "parse_predicate"]

Tri = bool | None


class PredicateError(ValueError):
    """A predicate does not parse or names an unknown fact. The message gives the text and position."""


_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|(?P<str>'[^']*'|\"[^\"]*\")"
    r"|(?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,)|(?P<name>[A-Za-z_][A-Za-z0-9_]*))"
)
_KEYWORDS = {"and", "or", "not", "in", "true", "false"}
_CMP_OPS = {"==", "!=", "<", "<=", ">", ">=", "in"}


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise PredicateError(f"cannot read predicate {text!r} at column {pos + 1}: {text[pos:pos + 12]!r}")
        group = m.lastgroup or ""
        value = m.group(group)
        kind = "kw" if group == "name" and value in _KEYWORDS else group
        tokens.append((kind, value, m.start(group)))
        pos = m.end()
    return tokens


# AST nodes are tuples: ("lit", value) | ("fact", name) | ("list", [nodes]) | ("not", node)
# | ("and", [nodes]) | ("or", [nodes]) | ("cmp", op, left, right)
Node = tuple[Any, ...]


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def _peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _error(self, what: str) -> PredicateError:
        tok = self._peek()
        where = f"column {tok[2] + 1} ({tok[1]!r})" if tok else "the end"
        return PredicateError(f"predicate {self.text!r}: {what} at {where}")

    def _accept(self, value: str) -> bool:
        tok = self._peek()
        if tok and tok[1] == value and tok[0] in ("kw", "op"):
            self.i += 1
            return True
        return False

    def parse(self) -> Node:
        if not self.tokens:
            raise PredicateError("empty predicate")
        node = self._or()
        if self._peek() is not None:
            raise self._error("unexpected token")
        return node

    def _or(self) -> Node:
        parts = [self._and()]
        while self._accept("or"):
            parts.append(self._and())
        return parts[0] if len(parts) == 1 else ("or", parts)

    def _and(self) -> Node:
        parts = [self._not()]
        while self._accept("and"):
            parts.append(self._not())
        return parts[0] if len(parts) == 1 else ("and", parts)

    def _not(self) -> Node:
        if self._accept("not"):
            return ("not", self._not())
        return self._cmp()

    def _cmp(self) -> Node:
        left = self._operand()
        tok = self._peek()
        if tok and tok[1] in _CMP_OPS and tok[0] in ("op", "kw"):
            self.i += 1
            right = self._operand()
            return ("cmp", tok[1], left, right)
        return left

    def _operand(self) -> Node:
        tok = self._peek()
        if tok is None:
            raise self._error("expected a value")
        kind, value, _ = tok
        if kind == "op" and value == "(":
            self.i += 1
            node = self._or()
            if not self._accept(")"):
                raise self._error("expected ')'")
            return node
        if kind == "op" and value == "[":
            self.i += 1
            items: list[Node] = []
            if not self._accept("]"):
                items.append(self._operand())
                while self._accept(","):
                    items.append(self._operand())
                if not self._accept("]"):
                    raise self._error("expected ']'")
            return ("list", items)
        self.i += 1
        if kind == "num":
            return ("lit", float(value) if any(c in value for c in ".eE") else int(value))
        if kind == "str":
            return ("lit", value[1:-1])
        if kind == "kw" and value in ("true", "false"):
            return ("lit", value == "true")
        if kind == "name":
            return ("fact", value)
        self.i -= 1
        raise self._error("expected a value")


def _names(node: Node) -> Iterable[str]:
    tag = node[0]
    if tag == "fact":
        yield node[1]
    elif tag in ("and", "or", "list"):
        for child in node[1]:
            yield from _names(child)
    elif tag == "not":
        yield from _names(node[1])
    elif tag == "cmp":
        yield from _names(node[2])
        yield from _names(node[3])


def _value(node: Node, facts: Mapping[str, Any]) -> Any:
    tag = node[0]
    if tag == "lit":
        return node[1]
    if tag == "fact":
        return facts.get(node[1])
    if tag == "list":
        return [_value(n, facts) for n in node[1]]
    return _truth(node, facts)


def _as_tri(v: Any) -> Tri:
    if v is None:
        return None
    if isinstance(v, list | tuple | str):
        return len(v) > 0
    return bool(v)


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _truth(node: Node, facts: Mapping[str, Any]) -> Tri:
    tag = node[0]
    if tag == "and":
        result: Tri = True
        for child in node[1]:
            v = _truth(child, facts)
            if v is False:
                return False
            if v is None:
                result = None
        return result
    if tag == "or":
        result = False
        for child in node[1]:
            v = _truth(child, facts)
            if v is True:
                return True
            if v is None:
                result = None
        return result
    if tag == "not":
        v = _truth(node[1], facts)
        return None if v is None else not v
    if tag == "cmp":
        op, left, right = node[1], _value(node[2], facts), _value(node[3], facts)
        if left is None or right is None:
            return None
        if op == "in":
            if isinstance(right, str):
                return isinstance(left, str) and left in right
            if isinstance(right, list | tuple | set | frozenset):
                return left in right
            return None
        try:
            return _COMPARE[op](left, right)
        except TypeError:
            return None
    return _as_tri(_value(node, facts))


def _shown(node: Node, facts: Mapping[str, Any]) -> str:
    """An operand as written, a fact with its value (``block_size (= 64)``)."""
    if node[0] == "fact":
        return f"{node[1]} (= {facts.get(node[1])!r})"
    if node[0] == "lit":
        return repr(node[1])
    if node[0] == "list":
        return "[" + ", ".join(_shown(n, facts) for n in node[1]) + "]"
    return "(...)"


def _because(node: Node, facts: Mapping[str, Any], value: Tri) -> list[str]:
    """The leaves of ``node`` that make it evaluate to ``value`` (see :meth:`Predicate.because`)."""
    tag = node[0]
    if tag in ("and", "or"):
        kids = [(c, _truth(c, facts)) for c in node[1]]
        decisive = False if tag == "and" else True
        picked = [(c, v) for c, v in kids if v is decisive]
        if value is decisive:
            kids = picked if tag == "and" else picked[:1]
        elif value is None:
            kids = [(c, v) for c, v in kids if v is None]
        return [x for c, v in kids for x in _because(c, facts, v)]
    if tag == "not":
        return _because(node[1], facts, None if value is None else not value)
    if tag == "cmp":
        return [f"{_shown(node[2], facts)} {node[1]} {_shown(node[3], facts)} is {_word(value)}"]
    if tag == "fact":
        return [f"{node[1]} = {facts.get(node[1])!r}"]
    return [f"{_shown(node, facts)} is {_word(value)}"]


def _word(value: Tri) -> str:
    """``true``, ``false`` or ``unknown``."""
    return "unknown" if value is None else str(value).lower()


@dataclass(frozen=True)
class Predicate:
    """A parsed predicate.

    Attributes:
        text: the source text, as written in the knowledge base.
        names: the fact names it reads.
    """

    text: str
    ast: Node
    names: frozenset[str]

    def because(self, facts: Mapping[str, Any]) -> list[str]:
        """The parts of the predicate that decide its value on ``facts``, each as ``"fact = value"`` or ``"fact
        op literal (fact = value)"``: for a false ``and`` its false parts, for a false ``or`` every part, for a true
        ``and`` every part, for a true ``or`` its first true part, through ``not`` alike; an unknown value names the
        unknown facts. Used to say why a strategy does not apply (``htam suggest --why``)."""
        return list(dict.fromkeys(_because(self.ast, facts, _truth(self.ast, facts))))

    def evaluate(self, facts: Mapping[str, Any]) -> Tri:
        """Evaluate against ``facts`` (fact name -> value or ``None`` for unknown).

        Returns ``True``, ``False`` or ``None`` (unknown), with Kleene semantics (see module docstring).
        """
        return _truth(self.ast, facts)


def parse_predicate(text: str, vocabulary: Iterable[str] | None = None) -> Predicate:
    """Parse ``text`` into a :class:`Predicate`.

    Args:
        text: the predicate source, e.g. ``"loads >= 2 and not embedded"``.
        vocabulary: allowed fact names; ``None`` skips the check.

    Raises:
        PredicateError: syntax error, or a name outside ``vocabulary`` (the message lists the known names).
    """
    ast = _Parser(text).parse()
    names = frozenset(_names(ast))
    if vocabulary is not None:
        allowed = set(vocabulary)
        unknown = sorted(names - allowed)
        if unknown:
            raise PredicateError(
                f"predicate {text!r} uses unknown fact(s) {', '.join(unknown)}; known facts: {', '.join(sorted(allowed))}"
            )
    return Predicate(text=text, ast=ast, names=names)
