"""Conditional compilation of a ``.cu`` file's host pass, decided before the host evaluator parses it.

tree-sitter parses ``#if``/``#ifdef``/``#else``/``#endif`` as tree nodes, which works when a conditional
group holds whole statements. It does not when a group holds only part of one, as in llm.c's::

    #if defined(ENABLE_BF16) || defined(ENABLE_FP16)
        if (kernel_num < 4) // kernel 4/5 + BF16 is only for testing performance
    #endif
        {
            for (...) { int block_size = block_sizes[j]; launch(..., block_size); }
        }

Here the parser nests the whole block under the ``if`` inside the ``#if`` node, so an evaluator reading the
tree cannot run the block that the preprocessor keeps. :func:`blank_untaken` does what the C preprocessor
does first ([cpp.cond]): every group whose condition it can decide is resolved on the text, the lines of a
branch not taken and the directive lines themselves are blanked to spaces (byte offsets and line numbers are
kept, so a launch found by line in the parsed model is the same node), and the result is what gets parsed.

A condition is decided from ``defined(X)`` / ``defined X`` (``X`` a macro of the file, of its local headers
or one nvcc predefines in the host pass), integer literals, object-like macros with a value the evaluator
reads, and ``! && || == != < <= > >= + - * /`` and parentheses. Any other identifier (a macro of a system
header, ``CUDART_VERSION``) leaves its group as it is, read by the tree as before. ``#define``/``#undef``
lines are followed in order; a ``#define`` inside an undecided group makes that name undecided.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(ifdef|ifndef|if|elif|else|endif|define|undef)\b(.*)$")
_DEFINED = re.compile(r"\bdefined\s*(?:\(\s*(\w+)\s*\)|(\w+))")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
#: how many times object-like macros are expanded inside one condition
_EXPANSION_DEPTH = 8


@dataclass
class _Group:
    """One ``#if ... #endif`` group on the stack: ``decided`` False when a condition could not be read."""

    decided: bool
    taken: bool = False
    any_taken: bool = False


def _lines(src: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` byte offsets of each line without its newline."""
    out, pos = [], 0
    for line in src.split(b"\n"):
        out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def condition_value(expr: str, defined: Callable[[str], bool | None], value: Callable[[str], str | None],
                    evaluate: Callable[[str], int | float | None]) -> bool | None:
    """The truth of an ``#if`` condition, or ``None`` when it cannot be decided.

    Args:
        expr: the condition's text (comments already removed).
        defined: ``defined(name)``: True/False, ``None`` when unknown.
        value: the replacement text of an object-like macro ``name`` (``None``: not a known macro).
        evaluate: evaluates an integer expression with no identifiers left; ``None`` when it cannot.
    """
    def _defined(m: re.Match[str]) -> str:
        d = defined(m.group(1) or m.group(2))
        if d is None:
            raise LookupError
        return "1" if d else "0"

    try:
        text = _DEFINED.sub(_defined, expr)
        for _ in range(_EXPANSION_DEPTH):
            names = _IDENT.findall(text)
            if not names:
                break
            for n in set(names):
                v = value(n)
                if v is None:
                    return None
                text = re.sub(rf"\b{re.escape(n)}\b", f"({v})", text)
        else:
            return None
    except LookupError:
        return None
    v = evaluate(text.strip() or "0")
    return None if v is None else bool(v)


def blank_untaken(src: bytes, defined: Callable[[str], bool | None], value: Callable[[str], str | None],
                  evaluate: Callable[[str], int | float | None]) -> bytes:
    """``src`` with every decidable conditional group resolved (see the module docstring).

    Args:
        src: the file's bytes.
        defined: whether a macro is defined before the file (its headers, nvcc's host predefines);
            ``None`` when unknown. The file's own ``#define``/``#undef`` lines are followed on top of it.
        value: the replacement text of a macro defined before the file (``None``: none known).
        evaluate: an integer expression's value (``None`` when it has none).

    Returns:
        Bytes of the same length, with the same newlines: untaken lines and decided directives are spaces.
    """
    own: dict[str, str | None] = {}  # the file's #defines so far; None: undefined by #undef or undecided

    def _is_defined(name: str) -> bool | None:
        if name in own:
            return None if own[name] == "\0" else own[name] is not None
        return defined(name)

    def _value(name: str) -> str | None:
        if name in own:
            v = own[name]
            return None if v is None or v == "\0" or not v.strip() else v
        return value(name)

    out = bytearray(src)
    stack: list[_Group] = []
    rows = _lines(src)
    i = 0

    def _active() -> bool:
        return all(g.taken for g in stack if g.decided)

    def _undecided_inside() -> bool:
        return any(not g.decided for g in stack)

    while i < len(rows):
        start, end = rows[i]
        j = i  # last line of a directive continued with backslashes
        while src[rows[j][0]:rows[j][1]].rstrip().endswith(b"\\") and j + 1 < len(rows):
            j += 1
        line = b" ".join(src[rows[k][0]:rows[k][1]].rstrip().rstrip(b"\\") for k in range(i, j + 1))
        m = _DIRECTIVE.match(line)
        blank = not _active()
        if m is not None:
            kind = m.group(1).decode()
            rest = re.sub(r"/\*.*?\*/|//.*$", "", m.group(2).decode("utf-8", "replace")).strip()
            if kind in ("if", "ifdef", "ifndef"):
                if not _active():
                    stack.append(_Group(decided=True, taken=False, any_taken=True))
                    blank = True
                else:
                    if kind == "if":
                        c = condition_value(rest, _is_defined, _value, evaluate)
                    else:
                        d = _is_defined(rest.split()[0]) if rest.split() else None
                        c = None if d is None else (d if kind == "ifdef" else not d)
                    stack.append(_Group(decided=c is not None, taken=bool(c), any_taken=bool(c)))
                    blank = c is not None
            elif kind in ("elif", "else") and stack and stack[-1].decided:
                g = stack[-1]
                outer = all(x.taken for x in stack[:-1] if x.decided)
                if g.any_taken or not outer:
                    g.taken, blank = False, True
                elif kind == "else":
                    g.taken = g.any_taken = True
                    blank = True
                else:
                    c = condition_value(rest, _is_defined, _value, evaluate)
                    if c is None:  # the rest of the group is read by the tree: the #elif opens it
                        g.decided = False
                        at = src.find(b"elif", start, end)
                        out[at:at + 4] = b"if  "
                        blank = False
                    else:
                        g.taken = g.any_taken = c
                        blank = True
            elif kind == "endif" and stack:
                g = stack.pop()
                blank = g.decided
            elif kind in ("define", "undef") and not blank:
                name_m = re.match(r"(\w+)(\(?)", rest)
                if name_m is not None:
                    name = name_m.group(1)
                    if _undecided_inside():
                        own[name] = "\0"
                    elif kind == "undef":
                        own[name] = None
                    else:
                        own[name] = "" if name_m.group(2) else rest[len(name):].strip()
        if blank:
            for k in range(i, j + 1):
                s, e = rows[k]
                out[s:e] = b" " * (e - s)
        i = j + 1
    return bytes(out)
