"""Positions: byte offsets, 1-based lines and LSP columns in UTF-8/UTF-16/UTF-32 code units.

LSP positions are ``(line, character)`` with a 0-based line and a column counted in the code
units of the negotiated encoding (``"utf-16"`` by default, ``"utf-8"`` or ``"utf-32"`` on request;
LSP 3.17 ``PositionEncodingKind``). Tree-sitter works in UTF-8 byte offsets. :class:`LineIndex`
converts between them for one text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Literal

Encoding = Literal["utf-8", "utf-16", "utf-32"]
ENCODINGS: tuple[str, ...] = ("utf-8", "utf-16", "utf-32")


def _check_encoding(encoding: str) -> None:
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown position encoding {encoding!r}; use one of {', '.join(ENCODINGS)}")


def units_to_byte_col(line: bytes, col: int, encoding: str) -> int:
    """Byte offset inside ``line`` (UTF-8, without newline) of column ``col`` in ``encoding`` units.

    A column past the end of the line is clamped to the line end (LSP clients may send that);
    a column inside a surrogate pair or a multi-byte character snaps to that character's start.

    Raises:
        ValueError: unknown encoding or negative column.
    """
    _check_encoding(encoding)
    if col < 0:
        raise ValueError(f"negative column {col}")
    if encoding == "utf-8":
        return min(col, len(line))
    if line.isascii():
        return min(col, len(line))
    units = 0
    byte = 0
    for ch in line.decode("utf-8", errors="surrogatepass"):
        width = 2 if (encoding == "utf-16" and ord(ch) > 0xFFFF) else 1
        if units + width > col:
            return byte
        units += width
        byte += len(ch.encode("utf-8", errors="surrogatepass"))
    return byte


def byte_col_to_units(line: bytes, byte_col: int, encoding: str) -> int:
    """Column in ``encoding`` code units of byte offset ``byte_col`` inside ``line`` (UTF-8).

    Raises:
        ValueError: unknown encoding.
    """
    _check_encoding(encoding)
    byte_col = max(0, min(byte_col, len(line)))
    if encoding == "utf-8" or line.isascii():
        return byte_col
    prefix = line[:byte_col].decode("utf-8", errors="ignore")
    if encoding == "utf-32":
        return len(prefix)
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in prefix)


def utf16_length(text: str) -> int:
    """Length of ``text`` in UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


_LONE_CR = re.compile(rb"\r(?!\n)")


_BARE_LF = re.compile(r"(?<!\r)\n")


def line_ending(text: str) -> str:
    """The file's line ending: ``"\r\n"``, ``"\r"`` (classic Mac) or ``"\n"`` (the default, and the answer
    for a file with none), by count of each."""
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    best = max((lf, "\n"), (crlf, "\r\n"), (cr, "\r"))
    return best[1] if best[0] else "\n"


def with_line_ending(inserted: str, ending: str) -> str:
    """``inserted`` (text a transform or a model wrote with ``\n`` line ends) with every bare ``\n`` written as
    ``ending`` (:func:`line_ending` of the file it goes into), so an edit never mixes line-ending styles."""
    return inserted if ending == "\n" else _BARE_LF.sub(ending, inserted)


def parse_bytes(data: bytes) -> bytes:
    """``data`` with every lone ``\\r`` (a classic-Mac line ending) replaced by ``\\n``.

    The grammars only end lines at ``\\n``: tree-sitter-python reads a CR-only file as one long
    line, and a ``#define`` in CUDA would run to the end of the file. The copy has the same
    length, so every byte offset of a tree parsed from it is an offset of ``data``, and its rows
    (tree-sitter counts ``\\n``) are the rows of :class:`LineIndex` (which counts all three line
    endings). Texts are still taken from ``data``. Returns ``data`` itself when it has no ``\\r``.
    """
    if b"\r" not in data:
        return data
    return _LONE_CR.sub(b"\n", data)


class LineIndex:
    """Line starts of a UTF-8 byte string, for O(log n) byte <-> (line, column) conversion.

    A line ends at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (the three LSP line endings), in any mix.

    Args:
        data: the whole file as UTF-8 bytes.
    """

    __slots__ = ("data", "starts")

    def __init__(self, data: bytes) -> None:
        self.data = data
        scan = parse_bytes(data)
        starts = [0]
        find = scan.find
        i = find(b"\n")
        while i >= 0:
            starts.append(i + 1)
            i = find(b"\n", i + 1)
        self.starts = starts

    @property
    def line_count(self) -> int:
        """Number of lines (a trailing newline starts one more, empty, line)."""
        return len(self.starts)

    def line_of(self, byte: int) -> int:
        """0-based line containing byte offset ``byte``."""
        return bisect_right(self.starts, byte) - 1

    def line_bytes(self, line: int) -> bytes:
        """Bytes of 0-based ``line`` without its line terminator (``\\n``, ``\\r\\n`` or ``\\r``)."""
        if line < 0 or line >= len(self.starts):
            return b""
        start = self.starts[line]
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.data)
        chunk = self.data[start:end]
        if chunk.endswith(b"\n"):
            chunk = chunk[:-1]
        return chunk[:-1] if chunk.endswith(b"\r") else chunk

    def point(self, byte: int) -> tuple[int, int]:
        """Tree-sitter point ``(row, byte column)`` of ``byte``."""
        line = self.line_of(byte)
        return line, byte - self.starts[line]

    def to_byte(self, line: int, col: int, encoding: str = "utf-16") -> int:
        """Byte offset of the LSP position ``(line, col)``; lines past the end clamp to the end.

        Raises:
            ValueError: unknown encoding or negative line/column.
        """
        if line < 0:
            raise ValueError(f"negative line {line}")
        if line >= len(self.starts):
            return len(self.data)
        return self.starts[line] + units_to_byte_col(self.line_bytes(line), col, encoding)

    def to_position(self, byte: int, encoding: str = "utf-16") -> tuple[int, int]:
        """LSP position ``(line, col)`` of byte offset ``byte``."""
        byte = max(0, min(byte, len(self.data)))
        line = self.line_of(byte)
        return line, byte_col_to_units(self.line_bytes(line), byte - self.starts[line], encoding)

    def edited(self, start: int, old_end: int, new_bytes: bytes) -> LineIndex:
        """The index of this text with bytes ``[start, old_end)`` replaced by ``new_bytes``, without scanning
        the whole new text (one keystroke in a 3,000-line file: the line starts after the edit are shifted).

        Raises:
            ValueError: ``0 <= start <= old_end <= len(data)`` does not hold.
        """
        if not 0 <= start <= old_end <= len(self.data):
            raise ValueError(f"edit [{start}, {old_end}) is outside the text (0..{len(self.data)})")
        data = self.data[:start] + new_bytes + self.data[old_end:]
        starts = self.starts
        lo = bisect_right(starts, start)  # line starts up to the edit's first byte stay
        hi = bisect_right(starts, old_end)  # line starts after the replaced bytes move by delta
        delta = len(new_bytes) - (old_end - start)
        inserted = []
        i = new_bytes.find(b"\n")
        while i >= 0:
            inserted.append(start + i + 1)
            i = new_bytes.find(b"\n", i + 1)
        out = LineIndex.__new__(LineIndex)
        out.data = data
        out.starts = starts[:lo] + inserted + [s + delta for s in starts[hi:]]
        return out
