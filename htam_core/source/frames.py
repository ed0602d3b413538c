"""Frames: map bytes of a parsed buffer back to the file.

A :class:`Frame` is the buffer one tree was parsed from. For a plain file it is the file
itself. For CUDA held in a Python string it is the string's decoded content, whose bytes map
back to the file through an offset map (escape sequences such as ``\\n`` are one byte in the
content but two in the file). For error recovery a frame can also be a slice of another frame
(the tail of a broken file, re-parsed on its own).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

import tree_sitter as ts

from htam_core.source.model import ByteSpan
from htam_core.source.positions import LineIndex, parse_bytes


@dataclass
class Frame:
    """A parsed buffer and the way back to file bytes.

    Attributes:
        src: the bytes that were parsed.
        file: line index of the whole file (UTF-8 bytes).
        parent: the frame this one is a slice of, or ``None``.
        base: byte offset of ``src[0]`` inside the parent (or inside the file when there is
            no parent and no ``segments``).
        display: the original bytes when ``src`` is a copy of the same length made for the
            parser (lone ``\\r`` line endings as ``\\n``, see ``positions.parse_bytes``; blanked
            attributes, see ``cuda._mask_attributes``); texts are taken from it.
        segments: for decoded strings, sorted ``(local_start, file_start, local_len, file_len)``
            runs; bytes inside a run of equal lengths map one to one, a run of unequal
            lengths (an escape sequence) maps its inner bytes to the run's file start.
    """

    src: bytes
    file: LineIndex
    parent: Frame | None = None
    base: int = 0
    segments: list[tuple[int, int, int, int]] | None = None
    display: bytes | None = None
    _seg_starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if self.segments:
            self._seg_starts = [s[0] for s in self.segments]

    def to_file(self, local: int) -> int:
        """File byte offset of local byte offset ``local``."""
        if self.parent is not None:
            return self.parent.to_file(self.base + local)
        if not self.segments:
            return self.base + local
        i = max(0, bisect_right(self._seg_starts, local) - 1)
        lstart, fstart, llen, flen = self.segments[i]
        delta = local - lstart
        if llen == flen or delta <= 0:
            return fstart + min(delta, flen) if delta >= 0 else fstart
        return fstart + flen if delta >= llen else fstart

    @property
    def linear(self) -> bool:
        """Whether local bytes map to file bytes by a constant offset (no escape segments)."""
        f: Frame | None = self
        while f is not None:
            if f.segments and not (len(f.segments) == 1 and f.segments[0][2] == f.segments[0][3]):
                return False
            f = f.parent
        return True

    @classmethod
    def of(cls, data: bytes, file: LineIndex, segments: list[tuple[int, int, int, int]] | None = None) -> Frame:
        """The frame of the bytes ``data`` as read (a file, or a decoded string with ``segments``):
        the parser gets :func:`~htam_core.source.positions.parse_bytes` of it, texts come from ``data``."""
        src = parse_bytes(data)
        return cls(src=src, file=file, segments=segments, display=data if src is not data else None)

    def sub(self, start: int, end: int, prefix: bytes = b"") -> Frame:
        """A frame for ``prefix + src[start:end]`` that maps back through this one.

        ``prefix`` is synthetic text put before the slice so that it parses on its own (``if 1:``
        before an indented Python block); its bytes map to the slice's start and no node of interest
        lies in it.
        """
        display = None if self.display is None else prefix + self.display[start:end]
        return Frame(src=prefix + self.src[start:end], file=self.file, parent=self, base=start - len(prefix),
                     display=display)

    def span(self, node: ts.Node) -> ByteSpan:
        """File byte span of ``node``."""
        return ByteSpan(self.to_file(node.start_byte), self.to_file(node.end_byte))

    def span_of(self, start: int, end: int) -> ByteSpan:
        """File byte span of local ``[start, end)``."""
        return ByteSpan(self.to_file(start), self.to_file(end))

    def line(self, local: int) -> int:
        """1-based file line of local byte offset ``local``."""
        return self.file.line_of(self.to_file(local)) + 1

    def end_line(self, local_end: int) -> int:
        """1-based file line of the last byte of a range ending (exclusive) at ``local_end``."""
        return self.file.line_of(self.to_file(max(local_end - 1, 0))) + 1

    def text(self, start: int, end: int) -> str:
        """Local bytes ``[start, end)`` decoded."""
        data = self.display if self.display is not None else self.src
        return data[start:end].decode("utf-8", errors="replace")
