"""The one writer of the header of a grid-stride loop a transform writes, with a counter that cannot wrap.

A grid-stride loop ``for (int i = gid; i < n; i += blockDim.x * gridDim.x)`` is wrong near the top of its index
type: for ``n > INT_MAX - stride`` the last ``i += stride`` overflows (undefined behaviour for ``int``; for
``unsigned`` it wraps to a small value below ``n`` and the loop takes elements again). The kernel it replaces
(``int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n)``) is right for every ``n`` up to about ``INT_MAX -
blockDim.x``, and 2^31 floats (8 GiB) fit a GPU, so every loop a transform writes counts in 64 bits:

* the transform's own variable (``htam_j``) is declared ``long long`` (:func:`own_loop`);
* the kernel's index keeps its type in the body, declared from a 64-bit counter (:func:`index_loop`)::

      for (long long htam_gi = gid; htam_gi < n; htam_gi += (long long)blockDim.x * gridDim.x) {
          int i = (int)htam_gi;
          ...
      }

A start whose type is already 64-bit (``long long``, ``int64_t``, ``size_t``, ``ptrdiff_t``, through aliases:
:meth:`TypeEnv.is_wide_integer <htam_core.source.analysis.types.TypeEnv.is_wide_integer>`) keeps it, and the
kernel's own variable stays the loop's variable.

Idea source: PyTorch's ``CUDA_KERNEL_LOOP_TYPE`` (ATen ``cuda/CUDAContext`` / ``KernelUtils.cuh``: an ``int64_t``
counter, the index of the caller's type assigned from it in the body); CERT C INT32-C (signed overflow).
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis.forms import Elementwise
from htam_core.source.analysis.types import TypeEnv

#: The type of a counter that cannot wrap for any element count a GPU holds.
WIDE = "long long"
#: The counter that carries a narrow kernel index (PyTorch's ``_i_n_d_e_x``).
COUNTER = "htam_gi"


def grid_step(ctype: str, dim: str = "x") -> str:
    """The grid's thread count along ``dim`` computed in ``ctype`` (``(long long)blockDim.x * gridDim.x``): the
    product of two ``unsigned`` extents is taken in the counter's width, not wrapped at 2^32."""
    return f"({ctype})blockDim.{dim} * gridDim.{dim}"


def counter_type(types: TypeEnv, written: str) -> str:
    """The type of a loop counter started from an index declared ``written``: ``written`` itself (qualifiers
    dropped) when it is a 64-bit integer (:meth:`TypeEnv.is_wide_integer`), else :data:`WIDE`."""
    if types.is_wide_integer(written):
        return " ".join(w for w in written.split() if w not in ("const", "volatile"))
    return WIDE


def header(var: str, ctype: str, start: str, cond: str, step: str) -> str:
    """``for (ctype var = start; cond; var += step)``: the one spelling of a written loop header."""
    return f"for ({ctype} {var} = {start}; {cond}; {var} += {step})"


def own_loop(types: TypeEnv, var: str, itype: str, start: str, bound: str, step: str | None = None) -> str:
    """The header of a loop over the transform's own variable ``var`` from ``start`` (an index declared ``itype``)
    while ``var < bound``, stepping ``step`` (``None``: the grid's x extent, :func:`grid_step`); its counter is
    ``itype`` when 64-bit, else ``long long``."""
    ctype = counter_type(types, itype)
    return header(var, ctype, start, f"{var} < {bound}", grid_step(ctype) if step is None else step)


@dataclass(frozen=True)
class IndexLoop:
    """A loop over a kernel's own index: :attr:`head` (the ``for`` line) and :attr:`bind` (the body's first
    statement, ``int i = (int)htam_gi;``, or ``""`` when the index is itself the loop's variable)."""

    head: str
    bind: str


def index_loop(types: TypeEnv, name: str, itype: str, start: str, bound: str, step: str | None = None,
               extra: str = "", cmp: str = "<") -> IndexLoop:
    """The loop over the kernel's index ``name`` (declared ``itype``, as C text a cast can name: ``decltype(...)``
    for ``auto``) from ``start`` while ``cmp bound`` (``"<"`` or ``"<="``; and ``extra``, a condition that reads no
    index), stepping ``step`` (``None``: the grid's x extent). A 64-bit ``itype`` stays the loop's variable; any
    other is declared in the body from the 64-bit counter :data:`COUNTER`."""
    tail = f" && {extra}" if extra else ""
    if types.is_wide_integer(itype):
        ctype = counter_type(types, itype)
        return IndexLoop(header(name, ctype, start, f"{name} {cmp} {bound}{tail}",
                                grid_step(ctype) if step is None else step), "")
    head = header(COUNTER, WIDE, start, f"{COUNTER} {cmp} {bound}{tail}", grid_step(WIDE) if step is None else step)
    plain = " ".join(w for w in itype.split() if w not in ("const", "volatile"))
    return IndexLoop(head, f"{plain} {name} = ({plain}){COUNTER};")


def index_type(ew: Elementwise) -> str:
    """The index's type of an elementwise kernel as C text for a declaration and a cast: as written, or for
    ``auto`` the type of its value (``decltype(blockIdx.x * blockDim.x + threadIdx.x)``, ``unsigned int``), which a
    cast cannot name as ``auto``."""
    if not ew.deduced_type:
        return ew.type
    return f"decltype({' '.join((ew.gid.text or b'').decode().split())})"


def loop_text(loop: IndexLoop, body: str, block: bool, indent: str, sep: str = " ") -> str:
    """The loop ``loop`` over the statement ``body`` (its text as it will stand, ``block`` when it is a ``{ ... }``
    block), the ``for`` at indentation ``indent``. Without a declaration to bind, ``head body``. With one, the
    declaration opens the loop's body: a block's statements follow it (the block's braces become the loop's; a
    one-line block is opened onto its own lines), any other statement goes one level deeper in a new block."""
    if not loop.bind:
        return f"{loop.head}{sep}{body}"
    inner = f"{indent}    "
    if block and "\n" in body:
        return f"{loop.head} {{\n{inner}{loop.bind}{body[1:]}"
    stmts = body[1:-1].strip() if block else body.replace("\n", "\n    ")
    return f"{loop.head} {{\n{inner}{loop.bind}\n{inner}{stmts}\n{indent}}}"
