"""Checks that a candidate's edit keeps the file well-formed and the kernel present.

A candidate is rejected when, after its edits, tree-sitter reports ERROR or MISSING nodes touching an
edited region that were not there before, when the file gains syntax errors overall, or when the
kernel can no longer be found by name. CUDA held in Python strings (``load_inline`` sources) is
checked with the CUDA grammar inside the string, offsets mapped back to the file.
"""

from __future__ import annotations

from collections.abc import Sequence

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.unit import cuda_fragments
from htam_core.source.api import parse_text
from htam_core.transforms.base import TextEdit


def _blank(src: bytes, spans: Sequence[tuple[int, int]]) -> bytes:
    """``src`` with the byte ranges ``spans`` blanked at equal length (line breaks kept)."""
    out = bytearray(src)
    for s, e in spans:
        for i in range(max(s, 0), min(e, len(out))):
            if out[i] not in (0x0A, 0x0D):
                out[i] = 0x20
    return bytes(out)


def syntax_errors(text: str, file_language: str, ignore: Sequence[str] = ()) -> list[tuple[int, int]]:
    """Byte ranges of tree-sitter ERROR/MISSING nodes in ``text``.

    Args:
        text: whole file.
        file_language: ``"cuda"`` or ``"python"``; Python files also have their CUDA strings checked.
        ignore: names of half-typed CUDA kernels whose definitions are left out (blanked at equal length, as
            the kernel finder's recovery reads each kernel from its own text), so that their unclosed text
            does not swallow the code after it.
    """
    src = text.encode("utf-8")
    if file_language == "cuda":
        if ignore:
            model = parse_text(text, "cuda")
            src = _blank(src, [(k.span.start, k.span.end) for k in model.kernels
                               if k.incomplete and k.name in ignore])
        return syn.error_ranges(syn.parse(src, "cuda").root_node)
    out = syn.error_ranges(syn.parse(src, "python").root_node)
    for start, end in cuda_fragments(src):
        tree = syn.parse(src[start:end], "cuda")
        out.extend((start + a, start + b) for a, b in syn.error_ranges(tree.root_node))
    return out


def edited_regions(edits: Sequence[TextEdit]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The edited byte ranges before and after applying ``edits``: ``(old_ranges, new_ranges)``."""
    old, new = [], []
    delta = 0
    for e in sorted(edits, key=lambda e: (e.start_byte, e.end_byte)):
        n = len(e.new_text.encode("utf-8"))
        old.append((e.start_byte, e.end_byte))
        new.append((e.start_byte + delta, e.start_byte + delta + n))
        delta += n - (e.end_byte - e.start_byte)
    return old, new


def _touching(errors: list[tuple[int, int]], regions: list[tuple[int, int]]) -> int:
    return sum(1 for a, b in errors if any(a <= re and b >= rs for rs, re in regions))


def check_syntax(old_text: str, new_text: str, edits: Sequence[TextEdit], file_language: str) -> str | None:
    """Return ``None`` when the edit introduces no syntax error, else a message saying where.

    Args:
        old_text: the text the edits were made for.
        new_text: the text after the edits.
        edits: the edits (offsets into ``old_text``).
        file_language: ``"cuda"`` or ``"python"``.
    """
    ignore: tuple[str, ...] = ()
    if file_language == "cuda":  # half-typed kernels the edit leaves half-typed are not its syntax errors
        old_half = {k.name for k in parse_text(old_text, "cuda").kernels if k.incomplete}
        if old_half:
            ignore = tuple(sorted(old_half & {k.name for k in parse_text(new_text, "cuda").kernels
                                              if k.incomplete}))
    before = syntax_errors(old_text, file_language, ignore)
    after = syntax_errors(new_text, file_language, ignore)
    old_regions, new_regions = edited_regions(edits)
    if _touching(after, new_regions) > _touching(before, old_regions):
        # the innermost error node touching the edit: the outermost one often starts at the file's start
        a, _ = min((r for r in after if any(r[0] <= re and r[1] >= rs for rs, re in new_regions)),
                   key=lambda r: r[1] - r[0])
        line = new_text.encode("utf-8")[:a].count(b"\n") + 1
        return f"the edit leaves a syntax error near line {line}"
    if len(after) > len(before):
        return f"the edit adds syntax errors ({len(before)} before, {len(after)} after)"
    return None
