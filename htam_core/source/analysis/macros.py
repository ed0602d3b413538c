"""Function-like macros read through: the analysis sees the expression a macro call stands for.

Valid CUDA written by others hides index arithmetic, element accesses, casts and math behind function-like
macros: ``#define IDX2R(i, j, ld) (((i) * (ld)) + (j))``, ``#define AT(p, r, c, ld) (p)[(r) * (ld) + (c)]``,
``#define A_AT(r, c) A[(r) * K + (c)]``, ``#define TO_F(x) static_cast<float>(x)``, ``#define EXPF(x) __expf(x)``.
tree-sitter parses ``AT(C, r, c, N)`` as a call of an unknown function, so without this module the accesses,
index forms, casts and math calls inside are invisible.

:func:`macro_table` reads the file's ``#define NAME(params) body`` lines once (continuation lines joined, comments
dropped) with where each definition starts and where an ``#undef`` or a redefinition ends it: a macro defined
after a use, or undefined before it, is not expanded there, as the preprocessor does. :func:`expansion` gives the
replacement text of one call: arguments are fully macro-expanded first and substituted for the parameters, then
the result is rescanned for further macro calls, with a macro never expanded inside its own expansion (the
recursion guard); the text is what nvcc compiles, precedence included (C11 6.10.3.1, 6.10.3.4). The analysis
parses that text on its own and evaluates it in the kernel's scope at the call (:mod:`.cuda`), so every fact
found inside keeps the call's source range: an edit can only ever replace a whole macro call, never text inside
it.

Given up cleanly (the call stays an opaque call, as before): a body that stringizes or pastes tokens (``#``,
``##``), a variadic macro (``...``), a body that is a statement rather than an expression (``do { } while (0)``,
one holding ``;`` or braces), a half-typed ``#define`` (no closing parenthesis of its parameters), a call with
the wrong number of arguments, and expansions nested deeper than :data:`MAX_DEPTH`. A statement macro that opens a
loop (``CUDA_KERNEL_LOOP(i, n) { ... }``) is read by :mod:`.macro_loops` instead, from :func:`replacement`.

Variadic macros (``#define LAUNCH(k, ...) k<<<g, b>>>(__VA_ARGS__)``, GNU ``#define LAUNCH(k, args...)``) and
statement bodies are kept in the table all the same, with their refusal: :func:`replacement` gives the text a use
of one stands for (the variadic parameter bound to the remaining arguments joined with ``", "``, C11 6.10.3.1;
empty when there are none), for readers of the text such as the launches written through a macro
(:mod:`.launch_macros`). The expression reading above stays as it was: its calls bind one argument node per
parameter.

Two lighter readings serve the syntax helpers that see a node without its unit: :func:`transparent_argument`
(``TO_F(in[i])``, a macro whose body is one parameter under parentheses and casts, reads as its argument) and
:func:`call_alias` (``EXPF(v)``, a macro whose body is one call of a function on its parameters in order, reads as a
call of that function).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

from tree_sitter import Node

__all__ = ["MAX_DEPTH", "ExpandedIndex", "FunctionMacro", "MacroTable", "arg_spans", "call_alias", "expansion", "macro_call", "macro_table",
           "replacement", "transparent_argument"]

#: How deep macro calls may nest inside one expansion before the reading gives up.
MAX_DEPTH = 16

_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(define|undef)\b((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)
_NAME = re.compile(r"[ \t]*([A-Za-z_]\w*)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_IDENT = re.compile(r"[A-Za-z_]\w*")
_STATEMENT = re.compile(r"^\s*(?:do|if|for|while|switch|return)\b")


@dataclass(frozen=True)
class FunctionMacro:
    """One ``#define NAME(params) body`` of a unit.

    Attributes:
        name: the macro's name.
        params: its parameter names, in order.
        body: the replacement text, continuation lines joined and comments removed.
        start: byte offset of the ``#define`` in the unit's text (``-1``: from an included header, in effect
            everywhere).
        end: byte offset of the ``#undef`` or redefinition that ends it, or ``None``.
        refusal: why a call is not expanded (``""`` when it is): stringizing or token pasting, variadic, a
            statement body, a half-typed definition.
        variadic: whether the parameter list ends in ``...`` (its last ``params`` entry is then ``__VA_ARGS__``)
            or in GNU ``name...`` (the last entry is ``name``): that parameter takes the remaining arguments.
        substitutable: whether :func:`replacement` can substitute the body at all (its parameters are names, it
            neither stringizes nor pastes, the definition is complete); a variadic macro or a statement body is,
            though refused as an expression.
    """

    name: str
    params: tuple[str, ...]
    body: str
    start: int
    end: int | None
    refusal: str = ""
    variadic: bool = False
    substitutable: bool = True

    def named(self) -> tuple[str, ...]:
        """The parameters a use must give one argument each (the variadic one left out)."""
        return self.params[:-1] if self.variadic else self.params

    def in_effect(self, offset: int) -> bool:
        """Whether a use at byte ``offset`` of the unit sees this definition."""
        return self.start < offset and (self.end is None or offset < self.end)


@dataclass(frozen=True)
class MacroTable:
    """The function-like macros of one unit (:func:`macro_table`), looked up by name and use position."""

    defs: tuple[FunctionMacro, ...]

    def at(self, name: str, offset: int) -> FunctionMacro | None:
        """The definition of ``name`` a use at byte ``offset`` sees (refused ones included), or ``None``."""
        found = None
        for d in self.defs:
            if d.name == name and d.in_effect(offset):
                found = d
        return found

    def names(self) -> frozenset[str]:
        """Every name defined as a function-like macro somewhere in the unit."""
        return frozenset(d.name for d in self.defs)


def _strip(text: str) -> str:
    """``text`` with continuation backslashes joined and comments removed."""
    return _COMMENT.sub(" ", re.sub(r"\\\r?\n", " ", text)).strip()


def _params(raw: list[str]) -> tuple[tuple[str, ...], bool] | None:
    """``(parameter names, variadic)`` of a parameter list's entries (``...`` read as ``__VA_ARGS__``, GNU
    ``name...`` as ``name``), or ``None`` when one is not a name."""
    variadic = bool(raw) and raw[-1].endswith("...")
    names = [*raw[:-1], raw[-1][:-3].strip() or "__VA_ARGS__"] if variadic else raw
    return (tuple(names), variadic) if all(_IDENT.fullmatch(p) for p in names) else None


def _parse_define(rest: str) -> FunctionMacro | tuple[str, None] | None:
    """The function-like macro a ``#define`` line's text after ``define`` defines (``start``/``end`` left to the
    caller), ``(name, None)`` for an object-like one, ``None`` when no name follows."""
    m = _NAME.match(rest)
    if m is None:
        return None
    name, tail = m.group(1), rest[m.end():]
    if not tail.startswith("("):
        return name, None
    close = tail.find(")")
    if close < 0:
        return FunctionMacro(name, (), "", -1, None, "the #define is not complete (its parameter list is not closed)",
                             substitutable=False)
    raw = [p.strip() for p in tail[1:close].split(",")] if tail[1:close].strip() else []
    body = tail[close + 1:].strip()
    read = _params(raw)
    params, variadic = read if read is not None else (tuple(raw), False)
    code = _LITERAL.sub('""', body)
    text_refusal = ("the #define's parameters are not names" if read is None else
                    "the macro stringizes or pastes tokens (# or ##)" if "#" in code else
                    "the macro reads __VA_OPT__" if "__VA_OPT__" in code else "")
    refusal = "the macro is variadic" if variadic else text_refusal or _expression_refusal(body, code)
    return FunctionMacro(name, params, body, -1, None, refusal, variadic, not text_refusal)


def _expression_refusal(body: str, code: str) -> str:
    """Why a substitutable body is not read as an expression (``""`` when it is); ``code``: literals blanked."""
    if not body:
        return "the macro expands to nothing"
    if ";" in code or "{" in code or "}" in code or _STATEMENT.match(code):
        return "the macro's body is a statement, not an expression"
    return ""


def _defs(src: bytes, start_at: int | None) -> list[FunctionMacro]:
    """The function-like macro definitions of ``src``; ``start_at`` overrides their start (headers: ``-1``)."""
    out: list[FunctionMacro] = []
    open_: dict[str, int] = {}
    for m in _DIRECTIVE.finditer(src):
        rest = _strip(m.group(2).decode("utf-8", "replace"))
        if m.group(1) == b"undef":
            nm = _NAME.match(rest)
            name = nm.group(1) if nm else ""
            if name in open_:
                k = open_.pop(name)
                out[k] = replace(out[k], end=m.start())
            continue
        parsed = _parse_define(rest)
        if parsed is None:
            continue
        name = parsed.name if isinstance(parsed, FunctionMacro) else parsed[0]
        if name in open_:  # a redefinition ends the previous one
            k = open_.pop(name)
            out[k] = replace(out[k], end=m.start())
        if not isinstance(parsed, FunctionMacro):
            continue
        open_[name] = len(out)
        out.append(replace(parsed, body=_strip(parsed.body), start=m.start() if start_at is None else start_at))
    return out


@lru_cache(maxsize=16)
def _table(src: bytes, headers: tuple[bytes, ...]) -> MacroTable:
    defs: list[FunctionMacro] = []
    for h in headers:
        defs.extend(_defs(h, -1))
    defs.extend(_defs(src, None))
    return MacroTable(tuple(defs))


def macro_table(src: bytes, headers: Iterable[bytes] = ()) -> MacroTable:
    """The function-like macros of ``src`` (a unit's UTF-8 bytes) and of its local ``headers`` (their bytes, in
    effect everywhere in the unit), cached per text.

    Errors: none; a definition that cannot be read is left out or kept with its refusal.
    """
    if b"define" not in src and not any(b"define" in h for h in headers):
        return MacroTable(())
    return _table(src, tuple(headers))


def macro_call(node: Node, table: MacroTable, t: Callable[[Node], str]) -> tuple[FunctionMacro, list[Node]] | None:
    """``(macro, argument nodes)`` when ``node`` is a call of a function-like macro of ``table`` that is in effect
    at the call and expandable, with as many arguments as it has parameters; else ``None``. ``t`` reads a node's
    text in the unit the offsets index."""
    if node.type != "call_expression" or not table.defs:
        return None
    fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
    if fn is None or fn.type != "identifier" or args is None:
        return None
    d = table.at(t(fn), node.start_byte)
    if d is None or d.refusal:
        return None
    vals = [a for a in args.named_children if a.type != "comment"]
    if len(vals) != len(d.params):
        return None
    return d, vals


def _bind(macro: FunctionMacro, args: list[str]) -> dict[str, str] | None:
    """Parameter -> argument text for a use of ``macro`` with argument texts ``args`` (``[""]``: ``F()``, no
    argument), the variadic parameter taking the rest joined with ``", "`` (C11 6.10.3.1; empty when there are
    none); ``None`` for too few arguments, or too many for a macro that is not variadic."""
    named = macro.named()
    if args == [""] and not named:
        args = []
    if len(args) < len(named) or (len(args) > len(named) and not macro.variadic):
        return None
    bind = dict(zip(named, args[:len(named)], strict=True))
    if macro.variadic:
        bind[macro.params[-1]] = ", ".join(args[len(named):])
    return bind


def _substitute(body: str, bind: dict[str, str]) -> str:
    """``body`` with each parameter name of ``bind`` (outside literals) replaced by its argument text."""
    out: list[str] = []
    pos = 0
    code = _LITERAL.sub(lambda m: " " * len(m.group(0)), body)
    for m in _IDENT.finditer(code):
        if m.group(0) in bind:
            out += [body[pos:m.start()], bind[m.group(0)]]
            pos = m.end()
    out.append(body[pos:])
    return "".join(out)


def substituted(macro: FunctionMacro, args: list[str]) -> str | None:
    """``macro``'s body with argument texts ``args`` substituted for its parameters, nothing rescanned (the
    variadic parameter takes the rest, :func:`_bind`); ``None`` when ``macro`` is not substitutable or the count
    does not fit. For readers of what a statement macro declares (``using scalar_t = type;``)."""
    bind = _bind(macro, args) if macro.substitutable else None
    return None if bind is None else _substitute(macro.body, bind)


def _expand_text(text: str, table: MacroTable, at: int, active: frozenset[str], depth: int) -> str | None:
    """``text`` (code) with every call of an expandable macro of ``table`` in effect at ``at`` replaced by its
    expansion (rescanning); ``None`` when a call cannot be read (unbalanced, refused, too deep)."""
    if depth > MAX_DEPTH:
        return None
    code = _LITERAL.sub(lambda m: " " * len(m.group(0)), text)
    out: list[str] = []
    pos = 0
    for m in _IDENT.finditer(code):
        if m.start() < pos or m.group(0) in active:
            continue
        d = table.at(m.group(0), at)
        if d is None:
            continue
        j = m.end()
        while j < len(code) and code[j] in " \t\n":
            j += 1
        if j >= len(code) or code[j] != "(":
            continue  # a name without a call is not an invocation (C11 6.10.3p10)
        if d.refusal:
            return None
        args, end = _split_args(code, text, j)
        if args is None:
            return None
        if args == [""] and not d.params:
            args = []
        if len(args) != len(d.params):
            return None
        exp = expansion(d, args, table, at, active, depth + 1)
        if exp is None:
            return None
        out.append(text[pos:m.start()])
        out.append(exp)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def arg_spans(code: str, open_at: int) -> tuple[list[tuple[int, int]] | None, int]:
    """The ``(start, end)`` offsets in ``code`` of each comma-separated argument of the call whose ``(`` is at
    ``open_at`` (blanks around each left out), and the offset after its ``)``; ``None`` when the parentheses do not
    close. Commas inside nested ``()``, ``[]`` and ``{}`` do not split."""
    depth, start, out = 0, open_at + 1, []
    for i in range(open_at, len(code)):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                out.append((start, i))
                return [_trim(code, s, e) for s, e in out], i + 1
        elif c == "," and depth == 1:
            out.append((start, i))
            start = i + 1
    return None, len(code)


def _trim(code: str, s: int, e: int) -> tuple[int, int]:
    while s < e and code[s].isspace():
        s += 1
    while e > s and code[e - 1].isspace():
        e -= 1
    return s, e


def _split_args(code: str, text: str, open_at: int) -> tuple[list[str] | None, int]:
    """The comma-separated argument texts of the call whose ``(`` is at ``open_at`` and the offset after its ``)``."""
    spans, end = arg_spans(code, open_at)
    return (None if spans is None else [text[s:e] for s, e in spans]), end


def expansion(macro: FunctionMacro, args: list[str], table: MacroTable, at: int,
              active: frozenset[str] = frozenset(), depth: int = 0) -> str | None:
    """The replacement text of ``macro`` called with argument texts ``args`` at byte ``at`` of its unit: each
    argument macro-expanded, substituted for its parameter, and the result rescanned with ``macro`` itself not
    expanded again (C11 6.10.3.1 and 6.10.3.4). ``None`` when the call cannot be read (a refused macro inside, a
    wrong argument count, nesting beyond :data:`MAX_DEPTH`).

    Args:
        macro: an expandable definition (``refusal`` empty).
        args: argument texts, one per parameter.
        table: the unit's macros (nested calls are looked up at ``at``).
        at: byte offset of the outermost call in the unit.
        active: macros being expanded around this one (not expanded again).
        depth: nesting depth so far.
    """
    if macro.refusal or len(args) != len(macro.params) or depth > MAX_DEPTH:
        return None
    done = []
    for a in args:
        e = _expand_text(a, table, at, active, depth + 1)
        if e is None:
            return None
        done.append(e)
    body = _substitute(macro.body, dict(zip(macro.params, done, strict=True)))
    return _expand_text(body, table, at, active | {macro.name}, depth + 1)


def replacement(macro: FunctionMacro, args: list[str], table: MacroTable, at: int) -> str | None:
    """The text a use of ``macro`` with argument texts ``args`` at byte ``at`` of its unit stands for, for any
    substitutable definition (``macro.substitutable``: variadic macros and statement bodies included): each
    argument, and then the substituted body, with the expression macros of ``table`` it calls expanded where
    they can be (:func:`expansion`; left as written where they cannot, as nvcc still compiles them), ``macro``
    itself never expanded again. ``None`` when ``macro`` is not substitutable or the argument count does not fit
    (too few for its named parameters, too many for one that is not variadic).

    Args:
        macro: a definition of ``table``.
        args: the use's argument texts (``[""]`` for ``F()``).
        table: the unit's macros (nested calls are looked up at ``at``).
        at: byte offset of the use in the unit.
    """
    bind = _bind(macro, args) if macro.substitutable else None
    if bind is None:
        return None

    def loose(text: str, active: frozenset[str]) -> str:
        out = _expand_text(text, table, at, active, 1)
        return text if out is None else out

    body = _substitute(macro.body, {p: loose(a, frozenset()) for p, a in bind.items()})
    return loose(body, frozenset({macro.name}))


# ----------------------------------------------------------------- readings for the syntax helpers


def _root_text(node: Node) -> tuple[bytes, int]:
    """The text of ``node``'s tree (as it was parsed) and the call's offset in it."""
    root = node
    while root.parent is not None:
        root = root.parent
    return root.text or b"", node.start_byte


def _macro_of(node: Node) -> tuple[FunctionMacro, list[Node]] | None:
    """The macro call ``node`` is, read from its own tree's text (no headers)."""
    if node.type != "call_expression":
        return None
    fn = node.child_by_field_name("function")
    if fn is None or fn.type != "identifier":
        return None
    text, _ = _root_text(node)
    table = macro_table(text)
    return macro_call(node, table, lambda n: (n.text or b"").decode("utf-8", "replace"))


