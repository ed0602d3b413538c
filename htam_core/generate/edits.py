"""The edits a generator returns: byte-offset text edits grouped by file.

A step usually edits only the file that holds the kernel, but it may also edit another file (the kernel's launch
site in a host file, say). :class:`FileEdits` names the file (``path=None``: the file the request's text came from)
and holds its edits, whose offsets refer to that file's text as it was when the step was proposed. Editors turn a
list of them into one workspace edit; nothing is re-diffed.

:func:`minimal_edit` is for the one generator that returns a whole new file (the LLM): the span between the common
prefix and the common suffix of the old and the new text, so that an editor applies one small change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from htam_core.transforms.base import TextEdit

__all__ = ["FileEdits", "minimal_edit", "of_kernel_file"]


@dataclass(frozen=True)
class FileEdits:
    """The edits of one file.

    Attributes:
        path: the file's path; ``None`` for the file that holds the kernel (the text the step was proposed for).
        edits: non-overlapping :class:`~htam_core.transforms.base.TextEdit` s (UTF-8 byte offsets into that file's
            text at proposal time).
    """

    path: str | None
    edits: tuple[TextEdit, ...]


def of_kernel_file(edits: Sequence[TextEdit]) -> list[FileEdits]:
    """``edits`` of the kernel's own file as a one-element list of :class:`FileEdits` (empty for no edit)."""
    return [FileEdits(None, tuple(edits))] if edits else []


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix (binary search over slice comparisons: C speed on large files)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def minimal_edit(old: str, new: str) -> TextEdit:
    """One byte-offset :class:`TextEdit` turning ``old`` into ``new``: the span between their common prefix
    and common suffix (never splitting a UTF-8 character), so that an editor applies one small change."""
    a = old.encode("utf-8", errors="surrogatepass")
    b = new.encode("utf-8", errors="surrogatepass")
    p = _common_prefix(a, b)
    while p > 0 and p < len(a) and (a[p] & 0xC0) == 0x80:
        p -= 1
    s = _common_suffix(a, b, min(len(a), len(b)) - p)
    while s > 0 and (a[len(a) - s] & 0xC0) == 0x80:
        s -= 1
    return TextEdit(p, len(a) - s, b[p:len(b) - s].decode("utf-8", errors="surrogatepass"))
