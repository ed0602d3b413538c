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
