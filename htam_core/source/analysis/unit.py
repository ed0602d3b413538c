"""Locate a kernel in its parsed CUDA or Python text (cached per kernel text and position).

A CUDA kernel lives in a ``.cu`` file or in a Python string (``load_inline`` sources); :func:`cuda_source`
parses the CUDA text that holds it (with :func:`~htam_core.source.analysis.syntax.parse_cuda`) and finds
its function and launches (each launch site of the kernel paired with its ``<<<>>>`` call, once). Nodes
are in *unit* offsets; ``base`` maps them to file offsets. :class:`CudaSource` is the one parsed-unit
type: the fact builders read it, and the transforms edit through a thin view on top of it
(:class:`htam_core.transforms._cuda.CudaUnit`) that never re-parses. :func:`python_source` does the
same for Triton kernels (unit offsets are file offsets).
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tree_sitter import Node

from htam_core.source.analysis.api_launch import api_launch_calls
from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.instantiations import template_param_names
from htam_core.source.analysis.launch import LaunchCall, launch_arguments, launch_calls
from htam_core.source.analysis.launch_slots import macro_launch_calls
from htam_core.source.analysis.syntax import exact_node, of_type, parse, parse_cuda, smallest_covering, text
from htam_core.source.analysis.triton_names import TritonNames, triton_names
from htam_core.source.analysis.types import TypeEnv
from htam_core.source.model import Kernel, LaunchSite, SourceModel
from htam_core.types.language import traits

_CACHE_MAX = 64
_cache: OrderedDict[Any, Any] = OrderedDict()
_lock = threading.Lock()


def _cached(key: Any, build: Any) -> Any:
    with _lock:  # the editor's analysis, profile and request threads share this cache
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    value = build()
    with _lock:
        _cache[key] = value
        while len(_cache) > _CACHE_MAX:
            _cache.popitem(last=False)
    return value


def clear_cache() -> None:
    """Forget every parsed unit (tests)."""
    _cache.clear()


def cuda_fragments(src: bytes) -> list[tuple[int, int]]:
    """Byte ranges of Python string contents that hold CUDA code (they contain ``__global__``)."""
    tree = parse(src, "python")
    out = []
    for s in of_type(tree.root_node, "string"):
        content = [c for c in s.children if c.type == "string_content"]
        if not content:
            continue
        start, end = content[0].start_byte, content[-1].end_byte
        if b"__global__" in src[start:end]:
            out.append((start, end))
    return out


class Lines:
    """1-based line of a file byte offset (bisect over newline offsets)."""

    def __init__(self, data: bytes) -> None:
        self._nl = [i for i, b in enumerate(data) if b == 10]

    def line(self, byte: int) -> int:
        """1-based line holding file byte ``byte``."""
        return bisect.bisect_left(self._nl, byte) + 1


@dataclass(frozen=True)
class SiteLaunch:
    """One launch site of the kernel (:class:`~htam_core.source.model.LaunchSite`, from the source model)
    paired with its ``k<<<grid, block, smem, stream>>>(args)`` call in the parsed unit.

    Attributes:
        site: the source model's launch site (line, config text, argument texts, file span).
        call: the ``call_expression`` node (unit offsets).
        config_args: the ``<<<...>>>`` argument nodes, in order.
        host: the function (or lambda) that launches, ``None`` at file scope.
        kernel_args: for a launch through a launch macro (``call`` is then the macro's use, ``config_args`` its
            arguments that are the slots; :attr:`LaunchCall.kernel_args`), the use's arguments that are the
            kernel's; ``None`` for a ``<<<>>>`` call.
        api, args_known: for a launch through the runtime API (``cudaLaunchKernel``; :attr:`LaunchCall.api`), the
            launcher's name and whether its kernel arguments were read (``kernel_args`` is ``()`` when not).
        smem_after: for such a launch that passes no shared-bytes argument, the argument after which one goes
            (:attr:`LaunchCall.smem_after`); ``None`` otherwise.
    """

    site: LaunchSite
    call: Node
    config_args: tuple[Node, ...]
    host: Node | None
    kernel_args: tuple[Node, ...] | None = None
    api: str = ""
    args_known: bool = True
    smem_after: Node | None = None

    @property
    def arguments(self) -> list[Node]:
        """The kernel argument nodes (:func:`~htam_core.source.analysis.launch.launch_arguments`)."""
        return launch_arguments(self.call, self.kernel_args)

    @property
    def grid(self) -> Node:
        """The grid expression node."""
        return self.config_args[0]

    @property
    def block(self) -> Node | None:
        """The block expression node (``None`` if missing)."""
        return self.config_args[1] if len(self.config_args) > 1 else None


@dataclass(frozen=True)
class CudaSource:
    """The parsed CUDA text that holds one kernel: the one parsed-unit type of the analysis layer.

    Attributes:
        src: the unit's bytes (original text; the tree was parsed with ``dim3`` parentheses as braces).
        base: file offset of ``src[0]``.
        root, func, body: the tree's root, the kernel's ``function_definition`` and its body.
        env: the unit's constants (no template bindings).
        launches: ``<<<>>>`` launches of the kernel in this unit, uses of launch macros editable at the use
            (:func:`~htam_core.source.analysis.launch_slots.macro_launch_calls`) and runtime-API launches
            (:func:`~htam_core.source.analysis.api_launch.api_launch_calls`), in source order.
        lines: line numbers of the whole file.
        sites: the kernel's launch sites that lie in this unit, each with its call (in site order; a site
            whose call is not in the tree is left out).
    """

    src: bytes
    base: int
    root: Node
    func: Node
    body: Node
    env: ConstEnv
    launches: tuple[LaunchCall, ...]
    lines: Lines
    sites: tuple[SiteLaunch, ...] = ()

    def span(self, node: Node) -> tuple[int, int]:
        """File bytes of ``node``."""
        return node.start_byte + self.base, node.end_byte + self.base

    def line(self, node: Node) -> int:
        """1-based file line of ``node``'s start."""
        return self.lines.line(node.start_byte + self.base)

    def file_byte(self, node: Node) -> int:
        """File offset of ``node``'s start (facts' spans are file offsets)."""
        return node.start_byte + self.base

    def node_at(self, span: tuple[int, int], types: tuple[str, ...] = ()) -> Node | None:
        """The node whose file bytes are exactly ``span`` (a fact's ``span``), optionally of one of ``types``
        (``("for_statement",)``); ``None`` when the span is not one node of this unit."""
        s, e = span[0] - self.base, span[1] - self.base
        return exact_node(self.root, s, e, types) if 0 <= s <= e <= len(self.src) else None

    def t(self, node: Node | None) -> str:
        """Source text of ``node`` (``""`` for ``None``)."""
        return text(node, self.src)

    @property
    def declarator(self) -> Node:
        """The kernel's ``function_declarator`` node."""
        n = self.func.child_by_field_name("declarator")
        while n is not None and n.type != "function_declarator":
            n = n.child_by_field_name("declarator")
        assert n is not None
        return n

    @property
    def params(self) -> list[Node]:
        """The kernel's ``parameter_declaration`` nodes, in order."""
        plist = self.declarator.child_by_field_name("parameters")
        return [c for c in (plist.named_children if plist else []) if c.type == "parameter_declaration"]

    @cached_property
    def types(self) -> TypeEnv:
        """The type names the unit gives the kernel (its aliases and template parameters), built once:
        :class:`~htam_core.source.analysis.types.TypeEnv`."""
        return TypeEnv(self.env, frozenset(template_param_names(self.func, self.src)))


