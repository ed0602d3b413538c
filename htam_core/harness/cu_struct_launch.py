"""Launch a CUDA kernel that takes a struct by value (``wsum3(a, b, c, out, Weights w, n)``) from a harness.

A harness passes buffers and numbers. A struct is passed as one input per field, named ``<argument>__<field>``
(``w__wa``; a nested field ``p__s__x``, an array element ``p__c__1``): a scalar for a number field, a tensor for a
pointer field (``const float *in``); the kernel's ``args`` list names the struct argument itself (``"w"``). A generated ``extern "C"`` shim includes the ``.cu`` file,
builds the struct from those numbers (``Weights s4{}; s4.wa = a4; ...``: value-initialized, then every field set)
and launches the kernel with the grid, block and shared bytes the harness gives, on the default stream. The
field order and types come from the struct's definition in the file or its local headers
(:func:`htam_core.source.analysis.structs.struct_layout`), so a harness written by hand in ``htam.toml`` with
the same input names runs the same way.

Runs **inside a worker process** to launch (needs nvcc and a GPU); :func:`struct_shim_source` needs neither.
Idea source: the ctypes + ``nvcc -shared`` shim of :mod:`htam_core.harness.cu_launcher`.
"""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htam_core.harness.base import Harness, HarnessError, cuda_include_dirs
from htam_core.harness.cu_eval import base_type
from htam_core.harness.cu_launcher import _C_TYPES, _CTYPES, SHIM_NAME, _symbol, build_shared_library
from htam_core.runtime.cache import cache_root
from htam_core.source.analysis.includes import headers_digest
from htam_core.source.analysis.structs import StructLayout, file_struct_layout
from htam_core.source.api import parse_text

_DIMS = ("gx", "gy", "gz", "bx", "by", "bz", "smem")


def struct_args(h: Harness) -> list[str]:
    """The names in ``h.args`` that are no input but the prefix of inputs (``w`` of ``w__wa``, ``w__wb``): the
    struct arguments passed by value as their fields."""
    names = {i.name for i in h.inputs}
    return [a for a in h.args if a not in names and any(n.startswith(f"{a}__") for n in names)]


@dataclass(frozen=True)
class StructShim:
    """A generated shim's text and how to call it.

    Attributes:
        source: the C++ of the shim.
        order: the harness inputs the shim takes after the grid, block and shared bytes, in order.
    """

    source: str
    order: tuple[str, ...]


