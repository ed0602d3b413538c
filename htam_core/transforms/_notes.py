"""Notes on the comments and docstrings a transform's edit made stale (both languages).

When a transform changes a setting that a comment or docstring states ("a tiny tile of 64 elements with 4 warps",
"2D blocks of 16 x 16 threads"), the text would describe code that no longer exists. A transform cannot rewrite
prose, so it adds a note of what changed since the text was written and leaves the prose as it is:

* a ``#`` or ``//`` comment on lines of its own gets a comment line after it, starting with :data:`NOTE_MARKER`
  (merged on later steps); a comment after code, or a ``/* ... */`` one, gets a trailing
  ``(changed by HTAM: BLOCK_SIZE 64 → 1024)``, merged with an earlier note (``; ...``);
* a Python docstring gets a line starting with :data:`NOTE_MARKER`, merged into that line on later steps.

A text is stale when it mentions one of the old setting's words (``"64"``, ``"4 warps"``, ``"16 x 16"``): the
changed parameter's name alone does not make it stale. Text inside the transform's own edits is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.transforms.base import TextEdit

#: Opens the line a transform adds to a docstring whose text its edit made stale.
NOTE_MARKER = "Changed by HTAM since this text was written: "
COMMENT_NOTE = "(changed by HTAM: "


def mentions(text: str, words: Iterable[str]) -> bool:
    """True when ``text`` holds one of ``words`` as a whole word (``"64"`` matches "of 64 elements", not
    "float64" or "1.64")."""
    return any(re.search(rf"(?<![\w.]){re.escape(w)}(?![\w])", text) for w in words if w)


def _free(node: Node, base: int, spans: list[tuple[int, int]]) -> bool:
    s0, e0 = node.start_byte + base, node.end_byte + base
    return not any(s < e0 and s0 < e or s == e == s0 for s, e in spans)


def _run_end(src: bytes, start: int, prefix: bytes) -> int:
    """End (before its newline) of the run of whole-line ``prefix`` comments whose first line holds ``start``."""
    end = src.find(b"\n", start)
    end = len(src) if end < 0 else end
    while end < len(src):
        nxt = src.find(b"\n", end + 1)
        nxt = len(src) if nxt < 0 else nxt
        if not src[end + 1 : nxt].lstrip(b" \t").startswith(prefix):
            break
        end = nxt
    return end


def comment_notes(src: bytes, base: int, comments: Iterable[Node], note: str, words: list[str],
                  edits: list[TextEdit]) -> list[TextEdit]:
    """Edits noting ``note`` at each comment node (of ``src``, at file offset ``base``) that mentions ``words``.

    A comment on lines of its own (with the whole-line comments that follow it) gets a comment line after it,
    ``// Changed by HTAM since this text was written: <note>.`` (merged when that line is already there); a
    comment after code, or a ``/* ... */`` comment, gets a trailing ``(changed by HTAM: <note>)``.

    Args:
        src: the text the nodes were parsed from; base: its offset in the file (a CUDA string in Python).
        comments: ``comment`` nodes; note: what changed ("threads per block 32 → 256"), no final period.
        words: the old setting's words; edits: the transform's edits so far, in file offsets (skipped).
    """
    spans = [(e.start_byte, e.end_byte) for e in edits]
    out: list[TextEdit] = []
    done: set[int] = set()
    for c in comments:
        text = syn.text(c, src)
        if not _free(c, base, spans) or not mentions(text, words):
            continue
        prefix = b"//" if text.startswith("//") else b"#" if text.startswith("#") else None
        if prefix is not None and syn.only_space_before(src, c.start_byte):
            end = _run_end(src, c.start_byte, prefix)
            if end in done or any(s < end + base + 1 and c.start_byte + base < e for s, e in spans):
                continue
            done.add(end)
            last = src[syn.line_start(src, end) : end]
            marker = prefix + b" " + NOTE_MARKER.encode()
            if last.lstrip().startswith(marker):
                pos = end - (len(last) - len(last.rstrip())) - (1 if last.rstrip().endswith(b".") else 0)
                out.append(TextEdit(pos + base, pos + base, f"; {note}"))
            else:
                indent = syn.indent_of(src, c.start_byte)
                out.append(TextEdit(end + base, end + base, f"\n{indent}{marker.decode()}{note}."))
            continue
        if c.start_byte in done:
            continue
        done.add(c.start_byte)
        inner = text[:-2].rstrip() if text.startswith("/*") and text.endswith("*/") else text.rstrip()
        pos = c.start_byte + base + len(inner.encode())  # after the comment's last word (before a "*/")
        if inner.endswith(")") and COMMENT_NOTE in inner:
            out.append(TextEdit(pos - 1, pos - 1, f"; {note}"))
        else:
            out.append(TextEdit(pos, pos, f" {COMMENT_NOTE}{note})"))
    return out


def docstring_notes(src: bytes, docs: Iterable[Node], note: str, words: list[str],
                    edits: list[TextEdit]) -> list[TextEdit]:
    """Edits adding (or extending) the :data:`NOTE_MARKER` line of each triple-quoted Python docstring that
    mentions ``words``; arguments as for :func:`comment_notes` (the docstrings are file nodes: base 0)."""
    spans = [(e.start_byte, e.end_byte) for e in edits]
    out: list[TextEdit] = []
    for doc in docs:
        raw = src[doc.start_byte : doc.end_byte]  # byte offsets: the text may hold non-ASCII (→)
        text = raw.decode()
        if text[-3:] not in ('"""', "'''") or not _free(doc, 0, spans) or not mentions(text, words):
            continue
        at = raw.find(NOTE_MARKER.encode())
        if at >= 0:
            end = raw.find(b"\n", at)
            end = len(raw) - 3 if end < 0 else end
            line = raw[at:end].decode().rstrip().rstrip(".")
            out.append(TextEdit(doc.start_byte + at, doc.start_byte + end, f"{line}; {note}."))
            continue
        indent = syn.indent_of(src, doc.start_byte)
        body = text[:-3]
        tail = len(body) - len(body.rstrip(" \t"))
        if body[: len(body) - tail].endswith("\n"):  # closing quotes on their own line
            pos = doc.end_byte - 3 - tail
            out.append(TextEdit(pos, pos, f"\n{indent}{NOTE_MARKER}{note}.\n"))
        else:
            pos = doc.end_byte - 3
            out.append(TextEdit(pos, pos, f"\n\n{indent}{NOTE_MARKER}{note}.\n{indent}"))
    return out