def cuda_source(model: SourceModel, kernel: Kernel) -> CudaSource | str:
    """The :class:`CudaSource` of ``kernel``, or a one-line reason when it cannot be located."""
    sites = tuple((s.span.start, s.span.end) for s in kernel.launch_sites if s.span is not None)
    key = ("cuda", model.path, model.text, kernel.name, kernel.name_span.start, sites)
    return _cached(key, lambda: _load_cuda(model, kernel))


def _load_cuda(model: SourceModel, kernel: Kernel) -> CudaSource | str:
    data = model.text.encode("utf-8")
    base, end = 0, len(data)
    if model.file_language == "python":
        for s, e in cuda_fragments(data):
            if s <= kernel.name_span.start < e:
                base, end = s, e
                break
        else:
            return f"the CUDA source string holding {kernel.name} was not found"
    src = data[base:end]
    tree = parse_cuda(_isolated(src, base, model, kernel))
    ns, ne = kernel.name_span.start - base, kernel.name_span.end - base
    func = smallest_covering(tree.root_node, ns, ne, ("function_definition",))
    body = func.child_by_field_name("body") if func is not None else None
    if func is None or body is None:
        return f"the definition of {kernel.name} was not found in the syntax tree"
    env = ConstEnv(src, tree.root_node, path=model.path if model.file_language != "python" else None)
    launches = _unit_launches(model, kernel, tree.root_node, src)
    return CudaSource(src, base, tree.root_node, func, body, env, launches, Lines(data),
                      _site_launches(kernel, base, launches))


def _unit_launches(model: SourceModel, kernel: Kernel, root: Node, src: bytes) -> tuple[LaunchCall, ...]:
    """The launches of ``kernel`` in ``src`` (``root`` its tree): its ``<<<>>>`` calls and, in a CUDA file, the uses
    of launch macros editable at the use (:func:`~htam_core.source.analysis.launch_slots.macro_launch_calls`), in
    source order. ``()`` when one of its launch sites is a macro use that is not (its ``#define`` computes the grid
    or block): a step that changes the kernel's launch could not change that one, so none is changed."""
    calls = launch_calls(root, src, kernel.name)
    if model.file_language == "python":
        return tuple(calls)
    macro = macro_launch_calls(root, src, kernel.name)
    if len(macro) != sum(1 for s in kernel.launch_sites if s.macro):
        return ()
    api = api_launch_calls(root, src, kernel.name) if b"cudaLaunch" in src else []
    return tuple(sorted(calls + macro + api, key=lambda c: c.call.start_byte))


