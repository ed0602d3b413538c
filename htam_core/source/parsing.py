"""Tree-sitter languages, parsers and compiled queries (cached at module level).

Query compilation costs milliseconds, so every query is compiled once per process
(``functools.cache``) and shared; :func:`captures` and :func:`matches` run a fresh
``QueryCursor`` (tree-sitter 0.26 API: ``QueryCursor(query).captures(node)``).
"""

from __future__ import annotations

from functools import cache
from typing import Literal

import tree_sitter as ts
import tree_sitter_cuda
import tree_sitter_python

GrammarName = Literal["cuda", "python"]


@cache
def language(name: GrammarName) -> ts.Language:
    """The tree-sitter ``Language`` for ``"cuda"`` or ``"python"``."""
    if name == "cuda":
        return ts.Language(tree_sitter_cuda.language())
    if name == "python":
        return ts.Language(tree_sitter_python.language())
    raise ValueError(f"no grammar for {name!r}")


def new_parser(name: GrammarName) -> ts.Parser:
    """A new parser for ``name`` (parsers hold state, so each document gets its own)."""
    return ts.Parser(language(name))


@cache
def query(name: GrammarName, source: str) -> ts.Query:
    """Compile (once) the query ``source`` for grammar ``name``."""
    return ts.Query(language(name), source)


def captures(
    name: GrammarName, source: str, node: ts.Node, byte_range: tuple[int, int] | None = None
) -> dict[str, list[ts.Node]]:
    """Captures of query ``source`` under ``node`` (optionally limited to a byte range)."""
    cursor = ts.QueryCursor(query(name, source))
    if byte_range is not None:
        cursor.set_byte_range(*byte_range)
    return cursor.captures(node)


def matches(
    name: GrammarName, source: str, node: ts.Node, byte_range: tuple[int, int] | None = None
) -> list[tuple[int, dict[str, list[ts.Node]]]]:
    """Matches of query ``source`` under ``node`` (optionally limited to a byte range)."""
    cursor = ts.QueryCursor(query(name, source))
    if byte_range is not None:
        cursor.set_byte_range(*byte_range)
    return cursor.matches(node)


def node_text(node: ts.Node | None) -> str:
    """UTF-8 text of ``node`` (``""`` for ``None``)."""
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")
