"""What nvcc's preprocessor does that tree-sitter does not, done for the parser at equal length.

:func:`parse_view` is the text the CUDA grammar parses: :func:`qualifier_view` then :func:`branch_view`.

Qualifier macros.

Real CUDA names its qualifiers through macros: ``#define RESTRICT __restrict__``, ``#define DEVICE_INLINE
__device__ __forceinline__``, ``#define HOST_DEVICE`` (empty). nvcc expands them before it parses; tree-sitter
does not, and reads ``const float* RESTRICT x`` as a parameter named ``RESTRICT`` followed by garbage, so a
valid kernel looked half-typed. :func:`qualifier_view` gives the parser a copy of the text in which every use
of such a macro is replaced by the most telling qualifier of its expansion that fits in the macro name's
length (``__device__``, ``const``, ``__restrict__``, ``restrict``, ...), padded with spaces, or by spaces when
none fits. The copy has the same length and the same line breaks, so every byte offset, line and column of
a tree parsed from it is one of the user's text; texts (names, types as written) are still read from the
original bytes, where the macro's name stands.

Only object-like macros whose whole expansion is qualifier keywords (or empty) are touched; function-like
macros (``FLOAT4(v)``) and value macros (``#define TILE 32``) already parse as calls and identifiers. Macros
holding ``__global__`` or ``__launch_bounds__(...)`` among qualifiers (:func:`kernel_macros`: ``#define GLOBAL
__global__``) are read as ``__global__`` where the name is long enough, else as blanks; the kernel finder then
finds their kernels by the macro's name in the user's text. Preprocessor lines are left as written.
Macros that open and close a namespace (``#define NS_BEGIN namespace ops {`` with ``#define NS_END }``) are read
as blanks too (:func:`scope_macros`), so the braces they hide do not unbalance the file.
The idea is the C preprocessor's own object-like macro replacement (C11 6.10.3), restricted to the
replacements that change how a declaration parses.

Conditionals that split a construct. ``#if __CUDA_ARCH__ >= 800`` / ``#else`` / ``#endif`` whose branches
each open a brace or a parenthesis the other closes (a kernel header with two parameter lists, an ``if (...) {``
line per architecture) cannot be parsed by tree-sitter, which reads each branch as a whole construct; nor can a
conditional inside parentheses (``#ifndef FIXED_BLOCKWIDTH`` between two parameters of a kernel).
:func:`branch_view` keeps the first branch of such a conditional (the one the device pass for a recent
architecture takes, and for ``#ifdef`` the configured one more often than not) and blanks its directive lines
and the other branches; a conditional whose every branch is balanced is left as written (the parser reads
all its branches). Conditional inclusion itself is C11 6.10.1.
"""

from __future__ import annotations

import re

__all__ = ["QUALIFIERS", "branch_view", "kernel_macros", "parse_view", "qualifier_macros", "qualifier_view",
           "scope_macros"]

#: Keywords a qualifier macro may expand to, in the order a replacement is chosen (the first that fits).
QUALIFIERS: tuple[str, ...] = (
    "__device__", "const", "__restrict__", "__restrict", "restrict", "__host__", "__forceinline__",
    "__noinline__", "__inline__", "inline", "static", "volatile", "constexpr", "extern",
)
_KEYWORDS = frozenset((*QUALIFIERS, '"C"'))
_RESTRICT = frozenset(("__restrict__", "__restrict", "restrict"))
_KERNEL_WORDS = frozenset(("__global__", "__launch_bounds__"))
_BOUNDS = re.compile(r"\b__launch_bounds__\s*\([^()]*(?:\([^()]*\)[^()]*)*\)")
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*([^\r\n]*)$", re.M)
_PREPROC_LINE = re.compile(rb"^[ \t]*#[^\r\n]*(?:\\\r?\n[^\r\n]*)*", re.M)


def qualifier_macros(src: bytes, kernels: bool = False) -> dict[str, str]:
    """The object-like macros of ``src`` (UTF-8 bytes) whose expansion is only qualifier keywords, or empty:
    ``{"RESTRICT": "__restrict__", "DEVICE_INLINE": "__device__ __forceinline__", "HOST_DEVICE": ""}``.

    A name defined twice with different expansions (``#if`` branches) is kept only when every expansion
    qualifies; the last one is returned. Macros holding ``__global__`` or ``__launch_bounds__(...)`` are left out,
    unless ``kernels``: then only those are returned (:func:`kernel_macros`).
    """
    if b"define" not in src:
        return {}
    out: dict[str, str] = {}
    refused: set[str] = set()
    for m in _DEFINE.finditer(src):
        name = m.group(1).decode("ascii")
        value = m.group(2).split(b"//")[0].split(b"/*")[0].decode("utf-8", "replace")
        tokens = _BOUNDS.sub(" __launch_bounds__ ", value).split()
        kernel = "__global__" in tokens or "__launch_bounds__" in tokens
        if value.rstrip().endswith("\\") or kernel != kernels or \
                not all(t in _KEYWORDS or t in _KERNEL_WORDS for t in tokens):
            refused.add(name)
            continue
        out[name] = " ".join(value.split())
    return {k: v for k, v in out.items() if k not in refused}