def _isolated(src: bytes, base: int, model: SourceModel, kernel: Kernel) -> bytes:
    """The text ``src`` (file bytes from ``base``) as parsed for ``kernel``: every other half-typed kernel's
    definition, and when ``kernel`` is itself half-typed every kernel defined after it, blanked at equal length
    (line breaks kept), so that a definition that does not close cannot swallow the kernel, nor the kernel
    swallow the kernels after it: the kernel's facts are those of its own text, as the kernel finder's
    recovery reads it. Offsets are unchanged; texts are still read from ``src``."""
    out: bytearray | None = None
    for other in model.kernels:
        if other is kernel or traits(other.language).tiles:
            continue
        if not (other.incomplete or (kernel.incomplete and other.span.start > kernel.span.start)):
            continue
        s, e = max(other.span.start - base, 0), min(other.span.end - base, len(src))
        if s >= e:
            continue
        if out is None:
            out = bytearray(src)
        for i in range(s, e):
            if out[i] not in (0x0A, 0x0D):
                out[i] = 0x20
    return src if out is None else bytes(out)


def _site_launches(kernel: Kernel, base: int, launches: tuple[LaunchCall, ...]) -> tuple[SiteLaunch, ...]:
    """Each of ``kernel``'s launch sites paired with the call of ``launches`` that overlaps its span (the
    nearest start when several do); sites without a span or a call in this unit are left out."""
    out: list[SiteLaunch] = []
    for site in kernel.launch_sites:
        if site.span is None:
            continue
        s, e = site.span.start - base, site.span.end - base
        hits = [lc for lc in launches if lc.call.start_byte < e and lc.call.end_byte > s]
        if hits:
            lc = min(hits, key=lambda c: abs(c.call.start_byte - s))
            out.append(SiteLaunch(site, lc.call, lc.config, lc.host, lc.kernel_args, lc.api, lc.args_known,
                                  lc.smem_after))
    return tuple(out)


@dataclass(frozen=True)
class PythonSource:
    """The parsed Python file that holds one Triton kernel (offsets are file offsets)."""

    src: bytes
    root: Node
    func: Node
    body: Node
    top: Node
    lines: Lines
    names: TritonNames = TritonNames()

    def callee(self, call: Node) -> str:
        """The function of ``call`` in normal form (``language.load(...)`` -> ``"tl.load"``; see
        :class:`~htam_core.source.analysis.triton_names.TritonNames`); ``""`` for a call without a function."""
        fn = call.child_by_field_name("function")
        return self.names.canonical(text(fn, self.src)) if fn is not None else ""

    def span(self, node: Node) -> tuple[int, int]:
        """File bytes of ``node``."""
        return node.start_byte, node.end_byte

    def line(self, node: Node) -> int:
        """1-based line of ``node``'s start."""
        return node.start_point[0] + 1


def python_source(model: SourceModel, kernel: Kernel) -> PythonSource | str:
    """The :class:`PythonSource` of Triton ``kernel``, or a one-line reason when it cannot be located."""
    key = ("python", model.text, kernel.name, kernel.name_span.start)
    return _cached(key, lambda: _load_python(model, kernel))


def _load_python(model: SourceModel, kernel: Kernel) -> PythonSource | str:
    src = model.text.encode("utf-8")
    tree = parse(src, "python")
    func = smallest_covering(tree.root_node, kernel.name_span.start, kernel.name_span.end, ("function_definition",))
    body = func.child_by_field_name("body") if func is not None else None
    if func is None or body is None:
        return f"the definition of {kernel.name} was not found in the syntax tree"
    top = func.parent if func.parent is not None and func.parent.type == "decorated_definition" else func
    return PythonSource(src, tree.root_node, func, body, top, Lines(src), triton_names(tree.root_node, src))


@dataclass(frozen=True)
class SharedLaunch:
    """A launch of a kernel through a function pointer (or a table of kernels) that runs other kernels too.

    Attributes:
        line: 1-based line of the launch.
        pointer: the callee as written (``kernel``, ``kernels[k]``).
        kernels: every kernel the pointer may run, the kernel's own name included.
        host: file bytes ``(start, end)`` of the function that launches (its grid, block and buffers are
            those of every kernel the pointer runs).
    """

    line: int
    pointer: str
    kernels: tuple[str, ...]
    host: tuple[int, int]


def shared_launches(model: SourceModel, kernel: Kernel) -> tuple[SharedLaunch, ...]:
    """The launches of CUDA ``kernel`` that run other kernels too, through one function pointer or a table of
    kernels (:mod:`htam_core.source.analysis.fnptr`): a step that edits such a launch, or its grid, block or
    buffers in the launching function, changes the launch of every kernel the pointer runs. ``()`` for a kernel
    of another language, one that cannot be located, or one launched only by name."""
    if traits(kernel.language).tiles:
        return ()
    src = cuda_source(model, kernel)
    if isinstance(src, str):
        return ()
    out = []
    for sl in src.sites:
        others = tuple(k for k in sl.site.pointer_kernels if k != kernel.name)
        if not others or sl.host is None:
            continue
        out.append(SharedLaunch(sl.site.line, text(sl.call.child_by_field_name("function"), src.src),
                                sl.site.pointer_kernels, src.span(sl.host)))
    return tuple(out)
