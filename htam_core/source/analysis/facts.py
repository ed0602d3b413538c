"""The facts about one kernel, as immutable dataclasses (what :func:`htam_core.source.analysis.analyze` returns).

Conventions: ``line`` is 1-based; ``span`` is a half-open byte range ``(start, end)`` in the *file*
(also for CUDA held in a Python string). Index expressions, bounds and trip counts are
:mod:`sympy` expressions over integer symbols: ``threadIdx.x`` ... ``gridDim.z`` (see
:data:`BUILTINS`), loop variables, parameters and other runtime names (symbols spelled as in the
source). An index is *affine* in a symbol when it is a polynomial of degree at most 1 in it; its
*stride* is then the coefficient (``sympy.diff``), else ``None``. Access strides are in elements of
the pointee type, as in the source. The idea of reading coalescing off the stride of
``threadIdx.x`` is the CUDA C++ Best Practices Guide's ("Coalesced Access to Global Memory").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import sympy

from htam_core.source.analysis.constants import BUILTIN_CONSTANTS
from htam_core.source.analysis.loops import CountedHeader
from htam_core.source.analysis.select import Selection
from htam_core.source.analysis.sync import Barrier

DIMS = ("x", "y", "z")
BUILTINS = tuple(f"{b}.{d}" for b in ("threadIdx", "blockIdx", "blockDim", "gridDim") for d in DIMS)
Span = tuple[int, int]
AccessKind = Literal["read", "write", "readwrite"]


def sym(name: str) -> sympy.Symbol:
    """The integer symbol for ``name`` (``"threadIdx.x"``, a loop variable, a parameter)."""
    return sympy.Symbol(name, integer=True)


def _reads_below(diff: sympy.Expr) -> bool:
    """``diff`` (a read's index minus a write's) is the same for every thread (no ``threadIdx``) and has a term
    ``-v``, ``v`` a variable that is not a builtin: the read is a stride ``v`` below the written element (a scan
    step, :meth:`KernelFacts.scan_loops`)."""
    if any(x.name.startswith("threadIdx.") for x in diff.free_symbols if isinstance(x, sympy.Symbol)):
        return False
    return any(isinstance(t, sympy.Mul) and t.args[0] == -1 and len(t.args) == 2 and isinstance(t.args[1], sympy.Symbol)
               and "." not in t.args[1].name for t in sympy.Add.make_args(diff))


def stride_of(expr: sympy.Expr | None, name: str) -> sympy.Expr | None:
    """Coefficient of symbol ``name`` in ``expr`` when ``expr`` is affine in it, else ``None``.

    ``0`` means the expression does not depend on ``name``. Opaque parts (``i / 2``, ``idx[i]``,
    calls) that contain the symbol make it non-affine.
    """
    if expr is None:
        return None
    s = sym(name)
    if s not in expr.free_symbols:
        return sympy.Integer(0)
    expr = fold_divmod(expr)
    try:
        poly = sympy.Poly(sympy.expand(expr), s)
    except sympy.PolynomialError:
        return None
    if poly.degree() > 1:
        return None
    coeff = poly.coeff_monomial(s)
    if s in sympy.sympify(coeff).free_symbols:
        return None
    return sympy.sympify(coeff)


def fold_divmod(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with every ``c * t * div(e, t) + c * mod(e, t)`` folded to ``c * e`` (C's ``(e / t) * t + e % t
    == e``, true for truncating division of any signs): a row and column split back into the flat index,
    ``(idx / T) * T * C + (idx % T) * C`` -> ``idx * C``. Terms that do not pair stay as they are."""
    e = sympy.expand(expr)
    changed = True
    while changed and e.is_Add:  # a fold can make the next pair (nested splits: (e / C) / T)
        changed = False
        for m in [a for a in e.atoms(sympy.Function) if a.func.__name__ == "mod" and len(a.args) == 2]:
            inner, t = m.args
            d = sympy.Function("div")(inner, t)
            c_mod, c_div = e.coeff(m), e.coeff(d)
            if c_mod != 0 and sympy.expand(c_div - c_mod * t) == 0:
                e = sympy.expand(e - c_mod * m - c_div * d + c_mod * inner)
                changed = True
                break
    return e


