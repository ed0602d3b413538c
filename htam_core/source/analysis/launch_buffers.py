"""How many elements the buffer a launch passes for a pointer parameter holds, read off its allocation (CUDA).

``scatter<<<g, b>>>(idx, val, bins, n)`` after ``cudaMalloc(&bins, NBINS * sizeof(float))`` in the launching host
function passes ``bins`` with ``NBINS`` elements. The count is the allocation's byte size (a compile-time
constant: a literal, ``#define``, ``constexpr`` or a host local initialized once with one, followed through a
``bytes`` local) divided by the parameter's element size; every launch of the kernel in the file must pass a
buffer allocated in its host (``cudaMalloc``, ``cudaMallocManaged``, ``cudaMallocAsync``, with or without a
``(void **)`` cast) with the same count, else the count is unknown. The count is written as the allocation wrote
it when that is one name the kernel also sees (a ``#define`` or file-scope constant declared before the kernel),
else as its value.

An index into such a buffer is below the count in every valid run, but nothing in the kernel checks it: a step
that relies on the bound must keep a path for other indices (see
:attr:`~htam_core.source.analysis.facts.AtomicUpdate.extent_from`).

Idea source: the host allocation as the contract of a kernel's buffer sizes (the CUDA samples allocate each device
buffer with ``cudaMalloc(&d, N * sizeof(T))`` next to the launch that uses it).
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.analysis.constants import SIZEOF
from htam_core.source.analysis.syntax import of_type, strip_casts, unwrap_parens
from htam_core.source.analysis.unit import CudaSource, SiteLaunch
from htam_core.source.model import Kernel

#: The host allocation calls whose first argument is the address of the new buffer and second its size in bytes.
ALLOCATORS = frozenset({"cudaMalloc", "cudaMallocManaged", "cudaMallocAsync"})


def _allocations(src: CudaSource, host: Node, name: str) -> list[Node]:
    """The size arguments of the allocation calls of ``host`` that take ``&name`` (``cudaMalloc(&name, bytes)``)."""
    env = src.env
    out = []
    for call in of_type(host, "call_expression"):
        fn = env.t(call.child_by_field_name("function")).strip()
        args = call.child_by_field_name("arguments")
        kids = [c for c in args.named_children if c.type != "comment"] if args is not None else []
        if fn not in ALLOCATORS or len(kids) < 2:
            continue
        addr = strip_casts(unwrap_parens(kids[0]))
        target = addr.child_by_field_name("argument") if addr.type == "pointer_expression" else None
        if target is not None and env.t(addr).startswith("&") and env.t(unwrap_parens(target)) == name:
            out.append(kids[1])
    return out


def _count_text(src: CudaSource, size: Node, kernel_start: int) -> str | None:
    """The element count as the size ``N * sizeof(T)`` (either order) names it, when ``N`` is one name the kernel
    sees: a ``#define`` or a file-scope constant declared before the kernel."""
    env = src.env
    size = unwrap_parens(size)
    if size.type != "binary_expression" or env.t(size.child_by_field_name("operator")) != "*":
        return None
    sides = [unwrap_parens(size.child_by_field_name(f)) for f in ("left", "right")]  # type: ignore[arg-type]
    names = [s for s in sides if s.type == "identifier"]
    if len(names) != 1 or not any(s.type == "sizeof_expression" for s in sides):
        return None
    name = env.t(names[0])
    where = env.define(name)
    inits = env.file_inits(name)
    node = where if where is not None else (inits[0] if len(inits) == 1 else None)
    return name if node is not None and node.start_byte < kernel_start else None


def _launch_count(src: CudaSource, la: SiteLaunch, index: int, esize: int) -> tuple[int, str] | None:
    """``(count, text)`` of the buffer ``la`` passes as argument ``index`` (elements of ``esize`` bytes)."""
    if la.host is None or index >= len(la.site.args) or not la.site.args[index].strip().isidentifier():
        return None
    sizes = _allocations(src, la.host, la.site.args[index].strip())
    if len(sizes) != 1:
        return None
    nbytes = src.env.value(sizes[0], la.host)
    if not isinstance(nbytes, int) or nbytes <= 0 or nbytes % esize:
        return None
    count = nbytes // esize
    return count, _count_text(src, sizes[0], src.func.start_byte) or str(count)


def launch_buffer_extent(src: CudaSource, kernel: Kernel, pointer: str, element_type: str | None
                         ) -> tuple[int, str] | None:
    """``(elements, text)`` of the buffer every launch in the file passes as the pointer parameter ``pointer``
    (module docstring), or ``None`` when a launch passes another count, an unallocated or unknown buffer, or the
    kernel has no launch here.

    Args:
        src: the kernel's parsed unit (its launch sites with their host functions).
        kernel: the kernel (its parameters, in order).
        pointer: the pointer parameter's name (``"bins"``).
        element_type: the parameter's element type without qualifiers (``"float"``); ``None``: unknown.
    """
    names = [p.name for p in kernel.params]
    esize = SIZEOF.get(element_type or "")
    if pointer not in names or esize is None or not src.sites:
        return None
    found = {_launch_count(src, la, names.index(pointer), esize) for la in src.sites}
    if len(found) != 1 or None in found:
        return None
    return found.pop()