_C_CAST = re.compile(r"^\(\s*(?:const\s+|unsigned\s+|signed\s+|long\s+)*[A-Za-z_][\w:]*\s*\**\s*\)\s*(.+)$", re.S)
_CXX_CAST = re.compile(r"^static_cast\s*<[^<>]*>\s*\((.*)\)$", re.S)


def _bare_param(body: str, params: tuple[str, ...]) -> str | None:
    """The parameter ``body`` is, once parentheses, C casts and ``static_cast<T>(...)`` are peeled, else ``None``."""
    for _ in range(8):
        body = body.strip()
        if body in params:
            return body
        if body.startswith("(") and body.endswith(")") and _balanced(body[1:-1]):
            body = body[1:-1]
            continue
        m = _C_CAST.match(body) or _CXX_CAST.match(body)
        if m is None or not _balanced(m.group(1)):
            return None
        body = m.group(1)
    return None


def _balanced(text: str) -> bool:
    depth = 0
    for c in text:
        depth += c == "("
        depth -= c == ")"
        if depth < 0:
            return False
    return depth == 0


def transparent_argument(node: Node) -> Node | None:
    """The argument node of ``node`` when ``node`` calls a function-like macro of its own file whose body is one of
    its parameters under parentheses and casts only (``#define TO_F(x) ((float)(x))``,
    ``#define AS_F(x) static_cast<float>(x)``): the call reads as that argument, converted. ``None`` otherwise."""
    mc = _macro_of(node)
    if mc is None:
        return None
    d, args = mc
    p = _bare_param(d.body, d.params)
    return args[d.params.index(p)] if p is not None else None