def combine(op: str, a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """``a op b`` for the index algebra: ``+ - *`` exactly; integer division (C ``/`` truncates, Python ``//``
    floors) folded when both sides are integers, else an opaque ``div``; ``%`` and the rest opaque."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("/", "//"):
        if a.is_Integer and b.is_Integer and b != 0:
            q = int(a) // int(b) if op == "//" else int(int(a) / int(b))
            return sympy.Integer(q)
        return sympy.Function("div")(a, b)
    if op == "<<" and b.is_Integer:
        return a * 2 ** int(b)
    if op == "%":
        return sympy.Function("mod")(a, b)
    bits = _bit_op(op, a, b)
    if bits is not None:
        return bits
    return sympy.Function(f"op_{'_'.join(str(ord(c)) for c in op)}")(a, b)


def _bit_op(op: str, a: sympy.Expr, b: sympy.Expr) -> sympy.Expr | None:
    """``x & (2^k - 1)`` (either order) as ``mod(x, 2^k)`` and ``x >> k`` as ``div(x, 2^k)`` when ``x`` is
    non-negative (:func:`non_negative`: thread and block indices, sizes), else ``None``. For ``x >= 0`` both
    are the same integers (the low ``k`` bits are the remainder, the shift the quotient: C11 6.5.7, 6.5.10), so
    the lane idiom ``threadIdx.x & 31`` reads like ``threadIdx.x % 32`` and the warp ``threadIdx.x >> 5`` like
    ``threadIdx.x / 32``; for a negative ``x`` they differ from C's truncating ``%`` and ``/``, so stay opaque."""
    if op == ">>" and b.is_Integer and 0 <= int(b) < 63 and non_negative(a):
        return sympy.Function("div")(a, sympy.Integer(2 ** int(b)))
    if op != "&":
        return None
    for x, m in ((a, b), (b, a)):
        if m.is_Integer and int(m) > 0 and (int(m) + 1) & int(m) == 0 and non_negative(x):
            return sympy.Function("mod")(x, sympy.Integer(int(m) + 1))
    return None


def non_negative(e: sympy.Expr) -> bool:
    """True when the index expression ``e`` is known to be ``>= 0``: built from the non-negative builtins
    (:data:`BUILTINS`) and non-negative integers by ``+``, ``*``, ``div`` and ``mod``. Parameters, locals and
    anything subtracted are not known to be."""
    if e.is_Integer:
        return int(e) >= 0
    if isinstance(e, sympy.Symbol):
        return e.name in BUILTINS
    if isinstance(e, (sympy.Add, sympy.Mul)) or (isinstance(e, sympy.Function) and e.func.__name__ in ("div", "mod")):
        return all(non_negative(x) for x in e.args)
    return False


@dataclass(frozen=True)
class Access:
    """One access ``p[i]`` / ``*(p + i)`` to memory.

    Attributes:
        pointer: the parameter (global memory) or ``__shared__`` array accessed (aliases followed:
            ``xr[j]`` with ``const float *xr = x + row * cols`` is an access to ``x``).
        space: ``"global"`` (through a pointer parameter) or ``"shared"``.
        kind: ``"read"``, ``"write"`` or ``"readwrite"`` (``p[i] += v``).
        index: the element index from the base pointer, as a sympy expression (``None`` when unreadable).
        index_text: the index as written at the access (``"row * K + k"``).
        line: 1-based line.
        span: file bytes of the access expression.
        loops: ids of the enclosing loops, outermost first.
        vector: the access goes through a ``reinterpret_cast``/vector type (``float4``), strides not in elements.
        guarded: ids of the enclosing loops inside whose body a condition decides whether the access runs (an
            ``if`` branch, a ``?:`` branch, the right side of ``&&``/``||``): per element of that loop, some
            elements are skipped, so a transform that widens the access over that loop's variable would touch them.
        macro: the function-like macro the access is made through (``"A_AT"`` for ``A_AT(row, k)``), ``""`` for
            an access written out. Its :attr:`span` is then the whole call, and :attr:`index_text` the index as the
            macro expands it at the call, in the kernel's names (``"(row) * K + (k)"``; ``""`` when the macro's
            pointer is a pointer-offset local, whose offset the text would not carry).
        text: the access as written in the source, whitespace collapsed (``p[0]`` where ``p = in + ...``,
            ``*(x + i)``, the macro call): the one spelling a message names an access by (:attr:`shown`).
    """

    pointer: str
    space: Literal["global", "shared"]
    kind: AccessKind
    index: sympy.Expr | None
    index_text: str
    line: int
    span: Span
    loops: tuple[int, ...] = ()
    vector: bool = False
    guarded: tuple[int, ...] = ()
    macro: str = ""
    text: str = ""

    @property
    def shown(self) -> str:
        """The access as the user wrote it, for a message (:attr:`text`; ``pointer[index_text]`` when unknown)."""
        return self.text or f"{self.pointer}[{self.index_text}]"

    def stride(self, name: str) -> sympy.Expr | None:
        """Stride of the index in symbol ``name`` (``"threadIdx.x"``, a loop variable); see :func:`stride_of`."""
        return stride_of(self.index, name)

    def pattern(self, dim: str = "x") -> Literal["contiguous", "broadcast", "strided", "unknown"]:
        """How consecutive threads along ``dim`` address memory: stride 1 ``"contiguous"`` (coalesced),
        0 ``"broadcast"`` (one address per warp), any other stride ``"strided"``, or ``"unknown"``."""
        s = self.stride(f"threadIdx.{dim}")
        if s is None or self.vector:
            return "unknown"
        if s == 0:
            return "broadcast"
        return "contiguous" if s == 1 else "strided"

    def coalesced(self, dim: str = "x") -> bool | None:
        """Whether consecutive ``threadIdx.<dim>`` touch consecutive (or the same) elements; ``None`` when unknown."""
        p = self.pattern(dim)
        return None if p == "unknown" else p != "strided"

    @property
    def wide_index(self) -> bool:
        """The index as written computes in a 64-bit integer type: it names one in a cast or a constructor
        (``(size_t)r * cols + c``, ``static_cast<int64_t>(row) * n``, ``(long long)i``, ATen's ``index_t``), so a
        rewrite that recomputes the index must keep 64-bit arithmetic (a matrix of 2^31 elements or more)."""
        return _WIDE_INDEX.search(self.index_text) is not None


#: A 64-bit integer type named in an index expression (a cast or a constructor).
_WIDE_INDEX = re.compile(r"\b(?:size_t|ssize_t|ptrdiff_t|u?int64_t|long|index_t|uint64|int64)\b")


@dataclass(frozen=True)
class Accumulator:
    """A variable updated across the iterations of a loop.

    Attributes:
        name: the variable.
        op: ``"sum"`` (``+=``/``-=``/``a = a + e``), ``"prod"``, ``"max"``/``"min"`` (``a = fmaxf(a, e)``, or a
            selection ``a = e > a ? e : a`` / ``if (e > a) a = e;``: see ``select``), ``"argmax"``/``"argmin"``
            (the extreme of an arg step ``if (e > a) { a = e; i = c; }``,
            :func:`~htam_core.source.analysis.argreduce.arg_step`).
        type: its declared type (``"float"``, ``"double"``), or ``None`` when not declared in the kernel.
        line: 1-based line of the update.
        span: file bytes of the update statement.
        decl_span: file bytes of the declaration (``float acc = 0.0f;``), or ``None``.
        init_text: the initializer as written (``"0.0f"``, ``"-FLT_MAX"``), or ``None``.
        select: for a max/min written as a comparison and a choice, that comparison as written
            (:class:`~htam_core.source.analysis.select.Selection`: a combine of partial values must choose the same
            way, NaN and ties included); ``None`` for a call such as ``fmaxf``.
    """

    name: str
    op: Literal["sum", "prod", "max", "min", "argmax", "argmin"]
    type: str | None
    line: int
    span: Span
    decl_span: Span | None = None
    init_text: str | None = None
    select: Selection | None = None


@dataclass(frozen=True)
class LoopFact:
    """One loop of a kernel.

    Attributes:
        id: index in :attr:`KernelFacts.loops` (source order).
        line: 1-based line of the header.
        span: file bytes of the whole loop statement.
        kind: ``"for"``, ``"while"``, ``"do"`` (CUDA) or ``"range"``/``"static_range"`` (Triton).
        var: the induction variable, when there is one.
        start, bound, step: sympy expressions (``None`` when unreadable); ``bound`` is exclusive for
            ``<`` and inclusive for ``<=`` (see ``cmp``); ``step`` is the increment for ``+=``/``++``.
        cmp: the condition operator with the variable on the left (``"<"``), or ``None``.
        update: ``"+"``, ``"-"``, ``"*"``, ``"<<"``, ``">>"``, ``"/"`` (the update's operator), or ``None``.
        trip_count: iterations as a sympy expression (symbolic when bounds are runtime values), or ``None``.
        trip_value: the trip count when it is a compile-time integer, else ``None``.
        depth: 0 for an outermost loop.
        parent: id of the enclosing loop, or ``None``.
        accumulators: variables reduced across iterations.
        has_unroll_pragma: a ``#pragma unroll`` (with or without a count) precedes it.
        pragma: the text after ``#pragma`` of the pragma line that belongs to the loop (``"unroll"``,
            ``"unroll 4"``), or ``None``; such a line is part of the loop, not a statement of its own
            (:func:`~htam_core.source.analysis.syntax.statements`).
        pragma_span: file bytes of that pragma line, or ``None``.
        strides_threads: the step depends on ``blockDim``/``gridDim``, or is the constant block size of the
            first launch while the start depends on ``threadIdx`` (a block- or grid-stride loop).
        grid_stride: the step involves ``gridDim`` (grid-stride loop).
        init_span: for a ``while``/``do`` loop read as a counted loop (``kind`` says which form;
            :func:`~htam_core.source.analysis.loops.c_while_header`), file bytes of the statement before it that sets
            ``var`` (``int s = 1;``); ``None`` for a ``for`` loop or an unread one.
        update_span: for such a loop, file bytes of the body's last statement, the update (``s <<= 1;``).
        var_outside: for such a loop, ``var`` is named outside the loop and its ``init_span`` statement (a rewrite
            as a ``for`` loop declaring ``var`` must then keep the outer variable's value: transforms refuse).
        header_refusal: for a ``while``/``do`` loop of the counted shape that is not read as one, why (one line: a
            ``do`` loop whose first test is not provably true, a ``continue`` that skips the update); else ``None``.
        header: a ``for`` header that declares its variable and compares it with a bound, as file spans and texts
            with its exclusive bound (:class:`~htam_core.source.analysis.loops.CountedHeader`: ``k <= q`` counts to
            ``(q) + 1``), or ``None``; ``header_problem`` then says why (one clause), or is ``""`` for a non-``for``.
    """

    id: int
    line: int
    span: Span
    kind: str
    var: str | None = None
    start: sympy.Expr | None = None
    bound: sympy.Expr | None = None
    step: sympy.Expr | None = None
    cmp: str | None = None
    update: str | None = None
    trip_count: sympy.Expr | None = None
    trip_value: int | None = None
    depth: int = 0
    parent: int | None = None
    accumulators: tuple[Accumulator, ...] = ()
    has_unroll_pragma: bool = False
    pragma: str | None = None
    pragma_span: Span | None = None
    strides_threads: bool = False
    grid_stride: bool = False
    init_span: Span | None = None
    update_span: Span | None = None
    var_outside: bool = False
    header_refusal: str | None = None
    header: CountedHeader | None = None
    header_problem: str = ""


@dataclass(frozen=True)
class GridStrideLoop:
    """One grid-stride loop along one dimension (:mod:`~htam_core.source.analysis.gridstride`).

    Attributes:
        loop: the loop's id in :attr:`~htam_core.source.analysis.facts.KernelFacts.loops`.
        dim: ``"x"``, ``"y"`` or ``"z"``.
        var: the index variable.
        extent: the block extent the start and the stride read, sympy: ``blockDim.x``, or the constant that
            stands for it (``256`` for ``blockIdx.x * BS + threadIdx.x`` with ``BS`` bound to 256).
        bound: the exclusive upper bound of ``var < bound`` (sympy), ``None`` when unreadable.
        line: 1-based line of the loop.
    """

    loop: int
    dim: str
    var: str
    extent: sympy.Expr
    bound: sympy.Expr | None
    line: int


def _row_value(a: Access) -> bool:
    """Whether the read ``a`` is the same element for every thread of the grid (its index reads no ``threadIdx``
    or ``blockIdx``): a value of the row in a column walk, broadcast to every lane."""
    return a.index is not None and not any(s.name.startswith(("threadIdx.", "blockIdx."))
                                           for s in a.index.free_symbols)


@dataclass(frozen=True)
class ColumnSplit:
    """A column sum whose threads split the summed index (:meth:`KernelFacts.column_split_loops`).

    Attributes:
        loop: id of the loop in :attr:`KernelFacts.loops`.
        column: the column the group of threads sums (the read's index less ``stride * var``), sympy.
        stride: the read's stride in the loop variable (the row length, ``OC``), sympy; neither 0 nor 1.
        warp: for a column sum whose warps split the rows (:meth:`KernelFacts.thread_column_loops`, the loop from
            the warp number by the number of warps, each lane on its own column), the warp width ``W`` of
            ``mod(threadIdx.x, W)``, or ``blockDim.x`` when the warps are the ``threadIdx.y`` rows of the block;
            ``None`` otherwise.
    """

    loop: int
    column: sympy.Expr
    stride: sympy.Expr
    warp: sympy.Expr | None = None


@dataclass(frozen=True)
class AtomicUpdate:
    """One atomic read-modify-write of one element, ``atomicAdd(&hist[b], 1)`` (CUDA).

    The index's *extent* is the number of elements the update can reach when the analysis can bound it: an index
    an enclosing ``if`` checks against a constant or a parameter (``if (b < NUM_BINS)``), an index reduced modulo a
    constant (``data[i] % 64``, ``% BINS`` with a template parameter) or modulo a kernel parameter
    (``% num_bins``), or a load of an ``unsigned char`` (256 values), followed through locals declared once
    (``int b = data[i] % NB;``). A histogram's bin count is this extent.

    Attributes:
        fn: the atomic function (``"atomicAdd"``).
        pointer: the parameter or ``__shared__`` array updated.
        space: ``"global"`` or ``"shared"``.
        index: the element index as sympy (see :class:`Access`), ``None`` when unreadable.
        index_text: the subscript as written (``"data[i] % BINS"``).
        value_text: the second argument as written (``"1"``).
        call_span: file bytes of the call.
        base_span: file bytes of the array name in the address (``hist`` in ``&hist[b]``, ``hist + b``,
            ``b + hist``, ``(unsigned *)&hist[b]``), ``None`` when the address does not name one element of it as
            written (through an alias, ``(T *)hist + b``).
        statement: the call's whole expression statement when its result is unused, else ``None``.
        line: 1-based line.
        loops: ids of the enclosing loops, outermost first.
        extent: the number of indices the update can reach when a constant, else ``None``.
        extent_param: the kernel parameter the index is reduced modulo (``"num_bins"``), else ``None``.
        extent_text: the bound as written (``"NUM_BINS"``, ``"BINS"``, ``"num_bins"``; ``"256"`` for a byte).
        extent_from: ``"index"`` when the kernel bounds the index itself (a check, a modulo, a byte);
            ``"declaration"`` when the updated array is a ``__device__`` array whose declared size gives it (which
            nothing in the kernel checks either); ``"launch"`` when only the launches say so: every launch in the file passes a buffer of ``extent`` elements
            (:func:`~htam_core.source.analysis.launch_buffers.launch_buffer_extent`), which nothing in the kernel
            checks, so a step relying on it must still send other indices to the buffer.
        index_span: file bytes of the index expression (``idx[i]`` in ``&bins[idx[i]]`` or ``bins + idx[i]``),
            ``None`` when :attr:`base_span` is.
    """

    fn: str
    pointer: str
    space: Literal["global", "shared"]
    index: sympy.Expr | None
    index_text: str
    value_text: str
    call_span: Span
    base_span: Span | None
    statement: Span | None
    line: int
    loops: tuple[int, ...] = ()
    extent: int | None = None
    extent_param: str | None = None
    extent_text: str | None = None
    extent_from: Literal["index", "launch", "declaration"] = "index"
    index_span: Span | None = None


@dataclass(frozen=True)
class UniformAtomic:
    """An atomic accumulation into a thread-uniform address (CUDA): ``atomicAdd(result, x[i])``,
    ``atomicAdd(&out[0], v)``, ``atomicMax(out + k, v)`` with ``k`` a parameter, ``atomicAdd(&acc[blockIdx.y], v)``.

    Every thread of a block (``scope == "block"``) or of the grid (``"grid"``) that runs the update sends its value
    to the same element, so the atomics serialize on that one address (atomic contention); the values can be
    combined inside the block first and sent with one atomic per block (privatization). The address is read by the
    uniformity analysis (:func:`~htam_core.source.analysis.uniformity.thread_uniform`): ``threadIdx`` never, and
    ``blockIdx`` only for a per-block accumulation.

    Attributes:
        update: the atomic update (:class:`AtomicUpdate`: its call, statement, pointer and line).
        op: ``"add"`` (``atomicAdd``), ``"max"`` (``atomicMax``) or ``"min"`` (``atomicMin``).
        scope: ``"grid"`` when the address is the same in every thread of the grid, ``"block"`` when it is the
            same within each block only (it reads ``blockIdx``).
        address_text: the address argument as written, whitespace collapsed (``"&out[0]"``).
        value_span: file bytes of the value argument (the thread's contribution, kept exactly as written).
        element_type: the updated element's type as written, qualifiers dropped (``"float"``, ``"scalar_t"``).
        value_type: that type with aliases resolved (:attr:`PointerFacts.value_type`), else ``None``.
        address_locals: the body's locals (declared or assigned there) that the address reads, sorted.
        stable: every name of :attr:`address_locals` is declared once, at the body's top level, and never assigned:
            the address is the same at every update of a thread and can be evaluated again at the body's end.
        guarded: an enclosing ``if``, ``?:`` or loop condition, or an early ``return`` of the body, decides
            whether a thread reaches the update (the threads past the data contribute nothing).
    """

    update: AtomicUpdate
    op: Literal["add", "max", "min"]
    scope: Literal["grid", "block"]
    address_text: str
    value_span: Span
    element_type: str
    value_type: str | None
    address_locals: tuple[str, ...] = ()
    stable: bool = True
    guarded: bool = False


@dataclass(frozen=True)
class LongSum:
    """One float output element that a kernel fills with a long float32 accumulation.

    Attributes:
        pointer: the output parameter (``"loss"``).
        kind: ``"atomic"`` (threads add into a shared address) or ``"loop"`` (one thread's sequential sum).
        scope: ``"grid"`` (every thread of the grid adds into the element), ``"block"`` (the threads of the blocks
            with the same address: ``out + blockIdx.y``) or ``"thread"`` (a loop's sum).
        line: 1-based line of the update (the atomic, the store or the in-place update).
        terms: for ``"loop"``, the terms of one sum as a sympy expression over the kernel's names (the loop's trip
            count, ``K``); ``None`` for an atomic (the launch decides: :func:`~htam_core.source.analysis.long_sums.terms_at`) or when unreadable.
        shared_dims: for an atomic, the grid dimensions whose blocks all add into one element (``("x", "y", "z")``
            for ``atomicAdd(loss, v)``; ``("x", "z")`` for ``out + blockIdx.y``: the address reads ``blockIdx.y``
            only); ``None`` when the address is not read as an index.
    """

    pointer: str
    kind: Literal["atomic", "loop"]
    scope: Literal["grid", "block", "thread"]
    line: int
    terms: sympy.Expr | None = None
    shared_dims: tuple[str, ...] | None = None


@dataclass(frozen=True)
class TransposeLoop:
    """A naive transpose that moves a tile with a loop over rows (the NVIDIA samples' ``transposeNaive``)::

        x = blockIdx.x * T + threadIdx.x;  y = blockIdx.y * T + threadIdx.y;
        for (j = 0; j < T; j += R) out[x * H + (y + j)] = in[(y + j) * W + x];

    read off the affine indices (:class:`Access`), however the indices are spelled (locals, ``index_in + j * W``).

    Attributes:
        loop: the row loop's id (:attr:`LoopFact.id`).
        read: the load of ``in``; write: the store of ``out``.
        tile: ``T``, the tile's side (the read's stride along ``blockIdx.x`` and the loop's bound); an integer when
            the constants are known (a symbol such as ``TILE_DIM`` when the kernel is read without its file).
        rows: ``R``, the loop's step (rows per pass; threads per block along y), likewise.
        width: ``W``, the input's row length (the read's stride along ``threadIdx.y``).
        height: ``H``, the output's row length (the write's stride along ``threadIdx.x``).
    """

    loop: int
    read: Access
    write: Access
    tile: sympy.Expr
    rows: sympy.Expr
    width: sympy.Expr
    height: sympy.Expr


@dataclass(frozen=True)
class Bound:
    """A condition ``lo < hi`` under which an access runs (``x < cols``; ``x <= n`` is ``x < n + 1``; an early
    ``if (y >= rows) return;`` is ``y < rows``), both sides affine forms over the builtins and loop variables."""

    lo: sympy.Expr
    hi: sympy.Expr


@dataclass(frozen=True)
class Transpose:
    """A kernel that only copies one element per store from a ``rows x cols`` row-major input to its transpose::

        out[col * rows + row] = in[row * cols + col];

    or between pitched rows (leading dimensions separate from the extents, ``out[col * ldo + row] = in[row * ldi +
    col]`` under ``row < rows && col < cols``),

    or stores a function of that one element (``-in[...]``, ``2.f * in[...]``, a conjugate, a cast: ``value``)::

    computed from the affine indices (:class:`Access`), whatever the spelling: the row and the column are the
    coefficient of ``cols`` in the read's index and the rest (the write's index must be their swap over ``rows``),
    through locals, casts, cooperative-groups indices, loops over rows and per-element bounds checks. Idea
    source: NVIDIA developer blog, "An Efficient Matrix Transpose in CUDA C/C++" (Harris, 2013).

    Attributes:
        read: the load of the input; write: the store of the output (its value ``value``, a function of the load).
        row, col: the element's row and column in the input, over the builtins and loop variables.
        rows, cols: the matrix's extents, the input's rows and columns (the output has ``cols`` rows of
            ``rows``), as symbols of the kernel's parameters: the parameters the store's checks compare the row and
            the column with (``y < h``, ``x < w``), else, for an unchecked side, its stride (a dense matrix).
        read_stride, write_stride: the input's and the output's row strides in elements as the indices read them
            (``in[row * read_stride + col]``, ``out[col * write_stride + row]``): ``cols`` and ``rows`` for a dense
            transpose, a leading dimension of its own otherwise (``lda``, an element ``pitch``, ``pitch /
            sizeof(T)``, an ``int64_t`` stride); ``None`` (made by hand): the dense sides.
        bounds: the bounds checks the store runs under, each ``row < rows`` or ``col < cols`` (empty: unguarded,
            the launch's grid alone decides which elements are moved).
        body: file bytes of the kernel's body (its braces included).
        batch: the ``blockIdx`` dimensions (``("z",)``) that pick a batch slice: the row and the column do not read
            them, only the bases do; ``()`` for a single matrix.
        read_base, write_base: the part of each index uniform across the block (``b * R * C`` for ``b =
            blockIdx.z``, a pointer rebased by it), over the scalar parameters, ``gridDim`` and the batch
            dimensions' ``blockIdx``; the matrix is ``in[read_base + row * cols + col]``.
        uniform_bounds: the store's checks that are uniform too (``b < batch``): the same for the whole block.
        loop_bounds: the conditions of the loops around the store that check the row or the column as ``bounds``
            do (``r < rows`` of ``for (r = threadIdx.y; r < rows; r += blockDim.y)``).
        value: the stored value as a C expression of the loaded element, written ``htam_v``
            (:data:`~htam_core.source.analysis.transpose.LOADED`): ``"htam_v"`` for a plain copy,
            ``"make_float2(htam_v.x, -htam_v.y)"`` for a conjugate, ``"2.f * htam_v"`` for a scaled one; it reads no
            other memory, no thread or block index, only kernel-uniform names besides.
        read_reversed, write_reversed: per axis ``(row, column)``, whether the input (the output) places that
            coordinate reversed, ``rows - 1 - row`` / ``cols - 1 - col``: a rotation by 90 degrees
            (``out[x * H + (H - 1 - y)] = in[y * W + x]``: the write's row axis), a transposed flip, or a
            reversed read (``in[(H - 1 - y) * W + x]``); :meth:`place` spells the coordinates.
    """

    read: Access
    write: Access
    row: sympy.Expr
    col: sympy.Expr
    rows: sympy.Expr
    cols: sympy.Expr
    bounds: tuple[Bound, ...]
    body: Span
    batch: tuple[str, ...] = ()
    read_base: sympy.Expr = sympy.Integer(0)
    write_base: sympy.Expr = sympy.Integer(0)
    uniform_bounds: tuple[Bound, ...] = ()
    loop_bounds: tuple[Bound, ...] = ()
    value: str = "htam_v"
    read_stride: sympy.Expr | None = None
    write_stride: sympy.Expr | None = None
    read_reversed: tuple[bool, bool] = (False, False)
    write_reversed: tuple[bool, bool] = (False, False)

    def place(self, side: str, row: str, col: str, rows: str, cols: str) -> tuple[str, str]:
        """C text of ``(R, C)``, the row and the column coordinates as the input (``side`` ``"read"``) or the
        output (``"write"``) places them, for the element at row ``row`` and column ``col`` of the ``rows x
        cols`` input (C texts): each as it is or reversed (``(rows - 1 - row)``) as :attr:`read_reversed` /
        :attr:`write_reversed` say. The input is ``in[read_base + R * read_stride + C]`` with ``(R, C) =
        place("read", ...)``; the output is ``out[write_base + C' * write_stride + R']`` with ``(R', C') =
        place("write", ...)``.

        Raises:
            ValueError: ``side`` is neither ``"read"`` nor ``"write"``.
        """
        if side not in ("read", "write"):
            raise ValueError(f"side must be 'read' or 'write', not {side!r}")
        rev = self.read_reversed if side == "read" else self.write_reversed
        return (f"({rows} - 1 - {row})" if rev[0] else row), (f"({cols} - 1 - {col})" if rev[1] else col)

    @property
    def in_stride(self) -> sympy.Expr:
        """The input's row stride in elements (:attr:`read_stride`; ``cols`` when not given)."""
        return self.cols if self.read_stride is None else self.read_stride

    @property
    def out_stride(self) -> sympy.Expr:
        """The output's row stride in elements (:attr:`write_stride`; ``rows`` when not given)."""
        return self.rows if self.write_stride is None else self.write_stride

    @property
    def pitched(self) -> bool:
        """A row stride is not the matrix's side it would be dense (``in[y * pitch + x]`` under ``x < w``)."""
        return sympy.expand(self.in_stride - self.cols) != 0 or sympy.expand(self.out_stride - self.rows) != 0

    @property
    def read_coalesced(self) -> bool:
        """Consecutive ``threadIdx.x`` read consecutive (or the same) input elements."""
        return self.read.coalesced("x") is True

    @property
    def write_coalesced(self) -> bool:
        """Consecutive ``threadIdx.x`` write consecutive (or the same) output elements."""
        return self.write.coalesced("x") is True


@dataclass(frozen=True)
class StencilRead:
    """One read of a 1-D window, ``in[g + offset + var]`` (``var`` in ``[first, last]``) or ``in[g + offset]``, ``g
    = blockIdx.x * extent + threadIdx.x`` the thread's global index along x (:mod:`~htam_core.source.analysis.stencil`).

    Attributes:
        access: the read.
        offset: the constant ``c`` of its index.
        var: the window loop's variable (``None``: a read of width one, an unrolled window).
        first, last: the loop variable's first and last values (``0, 0`` without a loop).
        thread_terms: the conditions the read runs under that bound the global index, each ``d > 0`` with ``d`` an
            affine form over :data:`~htam_core.source.analysis.stencil.THREAD` (coefficient -1, 0 or 1) and the
            parameters (``i >= R`` is ``i - R + 1 > 0``).
        element_terms: the conditions that bound the element read (``i + j < n``), each ``d > 0`` over
            :data:`~htam_core.source.analysis.stencil.ELEMENT` and the parameters.
        extent: ``B``, the block extent of the index (``blockDim.x``, or a constant such as 256).
        clamp: ``(lo, hi)``: the read's coordinate along the axis is clamped to ``[lo, hi]`` before it is read
            (``min(max(i + j, 0), n - 1)``: :mod:`~htam_core.source.analysis.clamp`), either side ``None`` for none;
            the offsets and terms are those of the coordinate before the clamp.
    """

    access: Access
    offset: int
    var: str | None
    first: int
    last: int
    thread_terms: tuple[sympy.Expr, ...]
    element_terms: tuple[sympy.Expr, ...]
    extent: sympy.Expr
    clamp: tuple[sympy.Expr | None, sympy.Expr | None] = (None, None)

    @property
    def lo(self) -> int:
        """The lowest offset from the global index that the read reaches."""
        return self.offset + self.first

    @property
    def hi(self) -> int:
        """The highest offset from the global index that the read reaches."""
        return self.offset + self.last


@dataclass(frozen=True)
class Stencil:
    """A kernel whose reads of one read-only pointer are a 1-D window around the thread's global index along x
    (:mod:`~htam_core.source.analysis.stencil`): ``for (j = -R; j <= R; ++j) acc += w[j + R] * in[i + j];``, or
    ``in[i - 1] + in[i] + in[i + 1]``, with the reads' bounds checks as written. Idea source: the shared-memory
    1-D stencil with halo (NVIDIA, "CUDA C/C++ Basics", 2010).

    Attributes:
        pointer: the pointer parameter read.
        extent: the block extent of the global index (``blockDim.x`` or a constant).
        reads: every read of ``pointer``, in normal form.
        clamp: ``(lo, hi)``: the clamp every read's element is held to (clamp-to-edge), ``None`` sides for none; a
            read written without a side reaches only elements inside it (:mod:`~htam_core.source.analysis.clamp`).
        clamp_locals: the locals holding a read's clamped coordinate (``int xx = min(max(i + j, 0), n - 1);``).
    """

    pointer: str
    extent: sympy.Expr
    reads: tuple[StencilRead, ...]
    clamp: tuple[sympy.Expr | None, sympy.Expr | None] = (None, None)
    clamp_locals: tuple[str, ...] = ()

    @property
    def lo(self) -> int:
        """The lowest offset read (``-R`` for a symmetric window)."""
        return min(r.lo for r in self.reads)

    @property
    def hi(self) -> int:
        """The highest offset read (``R``)."""
        return max(r.hi for r in self.reads)


@dataclass(frozen=True)
class Stencil2DRead:
    """One read of a 2-D window, ``in[(y + dy) * P + (x + dx)]``, ``x``/``y`` the thread's global indices along x
    and y and ``P`` the row pitch (:mod:`~htam_core.source.analysis.stencil2d`): per axis, a
    :class:`StencilRead` in the 1-D normal form (offset, window loop and its range, the conditions on that axis's
    global index and on the element's coordinate along it, the block extent).

    Attributes:
        access: the read.
        x: its x part (the thread terms of the conditions on no axis, ``W > 2``, are here too).
        y: its y part (over :data:`~htam_core.source.analysis.stencil.THREAD` and
            :data:`~htam_core.source.analysis.stencil.ELEMENT` as for x, the extent ``blockDim.y`` or a constant).
    """

    access: Access
    x: StencilRead
    y: StencilRead


@dataclass(frozen=True)
class Stencil2D:
    """A kernel whose reads of one read-only pointer are a 2-D window around the thread's global ``(x, y)``:
    ``in[(y + dy) * W + (x + dx)]`` for ``|dx|, |dy| <= R``, written out (5-point Jacobi) or in nested window
    loops, with the reads' bounds checks as written per axis. Idea source: the 2-D tiled stencil with halo cells
    (Kirk and Hwu, "Programming Massively Parallel Processors", ch. 8).

    Attributes:
        pointer: the pointer parameter read.
        pitch: the row pitch ``P`` in elements (the index's stride in ``threadIdx.y``), over the parameters.
        reads: every read of ``pointer``, in normal form.
        clamps: per axis ``(x, y)``, the ``(lo, hi)`` clamp every read's coordinate along it is held to
            (clamp-to-edge, :mod:`~htam_core.source.analysis.clamp`), ``None`` sides for none.
        clamp_locals: the locals holding a read's clamped coordinate (``int xx = min(max(x + dx, 0), W - 1);``).
        base: the offset every read adds that is the same for every thread of a block (``0`` for none): a plane's,
            channel's or batch's start fixed per block (``c = blockIdx.z; in[((size_t)c * H + y) * W + x]``, ``in +
            c * H * W`` as a base pointer), over the block-uniform builtins (``blockIdx.z``) and the parameters.
    """

    pointer: str
    pitch: sympy.Expr
    reads: tuple[Stencil2DRead, ...]
    clamps: tuple[tuple[sympy.Expr | None, sympy.Expr | None], ...] = ((None, None), (None, None))
    clamp_locals: tuple[str, ...] = ()
    base: sympy.Expr = sympy.Integer(0)

    @property
    def lo(self) -> tuple[int, int]:
        """The lowest offsets read, ``(x, y)``."""
        return min(r.x.lo for r in self.reads), min(r.y.lo for r in self.reads)

    @property
    def hi(self) -> tuple[int, int]:
        """The highest offsets read, ``(x, y)``."""
        return max(r.x.hi for r in self.reads), max(r.y.hi for r in self.reads)


@dataclass(frozen=True)
class Stencil3DRead:
    """One read of a 3-D window, ``in[((z + dz) * PY_Z + (y + dy)) * P + (x + dx)]`` (in any affine spelling), per
    axis a :class:`StencilRead` in the 1-D normal form (:mod:`~htam_core.source.analysis.stencil3d`).

    Attributes:
        access: the read.
        x, y, z: its part along each axis (the terms on no axis are in ``x``).
    """

    access: Access
    x: StencilRead
    y: StencilRead
    z: StencilRead


@dataclass(frozen=True)
class Stencil3D:
    """A kernel whose reads of one read-only pointer are a 3-D window around the thread's global ``(x, y, z)``
    (a 7-point Jacobi, a 27-point box): the index's strides in ``threadIdx.y`` and ``threadIdx.z`` are the row and
    plane pitches. Idea source: the 3-D tiled stencil (Kirk, Hwu and El Hajj, "Programming Massively Parallel
    Processors", 4th ed., ch. 8, "Shared memory tiling for stencil sweep").

    Attributes:
        pointer: the pointer parameter read.
        pitch: the row pitch (elements between ``y`` and ``y + 1``), over the parameters.
        plane: the plane pitch (elements between ``z`` and ``z + 1``).
        reads: every read of ``pointer``, in normal form.
    """

    pointer: str
    pitch: sympy.Expr
    plane: sympy.Expr
    reads: tuple[Stencil3DRead, ...]

    @property
    def lo(self) -> tuple[int, int, int]:
        """The lowest offsets read, ``(x, y, z)``."""
        return (min(r.x.lo for r in self.reads), min(r.y.lo for r in self.reads), min(r.z.lo for r in self.reads))

    @property
    def hi(self) -> tuple[int, int, int]:
        """The highest offsets read, ``(x, y, z)``."""
        return (max(r.x.hi for r in self.reads), max(r.y.hi for r in self.reads), max(r.z.hi for r in self.reads))


@dataclass(frozen=True)
class ThreadIndex:
    """A local variable computed from the thread/block indices (``int row = blockIdx.y*blockDim.y+threadIdx.y``).

    Attributes:
        name: the variable.
        expr: its value as a sympy expression over :data:`BUILTINS` (and constants).
        dims: the ``threadIdx`` dimensions it depends on (``("y",)``).
        is_global: ``blockIdx.d * S + threadIdx.d`` shape (a global index along one dimension).
        type: declared type (``"int"``).
        span: file bytes of the declaration statement.
        line: 1-based line.
    """

    name: str
    expr: sympy.Expr
    dims: tuple[str, ...]
    is_global: bool
    type: str
    span: Span
    line: int


@dataclass(frozen=True)
class DeviceGlobal:
    """A ``__device__`` variable of the unit (or of a local header it includes) that a kernel reads or writes by
    name: ``__device__ unsigned int g_count;``, ``__device__ int hist[256];``, ``static __device__ float total;``,
    one inside a namespace. A kernel that writes one has an output that is no pointer parameter: the harness reads
    it back by symbol (``cudaMemcpyFromSymbol``) and resets it before each launch.

    Attributes:
        name: the name as the kernel's body spells it (``g_count``; ``ns::g_count`` when written qualified).
        qualified: the name with its enclosing named namespaces (``ns::g_count``), what host code outside them spells.
        element_type: the element type as written, qualifiers dropped (``"unsigned int"``, ``"float"``).
        scalar: one variable (``&g_count`` is its address), not an array.
        count: the number of elements (1 for a scalar, the product of the array's constant extents), ``None`` when
            an extent is no compile-time constant.
        count_text: the element count as written (``"256"``, ``"NUM_BINS"``, ``"R * C"``; ``"1"`` for a scalar).
        static: declared ``static`` or in an unnamed namespace (internal linkage: its symbol may be renamed).
        initializer: the initializer as written (``"0.0f"``), ``""`` for none (the variable starts zeroed).
        line: the 1-based line of the declaration in its file.
        header: the path of the local header that declares it, ``""`` for the kernel's own file.
        mode: how the kernel uses it: ``"read"``, ``"write"``, ``"readwrite"`` (an atomic, ``+=``), ``"unused"``.
        value_type: :attr:`element_type` with ``typedef``/``using`` aliases resolved (as :attr:`PointerFacts.
            value_type`), ``None`` when not resolved.

    Idea source: CUDA C++ Programming Guide, "Variable Memory Space Specifiers" (``__device__``) and the runtime's
    ``cudaMemcpyToSymbol`` / ``cudaMemcpyFromSymbol``.
    """

    name: str
    qualified: str
    element_type: str
    scalar: bool
    count: int | None
    count_text: str
    static: bool = False
    initializer: str = ""
    line: int = 0
    header: str = ""
    mode: Literal["read", "write", "readwrite", "unused"] = "unused"
    value_type: str | None = None

    @property
    def written(self) -> bool:
        """The kernel writes it (a store, ``+=``, an atomic): an output of the kernel."""
        return self.mode in ("write", "readwrite")


@dataclass(frozen=True)
class PointerFacts:
    """How a pointer parameter is used.

    Attributes:
        name: the parameter.
        mode: ``"read"``, ``"write"``, ``"readwrite"``, ``"unused"``; ``"unknown"`` when it escapes
            (passed to a function, stored) so that not every use is a visible load or store.
        reads, writes: the accesses (a ``readwrite`` access is in both).
        element_type: the pointee type as written (``"float"``, ``"floatX"``), or ``None``.
        value_type: the pointee type with ``typedef``/``using`` aliases resolved in the build's preprocessor
            branch (``floatX`` -> ``"float"``; :func:`~htam_core.source.analysis.types.resolve_type`); the
            written type when it is no alias or the branch cannot be decided. For a type template parameter
            (``const T *``) it is the one type every launch in the unit binds (``float``), if any.
        templated: the written pointee is a type template parameter of the kernel (``scalar_t``): another
            translation unit may instantiate it with any type, whatever :attr:`value_type` this unit binds, so a
            rewrite must stay generic in it (``sizeof(scalar_t)``), never spell the bound type.
        volatile: the pointee is ``volatile`` (``volatile int *flag``, ``int volatile *``, or through a qualifier
            macro): each read must reach memory, since another thread, kernel or the host may change the data
            while the kernel runs (a flag a spin loop waits on), so no read may go through a cache that assumes
            the data read-only, and ``__ldg`` has no overload for a volatile pointer.
    """

    name: str
    mode: Literal["read", "write", "readwrite", "unused", "unknown"]
    reads: tuple[Access, ...] = ()
    writes: tuple[Access, ...] = ()
    element_type: str | None = None
    value_type: str | None = None
    templated: bool = False
    volatile: bool = False

    @property
    def float_elements(self) -> bool:
        """The elements are ``float`` in every instantiation (aliases resolved, no type template parameter): a
        rewrite may spell them ``float2``/``float4``."""
        return self.value_type == "float" and not self.templated


@dataclass(frozen=True)
class PointerAlias:
    """A local pointer declared once at a fixed element offset from a pointer parameter (or a ``__shared__``
    array) and never reassigned, incremented or address-taken: ``const float *w = weight + o * C;``,
    ``float *r = &A[row * K];``, chains of such locals (``q = p + j``). An access ``w[e]`` is an access of
    ``weight`` at ``offset + e`` (the affine index analysis, the read/write sets and the pattern facts see it so).

    Attributes:
        name: the local pointer.
        pointer: the parameter (or shared array) it points into.
        offset: its element offset from ``pointer`` (sympy, as :attr:`Access.index`).
        parts: the offset as written, outermost alias first: ``(start, end, sign)`` file bytes of each added
            (``+1``) or subtracted (``-1``) expression of the chain, so that a rewrite can spell the offset.
        vector: the chain re-types the elements (a cast to ``float4 *``): indices are not in ``pointer``'s
            elements.
        span: bytes of the declaration statement.
        line: its 1-based line.
    """

    name: str
    pointer: str
    offset: sympy.Expr
    parts: tuple[tuple[int, int, int], ...]
    vector: bool
    span: Span
    line: int

    def depends_on_thread(self) -> bool:
        """The offset changes with ``threadIdx`` (so every thread points somewhere else)."""
        return any(s.name.startswith("threadIdx.") for s in self.offset.free_symbols)


@dataclass(frozen=True)
class Dim:
    """One component of a launch's grid or block: the expression, its value when constant, its bytes, and
    (CUDA) its sympy form over the launching function's names (locals followed to their one initializer,
    constants folded: ``int blocks = (n + threads - 1) / threads`` with ``threads = 256`` gives
    ``div(n + 255, 256)``), ``None`` when unreadable; and the device quantities it reads at run time
    (``device``: ``("sm_count",)`` for ``sms * 4`` after ``cudaDeviceGetAttribute(&sms,
    cudaDevAttrMultiProcessorCount, dev)``, or ``prop.multiProcessorCount * 2``; see
    :mod:`~htam_core.source.analysis.device_queries`), in which case ``value`` is ``None``."""

    text: str
    value: int | None
    span: Span | None = None
    expr: sympy.Expr | None = None
    device: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaunchFacts:
    """One launch of the kernel, ``k<<<grid, block, smem, stream>>>(args)`` or ``k[grid](args, **kw)``.

    Attributes:
        line: 1-based line of the launch.
        span: file bytes of the launch expression.
        host: the launching function's name (``None`` at module level).
        grid, block: components (1 to 3) followed through ``dim3`` variables; empty for Triton's block.
            A Triton grid lambda/tuple gives its components.
        smem: dynamic shared memory bytes when constant (``0`` when omitted), else ``None``; CUDA only.
        template_args: the template arguments at the site (``("float", "256")``); CUDA only.
        bindings: kernel template parameters (CUDA) or ``tl.constexpr`` parameters (Triton) bound to
            integer values at this site.
        kwargs: Triton keyword arguments as source text (``{"BLOCK_SIZE": "1024", "num_warps": "4"}``).
        arg_exprs: (CUDA) the kernel arguments at the site, in order, as sympy over the launching function's
            names (as :attr:`Dim.expr`; ``None`` for one that is not an integer expression), so a kernel
            parameter can be written in the host's terms (``M`` of the kernel is ``rows`` of the launcher).
        template_exprs: (CUDA) the template arguments at the site, the same way.
    """

    line: int
    span: Span | None
    host: str | None
    grid: tuple[Dim, ...]
    block: tuple[Dim, ...]
    smem: int | None = None
    template_args: tuple[str, ...] = ()
    bindings: tuple[tuple[str, int], ...] = ()
    kwargs: tuple[tuple[str, str], ...] = ()
    arg_exprs: tuple[sympy.Expr | None, ...] = ()
    template_exprs: tuple[sympy.Expr | None, ...] = ()

    @property
    def threads(self) -> int | None:
        """Threads per block when every block component is constant, else ``None``."""
        if not self.block or any(d.value is None for d in self.block):
            return None
        out = 1
        for d in self.block:
            out *= d.value  # type: ignore[operator]
        return out

    @property
    def block_shape(self) -> tuple[int, int, int] | None:
        """``(x, y, z)`` threads when constant (missing components are 1), else ``None``."""
        if not self.block or any(d.value is None for d in self.block):
            return None
        vals = [d.value for d in self.block] + [1, 1, 1]
        return (vals[0], vals[1], vals[2])  # type: ignore[return-value]

    def value_at(self, expr: sympy.Expr | None, params: Sequence[str]) -> int | None:
        """The integer ``expr`` (a sympy expression over the kernel's parameters, ``params`` their names in order:
        a loop bound ``B*T``, a column count ``OC``) takes at this launch, where every parameter it reads receives
        an integer constant (:attr:`arg_exprs`: ``const int OC = 768`` in the launcher, a ``#define``, a literal);
        ``None`` when one of them is not such a constant, ``expr`` reads another name, or ``expr`` is ``None``.
        Used to size a launch from the problem's counts (the row split of ``cuda.lane_columns``)."""
        if expr is None:
            return None
        values = {sym(n): a for n, a in zip(params, self.arg_exprs, strict=False) if a is not None}
        try:
            v = sympy.sympify(expr).subs({s: values[s] for s in expr.free_symbols if s in values})
        except (sympy.SympifyError, TypeError):
            return None
        return int(v) if getattr(v, "is_Integer", False) else None


@dataclass(frozen=True)
class TritonAxis:
    """A ``tl.program_id(axis)`` or ``tl.arange(start, end)`` variable.

    Attributes:
        name: the variable (``pid``, ``cols``).
        kind: ``"program_id"`` or ``"arange"``.
        axis: program axis, or for an arange the tensor axis it is broadcast along (``x[None, :]`` -> 1,
            ``x[:, None]`` -> 0, 1-D use -> 0).
        ndim: rank of the tensors it indexes (1 or 2).
        size: the arange's length (``end - start``) as a sympy expression; ``None`` for program ids.
        line: 1-based line.
        end_text: the arange's ``end`` argument as written (``BLOCK_SIZE``); ``None`` for program ids.
        span: the assignment's bytes (``cols = tl.arange(0, BLOCK)``).
        call_span: the ``tl.program_id(...)``/``tl.arange(...)`` call's bytes.
    """

    name: str
    kind: Literal["program_id", "arange"]
    axis: int
    ndim: int = 1
    size: sympy.Expr | None = None
    line: int = 0
    end_text: str | None = None
    span: Span | None = None
    call_span: Span | None = None


@dataclass(frozen=True)
class TritonBound:
    """A comparison ``offs < n`` whose left side is derived from a ``tl.arange`` variable: the tile covers
    the dimension of size ``bound`` (a mask of a row or of a flat range).

    Attributes:
        arange: the arange variable the left side derives from (``cols``).
        block: that arange's ``end`` as written (``BLOCK_SIZE``).
        bound: the right side, a plain name (``n_cols``).
        line: 1-based line of the comparison.
    """

    arange: str
    block: str
    bound: str
    line: int


@dataclass(frozen=True)
class TritonPointerType:
    """The element type a Triton pointer parameter must have, read from how the values loaded through it are used
    (:func:`htam_core.source.analysis.triton_types.pointer_types`): a value that takes part in an address, a loop
    bound, a bitwise operation or an equality test with an integer, or that is cast to an integer type, or that is
    stored through an integer pointer, is an integer, and a float pointer would not compile there.

    Attributes:
        name: the pointer parameter.
        dtype: the Triton element type (``"int64"``: the width cannot be read from the use, int64 is PyTorch's
            index type).
        why: the use, one phrase (``"a value loaded through it is used in an address"``).
        line: 1-based line of that use.
    """

    name: str
    dtype: str
    why: str
    line: int


@dataclass(frozen=True)
class TritonLoop:
    """A Triton ``for`` loop's body at the name level (what loop fusion needs).

    Attributes:
        loop: the :class:`LoopFact` id.
        header: the ``range(...)`` arguments with the loop variable, whitespace-normalized
            (``off in range(0, N, BLOCK_N)``).
        reads: names read in the body (assignment targets left out), first-use order.
        writes: names assigned in the body (plain and augmented assignments), first-assignment order.
        statements: the body's top-level statement spans, in order.
    """

    loop: int
    header: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    statements: tuple[Span, ...]


@dataclass(frozen=True)
class TritonReduction:
    """``tl.sum(x, axis=1)`` and friends: the function, its axis (``None``: all), the target variable."""

    fn: str
    axis: int | None
    target: str | None
    line: int
    span: Span


@dataclass(frozen=True)
class TritonMemOp:
    """A ``tl.load``/``tl.store``/``tl.atomic_*``: its pointer parameter, whether it is masked, its line, and the
    cache-steering keywords it passes (``("cache_modifier", "eviction_policy")``; empty when none)."""

    op: str
    pointer: str | None
    masked: bool
    has_other: bool
    line: int
    span: Span
    hints: tuple[str, ...] = ()


@dataclass(frozen=True)
class TritonDot:
    """A ``tl.dot(a, b)``: operand dtypes where derivable (``.to(tl.float16)``, a cast load), else ``None``."""

    a: str
    b: str
    a_dtype: str | None
    b_dtype: str | None
    line: int
    span: Span
    input_precision: str | None = None


@dataclass(frozen=True)
class TritonFacts:
    """The Triton-only facts of a kernel (``None`` for CUDA kernels).

    Attributes:
        axes: ``tl.program_id`` and ``tl.arange`` variables.
        reductions: ``tl.sum``/``max``/... calls with their axis.
        memops: loads, stores and atomics with their pointer parameter and mask.
        dots: ``tl.dot`` calls with operand dtypes where derivable.
        tile_loops: ids of loops that step over tiles (the step is an arange length, or the loop variable
            is combined with an arange in the body).
        math_calls: other ``tl.*`` calls, first use order (``exp``, ``sqrt``, ``maximum``).
        autotuned: the kernel is under ``@triton.autotune``.
        grouped_program_ids: program ids are already swizzled: ``tl.swizzle2d``, or a ``tl.minimum``/``min``
            over values derived from a program id (the grouped-ordering recipe of the Triton matmul tutorial).
        bounds: mask comparisons of arange-derived offsets against a size name (:class:`TritonBound`).
        program_id_calls: number of ``tl.program_id`` calls in the body (inline uses included).
        row_dependents: names derived (through assignments) from the ``tl.program_id(0)`` variable, that
            variable first: the row index and what is computed from it.
        control_names: names read by ``if``/``while`` conditions and ``range(...)`` arguments (scalar
            control flow).
        loops: every ``for`` loop at the name level (:class:`TritonLoop`), in loop-id order.
        tensor_shapes: ``tl.zeros``/``tl.full`` shape arguments as written (``[BLOCK_N]``).
        arange_dependents: names derived (through assignments) from a ``tl.arange`` variable, those first.
        tile_params: the ``tl.constexpr`` parameters that size a tile, whatever their name: the ``end`` of a
            ``tl.arange(0, P)`` (inline ones included), or the step of a ``range``/``tl.range`` loop
            (``BLOCK_SIZE``, ``XBLOCK``, ``BS``), in parameter order.
        pointer_types: the pointer parameters whose element type the use of their loaded values shows
            (:class:`TritonPointerType`: integer index pointers), in parameter order; the others are not known.
        tile_blocks: ``(loop id, block parameter, follows)`` of each tile loop: the ``tl.constexpr`` whose tiles
            it walks (the step of ``range(0, N, BLOCK)``, or ``BLOCK`` of ``t * BLOCK + tl.arange(0, BLOCK)`` in a
            ``for t in tl.static_range(NUM_TILES)`` loop) and whether its extent follows any value of that block (a
            runtime ``range`` bound, or a tile count that ``@triton.heuristics`` recomputes from the block), so a
            different block still covers the row.
        unroll_feeds: the names the launches read (``N``, ``n_cols``) in the arguments that set a
            ``tl.static_range`` trip count: the count itself when the launch passes it (``TILES=triton.cdiv(n_cols,
            BLOCK)``), or what ``@triton.heuristics`` computes it from (``NUM_TILES: cdiv(args["N"], ...)``, the
            launch's argument for ``N``). A larger value of such a name unrolls more copies of the loop body at
            compile time, so the harness does not scale the sizes they stand for.
        switch_values: the string literals each ``tl.constexpr`` parameter is compared with by ``==`` / ``!=``
            in the body (``if ACTIVATION == "silu":``), ``((name, (value, ...)), ...)`` in first-use order: the
            values a string switch takes.
    """

    axes: tuple[TritonAxis, ...] = ()
    reductions: tuple[TritonReduction, ...] = ()
    memops: tuple[TritonMemOp, ...] = ()
    dots: tuple[TritonDot, ...] = ()
    tile_loops: tuple[int, ...] = ()
    math_calls: tuple[str, ...] = ()
    autotuned: bool = False
    grouped_program_ids: bool = False
    bounds: tuple[TritonBound, ...] = ()
    program_id_calls: int = 0
    row_dependents: tuple[str, ...] = ()
    control_names: tuple[str, ...] = ()
    loops: tuple[TritonLoop, ...] = ()
    tensor_shapes: tuple[str, ...] = ()
    arange_dependents: tuple[str, ...] = ()
    tile_params: tuple[str, ...] = ()
    pointer_types: tuple[TritonPointerType, ...] = ()
    switch_values: tuple[tuple[str, tuple[str, ...]], ...] = ()
    tile_blocks: tuple[tuple[int, str, bool], ...] = ()
    unroll_feeds: tuple[str, ...] = ()

    def loops_over_block(self, param: str) -> bool:
        """The kernel covers a dimension by looping over tiles of ``param`` whatever its value
        (:attr:`tile_blocks`): a different block keeps the coverage."""
        return any(b == param and follows for _, b, follows in self.tile_blocks)

    def program_axes(self) -> tuple[int, ...]:
        """The ``tl.program_id`` axes used, sorted."""
        return tuple(sorted({a.axis for a in self.axes if a.kind == "program_id"}))

    def aranges(self) -> tuple[TritonAxis, ...]:
        """The ``tl.arange`` variables."""
        return tuple(a for a in self.axes if a.kind == "arange")


@dataclass(frozen=True)
class OnlineStat:
    """A loop that keeps a softmax's statistics online (:func:`htam_core.source.analysis.online.online_pairs`):
    a running max and a sum rescaled to it, ``s = s * exp(m - m_new) + …``, in one pass.

    Attributes:
        loop: the loop's id (:attr:`LoopFact.id`).
        max: the running max's name.
        sum: the rescaled sum's name.
        line: the loop's 1-based line.
    """

    loop: int
    max: str
    sum: str
    line: int


@dataclass(frozen=True)
class WelfordStat:
    """A loop that keeps a running mean and sum of squared deviations by Welford's recurrence
    (:func:`htam_core.source.analysis.welford.welford_steps`): ``d = v - m; m += d / n; M2 += d * (v - m)``, the
    count ``n`` an explicit counter stepped by 1 in the loop or the loop variable plus a constant that counts the
    elements seen (``i + 1`` in a loop from 0). Chan, Golub and LeVeque's pairwise merge of ``(n, m, M2)`` triples
    lets the elements be split over threads.

    Attributes:
        loop: the loop's id (:attr:`LoopFact.id`).
        line: the loop's 1-based line.
        mean: the running mean's name.
        m2: the running sum of squared deviations' name.
        count: the explicit counter's name, or ``None`` for an implicit count.
        value: the element's text as the deviations read it.
        count_span: for an implicit count, the file bytes of the expression ``var + k`` that is the count (a row
            step that splits the loop rewrites it to each thread's own count), else ``None``.
        count_offset: for an implicit count, ``k``; the loop then starts at ``1 - k`` and steps by 1.
    """

    loop: int
    line: int
    mean: str
    m2: str
    count: str | None
    value: str
    count_span: Span | None = None
    count_offset: int = 0


@dataclass(frozen=True)
class ElementGroup:
    """One group of ``width`` consecutive elements of ``pointer`` that each step of a loop reads or writes
    (:meth:`KernelFacts.element_groups`): the elements ``base + width * var + k``, ``0 <= k < width``.

    Attributes:
        pointer: the parameter accessed.
        base: the group's offset from ``pointer`` outside the loop (sympy, elements).
        width: the elements per group (the loop variable's stride in the index).
        accesses: ``(k, access)`` of every access to the group in the loop, by ``k``.
    """

    pointer: str
    base: sympy.Expr
    width: int
    accesses: tuple[tuple[int, Access], ...]


def _thread_split(lp: LoopFact) -> bool:
    """``lp`` starts at a thread index and steps by a multiple of 32 or by ``blockDim``/``gridDim``."""
    if lp.start is None or lp.step is None or lp.update != "+":
        return False
    if not any(str(x).startswith("threadIdx.") for x in lp.start.free_symbols):
        return False
    if lp.step.is_Integer:
        return int(lp.step) > 0 and int(lp.step) % 32 == 0
    return any(str(x).startswith(("blockDim.", "gridDim.")) for x in lp.step.free_symbols)


@dataclass(frozen=True)
class KernelFacts:
    """Everything the transforms and the static profiler know about one kernel, derived once.

    Attributes:
        kernel: the kernel's name.
        language: ``"cuda"``, ``"cuda-in-python"`` or ``"triton"``.
        constants: integer names visible in the kernel body with their values (``#define``,
            ``constexpr``, template arguments at the first launch site, Triton constexpr arguments
            bound at the first launch site, module constants).
        loops: every loop, in source order.
        accesses: every memory access, in source order.
        pointers: per pointer parameter, its read and write sets.
        thread_indices: local variables computed from the thread/block indices.
        launches: the kernel's launches in this file.
        triton: Triton facts (``None`` for CUDA).
        errors: what could not be analyzed (one line each); the facts present are still valid.
        collectives: ``(call, line)`` of the calls that combine values of several threads (CUDA: warp
            shuffles, ``__reduce_*_sync``, ``cg::reduce``, accumulating atomics; empty for Triton).
        builtin_aliases: ``(name, builtin)`` of the kernel's local variables declared once, never modified,
            whose value is exactly one builtin (``int block_size = blockDim.x;`` gives ``("block_size",
            "blockDim.x")``, through casts and chains of such locals; CUDA only).
        pointer_aliases: the local pointers at a fixed offset into a parameter (:class:`PointerAlias`), in
            source order; accesses through them are already accesses of the parameter (CUDA only).
        builtins_read: the builtins the kernel's own body reads (``"threadIdx.x"``, ``"blockIdx.y"``; through
            cooperative-groups queries too), sorted (CUDA only).
        device_calls: functions the body calls whose code may read the thread indices where these facts do not
            look: the kernel's template parameters and functions defined in the same unit (CUDA only).
        online_stats: the loops that already keep a running max and a sum rescaled to it (:class:`OnlineStat`).
        welford_stats: the loops that keep a running mean and M2 by Welford's recurrence (:class:`WelfordStat`;
            CUDA only).
        barriers: the barrier calls in normal form (:class:`~htam_core.source.analysis.sync.Barrier`: every
            spelling of a block barrier, ``__syncthreads()``, ``cg::sync(cta)``, ``cta.sync()``, is scope
            ``"block"``; ``__syncwarp()`` and a tile's ``sync`` are ``"warp"``), in source order (CUDA only).
        atomics: the atomic updates of one element (:class:`AtomicUpdate`), in source order (CUDA only).
        uniform_atomics: the global ``atomicAdd``/``atomicMax``/``atomicMin`` updates whose address is the same in
            every thread of a block (:class:`UniformAtomic`), in source order (CUDA only).
        result_atomics: the global ``atomicAdd``/``atomicMax``/``atomicMin`` updates into an address the same in
            every thread of the grid that only a few threads of a block run (``if (tid == 0) atomicAdd(out,
            sdata[0]);``: a block's combined result), as :class:`UniformAtomic` of scope ``"grid"`` (CUDA only).
        long_sums: the float outputs filled by a long float32 accumulation (:class:`LongSum`: a float ``atomicAdd``
            into a shared address, a loop's float sum over a runtime bound), in line order
            (:func:`~htam_core.source.analysis.long_sums.long_sums`; CUDA only): the verify layer checks them
            against a float64 reference of the start.
        returns: the 1-based lines of the ``return`` statements in the kernel's body (CUDA only): a thread that
            returns early does not reach a barrier placed after it.
        macro_builtins: ``(macro, builtin)`` for each builtin the kernel reads inside the text of a macro it uses
            (``#define TX(i) (threadIdx.x + (i))``, ``#define GID (blockIdx.x * blockDim.x + threadIdx.x)``), in
            first-use order (CUDA only): an edit of the kernel's own text does not reach it.
        transposes: the element-copy transposes the kernel is (:class:`Transpose`; CUDA only, at most one).
        grid_stride_loops: the grid-stride loops, in any spelling
            (:class:`GridStrideLoop`; CUDA only).
        launch_free_dims: the dimensions along which what each thread covers is decided by grid-stride loops
            alone, for any grid and any block (:func:`~htam_core.source.analysis.gridstride.grid_stride_facts`;
            CUDA only): a launch step may change the block with the grid held, or the grid alone.
        stencils: the kernel's 1-D window read (:class:`Stencil`; CUDA only, at most one).
        stencil_refusal: when a pointer is read at neighbouring offsets but not as a :class:`Stencil`, one line
            saying what is not read (``""`` otherwise).
        index_calls: those of :attr:`device_calls` whose code may read the thread or block indices: a template
            parameter (its code is not in sight), or a function of the unit whose definition names a builtin or a
            cooperative-groups query (CUDA only); a value they return is not uniform
            (:mod:`~htam_core.source.analysis.uniformity`).
        pure_calls: those of :attr:`device_calls` that are pure functions of the unit: no effect visible outside
            them, no thread or block index read, only pure calls
            (:func:`~htam_core.source.analysis.pure_calls.pure_device_calls`; CUDA only): a call of one is a value,
            like ``fabsf(v)``, that can be evaluated for another element (``above(x[i], thr)`` in a count's guard).
        stencils2d: the kernel's 2-D window read (:class:`Stencil2D`; CUDA only, at most one).
        stencil2d_refusal: when the kernel reads a pointer at neighbouring offsets along a 2-D thread index but
            not as a :class:`Stencil2D`, one line saying what is not read (``""`` otherwise).
        stencils3d: the kernel's 3-D window read (:class:`Stencil3D`; CUDA only, at most one).
        stencil3d_refusal: the same for a 3-D thread index and :class:`Stencil3D`.
        type_instantiations: each type template parameter of the kernel with the types its launches in the file
            instantiate it with, sorted (``("scalar_t", ("__nv_bfloat16",))`` for a launch inside a dispatch
            macro that declares ``using scalar_t = __nv_bfloat16;``; ``()`` when none is read):
            :func:`~htam_core.source.analysis.instantiations.template_arguments`.
        thread_x_spans: the file spans of the expressions in the body that are the thread's index along x in its
            block, however spelled (:func:`~htam_core.source.analysis.cuda.thread_x_spans`: ``threadIdx.x``, a
            local that always holds it, ``block.thread_index().x``, a thread block's ``thread_rank()`` for a 1-D
            block); CUDA only.
        block_dim_x_spans: the file spans of the expressions in the body that are the block's thread count along x,
            however spelled (:func:`~htam_core.source.analysis.cuda.block_dim_x_spans`: ``blockDim.x``, a local
            copy, a thread block's ``size()`` for a 1-D block); CUDA only.
        device_globals: the ``__device__`` variables the body names (:class:`DeviceGlobal`, with how it uses each),
            in declaration order (CUDA only). Their element accesses (``hist[b]``, ``&g_count`` in an atomic, a
            scalar's ``total += v``) are in :attr:`accesses` and :attr:`atomics` under their name, space
            ``"global"``, like a pointer parameter's, but they are not in :attr:`pointers`.
    """

    kernel: str
    language: str
    constants: tuple[tuple[str, int], ...] = ()
    loops: tuple[LoopFact, ...] = ()
    accesses: tuple[Access, ...] = ()
    pointers: tuple[PointerFacts, ...] = ()
    thread_indices: tuple[ThreadIndex, ...] = ()
    launches: tuple[LaunchFacts, ...] = ()
    triton: TritonFacts | None = None
    errors: tuple[str, ...] = field(default_factory=tuple)
    collectives: tuple[tuple[str, int], ...] = ()
    builtin_aliases: tuple[tuple[str, str], ...] = ()
    pointer_aliases: tuple[PointerAlias, ...] = ()
    builtins_read: tuple[str, ...] = ()
    device_calls: tuple[str, ...] = ()
    online_stats: tuple[OnlineStat, ...] = ()
    barriers: tuple[Barrier, ...] = ()
    atomics: tuple[AtomicUpdate, ...] = ()
    returns: tuple[int, ...] = ()
    macro_builtins: tuple[tuple[str, str], ...] = ()
    transposes: tuple[Transpose, ...] = ()
    grid_stride_loops: tuple[GridStrideLoop, ...] = ()
    launch_free_dims: tuple[str, ...] = ()
    stencils: tuple[Stencil, ...] = ()
    stencil_refusal: str = ""
    index_calls: tuple[str, ...] = ()
    pure_calls: tuple[str, ...] = ()
    stencils2d: tuple[Stencil2D, ...] = ()
    stencil2d_refusal: str = ""
    stencils3d: tuple[Stencil3D, ...] = ()
    stencil3d_refusal: str = ""
    type_instantiations: tuple[tuple[str, tuple[str, ...]], ...] = ()
    thread_x_spans: tuple[Span, ...] = ()
    block_dim_x_spans: tuple[Span, ...] = ()
    uniform_atomics: tuple[UniformAtomic, ...] = ()
    result_atomics: tuple[UniformAtomic, ...] = ()
    long_sums: tuple[LongSum, ...] = ()
    device_globals: tuple[DeviceGlobal, ...] = ()
    welford_stats: tuple[WelfordStat, ...] = ()

    # ------------------------------------------------------------------ queries for transforms
    def barrier_at(self, span: Span) -> Barrier | None:
        """The barrier whose call or whole statement spans exactly the file bytes ``span``, else ``None``."""
        return next((b for b in self.barriers if span in (b.span, b.statement)), None)

    def is_block_barrier(self, span: Span) -> bool:
        """The statement or call at file bytes ``span`` is a block-wide barrier, however spelled
        (``__syncthreads();``, ``cg::sync(cta);``, ``cta.sync();``); a warp barrier is not one."""
        b = self.barrier_at(span)
        return b is not None and b.scope == "block"

    def block_barriers(self) -> tuple[Barrier, ...]:
        """The block-wide barriers (:attr:`barriers` of scope ``"block"``)."""
        return tuple(b for b in self.barriers if b.scope == "block")

    def flat_index_split(self) -> tuple[sympy.Expr, sympy.Expr] | None:
        """``(g, C)`` when the kernel splits one flattened 1-D global thread index ``g`` (``blockIdx.x * blockDim.x
        + threadIdx.x`` in any order or type) by both ``g / C`` and ``g % C`` (``row = idx / NC; col = idx % NC``, or
        inline in a subscript, ``A[(t / N) * K + k]``, ``C`` a constant or a parameter; the remainder may be written
        out, ``col = idx - row * C``): a 2-D output (row, column)
        computed by a 1-D launch, read off the index normal form (:attr:`thread_indices`, the accesses' indices).
        ``None`` when no such pair occurs. A 2-D tiling of that output needs a 2-D block, so the ranker's
        ``flat_thread_index`` and the matmul tiling transforms read this one fact. Idea source: the row-major
        flattening ``i = row * C + col`` and its inverse (the usual one-thread-per-output 1-D launch)."""
        div, mod = sympy.Function("div"), sympy.Function("mod")
        exprs = [t.expr for t in self.thread_indices] + [a.index for a in self.accesses if a.index is not None]
        parts: dict[str, set[tuple[sympy.Expr, sympy.Expr]]] = {"div": set(), "mod": set()}
        for e in exprs:
            for f in e.atoms(div, mod):
                g, c = f.args
                names = {x.name for x in g.free_symbols}
                if "threadIdx.x" in names and "blockIdx.x" in names and not any(
                        n.startswith(("threadIdx.", "blockIdx.")) and not n.endswith(".x") for n in names) \
                        and not any(n.startswith(("threadIdx.", "blockIdx.")) for n in (x.name for x in c.free_symbols)):
                    parts[type(f).__name__].add((g, c))
                    if type(f).__name__ == "div" and sympy.expand(e - (g - c * f)) == 0:
                        parts["mod"].add((g, c))  # `col = idx - row * C`: the remainder written out
        both = sorted(parts["div"] & parts["mod"], key=str)
        return both[0] if both else None

    def histogram_updates(self) -> tuple[AtomicUpdate, ...]:
        """The global ``atomicAdd`` updates whose index depends on loaded data (``atomicAdd(&hist[data[i]], 1)``,
        :attr:`atomics`): the bins of a histogram, which threads of a block hit in an order only the data decides.
        Only updates whose address names one element of the bins (:attr:`AtomicUpdate.base_span`: ``&bins[k]``,
        ``bins + k``, ``k + bins``, a cast of the whole address) count, so the ranker's ``histogram_like`` and the
        privatization read the same updates. Idea source: Kirk and Hwu, "Programming Massively Parallel
        Processors", "Parallel histogram computation"."""
        return tuple(a for a in self.atomics if a.fn == "atomicAdd" and a.space == "global" and a.index is not None
                     and a.base_span is not None and any(str(s).startswith("load(") for s in a.index.free_symbols))

    def per_block_outputs(self) -> tuple[Access, ...]:
        """The global writes whose index reads ``blockIdx`` and no ``threadIdx`` (``if (tid == 0) out[blockIdx.x] =
        sdata[0];``): each block writes its own output (a partial sum), so the output's length is the number of
        blocks, and a step that changes the grid changes the output's shape (what a later pass or the host reads).
        Loop variables and parameters may appear in the index (a block's row of outputs); atomics are not writes."""
        out = []
        for a in self.accesses:
            if a.space != "global" or a.kind == "read" or a.index is None or a.vector:
                continue
            if any(x.call_span[0] <= a.span[0] and a.span[1] <= x.call_span[1]
                   for x in self.atomics):
                continue
            if self._block_not_thread(a):
                out.append(a)
        return tuple(out)

    def per_block_inputs(self, dim: str) -> tuple[Access, ...]:
        """The global reads whose index reads ``blockIdx.<dim>`` and no ``threadIdx`` (``off = sums[blockIdx.x];``)
        in a kernel whose blocks own slices of ``blockDim.<dim>`` elements (:meth:`multiplies_block_index`): one
        value per block applied to the block's slice (the sums of a scan's earlier pass over segments of the
        launch's block size), so another block size pairs elements with another segment's value. Loop variables
        started or stepped from the thread index count as the thread index (as in :meth:`per_block_outputs`).
        Idea source: the uniform-add pass of a work-efficient scan (Harris, Sengupta, Owens, "Parallel Prefix
        Sum (Scan) with CUDA", GPU Gems 3, ch. 39), whose per-block sums are indexed by the block."""
        if not self.multiplies_block_index(dim):
            return ()
        return tuple(a for a in self.accesses if a.space == "global" and a.kind == "read" and a.index is not None
                     and f"blockIdx.{dim}" in {str(s) for s in a.index.free_symbols} and self._block_not_thread(a))

    def _block_not_thread(self, a: Access) -> bool:
        """Access ``a``'s index reads ``blockIdx`` and no ``threadIdx`` (directly or through a loop variable
        started or stepped from them)."""
        names = {str(s) for s in a.index.free_symbols} if a.index is not None else set()
        # a loop variable that starts or steps from the thread index (`for (i = threadIdx.x; ...)`) is one too
        for lp in self.loops:
            if lp.id in a.loops and lp.var in names:
                names |= {str(s) for e in (lp.start, lp.step) if e is not None for s in e.free_symbols}
        return any(n.startswith("blockIdx.") for n in names) and not any(n.startswith("threadIdx.") for n in names)

    def grid_free_result(self) -> UniformAtomic | None:
        """The one atomic that sends each block's result to a grid-wide total (:attr:`result_atomics`) when it is the
        kernel's only global output: no other global write, atomic or per-block output. The total is then the same
        for any number of blocks, so a step whose loops cover every element with any grid may size the grid to the
        device; ``None`` otherwise (per-block partials keep their contract, :meth:`per_block_outputs`). Idea source:
        NVIDIA developer blog, "Faster Parallel Reductions on Kepler" (Luitjens, 2014: a grid-stride sum over a grid
        sized to the SMs, one atomic per block)."""
        if len(self.result_atomics) != 1:
            return None
        res = self.result_atomics[0]
        return res if self._only_output(res) else None

    def grid_total(self) -> tuple[UniformAtomic, ...]:
        """The atomics by which threads send their own contributions to one grid-wide total (:attr:`uniform_atomics`
        of scope ``"grid"``, one function into one address: ``atomicAdd(loss, d * d)``, ``atomicAdd(count, 1ULL)``)
        when they are the kernel's only global output; ``()`` otherwise. As for :meth:`grid_free_result`, the total
        does not depend on how the elements are split among threads and blocks, so a step that covers every element
        with any grid may coarsen the threads and size the grid to the device. Idea source: NVIDIA developer blog,
        "Faster Parallel Reductions on Kepler" (Luitjens, 2014)."""
        ups = [a for a in self.uniform_atomics if a.scope == "grid"]
        if not ups or len({(a.update.fn, a.update.pointer, a.address_text) for a in ups}) != 1:
            return ()
        return tuple(ups) if all(self._only_output(a, ups) for a in ups) else ()

    def _only_output(self, res: UniformAtomic, group: Sequence[UniformAtomic] = ()) -> bool:
        """``res`` (with the atomics of ``group``) is the kernel's only global output: no other global atomic or
        write, and its pointer accessed nowhere else."""
        spans = {res.update.call_span, *(a.update.call_span for a in group)}
        if any(x.call_span not in spans and x.space == "global" for x in self.atomics):
            return False
        for a in self.accesses:
            inside = any(start <= a.span[0] and a.span[1] <= end for start, end in spans)
            if a.space == "global" and a.kind != "read" and not inside:
                return False
            if a.pointer == res.update.pointer and not inside:
                return False  # the total is also read or written elsewhere: its value is not only the sum
        return True

    def transpose_loops(self) -> tuple[TransposeLoop, ...]:
        """The outermost loops that transpose a tile row by row (:class:`TransposeLoop`): a loop from 0 to ``T`` by
        ``R`` (dividing it when both are known), whose body is one unguarded global load and one store with
        ``in[(Y + j) * W + X]`` and ``out[X * H + Y + j]`` for ``X = blockIdx.x * T + threadIdx.x`` and
        ``Y = blockIdx.y * T + threadIdx.y`` (``W``, ``H`` free of the thread, block and loop indices). Idea source:
        NVIDIA developer blog, "An Efficient Matrix Transpose in CUDA C/C++" (Harris, 2013)."""
        out: list[TransposeLoop] = []
        tx, ty, bx, by = (sym(f"{b}.{d}") for b, d in (("threadIdx", "x"), ("threadIdx", "y"),
                                                          ("blockIdx", "x"), ("blockIdx", "y")))
        for lp in self.loops:
            if lp.var is None or lp.parent is not None or lp.cmp != "<" or lp.start != 0:
                continue
            tile, rows = lp.bound, lp.step
            if tile is None or rows is None or (tile.is_Integer and rows.is_Integer and (rows <= 0 or tile % rows)):
                continue
            accs = [a for a in self.accesses if lp.id in a.loops]
            reads = [a for a in accs if a.kind == "read"]
            writes = [a for a in accs if a.kind == "write"]
            if len(accs) != 2 or len(reads) != 1 or len(writes) != 1:
                continue
            r, w = reads[0], writes[0]
            if any(a.space != "global" or a.vector or a.guarded or a.index is None for a in accs):
                continue
            width, height = r.stride("threadIdx.y"), w.stride("threadIdx.x")
            if width is None or height is None or r.stride("blockIdx.x") != tile:
                continue
            fixed = {tx, ty, bx, by, sym(lp.var)}
            if (width.free_symbols | height.free_symbols) & fixed:
                continue
            j = sym(lp.var)
            x, y = bx * tile + tx, by * tile + ty
            if sympy.expand(r.index - (width * (y + j) + x)) != 0 or sympy.expand(w.index - (height * x + y + j)) != 0:  # type: ignore[operator]
                continue
            out.append(TransposeLoop(lp.id, r, w, tile, rows, width, height))
        return tuple(out)

    def constant(self, name: str) -> int | None:
        """Value of the constant ``name`` in the kernel body, or ``None``."""
        return dict(self.constants).get(name)

    def is_thread_x(self, span: Span) -> bool:
        """True when the expression at file span ``span`` is the thread's index along x in its block in any
        spelling (:attr:`thread_x_spans`): the one normal form of "tid" for the analyses and transforms of
        block-level trees and reductions."""
        return span in self.thread_x_spans

    def is_block_dim_x(self, span: Span) -> bool:
        """True when the expression at file span ``span`` is the block's thread count along x in any spelling
        (:attr:`block_dim_x_spans`: ``blockDim.x``, a local copy, ``block.size()`` of a 1-D thread block)."""
        return span in self.block_dim_x_spans

    def builtin_alias(self, name: str) -> str | None:
        """The builtin (``"blockDim.x"``, ``"threadIdx.x"``) that local ``name`` always holds, else ``None``."""
        return dict(self.builtin_aliases).get(name)

    def pointer_alias(self, name: str) -> PointerAlias | None:
        """The :class:`PointerAlias` of the local pointer ``name``, or ``None`` when it is none."""
        return next((a for a in self.pointer_aliases if a.name == name), None)

    def pointer(self, name: str) -> PointerFacts | None:
        """The facts of pointer parameter ``name``; for a ``__device__`` variable the body names
        (:attr:`device_globals`), its facts as a pointer parameter's (element type, mode, accesses), so that a step on
        ``atomicAdd(&hist[b], 1)`` reads ``hist``'s element type whichever it is."""
        found = next((p for p in self.pointers if p.name == name), None)
        g = next((g for g in self.device_globals if g.name == name), None) if found is None else None
        if g is None:
            return found
        mine = tuple(a for a in self.accesses if a.pointer == name)
        return PointerFacts(name, g.mode, tuple(a for a in mine if a.kind != "write"),
                            tuple(a for a in mine if a.kind != "read"), g.element_type, g.value_type)

    def fixed_block_extents(self, dim: str, extent: int) -> tuple[tuple[str, int, Span], ...]:
        """Indices that hard-code the block's extent along ``dim`` instead of reading ``blockDim.<dim>``: a thread
        index variable or a global access whose stride in ``blockIdx.<dim>`` is a number equal to its stride in
        ``threadIdx.<dim>`` times ``extent`` (the launch's current threads along ``dim``), e.g. ``i_base = 128 *
        blockIdx.x + 8 * threadIdx.x`` for 16 threads, or ``blockIdx.x * 256 + threadIdx.x`` for 256. Each block
        then owns a fixed tile, so another block shape leaves elements uncovered or covers them twice.

        Returns ``(what, line, span)``: ``what`` names the index (``"i_base = 128*blockIdx.x + 8*threadIdx.x"`` or
        ``"out[i]"``); an access whose index goes through a thread index variable already named is left out.
        """
        b, t = f"blockIdx.{dim}", f"threadIdx.{dim}"

        def fixed(e: sympy.Expr | None) -> bool:
            sb, st = stride_of(e, b), stride_of(e, t)
            return (sb is not None and st is not None and sb.is_number and st.is_number and st != 0
                    and sb == st * extent)

        out: list[tuple[str, int, Span]] = [(f"{ti.name} = {ti.expr}", ti.line, ti.span)
                                            for ti in self.thread_indices if fixed(ti.expr)]
        named = {w.split(" = ")[0] for w, _, _ in out}
        for a in self.global_accesses():
            if fixed(a.index) and not any(n in a.index_text for n in named):
                out.append((f"{a.shown}", a.line, a.span))
        return tuple(out)

    def multiplies_block_index(self, dim: str) -> bool:
        """Some index the kernel computes scales ``blockIdx.<dim>`` by the block's extent ``blockDim.<dim>``
        (``blockIdx.x * blockDim.x + threadIdx.x`` however spelled: behind casts,
        ``static_cast<int64_t>(blockIdx.x) * blockDim.x``, or a grid group's ``thread_rank()``): each block owns
        the slice its extent gives, read from the thread indices, the loops' starts and steps and the accesses'
        indices. A block per row (``row = blockIdx.x``, ``out[row * C + j]``) is not one."""
        b, bd = sym(f"blockIdx.{dim}"), sym(f"blockDim.{dim}")
        exprs = [ti.expr for ti in self.thread_indices] + [a.index for a in self.accesses]
        exprs += [e for lp in self.loops for e in (lp.start, lp.step)]
        for e in exprs:
            if e is None or b not in e.free_symbols:
                continue
            if any(t.is_Mul and {b, bd} <= t.free_symbols for t in sympy.Add.make_args(sympy.expand(e))):
                return True
        return False

    def covers_any_launch(self, dim: str) -> bool:
        """What each thread covers along ``dim`` is decided by grid-stride loops alone (:attr:`launch_free_dims`):
        any grid with any block covers the same elements once."""
        return dim in self.launch_free_dims

    def already_online(self) -> str | None:
        """One sentence naming the loop that already keeps a softmax's running max and the sum rescaled to it in
        one pass (:attr:`online_stats`), or ``None``: such a kernel has no separate max pass left to merge."""
        if not self.online_stats:
            return None
        o = self.online_stats[0]
        return (f"{self.kernel} is already online: the loop on line {o.line} keeps the running max {o.max} and the sum "
                f"{o.sum} rescaled to it in one pass; there is no separate max pass to merge")

    def global_accesses(self) -> tuple[Access, ...]:
        """The accesses through pointer parameters."""
        return tuple(a for a in self.accesses if a.space == "global")

    def thread_split_loops(self) -> tuple[LoopFact, ...] | None:
        """The loops over global memory (a global access's index moves with the loop variable) when every one is
        already split among threads: its start reads ``threadIdx`` (``c = lane``, ``j = threadIdx.x``) and its
        step is a multiple of the warp's 32 lanes or reads ``blockDim``/``gridDim`` (a warp-, block- or
        grid-stride loop), so no thread walks a row alone; ``None`` when some loop over global memory is not
        split, or there is none. Idea source: the warp-per-row and block-per-row forms of a row reduction
        (NVIDIA CUDA samples; Harris, "Optimizing Parallel Reduction in CUDA", 2007)."""
        walking = [lp for lp in self.loops if lp.var is not None and any(
            a.space == "global" and lp.id in a.loops and a.index is not None and sym(lp.var) in a.index.free_symbols
            for a in self.accesses)]
        if not walking or not all(_thread_split(lp) for lp in walking):
            return None
        return tuple(walking)

    def shared_thread_strides(self, dim: str = "x") -> tuple[tuple[Access, sympy.Expr | None], ...]:
        """Each ``__shared__`` access with the stride of its element index along ``threadIdx.<dim>`` (``None``
        when unreadable), a loop variable started at the thread index counting as that index
        (``for (tx = threadIdx.x; ...; tx += BX) tile[ty][tx]``): the input of a bank-conflict check (a column
        walk of a ``[32][32]`` float tile strides by 32 words, one bank). Idea source: CUDA C++ Programming
        Guide, "Shared Memory" (32 banks of 4-byte words)."""
        out: list[tuple[Access, sympy.Expr | None]] = []
        for a in self.accesses:
            if a.space != "shared":
                continue
            idx = a.index
            for lp in (self.loops[i] for i in a.loops):
                if idx is not None and lp.var is not None and lp.start is not None:
                    idx = idx.subs(sym(lp.var), lp.start)
            out.append((a, None if idx is None else stride_of(idx, f"threadIdx.{dim}")))
        return tuple(out)

    def uncoalesced(self, dim: str = "x") -> tuple[Access, ...]:
        """Global accesses whose ``threadIdx.<dim>`` stride is known and neither 0 nor 1."""
        return tuple(a for a in self.global_accesses() if a.coalesced(dim) is False)

    def scattered(self, dim: str = "x") -> tuple[Access, ...]:
        """The :meth:`uncoalesced` accesses that are not part of a whole window group: scalar reads of one pointer
        that move by the same constant ``S`` (2 to 16) along ``threadIdx.<dim>`` and, at constant distances from
        each other, cover every offset ``0 .. S-1`` (a 2x2 pooling window's ``in[2 * q]``, ``in[2 * q + 1]``, in any
        spelling: ``p[1]``, ``__ldg(p + 1)``). Such a group's threads together read consecutive elements, each
        thread its own ``S`` of them, so the thread mapping is already along the contiguous index; what remains is
        a strided access that a remap could coalesce."""
        var = f"threadIdx.{dim}"
        bad = self.uncoalesced(dim)
        grouped: set[int] = set()
        cand = [a for a in bad if a.kind == "read" and not a.vector and a.index is not None
                and (s := a.stride(var)) is not None and s.is_Integer and 2 <= int(s) <= 16]
        for a in cand:
            size = int(a.stride(var))  # type: ignore[arg-type]
            near = [b for b in cand if b.pointer == a.pointer and b.stride(var) == a.stride(var)
                    and sympy.expand(b.index - a.index).is_Integer]  # type: ignore[operator]
            offsets = {int(sympy.expand(b.index - a.index)) % size for b in near}  # type: ignore[operator]
            if len(offsets) == size:
                grouped |= {id(b) for b in near}
        return tuple(a for a in bad if id(a) not in grouped)

    def thread_index(self, dim: str = "x", global_only: bool = True) -> ThreadIndex | None:
        """The first local variable that is the global index along ``dim`` (``i = blockIdx.x*blockDim.x+threadIdx.x``)."""
        for t in self.thread_indices:
            if t.dims == (dim,) and (t.is_global or not global_only):
                return t
        return None

    def loop(self, line: int) -> LoopFact | None:
        """The loop whose header is on ``line``."""
        return next((lp for lp in self.loops if lp.line == line), None)

    def welford_at(self, loop: LoopFact) -> WelfordStat | None:
        """The Welford recurrence ``loop`` keeps (:attr:`welford_stats`), or ``None``."""
        return next((w for w in self.welford_stats if w.loop == loop.id), None)

    def loop_at(self, start_byte: int) -> LoopFact | None:
        """The loop whose statement starts at file byte ``start_byte`` (a transform's loop node + unit base)."""
        return next((lp for lp in self.loops if lp.span[0] == start_byte), None)

    def children(self, loop: LoopFact) -> tuple[LoopFact, ...]:
        """Loops directly nested in ``loop``."""
        return tuple(lp for lp in self.loops if lp.parent == loop.id)

    def accesses_in(self, loop: LoopFact) -> tuple[Access, ...]:
        """Accesses inside ``loop`` (nested loops included)."""
        return tuple(a for a in self.accesses if loop.id in a.loops)

    def reduction_loops(self) -> tuple[LoopFact, ...]:
        """Loops with at least one accumulator."""
        return tuple(lp for lp in self.loops if lp.accumulators)

    def accumulator(self, name: str | None = None) -> Accumulator | None:
        """The accumulator called ``name`` (any loop), or the first one when ``name`` is ``None``."""
        for lp in self.loops:
            for a in lp.accumulators:
                if name is None or a.name == name:
                    return a
        return None

    def row_passes(self) -> tuple[LoopFact, ...]:
        """The top-level loops that each walk the thread's own row (a pass: some global access has stride 1 in the
        loop variable and a ``threadIdx.x`` stride that is neither 0 nor 1; a constant-width row too, unlike
        :meth:`is_row_loop`). Two or more are the passes a row kept in registers saves (a layer norm's mean,
        variance and normalize passes)."""
        return tuple(lp for lp in self.loops if lp.depth == 0 and lp.var is not None and any(
            a.space == "global" and a.stride(lp.var) == 1 and a.stride("threadIdx.x") not in (None, 0, 1)
            for a in self.accesses_in(lp)))

    def is_row_loop(self, loop: LoopFact, groups: bool = False) -> bool:
        """True when ``loop`` walks a row owned by one thread: its trip count is a runtime value (not an
        items-per-thread loop) and inside it some global access has stride 1 in the loop variable and a
        ``threadIdx`` stride that is neither 0 nor 1 (each thread a different row). ``groups``: a loop over groups
        of ``S`` consecutive elements (:meth:`element_groups`, ``x[2 * p]``, ``x[2 * p + 1]``) walks its row too.
        """
        if loop.var is None or loop.trip_value is not None:
            return False
        step = {1} | ({self.group_width(loop)} if groups else set())
        for a in self.accesses_in(loop):
            if a.space != "global" or a.stride(loop.var) not in step:
                continue
            for d in DIMS:
                s = a.stride(f"threadIdx.{d}")
                if s is not None and s != 0 and s != 1:
                    return True
        return False

    def group_width(self, loop: LoopFact) -> int | None:
        """``S`` when ``loop`` walks groups of ``S`` consecutive elements (:meth:`element_groups`), else ``None``."""
        groups = self.element_groups(loop)
        return groups[0].width if groups else None

    def element_groups(self, loop: LoopFact) -> tuple[ElementGroup, ...]:
        """The groups of ``S`` consecutive elements that each step of ``loop`` reads or writes, when the loop
        walks such groups (a RoPE pair loop: ``x[2 * p]``, ``x[2 * p + 1]``; ``S`` from 2 to 16): every global
        access inside it either does not move with the loop variable or moves by the same constant ``S``, with an
        index ``base + S * var + k`` for a constant ``0 <= k < S``, and per pointer and ``base`` the accesses
        touch every ``k`` of the group and the writes, if any, write every ``k`` (``px[4 * q + 3] = 1`` beside
        ``px[4 * q + k] *= g``), so that a vector copy of the group reads or writes nothing the loop does not.
        Empty otherwise (stride 1 is the plain row walk, :meth:`is_row_loop`).

        Idea source: the vector loads of NVIDIA's "CUDA Pro Tip: Increase Performance with Vectorized Memory
        Access" (Luitjens, 2013), applied to the element pairs of a rotary embedding (llm.c's RoPE kernels)."""
        moving = [a for a in self.accesses_in(loop) if a.space == "global" and a.stride(loop.var or "") != 0]
        strides = {a.stride(loop.var or "") for a in moving}
        width = next(iter(strides)) if len(strides) == 1 else None
        if loop.var is None or width is None or not width.is_Integer or not 2 <= int(width) <= 16:
            return ()
        by: dict[tuple[str, sympy.Expr], list[tuple[int, Access]]] = {}
        v = sym(loop.var)
        for a in moving:
            if a.index is None or a.vector:
                return ()
            k, base = sympy.expand(a.index - width * v).as_coeff_Add()
            if not k.is_Integer or not 0 <= int(k) < int(width) or base.has(v):
                return ()
            by.setdefault((a.pointer, base), []).append((int(k), a))
        full = set(range(int(width)))
        out = []
        for (ptr, base), ks in by.items():
            rk, wk = {k for k, a in ks if a.kind != "write"}, {k for k, a in ks if a.kind != "read"}
            if rk | wk != full or (wk and wk != full):
                return ()
            out.append(ElementGroup(ptr, base, int(width), tuple(sorted(ks, key=lambda x: (x[0], x[1].span)))))
        return tuple(out)

    def strided_walk(self, loop: LoopFact) -> Access | None:
        """The first global access inside ``loop`` whose element moves with the loop variable by a known stride
        other than 1 (``A[r * cols + c]`` in a loop over ``r`` moves ``cols`` elements a step: the loop walks a
        column, not a row's contiguous elements), else ``None``. A loop for which this is ``None`` walks rows
        only: what giving a row to a warp (lanes on consecutive loop indices) coalesces. Accesses that do not move
        with the loop (stride 0) or whose stride is unknown are not counted. ``None`` for a loop without a
        variable."""
        if loop.var is None:
            return None
        for a in self.accesses_in(loop):
            st = a.stride(loop.var) if a.space == "global" else None
            if st is not None and st != 0 and st != 1:
                return a
        return None

    def row_loops(self, groups: bool = False) -> tuple[LoopFact, ...]:
        """Loops for which :meth:`is_row_loop` holds (``groups``: loops over groups of consecutive elements too)."""
        return tuple(lp for lp in self.loops if self.is_row_loop(lp, groups))

    def reduction_dim(self, loop: LoopFact) -> str | None:
        """For a reduction loop, the dimension it reduces: ``"row"`` when its variable has stride 1 in the
        accesses it reads (contiguous, the last dimension), ``"column"`` when a larger stride, else ``None``."""
        if loop.var is None or not loop.accumulators:
            return None
        strides = {a.stride(loop.var) for a in self.accesses_in(loop) if a.kind != "write" and a.space == "global"}
        strides.discard(None)
        strides.discard(sympy.Integer(0))
        if not strides:
            return None
        return "row" if strides == {sympy.Integer(1)} else ("column" if sympy.Integer(1) not in strides else "both")

    # ------------------------------------------------------------------ patterns (the predicate facts)
    def _own_reads(self, loop: LoopFact) -> tuple[Access, ...]:
        """Reads (global or shared, ``readwrite`` included) whose innermost enclosing loop is ``loop``."""
        return tuple(a for a in self.accesses if a.loops and a.loops[-1] == loop.id and a.kind != "write")

    @staticmethod
    def _varies(a: Access, var: str) -> bool:
        """The access's element changes with ``var`` (a nonzero or non-affine stride)."""
        s = a.stride(var)
        return s is None or s != 0

    def row_tile_loops(self) -> tuple[LoopFact, ...]:
        """The top-level Triton tile loops (:attr:`TritonFacts.tile_loops` at depth 0): the passes of a row kernel
        over its column tiles, whatever their spelling (``range(0, N, BLOCK)``, ``tl.range``, ``for t in
        tl.static_range(NUM_TILES)`` with ``t * BLOCK + tl.arange(0, BLOCK)``). The one fact every row step reads
        (row in registers, several rows per program, block size). Empty for CUDA kernels."""
        tf = self.triton
        if tf is None:
            return ()
        return tuple(lp for lp in self.loops if lp.id in tf.tile_loops and lp.depth == 0)

    def masked_tile_loops(self) -> tuple[LoopFact, ...]:
        """Triton tile loops (:attr:`TritonFacts.tile_loops`: a loop over a dimension in steps of a tile, the K
        loop of a matmul) whose body holds a masked ``tl.load``/``tl.store``: the masks a divisibility flag
        (``EVEN_K``) can take out of every iteration. Empty for CUDA kernels and for kernels with no such loop
        (an elementwise kernel's one masked load per program is no loop's)."""
        tf = self.triton
        if tf is None:
            return ()
        masked = [m.span for m in tf.memops if m.masked]
        return tuple(lp for lp in self.loops if lp.id in tf.tile_loops
                     and any(lp.span[0] <= sp[0] and sp[1] <= lp.span[1] for sp in masked))

    def matmul_loops(self) -> tuple[LoopFact, ...]:
        """Loops that accumulate products of two operands along a shared dimension (a matmul's K loop): a
        ``sum`` accumulator (or a ``max``/``min`` one: the max-plus product ``c = fmaxf(c, A[..] + B[..])``, a
        matmul over another semiring, tiled the same way), and two reads of different pointers (global or shared) inside the loop, both
        indexed by the loop variable and both depending on the thread/block indices, with different strides
        in the loop variable (``A[row*K + k]`` and ``B[k*N + col]``) or different thread/block dimensions
        (``inp[bt*C + i]`` and ``w[oc*C + i]``, the NT layout; also one pointer read along two thread dimensions,
        ``X[a*D + c] * X[b*D + c]``, a Gram matrix X X^T). A dot product with one shared vector
        (``x[row*N + i] * y[i]``) is not one: ``y`` does not depend on the thread; nor is a sum of squares of one
        row (``x[r*D + c] * x[r*D + c]``); nor is a convolution's tap loop, whose image read moves with the loop
        variable along the thread's own axis (``in[(y + dy)*W + x + dx]``: :func:`_window_walk`), a window of the
        thread's neighbourhood rather than a shared dimension k of two operands."""
        out: list[LoopFact] = []
        for lp in self.loops:
            if lp.var is None or not any(a.op in ("sum", "max", "min") for a in lp.accumulators):
                continue
            ops = [a for a in self._own_reads(lp) if a.index is not None and self._varies(a, lp.var)
                   and _thread_dims(a) and not _window_walk(a, lp.var)]
            if any(_dot_operands(x, y, lp.var) for i, x in enumerate(ops) for y in ops[i + 1:]):
                out.append(lp)
        return tuple(out)

    def max_then_sum_loops(self) -> tuple[tuple[LoopFact, LoopFact], ...]:
        """Pairs ``(max loop, sum loop)`` of separate passes over a row: a loop whose accumulator is a running max
        (``m = fmaxf(m, x[j])``) and a later loop, not nested in it, whose accumulator is a sum with the same loop
        variable name (``s += expf(x[j] - m)``). With an exponential in the kernel this is the two-pass softmax
        normalizer that online softmax merges into one pass (Milakov and Gimelshein, "Online normalizer
        calculation for softmax", 2018)."""
        out: list[tuple[LoopFact, LoopFact]] = []
        for a in self.loops:
            if not any(acc.op == "max" for acc in a.accumulators):
                continue
            for b in self.loops:
                if b.span[0] >= a.span[1] and b.var == a.var and b.depth == a.depth and any(
                        acc.op == "sum" for acc in b.accumulators):
                    out.append((a, b))
                    break
        return tuple(out)

    def accumulation_loops(self) -> tuple[LoopFact, ...]:
        """Loops that reduce many elements into fewer values: an accumulator, a read inside the loop whose
        element changes with the loop variable (or any read for a loop without one), and no global write
        inside the loop that moves with the loop variable (that would be a scan or an elementwise loop).
        Matmul K loops (:meth:`matmul_loops`) are included; the pattern facts tell them apart."""
        out: list[LoopFact] = []
        for lp in self.loops:
            if not lp.accumulators:
                continue
            inside = self.accesses_in(lp)
            reads = [a for a in inside if a.kind != "write" and (lp.var is None or self._varies(a, lp.var))]
            moving_writes = [a for a in inside if a.space == "global" and a.kind != "read" and lp.var is not None
                             and a.index is not None and self._varies(a, lp.var)]
            if reads and not moving_writes:
                out.append(lp)
        return tuple(out)

    def _halving_or_doubling_shared(self) -> list[tuple[LoopFact, set[str]]]:
        """Loops whose variable halves or doubles, with the ``__shared__`` arrays each both reads and writes."""
        out: list[tuple[LoopFact, set[str]]] = []
        for lp in self.loops:
            if lp.update not in (">>", "/", "*", "<<"):
                continue
            shared = [a for a in self.accesses_in(lp) if a.space == "shared"]
            both = {a.pointer for a in shared if a.kind == "readwrite"} | (
                {a.pointer for a in shared if a.kind == "read"} & {a.pointer for a in shared if a.kind == "write"})
            if both:
                out.append((lp, both))
        return out

    def scan_loops(self) -> tuple[LoopFact, ...]:
        """Shared-memory scan steps: a loop whose variable halves or doubles and in which an element of a
        ``__shared__`` array is written from an element a stride *below* it (a read whose index minus a write's
        index, on the same array, has a term ``-offset``, ``offset`` a variable: the loop's or one it scales):
        Hillis-Steele's ``s[tid] += s[tid - offset]`` (double-buffered ``buf[pout][tid] = buf[pin][tid] + buf[pin][tid - offset]`` too) and the
        Blelloch sweeps (``temp[bi] += temp[ai]`` with ``ai = bi - offset``; the down-sweep's ``s[tid + d] =
        s[tid]``). A reduction tree reads the element *above* (``sdata[tid] += sdata[tid + s]``). Idea source:
        Harris, Sengupta and Owens, "Parallel Prefix Sum (Scan) with CUDA" (GPU Gems 3, ch. 39)."""
        out: list[LoopFact] = []
        for lp, arrays in self._halving_or_doubling_shared():
            var = lp.var or ""
            shared = [a for a in self.accesses_in(lp) if a.space == "shared" and a.pointer in arrays
                      and a.index is not None]
            reads = [a for a in shared if a.kind != "write"]
            writes = [a for a in shared if a.kind != "read"]
            if var and any(r.pointer == w.pointer and _reads_below(sympy.expand(r.index - w.index))
                           for r in reads for w in writes):
                out.append(lp)
        return tuple(out)

    def shared_tree_loops(self) -> tuple[LoopFact, ...]:
        """Shared-memory reduction trees: a loop whose variable halves or doubles and that reads and writes the
        same ``__shared__`` array (``sdata[tid] += sdata[tid + s]``), on an array no :meth:`scan_loops` step of the
        kernel scans (a scan's up-sweep is a tree over the array its down-sweep then reads whole: a scan, not a
        reduction)."""
        scanned = {a.pointer for lp in self.scan_loops() for a in self.accesses_in(lp) if a.space == "shared"}
        return tuple(lp for lp, arrays in self._halving_or_doubling_shared() if not arrays & scanned)

    def interleaved_tree_loops(self) -> tuple[LoopFact, ...]:
        """The :meth:`shared_tree_loops` whose stride doubles (``s *= 2``, ``s <<= 1``): interleaved addressing, the
        first kernel of Harris's "Optimizing Parallel Reduction in CUDA"; a tree whose stride halves already uses
        sequential addressing."""
        return tuple(lp for lp in self.shared_tree_loops() if lp.update in ("*", "<<"))

    def no_shared_tree(self) -> str | None:
        """Why the kernel has no shared-memory reduction tree (:meth:`shared_tree_loops`), one sentence; ``None``
        when it has one. The precondition of every step that rewrites such a tree (sequential addressing, the
        warp-shuffle finish)."""
        if self.shared_tree_loops():
            return None
        scans = self.scan_loops()
        if scans:
            return (f"this is a scan, not a reduction: the shared-memory loop on line {scans[0].line} writes each "
                    "element from the one a stride below it (a scan step), so no reduction-tree step applies")
        unread = next((lp for lp in self.loops if lp.header_refusal and any(
            a.space == "shared" and a.kind != "read" for a in self.accesses_in(lp))), None)
        if unread is not None:  # a while/do tree not read as a counted loop: say why
            return f"the shared-memory loop on line {unread.line} is not read as a tree: {unread.header_refusal}"
        return (f"{self.kernel} has no shared-memory tree reduction (a loop whose stride halves or doubles and that "
                "combines elements of one __shared__ array, `sdata[tid] += sdata[tid + s]`)")

    def column_split_loops(self) -> tuple[ColumnSplit, ...]:
        """Column sums whose threads split the summed index (lanes on rows, uncoalesced): a loop with one
        ``sum`` accumulator whose start depends on ``threadIdx.x`` (the threads of a group take consecutive
        loop indices: ``i = threadIdx.x`` by ``blockDim.x``, ``i = warp.thread_rank()`` by ``warp.size()``), whose
        step is no grid stride, and whose every global read is ``S * i + c``: the stride ``S`` across the loop is
        the stride across consecutive threads, neither 0 nor 1 (a warp's lanes ``S`` elements apart), and ``c``
        (the column) is the same for every thread of the group (free of the loop variable and of ``threadIdx``,
        except the group number ``div(t, W)`` beside a start ``mod(t, W)``, ``t`` the thread's rank in the block:
        a warp's lanes, ``warp.thread_rank()``). Swapping the roles (threads on ``c``, a loop over ``i``) makes the reads coalesced."""
        tx = sym("threadIdx.x")
        out: list[ColumnSplit] = []
        for lp in self.loops:
            if lp.var is None or lp.start is None or lp.step is None or lp.grid_stride or lp.update != "+":
                continue
            if tx not in lp.start.free_symbols or len(lp.accumulators) != 1 or lp.accumulators[0].op != "sum":
                continue
            group = sympy.Integer(0)
            mods = [m for m in lp.start.atoms(sympy.Function) if m.func.__name__ == "mod" and len(m.args) == 2
                    and tx in m.args[0].free_symbols]
            if mods and lp.start == mods[0]:  # a lane of a warp-sized group: the group number may pick the column
                group = sympy.Function("div")(*mods[0].args)

            def one_per_group(col: sympy.Expr, group: sympy.Expr = group) -> bool:
                bare = col.subs(group, sym("htam_group")) if group != 0 else col
                return not any(sym(f"threadIdx.{d}") in bare.free_symbols for d in DIMS)

            found = self._column_read(lp, one_per_group, column_values=False)
            if found is not None:
                out.append(found)
        return tuple(out)

    def _column_read(self, lp: LoopFact, column_ok: Callable[[sympy.Expr], bool], column_values: bool
                     ) -> ColumnSplit | None:
        """The column split of ``lp`` when every global read inside it is a scalar ``S * var + c`` with one ``S``
        (neither 0 nor 1) and one ``c`` (free of ``var``, ``column_ok(c)``); reads that do not move with ``var``
        (``w[c]``) and reads of a value of the row, the same element for every thread (``x[i]`` of ``A^T x``:
        an index free of ``threadIdx`` and ``blockIdx``, :func:`_row_value`), are allowed when ``column_values``.
        ``None`` otherwise."""
        var = lp.var or ""
        cols: set[sympy.Expr] = set()
        strides: set[sympy.Expr] = set()
        for a in self.accesses_in(lp):
            if a.space != "global" or a.kind == "write":
                continue
            st = a.stride(var)
            if a.index is None or a.vector or st is None or (st == 0 and not column_values):
                return None
            if st == 0:
                continue  # a value of the column, read once per row
            if column_values and _row_value(a):
                continue  # a value of the row (x[i] of A^T x), the same for every thread
            col = sympy.expand(a.index - st * sym(var))
            if st == 1 or sym(var) in col.free_symbols or not column_ok(col):
                return None
            cols.add(col)
            strides.add(st)
        if len(cols) != 1 or len(strides) != 1:
            return None
        return ColumnSplit(lp.id, next(iter(cols)), next(iter(strides)))

    def column_reads(self, split: ColumnSplit) -> tuple[Access, ...]:
        """The global reads of the column sum ``split`` that walk its column, ``split.stride * var + split.column``
        (the reads a wider load of adjacent columns replaces); values of the column (``w[c]``) and of the row
        (``x[i]``) are not among them."""
        lp = self.loops[split.loop]
        var = sym(lp.var or "")
        return tuple(a for a in self.accesses_in(lp) if a.space == "global" and a.kind != "write"
                     and a.index is not None and not a.vector and a.stride(lp.var or "") == split.stride
                     and sympy.expand(a.index - split.stride * var - split.column) == 0)

    def thread_column_loops(self) -> tuple[ColumnSplit, ...]:
        """Column sums with one thread per column and scalar reads (coalesced, but 4 or 2 bytes per lane), in
        two forms. Both: a loop with one ``sum`` accumulator whose every global read is ``S * i + c``, ``S`` (the
        row length) neither 0 nor 1, ``c`` free of the loop variable, not through a vector type.

        - each thread walks its own column: the loop's start and step do not depend on ``threadIdx``, ``c``
          has stride 1 along ``threadIdx.x`` (reads of a value of the column, ``w[c]``, are allowed);
        - the warps split the rows (the lanes-on-columns form, llm.c's ``matmul_backward_bias`` kernel 4): the
          start is the warp number ``div(threadIdx.x, W)`` and the step the number of warps
          ``div(blockDim.x, W)``, ``W`` 32 or ``warpSize``, and ``c`` is ``base + mod(threadIdx.x, W)``; or the
          start is ``threadIdx.y`` and the step ``blockDim.y`` (``W`` is ``blockDim.x``: warps when the launch
          makes it 32, the form ``cuda.lane_columns`` writes) and ``c`` is ``base + threadIdx.x``; ``base`` free of
          ``threadIdx`` (lane ``l`` on column ``base + l``); every read moves with the loop
          (:attr:`ColumnSplit.warp` is ``W``).

        Several adjacent columns per thread make each row's read one 16-byte load."""
        out: list[ColumnSplit] = []
        for lp in self.loops:
            if lp.var is None or lp.start is None or lp.step is None or lp.update != "+" or lp.depth:
                continue
            if len(lp.accumulators) != 1 or lp.accumulators[0].op != "sum":
                continue
            if not any(s.name.startswith("threadIdx.") for s in lp.start.free_symbols | lp.step.free_symbols):
                found = self._column_read(lp, lambda c: stride_of(c, "threadIdx.x") == 1, column_values=True)
            else:
                width = _warp_rows(lp)
                found = None if width is None else self._column_read(
                    lp, lambda c, w=width: _lane_column(c, w), column_values=False)
                found = None if found is None else ColumnSplit(found.loop, found.column, found.stride, width)
            if found is not None:
                out.append(found)
        return tuple(out)

    def broadcast_reads(self) -> tuple[Access, ...]:
        """Scalar global reads inside loops that no 16-byte load can widen: the element is the same on every lane
        of a warp (the index depends on ``threadIdx.x`` only through the warp number ``div(threadIdx.x, W)``, ``W``
        32 or ``warpSize``, on no other thread index, and so do the start and step of every loop whose variable
        it reads), and every loop it moves with steps by a block's or a grid's worth (its step reads ``blockDim``
        or ``gridDim``), so no thread reads two adjacent elements (one value per warp and row, a mean or a
        scale: llm.c's ``layernorm_backward`` kernel 8 reads ``mean[b * T + t]`` so)."""
        div = sympy.Function("div")
        warp = sym("htam_warp")

        def uniform(e: sympy.Expr | None) -> bool:
            if e is None:
                return False
            for w in _WARP_WIDTHS:
                e = e.subs(div(sym("threadIdx.x"), w), warp)
            return not any(s.name.startswith("threadIdx.") for s in e.free_symbols)

        out: list[Access] = []
        for a in self.accesses:
            if a.space != "global" or a.kind != "read" or a.vector or not a.loops or not uniform(a.index):
                continue
            moving = [self.loops[i] for i in a.loops if self.loops[i].var and sym(self.loops[i].var or "")
                      in a.index.free_symbols]  # type: ignore[union-attr]
            if moving and all(uniform(lp.start) and uniform(lp.step) and any(
                    s.name.startswith(("blockDim.", "gridDim.")) for s in lp.step.free_symbols)  # type: ignore[union-attr]
                    for lp in moving):
                out.append(a)
        return tuple(out)

    def reduction_evidence(self) -> tuple[str, ...]:
        """Why the kernel reduces (one line each, empty when it does not): accumulation loops, shared-memory
        trees, collective calls (CUDA) and ``tl.sum``/``tl.max`` ... (Triton). An elementwise kernel with a
        grid-stride or ``float4`` loop has none of these."""
        out = [f"line {lp.line}: loop accumulates {', '.join(a.name for a in lp.accumulators)}"
               for lp in self.accumulation_loops()]
        out += [f"line {lp.line}: shared-memory tree" for lp in self.shared_tree_loops()]
        out += [f"line {line}: {fn}" for fn, line in self.collectives]
        if self.triton is not None:
            out += [f"line {r.line}: tl.{r.fn}" for r in self.triton.reductions]
        return tuple(out)


#: The warp's width: ``warpSize`` reads as this constant (:data:`~htam_core.source.analysis.constants.BUILTIN_CONSTANTS`).
_WARP_WIDTHS = (sympy.Integer(BUILTIN_CONSTANTS["warpSize"]),)


def _warp_rows(lp: LoopFact) -> sympy.Expr | None:
    """The lanes' width when the warps of a block split the loop, else ``None``: ``W`` (32 or ``warpSize``) for a
    start at the warp number ``div(threadIdx.x, W)`` by the number of warps ``div(blockDim.x, W)``; ``blockDim.x``
    for a start at ``threadIdx.y`` by ``blockDim.y`` (a warp per ``threadIdx.y`` when ``blockDim.x`` is 32, which
    only the launch can tell)."""
    div = sympy.Function("div")
    for w in _WARP_WIDTHS:
        if lp.start == div(sym("threadIdx.x"), w) and lp.step == div(sym("blockDim.x"), w):
            return w
    if lp.start == sym("threadIdx.y") and lp.step == sym("blockDim.y"):
        return sym("blockDim.x")
    return None


def _lane_column(col: sympy.Expr, width: sympy.Expr) -> bool:
    """``col`` is ``base + lane`` with ``base`` free of the thread indices (lane on column): the lane
    ``mod(threadIdx.x, width)``, or ``threadIdx.x`` for the width ``blockDim.x``."""
    tx = sym("threadIdx.x")
    lane = tx if width == sym("blockDim.x") else sympy.Function("mod")(tx, width)
    base = sympy.expand(col - lane)
    return not any(s.name.startswith("threadIdx.") for s in base.free_symbols)


def _thread_dims(a: Access) -> frozenset[str]:
    """The ``threadIdx``/``blockIdx`` symbols an access's index depends on."""
    if a.index is None:
        return frozenset()
    return frozenset(s.name for s in a.index.free_symbols if s.name.startswith(("threadIdx.", "blockIdx.")))


def _window_walk(a: Access, var: str) -> bool:
    """The loop over ``var`` moves ``a`` along one of the thread's own axes: its stride in ``var`` is nonzero and
    equal to its stride in a ``threadIdx``/``blockIdx`` symbol it depends on (``in[(y + dy)*W + x + dx]``: ``dx``
    steps 1 like ``threadIdx.x``, ``dy`` steps ``W`` like ``threadIdx.y``). Such a read is a window around the
    thread's output (a convolution's taps, a stencil), not an operand of a dot over a shared dimension: a matmul
    operand ``A[row*K + k]`` moves with ``k`` across the thread's axes (stride 1 against ``K`` for the row).
    Idea source: direct convolution versus GEMM (Chetlur et al., "cuDNN: Efficient Primitives for Deep Learning",
    2014: the taps are the sliding window that im2col would have to lay out as a K dimension)."""
    s = a.stride(var)
    if s is None or s == 0:
        return False
    return any(a.stride(d) == s for d in _thread_dims(a))


def _dot_operands(x: Access, y: Access, var: str) -> bool:
    """Reads ``x`` and ``y`` inside a loop over ``var`` are the two operands of a matmul-like product: different
    thread/block dimensions (each operand is shared by the threads along the other's dimensions: a tile reuses
    it), or different pointers walked with different strides in ``var`` (``A[row*K + k]``, ``B[k*N + col]``). One
    pointer at the same dimensions is a row of one thread (a sum of squares), not two operands."""
    if _thread_dims(x) != _thread_dims(y):
        return True
    return x.pointer != y.pointer and x.stride(var) != y.stride(var)