def kernel_macros(src: bytes) -> dict[str, str]:
    """The object-like macros of ``src`` whose expansion is ``__global__`` or ``__launch_bounds__(...)`` with only
    qualifier keywords besides (``#define GLOBAL __global__``, ``#define KERNEL_LB __global__
    __launch_bounds__(256)``, ``#define LB __launch_bounds__(128, 2)``), name -> expansion. A macro that also names
    a type (``#define KERNEL __global__ void``) is not one: the grammar reads its uses as the type, and the kernel
    finder reads them there. :func:`qualifier_view` reads a use as ``__global__`` when the name is long enough to
    hold it, else as blanks; the kernel finder then finds the kernel by the macro's name in the user's text."""
    return qualifier_macros(src, kernels=True)


_OPENER = re.compile(r'^(?:namespace(?:\s+[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)?|extern\s+"C(?:\+\+)?")\s*\{$')


def scope_macros(src: bytes) -> set[str]:
    """Object-like macros that open or close a scope: ``#define NS_BEGIN namespace ops {`` and ``#define NS_END }``
    (also ``extern "C" {``). Returned only when the file defines both an opener and a closer; their uses are read
    as blanks by :func:`qualifier_view` (the kernels inside are then read at file scope, without the namespace)."""
    if b"define" not in src:
        return set()
    openers, closers = set(), set()
    for m in _DEFINE.finditer(src):
        value = " ".join(m.group(2).split(b"//")[0].decode("utf-8", "replace").split())
        name = m.group(1).decode("ascii")
        if _OPENER.match(value):
            openers.add(name)
        elif value in ("}", "};"):
            closers.add(name)
    return openers | closers if openers and closers else set()


def _replacement(name: str, expansion: str) -> bytes:
    """The first of :data:`QUALIFIERS` in ``expansion`` that fits in ``name``'s length, padded; spaces if none."""
    tokens = set(expansion.split())
    if "__global__" in tokens and len(name) >= len("__global__"):
        return b"__global__".ljust(len(name))
    if tokens & _KERNEL_WORDS:
        return b" " * len(name)  # the kernel finder reads the name in the user's text
    if tokens & _RESTRICT:
        tokens |= _RESTRICT
    for kw in QUALIFIERS:
        if kw in tokens and len(kw) <= len(name):
            return kw.encode().ljust(len(name))
    return b" " * len(name)


def qualifier_view(src: bytes) -> bytes:
    """``src`` with every use of a qualifier macro (:func:`qualifier_macros`) outside preprocessor lines
    replaced by an equal-length qualifier (see the module docstring); ``src`` itself when it has none.

    Args:
        src: UTF-8 bytes of CUDA text (a file, or a string's content).

    Returns:
        Bytes of the same length and the same line breaks as ``src``.
    """
    macros = qualifier_macros(src)
    macros.update(kernel_macros(src))
    macros.update(dict.fromkeys(scope_macros(src), ""))
    src = _blank_bounds_calls(src)
    if not macros:
        return src
    use = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in sorted(macros, key=len, reverse=True))
                     + rb")\b")
    repl = {n.encode(): _replacement(n, v) for n, v in macros.items()}
    buf = bytearray(src)
    skip = [(m.start(), m.end()) for m in _PREPROC_LINE.finditer(src)]
    k = 0
    for m in use.finditer(src):
        while k < len(skip) and skip[k][1] <= m.start():
            k += 1
        if k < len(skip) and skip[k][0] <= m.start() < skip[k][1]:
            continue
        buf[m.start() : m.end()] = repl[m.group(1)]
    return bytes(buf)


_FN_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^)\n]*)\)((?:[^\n]*\\\r?\n)*[^\n]*)$", re.M)


