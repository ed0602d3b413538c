"""Small tree-sitter helpers shared by the transforms (parsers, node walking, syntax-error ranges).

The source model (:mod:`htam_core.source`) gives kernels, parameters and launch sites with byte spans;
transforms re-parse the text with these helpers when they need finer structure (loops, subscripts,
assignments) inside those spans. All offsets are byte offsets into UTF-8 text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Literal

import tree_sitter_cuda
import tree_sitter_python
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

Grammar = Literal["cuda", "python"]


@lru_cache(maxsize=2)
def language(grammar: Grammar) -> Language:
    """The tree-sitter ``Language`` for ``"cuda"`` or ``"python"``."""
    if grammar == "cuda":
        return Language(tree_sitter_cuda.language())
    return Language(tree_sitter_python.language())


def parse(src: bytes, grammar: Grammar) -> Tree:
    """Parse UTF-8 ``src`` with the grammar (a fresh parser each call: parsers are not thread-safe)."""
    return Parser(language(grammar)).parse(src)


@lru_cache(maxsize=64)
def _query(grammar: Grammar, source: str) -> Query:
    return Query(language(grammar), source)


def captures(grammar: Grammar, query_source: str, node: Node) -> dict[str, list[Node]]:
    """Run a tree-sitter query under ``node``; returns capture name -> nodes in source order."""
    found = QueryCursor(_query(grammar, query_source)).captures(node)
    return {name: sorted(nodes, key=lambda n: n.start_byte) for name, nodes in found.items()}


def text(node: Node | None, src: bytes) -> str:
    """Source text of ``node`` (``""`` for ``None``)."""
    if node is None:
        return ""
    return src[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def walk(node: Node) -> Iterator[Node]:
    """Pre-order walk over ``node`` and all its descendants (named and anonymous)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def of_type(node: Node, types: str | Iterable[str]) -> list[Node]:
    """Descendants of ``node`` (itself included) whose type is in ``types``, in source order."""
    wanted = {types} if isinstance(types, str) else set(types)
    return [n for n in walk(node) if n.type in wanted]


def smallest_covering(root: Node, start: int, end: int, types: Iterable[str]) -> Node | None:
    """The smallest node of one of ``types`` that covers the byte range ``[start, end)``, or ``None``."""
    wanted = set(types)
    n: Node | None = root.descendant_for_byte_range(start, max(start, end - 1))
    while n is not None:
        if n.type in wanted and n.start_byte <= start and n.end_byte >= end:
            return n
        n = n.parent
    return None


def error_ranges(node: Node) -> list[tuple[int, int]]:
    """Byte ranges of every ERROR and MISSING node under ``node``."""
    out: list[tuple[int, int]] = []
    if not node.has_error:
        return out
    for n in walk(node):
        if n.is_error or n.is_missing:
            out.append((n.start_byte, n.end_byte))
    return out


def line_start(src: bytes, pos: int) -> int:
    """Byte offset of the start of the line holding ``pos``."""
    return src.rfind(b"\n", 0, pos) + 1


def indent_of(src: bytes, pos: int) -> str:
    """The leading whitespace of the line holding ``pos``."""
    start = line_start(src, pos)
    end = start
    while end < len(src) and src[end : end + 1] in (b" ", b"\t"):
        end += 1
    return src[start:end].decode()


def only_space_before(src: bytes, pos: int) -> bool:
    """True when ``pos`` is the first non-blank byte of its line."""
    return src[line_start(src, pos) : pos].strip() == b""


def unwrap_parens(node: Node) -> Node:
    """Strip ``parenthesized_expression`` wrappers."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node
