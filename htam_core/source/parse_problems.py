"""Where a file does not parse: the one reader of tree-sitter's ERROR and MISSING nodes for messages.

Every place that tells the user a file or kernel does not parse (``htam kernels``' parse problems, the
one line ``htam profile``/``suggest``/``optimize`` and the hover give for a half-typed kernel, the harness
commands, the editor's diagnostic) takes the position and wording from here, so they agree and point at
the problem rather than at the start of the file or of the kernel.

The position is that of the first ERROR or MISSING node in document order, given as 1-based line and
column (in characters); inside an ERROR node, complete statements that tree-sitter kept at its start are
skipped, so the position is the first token it could not place, and an opening bracket that the node
leaves open is reported where it opens (``pid = tl.program_id(0`` then more lines: the ``(``). Tree-sitter wraps a construct left open at the end of the file (a half-typed
kernel: ``if (i < n`` then nothing) into one ERROR node that starts where the construct starts, often the
first line of the function or of the file; such a node is reported at its innermost bracket left open
(``if (i < n``: the ``(``), or, when that is a block's ``{`` (typing inside a body) or there is none, at the
end of its last token, where the text stops, and says so. A
MISSING closing bracket is reported at the bracket it would close, for the same reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter as ts

from htam_core.source.parsing import new_parser
from htam_core.source.preproc import parse_view

__all__ = ["ParseProblem", "first_problem", "kernel_problem", "problem_message", "text_problems", "tree_problems"]

_NEAR = 40


@dataclass(frozen=True)
class ParseProblem:
    """One place where the parser gave up.

    Attributes:
        line: 1-based line in the file.
        column: 1-based column in characters.
        byte: file byte of the position.
        what: what is wrong there, in words (``"missing `;`"``, ``"cannot parse `int j = ;`"``,
            ``"`(` is never closed (the text stops after `if (i < n`, line 5)"``).
    """

    line: int
    column: int
    byte: int
    what: str

    @property
    def where(self) -> str:
        """``"LINE:COLUMN"``."""
        return f"{self.line}:{self.column}"

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def _near(text: bytes) -> str:
    first = text.decode("utf-8", "replace").strip().splitlines()
    s = " ".join(first[0].split()) if first else ""
    return s if len(s) <= _NEAR else s[: _NEAR - 3] + "..."


_CLOSE = {")": "(", "]": "[", "}": "{"}


def _unclosed(node: ts.Node) -> ts.Node | None:
    """The last opening bracket among ``node``'s tokens that no later token closes (the innermost one left
    open), else ``None``."""
    stack: list[ts.Node] = []
    todo = [node]
    while todo:
        n = todo.pop()
        if n.child_count:
            todo.extend(reversed(n.children))
        elif n.type in ("(", "[", "{") and not n.is_missing:
            stack.append(n)
        elif n.type in _CLOSE and not n.is_missing and stack and stack[-1].type == _CLOSE[n.type]:
            stack.pop()
    return stack[-1] if stack else None


def _opener_of(missing: ts.Node) -> ts.Node | None:
    """For a MISSING closing bracket, the opening bracket before it among its siblings (tree-sitter puts
    the MISSING node where it gave up, often lines later; the bracket left open is where to look)."""
    want = _CLOSE.get(missing.type)
    parent = missing.parent
    if want is None or parent is None:
        return None
    before = [c for c in parent.children if c.end_byte <= missing.start_byte and c.type == want]
    return before[-1] if before else None


def _whole(node: ts.Node) -> bool:
    """A complete statement or definition that tree-sitter kept inside an ERROR node (the problem comes
    after it)."""
    t = node.type
    return not node.has_error and node.is_named and (
        t.endswith(("_statement", "_definition", "declaration")) or t == "comment" or t.startswith("preproc_"))


def _tail(text: bytes) -> str:
    last = text.decode("utf-8", "replace").rstrip().splitlines()
    s = " ".join(last[-1].split()) if last else ""
    return s if len(s) <= _NEAR else "..." + s[-(_NEAR - 3):]


def _position(file: bytes, byte: int) -> tuple[int, int]:
    byte = max(0, min(byte, len(file)))
    start = file.rfind(b"\n", 0, byte) + 1
    return file.count(b"\n", 0, byte) + 1, len(file[start:byte].decode("utf-8", "replace")) + 1


def tree_problems(root: ts.Node, file: bytes, to_file: Callable[[int], int] | None = None,
                  limit: int = 20, text_end: int | None = None) -> list[ParseProblem]:
    """The ERROR/MISSING nodes under ``root``, outermost first in document order, as :class:`ParseProblem`.

    Args:
        root: a parsed tree's root (or any node).
        file: the whole file's UTF-8 bytes (positions are given in the file).
        to_file: maps a byte of the parsed text to a file byte (CUDA held in a Python string); identity when
            ``None``.
        limit: at most this many problems.
        text_end: the file byte where the parsed text ends (the end of a CUDA string); the file's end when
            ``None``.
    """
    conv = to_file or (lambda b: b)
    out: list[ParseProblem] = []
    stack = [root]
    while stack and len(out) < limit:
        n = stack.pop()
        if n.is_missing:
            opener = _opener_of(n)
            at = conv(n.start_byte if opener is None else opener.start_byte)
            what = f"missing `{n.type}`" if opener is None else f"`{opener.type}` is never closed"
            out.append(ParseProblem(*_position(file, at), at, what))
            continue
        if n.is_error:
            start, end = conv(n.start_byte), conv(n.end_byte)
            body = file[start:end]
            at_end = not file[end:text_end].strip()  # the construct is left open where the text stops
            stop = start + len(body.rstrip())
            opener = _unclosed(n)
            if opener is not None and at_end and opener.type == "{":  # typing inside a block: where it stops
                at = stop
                what = (f"the text stops after `{_tail(body)}` (the `{{` of line "
                        f"{_position(file, conv(opener.start_byte))[0]} is never closed)")
            elif opener is not None:
                at = conv(opener.start_byte)
                what = f"`{opener.type}` is never closed"
                if at_end:
                    what += f" (the text stops after `{_tail(body)}`, line {_position(file, stop)[0]})"
            elif at_end:
                at, what = stop, f"the text stops after `{_tail(body)}`"
            else:
                first = next((c for c in n.children if not _whole(c)), n)
                at = conv(first.start_byte)
                what = f"cannot parse `{_near(file[at:end])}`"
            out.append(ParseProblem(*_position(file, at), at, what))
            continue
        if n.has_error:
            stack.extend(reversed(n.children))
    return out


def text_problems(text: str | bytes, grammar: str, start: int = 0, end: int | None = None,
                  limit: int = 20) -> list[ParseProblem]:
    """The parse problems of ``text`` (a whole file) in the tree-sitter ``grammar`` (``"cuda"``, read through the
    parse view, or ``"python"``), those whose position lies in file bytes ``[start, end]`` when a range is given
    (a kernel's span)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    tree = new_parser(grammar).parse(parse_view(data) if grammar == "cuda" else data)
    stop = len(data) if end is None else end
    return [p for p in tree_problems(tree.root_node, data, limit=10_000) if start <= p.byte <= stop][:limit]


def first_problem(text: str | bytes, grammar: str, start: int = 0, end: int | None = None) -> ParseProblem | None:
    """The first parse problem of ``text`` in ``grammar`` (see :func:`text_problems`), or ``None`` when it parses
    there."""
    found = text_problems(text, grammar, start, end, limit=1)
    return found[0] if found else None


def problem_message(name: str, problem: ParseProblem, then: str) -> str:
    """The one line for a file that does not parse: ``"k.cu:5:8: syntax error: `(` is never closed (the text
    stops after `if (i < n`, line 5); fix it there, then THEN"``.

    Args:
        name: the file's name as the user knows it.
        problem: where (from :func:`first_problem`).
        then: what to do after the fix (``"run `htam harness infer k.cu` again"``).
    """
    return f"{name}:{problem.where}: syntax error: {problem.what}; fix it there, then {then}"


def kernel_problem(problems: list[ParseProblem], data: bytes, start: int, end: int,
                   grammar: str = "cuda") -> ParseProblem | None:
    """The first problem of a half-typed kernel defined at file bytes ``[start, end]``, read from the kernel's
    own text only, so that its message names nothing of another kernel.

    The kernel's text is parsed on its own in its language's ``grammar`` (``"cuda"``, through the same parse view
    as the file, CUDA held in a Python string included; or ``"python"`` for a Triton kernel that starts at a line
    start: :attr:`htam_core.types.language.LanguageTraits.grammar`) and its first problem is returned; when that parse finds none, the first
    of the file's ``problems`` that lies inside ``[start, end]``; else ``None`` (an error that began before the
    kernel belongs to the kernel or the code it is in, and is reported there).
    """
    own_text = data[start:end]
    if grammar == "cuda" or own_text[:1] not in (b" ", b"\t"):
        buf = parse_view(own_text) if grammar == "cuda" else own_text
        tree = new_parser(grammar).parse(buf)
        own = tree_problems(tree.root_node, data, lambda b: b + start, limit=1, text_end=end)
        if own:
            return own[0]
    inside = [p for p in problems if start <= p.byte <= end]
    return inside[0] if inside else None