def _layouts(path: Path, kernel: str, h: Harness) -> dict[str, StructLayout]:
    """The layout of each struct argument of ``h`` (read from the kernel's parameter types).

    Raises:
        HarnessError: the kernel is missing, takes another number of arguments, or a struct is not one of numbers.
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        params = parse_text(text, "cuda", str(path)).kernel(kernel).params
    except KeyError:
        raise HarnessError(f"{path.name} has no kernel {kernel!r}") from None
    if len(params) != len(h.args):
        raise HarnessError(f"{path.name}: {kernel} takes {len(params)} arguments, and args names {len(h.args)}")
    types = [base_type(p.type or "") for p in params]
    out: dict[str, StructLayout] = {}
    for a in struct_args(h):
        t = types[h.args.index(a)]
        layout = file_struct_layout(text, str(path), t)
        if layout is None or layout.unsupported:
            why = layout.unsupported if layout is not None else f"`{t}` is no struct the file defines"
            raise HarnessError(f"{path.name}: `{a}` of {kernel} is given as fields ({a}__...), but {why}")
        out[a] = dataclasses.replace(layout, type=t)  # declared in the shim as the kernel spells it (ns::Params)
    return out


def _struct_lines(a: str, k: int, layout: StructLayout, dtypes: dict[str, str | None], params: list[str],
                  order: list[str]) -> str:
    """The statements that build struct argument ``a`` as local ``s<k>`` from one shim parameter per field
    (``dtypes``: each input's scalar dtype, ``None`` for a tensor: a pointer field's buffer).

    Raises:
        HarnessError: a field has no input, or an input ``<a>__x`` names no field.
    """
    names = {f"{a}__{f.suffix}": f for f in layout.fields}
    extra = sorted(n for n in dtypes if n.startswith(f"{a}__") and n not in names)
    missing = [n for n in names if n not in dtypes]
    if extra or missing:
        raise HarnessError(f"`{a}` is a `{layout.type}` passed by value, whose fields are inputs "
                           f"{', '.join(names)}" + (f"; missing: {', '.join(missing)}" if missing else "") +
                           (f"; no such field: {', '.join(extra)}" if extra else ""))
    sets = []
    for n, f in names.items():
        j, d = len(order), dtypes[n]
        if f.pointer != (d is None):
            raise HarnessError(f"`{a}.{f.path}` is " + ("a pointer: give `{n}` a shape" if f.pointer else
                                                        f"a number: give `{n}` a value, not a shape"))
        params.append(f"void* a{j}" if d is None else f"{_C_TYPES.get(d, 'float')} a{j}")
        order.append(n)
        sets.append(f"s{k}.{f.path} = " + (f"HtamAnyPtr{{a{j}}};" if d is None else f"a{j};"))
    return f"  {layout.type} s{k}{{}}; {' '.join(sets)}\n"


def struct_shim_source(path: str | Path, h: Harness) -> StructShim:
    """The C++ of an ``extern "C"`` shim that launches ``h.kernel`` of ``path`` with ``h.args``, building each
    struct argument (:func:`struct_args`) from its field inputs.

    The shim takes ``(gx, gy, gz, bx, by, bz, smem)`` then the inputs in :attr:`StructShim.order`: a buffer as
    ``void*`` (converted to the kernel's pointer type), a number as its dtype's C type.

    Raises:
        HarnessError: the kernel is missing or takes other arguments, a struct is not one of numbers, or its
            fields and the inputs differ (the message names them).
    """
    src = Path(path).resolve()
    layouts = _layouts(src, h.kernel, h)
    dtypes = {i.name: i.dtype if i.is_scalar else None for i in h.inputs}
    scalar = {i.name for i in h.inputs if i.is_scalar}
    params = [f"unsigned {d}" for d in _DIMS]
    order: list[str] = []
    body, call = "", []
    for k, a in enumerate(h.args):
        if a in layouts:
            body += _struct_lines(a, k, layouts[a], dtypes, params, order)
            call.append(f"s{k}")
            continue
        j = len(order)
        params.append(f"{_C_TYPES.get(dtypes[a] or '', 'float')} a{j}" if a in scalar else f"void* a{j}")
        order.append(a)
        call.append(f"a{j}" if a in scalar else f"HtamAnyPtr{{a{j}}}")
    data = src.read_bytes()  # the file and its local headers: an edited header builds a new shim
    digest = hashlib.sha256(data + headers_digest(data, src, cuda_include_dirs(src)).encode()).hexdigest()[:16]
    text = (f"// htam struct-launch shim for {h.kernel} of {src.name} (source {digest})\n#include \"{src}\"\n"
            "struct HtamAnyPtr { void* p; template <class T> operator T*() const { return static_cast<T*>(p); } };\n"
            f"extern \"C\" void {SHIM_NAME}({', '.join(params)}) {{\n{body}"
            f"  {h.kernel}<<<dim3(gx, gy, gz), dim3(bx, by, bz), smem>>>({', '.join(call)});\n}}\n")
    return StructShim(text, tuple(order))


def write_struct_shim(path: str | Path, h: Harness) -> tuple[Path, tuple[str, ...]]:
    """Write :func:`struct_shim_source` under ``<htam cache>/cu_shims/`` (named by its content): ``(shim, order)``."""
    shim = struct_shim_source(path, h)
    out = cache_root() / "cu_shims"
    out.mkdir(parents=True, exist_ok=True)
    p = out / f"struct-{hashlib.sha256(shim.source.encode()).hexdigest()[:20]}.cu"
    if not p.is_file():
        p.write_text(shim.source, encoding="utf-8")
    return p, shim.order


def struct_library(path: str | Path, h: Harness, arch: str) -> tuple[Path, tuple[str, ...]]:
    """Build the struct shim of ``h``'s kernel in ``path`` for ``arch`` (nothing loaded): ``(library, order)``.

    Raises:
        HarnessError: the shim cannot be made (:func:`struct_shim_source`), nvcc is missing, or it does not compile.
    """
    shim, order = write_struct_shim(path, h)
    return build_shared_library(shim, arch), order


def struct_launcher(path: str | Path, h: Harness, arch: str) -> Callable[[dict[str, Any], Sequence[int],
                                                                          Sequence[int], int], Callable[[], None]]:
    """A binder for ``h``'s kernel in ``path`` launched through the struct shim (built with nvcc, loaded here).

    Returns:
        ``bind(env, grid, block, smem) -> launch()``: ``env`` maps input names to tensors and numbers; the
        arguments are converted once, ``launch`` only calls the shim.

    Raises:
        HarnessError: the shim cannot be made (:func:`struct_shim_source`) or does not compile.
    """
    lib, order = struct_library(path, h, arch)
    fn = _symbol(lib, SHIM_NAME)
    dtypes = {i.name: (i.dtype if i.is_scalar else None) for i in h.inputs}
    types = [ctypes.c_uint] * len(_DIMS) + [ctypes.c_void_p if dtypes[n] is None else
                                            _CTYPES.get(dtypes[n] or "", ctypes.c_float) for n in order]
    fn.argtypes = types
    fn.restype = None

    def bind(env: dict[str, Any], grid: Sequence[int], block: Sequence[int], smem: int) -> Callable[[], None]:
        dims = [*(list(grid) + [1, 1])[:3], *(list(block) + [1, 1])[:3], int(smem)]
        vals = [env[n] for n in order]
        args = [ctypes.c_uint(int(d)) for d in dims] + [
            ctypes.c_void_p(v.data_ptr()) if t is ctypes.c_void_p else t(v) for v, t in zip(vals, types[7:],
                                                                                         strict=True)]

        def launch() -> None:
            fn(*args)
        launch.inputs = vals  # type: ignore[attr-defined]  # the tensors outlive the raw pointers
        return launch

    return bind