_CALL_BODY = re.compile(r"^([A-Za-z_][\w:]*)\s*\((.*)\)$", re.S)


def _unparen(text: str) -> str:
    """``text`` without parentheses that wrap all of it."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def call_alias(node: Node) -> str | None:
    """The function a call of a function-like macro stands for when the macro's body is one call of that function
    on the macro's parameters in order (``#define EXPF(v) expf(v)``, ``#define FAST_EXP(x) (__expf((x)))``):
    ``"expf"``; ``None`` for any other call."""
    mc = _macro_of(node)
    if mc is None:
        return None
    d, _ = mc
    m = _CALL_BODY.match(_unparen(d.body))
    if m is None or not _balanced(m.group(2)):
        return None
    inner = tuple(_unparen(a) for a in m.group(2).split(",")) if m.group(2).strip() else ()
    return m.group(1) if inner == d.params else None


_MEMBER = re.compile(r"(?:\.|->|::)\s*$")


@dataclass(frozen=True)
class ExpandedIndex:
    """An index read through a macro call, as the macro expands it at the call in the kernel's names
    (:attr:`~htam_core.source.analysis.facts.Access.index_text` of an access with a ``macro``): a rewrite that
    moves the access spells it out from this text, replacing the whole call.

    Attributes:
        text: the expanded index (``"(row) * K + (k)"``).
    """

    text: str

    def _uses(self) -> list[re.Match[str]]:
        code = _LITERAL.sub(lambda m: " " * len(m.group(0)), self.text)
        return [m for m in _IDENT.finditer(code) if not _MEMBER.search(code[:m.start()])]

    def names(self) -> frozenset[str]:
        """The names the index reads (member names after ``.``/``->``/``::`` left out)."""
        return frozenset(m.group(0) for m in self._uses())

    def rename(self, mapping: dict[str, str], paren: bool = True) -> str:
        """The text with each name of ``mapping`` replaced by its value (in parentheses when ``paren``)."""
        out, pos = [], 0
        for m in self._uses():
            if m.group(0) in mapping:
                rep = mapping[m.group(0)]
                out += [self.text[pos:m.start()], f"({rep})" if paren else rep]
                pos = m.end()
        return "".join(out) + self.text[pos:]