def _close(text: bytes, open_at: int) -> int:
    """The offset after the ``)`` that closes the ``(`` at ``open_at`` in ``text``, or ``-1``."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += (text[i] == 0x28) - (text[i] == 0x29)
        if depth == 0:
            return i + 1
    return -1


def bounds_call_macros(src: bytes) -> set[str]:
    """Function-like macros of ``src`` whose expansion is only ``__launch_bounds__(...)`` and qualifier keywords
    (ATen's ``#define C10_LAUNCH_BOUNDS_1(n) __launch_bounds__((n))``), or one call of such a macro (a macro that
    fills in an argument of another); their uses stand where a qualifier does, between ``void`` and the kernel's
    name, and :func:`qualifier_view` reads them as blanks (the launch-bounds reader finds them in the user's text)."""
    if b"__launch_bounds__" not in src:
        return set()
    bodies = {m.group(1).decode("ascii"): re.sub(rb"\\\r?\n", b" ", m.group(3)).split(b"//")[0].strip()
              for m in _FN_DEFINE.finditer(src)}
    found: set[str] = set()
    grew = True
    while grew:
        grew = False
        for name, body in bodies.items():
            if name not in found and _only_bounds(body, found):
                found.add(name)
                grew = True
    return found


def _only_bounds(body: bytes, found: set[str]) -> bool:
    """``body`` is ``__launch_bounds__(...)`` or calls of the macros of ``found``, with qualifier keywords only."""
    rest, calls = body, 0
    for _ in range(8):
        m = re.search(rb"\b(__launch_bounds__|" + b"|".join(re.escape(f.encode()) for f in found or {"__launch_bounds__"})
                      + rb")\s*\(", rest)
        if m is None:
            break
        end = _close(rest, m.end() - 1)
        if end < 0:
            return False
        rest, calls = rest[:m.start()] + b" " + rest[end:], calls + 1
    return calls == 1 and all(t in _KEYWORDS for t in rest.decode("utf-8", "replace").split())


def _blank_bounds_calls(src: bytes) -> bytes:
    """``src`` with each use of a :func:`bounds_call_macros` macro outside preprocessor lines, its arguments
    included, replaced by spaces (line breaks kept); ``src`` itself when there is none."""
    names = bounds_call_macros(src)
    if not names:
        return src
    use = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in sorted(names, key=len, reverse=True))
                     + rb")\s*\(")
    skip = [(m.start(), m.end()) for m in _PREPROC_LINE.finditer(src)]
    buf = bytearray(src)
    for m in use.finditer(src):
        if any(a <= m.start() < b for a, b in skip):
            continue
        end = _close(src, m.end() - 1)
        for i in range(m.start(), end if end > 0 else m.start()):
            if buf[i] not in (0x0A, 0x0D):
                buf[i] = 0x20
    return bytes(buf)


_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b", re.M)
_NOISE = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def _net(chunk: bytes) -> tuple[int, int]:
    """Braces and parentheses ``chunk`` leaves open (negative: closes more than it opens); comments and
    literals are skipped."""
    code = _NOISE.sub(b"", chunk)
    return code.count(b"{") - code.count(b"}"), code.count(b"(") - code.count(b")")


def _depths(src: bytes, marks: list[tuple[int, int, bytes]]) -> list[int]:
    """Parenthesis depth of the code at each directive of ``marks`` (directive lines themselves not counted)."""
    out, depth, prev_end = [], 0, 0
    for start, end, _ in marks:
        code = _NOISE.sub(b"", src[prev_end:start])
        depth = max(0, depth + code.count(b"(") - code.count(b")"))
        out.append(depth)
        prev_end = end
    return out


def branch_view(src: bytes) -> bytes:
    """``src`` with every preprocessor conditional that splits a construct reduced to its first branch (see the
    module docstring): one with a branch that leaves a brace or parenthesis open or closes one it did not open,
    or one that stands inside parentheses (``#ifndef`` between two parameters). Its directive lines and its
    other branches become spaces, line breaks kept.

    Args:
        src: UTF-8 bytes of CUDA text.

    Returns:
        Bytes of the same length and line breaks; ``src`` itself when no conditional needs it.
    """
    if b"#" not in src:
        return src
    marks = []
    for m in _DIRECTIVE.finditer(src):
        nl = src.find(b"\n", m.start())
        marks.append((m.start(), nl if nl >= 0 else len(src), m.group(1)))
    if not marks:
        return src
    depths = _depths(src, marks)
    # each conditional: its directive lines [(start, end, kind, depth)] in order, nested ones closed first
    chains: list[list[tuple[int, int, bytes, int]]] = []
    stack: list[list[tuple[int, int, bytes, int]]] = []
    for (start, end, kind), depth in zip(marks, depths, strict=True):
        if kind in (b"if", b"ifdef", b"ifndef"):
            stack.append([(start, end, kind, depth)])
        elif stack:
            stack[-1].append((start, end, kind, depth))
            if kind == b"endif":
                chains.append(stack.pop())
    blank: list[tuple[int, int]] = []
    for chain in chains:
        if chain[-1][2] != b"endif":
            continue
        branches = [src[chain[i][1] : chain[i + 1][0]] for i in range(len(chain) - 1)]
        if chain[0][3] == 0 and all(_net(b) == (0, 0) for b in branches):
            continue
        blank.append((chain[0][0], chain[0][1]))
        blank.append((chain[1][0], chain[-1][1]))
    if not blank:
        return src
    buf = bytearray(src)
    for start, end in blank:
        for i in range(start, end):
            if buf[i] not in (0x0A, 0x0D):
                buf[i] = 0x20
    return bytes(buf)


def parse_view(src: bytes) -> bytes:
    """The bytes the CUDA grammar parses for ``src``: :func:`branch_view` of :func:`qualifier_view` (same
    length, same line breaks, so every offset of the tree is an offset of ``src``)."""
    return branch_view(qualifier_view(src))
