"""Tree-sitter helpers of the transforms: syntax-error ranges and line/indentation arithmetic for edits.

Parsing, queries and node walking come from :mod:`htam_core.source.analysis.syntax` (re-exported here);
facts about a kernel come from :func:`htam_core.source.analysis.analyze`. All offsets are byte offsets
into UTF-8 text.
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.analysis.syntax import (  # noqa: F401 - re-exported for the transforms
    of_type,
    parse,
    smallest_covering,
    text,
    unwrap_parens,
    walk,
)


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


def one_line(src: bytes, scope: Node, start: int, end: int, renames: list[tuple[Node, str]]) -> str:
    """The code ``src[start:end]`` on one line, with each ``(node, text)`` of ``renames`` replaced and the
    comments under ``scope`` in that range removed (a ``//`` comment would swallow the rest of the line).

    Args:
        src: the unit's bytes; ``start``/``end`` and the nodes are offsets into it.
        scope: a node holding the range (its comments are the ones removed).
        renames: nodes inside the range and their replacement text (non-overlapping).
    """
    comments = [(c, "") for c in of_type(scope, "comment") if start <= c.start_byte and c.end_byte <= end]
    out = bytearray(src[start:end])
    for node, new in sorted(renames + comments, key=lambda x: -x[0].start_byte):
        out[node.start_byte - start : node.end_byte - start] = new.encode()
    return join_lines(out.decode())


def join_lines(code: str) -> str:
    """The lines of ``code`` joined by spaces, each stripped and blank ones dropped, except that a
    preprocessor directive (``#if __CUDA_ARCH__ >= 800``, ``#else``, ``#endif``) keeps a line of its own: a
    directive must start its line, and one joined into code is a syntax error (C11 6.10)."""
    parts = []
    for ln in code.splitlines():
        s = ln.strip()
        if s:
            parts.append(f"\n{s}\n" if s.startswith("#") else s)
    return " ".join(parts).replace("\n ", "\n")
