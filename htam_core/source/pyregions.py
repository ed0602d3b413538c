"""Definition regions of a Python file whose tree has errors (error recovery for Triton kernels).

tree-sitter-python recovers from a syntax error by wrapping the rest of the enclosing block in an
ERROR node, so a half-typed ``def half(x_ptr,`` (its parenthesis still open) can swallow every
definition after it; inside that garbage even ``def`` is lexed as a plain identifier. Python's own
block structure is indentation, so this module cuts the file into one *region* per definition
from the lines themselves (a line that starts inside a multi-line string of the tree, whose
tokens the external scanner still finds, does not count):

* an **anchor** is a line whose first word is ``def`` or ``class``, or whose first character
  is ``@`` (a decorator);
* a ``def`` anchor owns the ``@`` anchors right before it at the same column (its decorators);
* its region runs from the line of its first decorator to the line of the next anchor at a
  column no deeper than its own (the next statement Python would also start there), or the end.

A definition that the whole-file tree gives intact (:func:`intact`) is taken from it; any other
is parsed again from its region alone (see ``triton._collect``), so one broken definition never
hides the others. The enclosing classes of a definition (for its qualified name) are read from
the anchors too (:func:`enclosing_classes`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

import tree_sitter as ts

_ANCHOR = re.compile(rb"^[ \t]*(@|def\b|class\b)", re.MULTILINE)
_CLASS_NAME = re.compile(rb"class\s+([A-Za-z_]\w*)")


@dataclass(frozen=True)
class Anchor:
    """One line-leading ``def``/``class``/``@`` token.

    Attributes:
        kind: ``"def"``, ``"class"`` or ``"@"``.
        byte: local byte offset of the token.
        col: its column in bytes (the line's indentation).
        line_start: local byte offset of its line.
    """

    kind: str
    byte: int
    col: int
    line_start: int


def anchors(src: bytes, strings: list[ts.Node]) -> list[Anchor]:
    """The anchors of ``src`` (lone ``\\r`` already read as ``\\n``), in source order; ``strings``
    are the string nodes of its tree."""
    spans = sorted((s.start_byte, s.end_byte) for s in strings if s.start_point[0] != s.end_point[0])
    starts = [s for s, _ in spans]
    out: list[Anchor] = []
    for m in _ANCHOR.finditer(src):
        b = m.start(1)
        k = bisect_right(starts, b) - 1
        if k >= 0 and spans[k][0] < b < spans[k][1]:
            continue  # inside a multi-line string
        ls = m.start()
        word = m.group(1)
        out.append(Anchor("@" if word == b"@" else word.decode(), b, b - ls, ls))
    return out


def group_start(items: list[Anchor], i: int) -> int:
    """Index of the first decorator of the definition at anchor ``i`` (``i`` when it has none)."""
    col = items[i].col
    j = i
    while j > 0 and items[j - 1].kind == "@" and items[j - 1].col == col:
        j -= 1
    return j


def region(items: list[Anchor], i: int, size: int) -> tuple[int, int]:
    """Local byte range ``[start, end)`` of the definition at anchor ``i`` in a buffer of ``size``
    bytes: from its first decorator's line to the next anchor no deeper than it."""
    col = items[i].col
    start = items[group_start(items, i)].line_start
    for a in items[i + 1 :]:
        if a.col <= col:
            return start, a.line_start
    return start, size


def intact(src: bytes, outer: ts.Node, items: list[Anchor], i: int) -> bool:
    """Whether ``outer`` (the ``decorated_definition`` or ``function_definition`` the whole-file
    tree made of anchor ``i``) is the whole definition: no error inside, it starts at the first
    decorator, and the first code after it is at a column no deeper than its ``def`` (its body
    really ended where Python ends it)."""
    if outer.has_error or outer.start_byte != items[group_start(items, i)].byte:
        return False
    pos, n = outer.end_byte, len(src)
    at_line_start = False
    while pos < n:
        ch = src[pos : pos + 1]
        if ch in (b" ", b"\t"):
            pos += 1
        elif ch in (b"\n", b"\r"):
            pos += 1
            at_line_start = True
        elif ch == b"#":
            eol = src.find(b"\n", pos)
            pos = n if eol < 0 else eol
        else:
            break
    if pos >= n:
        return True
    col = pos - (src.rfind(b"\n", 0, pos) + 1)
    return at_line_start and col <= items[i].col


def enclosing_classes(src: bytes, items: list[Anchor], i: int) -> list[str] | None:
    """Names of the classes around the definition at anchor ``i``, outermost first (``[]`` at module
    level), or ``None`` when a function encloses it (no module attribute reaches it)."""
    col = items[i].col
    names: list[str] = []
    for a in reversed(items[: group_start(items, i)]):
        if col == 0:
            break
        if a.col >= col or a.kind == "@":
            continue
        if a.kind == "def":
            return None
        m = _CLASS_NAME.match(src, a.byte)
        if m is None:
            return None
        names.insert(0, m.group(1).decode("utf-8", errors="replace"))
        col = a.col
    return names
