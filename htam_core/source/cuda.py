"""CUDA kernels from a tree-sitter-cuda tree: ``__global__`` kernels, ``__device__`` helpers,
``<<<...>>>`` launch sites.

Error recovery (tree-sitter-cuda 0.21.2):

* A tree with errors is parsed again from its *parse view*: qualifier macros (``#define RESTRICT
  __restrict__``, ``#define DEVICE_INLINE __device__ __forceinline__``) read as the qualifiers they stand
  for, at equal length (``source.preproc``), so code nvcc accepts is not taken for half-typed code.
* 3-argument ``__launch_bounds__`` leaves small ERROR nodes inside an otherwise intact
  ``function_definition``: the kernel is taken as is.
* ``__cluster_dims__(...)`` splits the definition into an erroneous ``declaration`` holding
  ``__global__`` followed by a type-less ``function_definition``: the two are joined.
* Kernel by kernel: when the file's tree has errors, every ``__global__`` whose definition is not
  intact in it (an ERROR or MISSING node inside, another ``__global__`` inside, or the keyword
  only surviving as an identifier in garbage) gets its *region* parsed again on its own: from
  its definition's start (``template <...>`` lines above included) to the definition start of
  the next ``__global__``. A half-typed definition can thus swallow nothing but the code up to
  the next kernel; it is reported with ``incomplete=True`` when its name can be read, and every
  complete kernel comes out of its own parse with its exact range.
* Code inside ``#if 0`` is skipped; comments are never looked at (they are comment nodes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import tree_sitter as ts

from htam_core.source import cache as kcache
from htam_core.source import features as feat
from htam_core.source.analysis.api_launch import api_launch_calls
from htam_core.source.analysis.fnptr import pointer_kernels
from htam_core.source.analysis.kernel_names import (
    arg_types,
    attach_resolved,
    declared_scope,
    launch_scope,
    mark_overloads,
    qualified_kernel_name,
    unclosed_scope,
    using_namespaces,
)
from htam_core.source.analysis.launch import LAUNCH_QUERY, launch_config
from htam_core.source.analysis.launch_macros import LaunchMacroUse, launch_macro_uses
from htam_core.source.analysis.launch_slots import SLOTS, use_slots
from htam_core.source.frames import Frame
from htam_core.source.model import ByteSpan, DeviceFunction, Kernel, LaunchSite, Param
from htam_core.source.parse_problems import ParseProblem, tree_problems
from htam_core.source.parsing import captures, new_parser, node_text
from htam_core.source.preproc import parse_view
from htam_core.source.resolve import CudaResolver, literal_value

G = "cuda"
#: One pass over the whole tree collects everything the file-level model needs (each whole-tree
#: query pass costs about 4 ms on a 3,000-line file, so they are merged).
Q_MAIN = f"""
("__global__") @g
("__device__") @d
(preproc_def name: (identifier) value: (preproc_arg)) @macro
(preproc_if condition: (_)) @if
{LAUNCH_QUERY}
"""
#: Only run when the tree has errors: ``__global__`` surviving as a plain identifier in garbage.
Q_GARBAGE = '((identifier) @i (#eq? @i "__global__"))'
Q_MACRO_USES = "(function_definition type: (type_identifier) @t) @fn"
Q_ANY_FUNCTION = "(function_definition) @fn"

_HEADER_TYPES = {"primitive_type", "type_identifier", "launch_bounds", "ERROR", "storage_class_specifier",
                 "type_qualifier", "sized_type_specifier", "attribute_specifier"}


@dataclass
class CudaResult:
    """What one frame yields: kernels, device helpers, launch sites, problems."""

    kernels: list[Kernel] = field(default_factory=list)
    device_functions: list[DeviceFunction] = field(default_factory=list)
    launches: list[LaunchSite] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    macros: dict[str, str] = field(default_factory=dict)
    ctx_key: str = ""
    root: ts.Node | None = None  # the tree the result was read from (qualifier macros resolved)
    problems: list[ParseProblem] = field(default_factory=list)  # in file positions, document order


def parse_cuda_bytes(data: bytes, old_tree: ts.Tree | None = None) -> ts.Tree:
    """Parse CUDA bytes (incrementally when ``old_tree`` was edited with ``tree.edit``)."""
    parser = new_parser(G)
    return parser.parse(data, old_tree) if old_tree is not None else parser.parse(data)


def extract_cuda(frame: Frame, root: ts.Node, language: str = "cuda", depth: int = 0,
                 inherited_macros: dict[str, str] | None = None) -> CudaResult:
    """Kernels, helpers and launch sites of the CUDA tree ``root`` parsed from ``frame.src``.

    Launch sites are returned unattached; :func:`attach_launches` gives them to kernels.
    """
    out = CudaResult()
    masked = _mask_attributes(frame, root) if root.has_error else None
    if masked is not None:
        frame, root = masked
    out.root = root
    caps = captures(G, Q_MAIN, root)
    macros = dict(inherited_macros or {})
    for mdef in caps.get("macro", []):
        name_node, value_node = mdef.child_by_field_name("name"), mdef.child_by_field_name("value")
        macros[node_text(name_node)] = " ".join(node_text(value_node).split())
    dead = _dead_ranges(caps)

    def is_dead(node: ts.Node) -> bool:
        return any(s <= node.start_byte < e for s, e in dead)

    garbage = captures(G, Q_GARBAGE, root).get("i", []) if root.has_error else []
    anchors = sorted({n.start_byte: n for n in caps.get("g", []) + garbage}.values(),
                     key=lambda n: n.start_byte)
    extra_device = _macro_anchors(frame, root, macros, anchors)
    anchors = [a for a in anchors if not is_dead(a)]
    resolver = CudaResolver(frame, root, macros)
    macros = {**macros, **resolver.file_consts}
    ctx_key = "\n".join(f"{k}={v}" for k, v in sorted(macros.items()))
    out.macros, out.ctx_key = macros, ctx_key

    recovering = root.has_error and depth == 0
    regions: list[tuple[int, int]] = []  # local byte ranges parsed again on their own
    for idx, a in enumerate(anchors):
        nxt = anchors[idx + 1] if idx + 1 < len(anchors) else None
        kind, container, definition = _classify(a)
        if recovering and not _sound(kind, container, definition, nxt):
            regions.append(_recover_region(frame, anchors, idx, language, macros, out))
            continue
        if kind in ("def", "split"):
            k = _kernel_from_definition(frame, a, container, definition, nxt, language, macros, ctx_key)
            if k is not None:
                out.kernels.append(k)
        elif kind == "broken":
            k = _kernel_from_broken(frame, a, container, definition, nxt, language, macros)
            if k is not None:
                out.kernels.append(k)

    def in_region(node: ts.Node) -> bool:
        return any(s <= node.start_byte < e for s, e in regions)

    out.device_functions.extend(_device_functions(frame, caps.get("d", []), extra_device,
                                                  lambda n: is_dead(n) or in_region(n)))
    late: list[LaunchSite] = []
    for call in caps.get("call", []):
        if not is_dead(call):
            site = _cached_launch(frame, call, resolver, ctx_key)
            if site is not None:
                # launches parsed inside garbage come after those of the re-parsed regions
                (late if recovering and _in_error(call) else out.launches).append(site)
    out.launches.extend(late + (_macro_launches(frame, root, resolver) if depth == 0 else []))
    out.launches.extend(s for s in _api_launches(frame, root, resolver) if not is_dead_span(s, frame, dead))
    if root.has_error and depth == 0:
        out.problems = _problems(frame, root, regions)
        out.errors.extend(str(p) for p in out.problems[:20])
    return out


def _problems(frame: Frame, root: ts.Node, regions: list[tuple[int, int]]) -> list[ParseProblem]:
    """The parse problems of the frame as the kernels were recovered: those of each re-parsed region from
    the region's own parse, the file tree's elsewhere; so a half-typed kernel's problem is reported where
    it is and never at a complete kernel that its unclosed text swallowed in the file's tree."""
    end = frame.to_file(len(frame.src))
    data = frame.file.data
    spans = [(frame.to_file(s), frame.to_file(e)) for s, e in regions]
    out = [p for p in tree_problems(root, data, frame.to_file, 10_000, text_end=end)
           if not any(s <= p.byte < e for s, e in spans)]
    for s, e in regions:
        sub = frame.sub(s, e)
        sub_root = parse_cuda_bytes(sub.src).root_node
        if sub_root.has_error:
            out.extend(tree_problems(sub_root, data, sub.to_file, 10_000, text_end=sub.to_file(e - s)))
    return sorted(out, key=lambda p: p.byte)


def _sound(kind: str, container: ts.Node | None, definition: ts.Node | None, nxt: ts.Node | None) -> bool:
    """Whether the whole-file tree gives the anchor's definition intact: a function definition (or a
    forward declaration) without any error node inside that holds no later ``__global__``."""
    if kind == "decl":
        return container is not None and not container.has_error
    if kind not in ("def", "split") or definition is None or definition.has_error:
        return False
    return nxt is None or nxt.start_byte >= definition.end_byte


def _in_error(node: ts.Node) -> bool:
    cur = node.parent
    while cur is not None:
        if cur.is_error or (cur.type == "function_definition" and cur.has_error):
            return True
        cur = cur.parent
    return False


def _region_start(src: bytes, anchor: int, floor: int) -> int:
    """Where the definition of the ``__global__`` at byte ``anchor`` starts for a re-parse: its line
    start, moved back over ``template <...>`` header lines just above it, never before ``floor``
    (the previous anchor)."""
    start = src.rfind(b"\n", 0, anchor) + 1
    while start > 0:
        prev = src.rfind(b"\n", 0, start - 1) + 1
        line = src[prev : start - 1].strip()
        if not (line.startswith(b"template") and line[8:].lstrip().startswith(b"<")):
            break
        start = prev
    return start if start > floor else anchor


def _recover_region(frame: Frame, anchors: list[ts.Node], idx: int, language: str, macros: dict[str, str],
                    out: CudaResult) -> tuple[int, int]:
    """Parse the region of anchor ``idx`` on its own, add what it holds to ``out`` and return the
    region's local byte range.

    The region runs from the anchor's definition start to the definition start of the next
    anchor (or the end of the buffer), so a half-typed definition can swallow nothing but the
    code that follows it up to the next kernel: each kernel is recovered from its own parse.
    """
    src = frame.src
    prev_end = anchors[idx - 1].end_byte if idx > 0 else 0
    start = _region_start(src, anchors[idx].start_byte, prev_end)
    end = len(src)
    if idx + 1 < len(anchors):
        end = _region_start(src, anchors[idx + 1].start_byte, anchors[idx].end_byte)
    sub = frame.sub(start, end)
    res = extract_cuda(sub, parse_cuda_bytes(sub.src).root_node, language, 1, macros)
    ns = _namespace(anchors[idx])
    for k in res.kernels[:1]:
        if ns and "namespace" not in k.attributes:
            k.attributes = {**k.attributes, "namespace": ns}
        outer = declared_scope(anchors[idx])
        k.qualified_name = f"{outer}::{k.qualified_name or k.name}" if outer else k.qualified_name
        out.kernels.append(k)
    out.device_functions.extend(res.device_functions)
    out.launches.extend(res.launches)
    return start, end


Q_ATTRS = """
((identifier) @a (#any-of? @a "__cluster_dims__" "__maxnreg__"))
((type_identifier) @a (#any-of? @a "__cluster_dims__" "__maxnreg__"))
"""


def _mask_attributes(frame: Frame, root: ts.Node) -> tuple[Frame, ts.Node] | None:
    """The parse view of a tree with errors: qualifier macros resolved at equal length
    (:func:`~htam_core.source.preproc.parse_view`: ``RESTRICT`` read as ``restrict``) and
    ``__cluster_dims__(...)``/``__maxnreg__(...)``, which tree-sitter-cuda 0.21.2 cannot parse, blanked;
    then re-parsed. Both keep every byte offset, so nodes of the new tree map to the file unchanged;
    the frame keeps the original bytes for texts. ``None`` when nothing changes."""
    nodes = captures(G, Q_ATTRS, root).get("a", [])
    src = bytearray(parse_view(frame.src))
    for n in nodes:
        end = n.end_byte
        while end < len(src) and src[end : end + 1] in (b" ", b"\t"):
            end += 1
        if src[end : end + 1] == b"(":
            depth = 0
            while end < len(src):
                ch = src[end : end + 1]
                depth += ch == b"("
                depth -= ch == b")"
                end += 1
                if depth == 0:
                    break
        for i in range(n.start_byte, end):
            if src[i : i + 1] not in (b"\n", b"\r"):
                src[i] = 0x20
    masked = bytes(src)
    if masked == frame.src:
        return None
    new = Frame(src=masked, file=frame.file, parent=frame.parent, base=frame.base, segments=frame.segments,
                display=frame.display if frame.display is not None else frame.src)
    return new, parse_cuda_bytes(masked).root_node


def attach_launches(kernels: list[Kernel], launches: list[LaunchSite]) -> None:
    """Give each kernel the launch sites that run it (deduplicated by position, in order): a launch whose callee
    names several kernels (namespaces, overloads) goes to the one it resolves to, or, when that cannot be told, to
    each with the choices marked (:mod:`~htam_core.source.analysis.kernel_names`); a launch through a function
    pointer or a table of kernels is given to every kernel the pointer may run, named after it."""
    mark_overloads(kernels)
    seen: set[int] = set()
    unique: list[LaunchSite] = []
    for site in sorted(launches, key=lambda s: s.span.start if s.span else 0):
        key = site.span.start if site.span else id(site)
        if key not in seen:
            seen.add(key)
            unique.append(site)
    by_name: dict[str, list[Kernel]] = {}
    for k in kernels:
        by_name.setdefault(k.name, []).append(k)
    for site in unique:
        attach_resolved(site, by_name.get(site.kernel_name, []))
        for name in site.pointer_kernels:
            for k in by_name.get(name, []):
                k.launch_sites.append(replace(site, kernel_name=name))


# --------------------------------------------------------------------------------------------
# classification of a __global__ anchor


def _classify(a: ts.Node) -> tuple[str, ts.Node | None, ts.Node | None]:
    """``(kind, container, definition)`` for a ``__global__`` anchor.

    kinds: ``def`` (inside a function_definition), ``split`` (``__cluster_dims__`` split),
    ``decl`` (forward declaration: skipped), ``broken`` (header inside an ERROR node; the
    third item is its function_declarator, or the name identifier when the parameter list is
    still open), ``garbage`` (no usable header).
    """
    p = a.parent
    if p is None:
        return "garbage", None, None
    if p.type == "function_definition" and a.type != "identifier":
        return "def", p, p
    if p.type == "function_definition" and a.type == "type_identifier":
        return "def", p, p
    if p.type == "declaration":
        nxt = p.next_named_sibling
        if p.has_error and nxt is not None and nxt.type == "function_definition" \
                and nxt.child_by_field_name("type") is None:
            return "split", p, nxt
        return "decl", p, None
    if p.type == "ERROR":
        sib = a.next_sibling
        while sib is not None and sib.type in _HEADER_TYPES:
            sib = sib.next_sibling
        if sib is not None and sib.type == "function_declarator":
            return "broken", p, sib
        after = sib.next_sibling if sib is not None else None
        if sib is not None and sib.type == "identifier" and after is not None and after.type == "(":
            return "broken", p, sib  # ``__global__ void name(`` with the parameter list still open
    return "garbage", p, None


def _outer_start(node: ts.Node) -> ts.Node:
    """The node whose start is the kernel's start: the template declaration or ``extern "C"``."""
    cur = node
    while cur.parent is not None and cur.parent.type in ("template_declaration", "linkage_specification"):
        cur = cur.parent
    return cur


def _namespace(node: ts.Node) -> str | None:
    names: list[str] = []
    cur = node.parent
    while cur is not None:
        if cur.type == "namespace_definition":
            n = cur.child_by_field_name("name")
            names.append(node_text(n) if n is not None else "(anonymous)")
        cur = cur.parent
    return "::".join(reversed(names)) or None


def _extern_c(node: ts.Node) -> bool:
    cur = node.parent
    while cur is not None:
        if cur.type == "linkage_specification":
            return '"C"' in node_text(cur.child_by_field_name("value"))
        if cur.type in ("function_definition", "namespace_definition", "translation_unit"):
            if cur.type != "function_definition":
                return False
        cur = cur.parent
    return False


def _template_params(node: ts.Node) -> list[str]:
    cur = node.parent
    params: list[str] = []
    while cur is not None and cur.type in ("template_declaration", "linkage_specification"):
        if cur.type == "template_declaration":
            plist = cur.child_by_field_name("parameters")
            if plist is not None:
                params = [node_text(c) for c in plist.named_children] + params
        cur = cur.parent
    return params


def _declarator_name(declarator: ts.Node | None) -> ts.Node | None:
    """The identifier node that names a function declarator (qualified/template names too)."""
    cur = declarator
    while cur is not None:
        if cur.type in ("identifier", "field_identifier"):
            return cur
        if cur.type in ("qualified_identifier", "template_function"):
            cur = cur.child_by_field_name("name")
            continue
        nxt = cur.child_by_field_name("declarator")
        if nxt is None:
            return None
        cur = nxt
    return None


def _bounded_end(frame: Frame, start: int, limit: int) -> int:
    """Exclusive end at or before ``limit`` with trailing whitespace removed (not before ``start``)."""
    end = limit
    src = frame.src
    while end > start and src[end - 1 : end] in (b" ", b"\t", b"\n", b"\r"):
        end -= 1
    return end


def _macro_anchors(frame: Frame, root: ts.Node, macros: dict[str, str], anchors: list[ts.Node]) -> list[ts.Node]:
    """Kernels and device functions declared through object-like macros: appends to ``anchors`` (kept sorted) the
    anchor of each kernel whose header names a macro holding ``__global__`` (read as the function's type, or, in
    the parse view, blanked: :func:`~htam_core.source.preproc.kernel_macros`, found by name in the user's text)
    and returns the ``function_definition`` nodes of device functions declared through a ``__device__`` macro."""
    kernel_macros = {k for k, v in macros.items() if "__global__" in v}
    device_macros = {k for k, v in macros.items() if "__device__" in v and "__global__" not in v}
    extra_device: list[ts.Node] = []
    for fn_node in captures(G, Q_MACRO_USES, root).get("fn", []) if kernel_macros or device_macros else []:
        tname = node_text(fn_node.child_by_field_name("type"))
        if tname in kernel_macros:
            anchors.append(fn_node.child_by_field_name("type"))
        elif tname in device_macros:
            extra_device.append(fn_node)
    if frame.display is None or not (kernel_macros or device_macros):
        anchors.sort(key=lambda n: n.start_byte)
        return extra_device
    kernel_words, device_words = _words(kernel_macros), _words(device_macros)
    seen = {a.start_byte for a in anchors}
    for fn_node in captures(G, Q_ANY_FUNCTION, root).get("fn", []):  # a macro read as blanks or a shorter word
        decl, typ = fn_node.child_by_field_name("declarator"), fn_node.child_by_field_name("type")
        if decl is None:
            continue
        prev = fn_node.prev_sibling
        head = frame.text(prev.end_byte if prev is not None else _line_start(frame, fn_node.start_byte),
                          decl.start_byte)
        if kernel_words is not None and typ is not None and kernel_words.search(head) \
                and typ.start_byte not in seen and not any(c.type == "__global__" for c in fn_node.children):
            anchors.append(typ)
        elif device_words is not None and device_words.search(frame.text(_line_start(frame, fn_node.start_byte),
                                                                         decl.start_byte)):
            extra_device.append(fn_node)
    anchors.sort(key=lambda n: n.start_byte)
    return extra_device


def _macro_extern_c(frame: Frame, anchor: ts.Node, macros: dict[str, str]) -> bool:
    """Whether the kernel of ``anchor`` is declared ``extern "C"`` through a macro: the anchor is the macro
    (``KERNEL void k``), or, where the parse view blanked it, the macro is named on the anchor's line before it."""
    if 'extern "C"' in macros.get(node_text(anchor), ""):
        return True
    words = _words({k for k, v in macros.items() if 'extern "C"' in v})
    return words is not None and frame.display is not None \
        and words.search(frame.text(_line_start(frame, anchor.start_byte), anchor.start_byte)) is not None


def _words(names: set[str]) -> re.Pattern[str] | None:
    """A pattern that finds any of ``names`` as a whole word, or ``None`` for none."""
    return re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b") if names else None


def _line_start(frame: Frame, byte: int) -> int:
    return frame.src.rfind(b"\n", 0, byte) + 1


def _launch_bounds(nodes: list[ts.Node], frame: Frame) -> str | None:
    for n in nodes:
        if n.type == "launch_bounds":
            text = frame.text(n.start_byte, n.end_byte)
            i, j = text.find("("), text.rfind(")")
            return " ".join(text[i + 1 : j].split()) if 0 <= i < j else text
    return None


def _cluster_dims_text(frame: Frame, start: int, end: int) -> str | None:
    """Arguments of a ``__cluster_dims__(...)`` blanked out of the header ``[start, end)``."""
    if frame.display is None:
        return None
    text = frame.text(start, end)
    k = text.find("__cluster_dims__")
    if k < 0:
        return None
    i, j = text.find("(", k), text.find(")", k)
    return " ".join(text[i + 1 : j].split()) if 0 <= i < j else None


def kernel_for_node(frame: Frame, definition: ts.Node, macros: dict[str, str], ctx_key: str,
                    language: str = "cuda") -> Kernel | None:
    """The kernel of a clean ``function_definition`` that carries ``__global__``, else None
    (used by ``Document`` to rebuild only the kernel under the cursor)."""
    anchor = next((c for c in definition.children if c.type == "__global__"), None)
    if anchor is None:
        return None
    return _kernel_from_definition(frame, anchor, definition, definition, None, language, macros, ctx_key)


def _kernel_from_definition(frame: Frame, anchor: ts.Node, container: ts.Node, definition: ts.Node,
                            nxt: ts.Node | None, language: str, macros: dict[str, str],
                            ctx_key: str = "") -> Kernel | None:
    declarator = definition.child_by_field_name("declarator")
    name_node = _declarator_name(declarator)
    if name_node is None or declarator is None:
        return None
    outer = _outer_start(container)
    start = outer.start_byte
    end = definition.end_byte
    body = definition.child_by_field_name("body")
    incomplete = body is None or (body.child_count > 0 and body.children[-1].is_missing) or declarator.has_error \
        or unclosed_scope(definition) is not None
    if nxt is not None and definition.start_byte < nxt.start_byte < end:
        end = _bounded_end(frame, start, _line_start(frame, nxt.start_byte))
        incomplete = True
    key = None
    if frame.linear:
        key = ("cuda", language, frame.src[start:end], frame.display[start:end] if frame.display else b"",
               _namespace(container), _extern_c(container), incomplete, ctx_key)
        hit = kcache.get_kernel(key, frame.to_file(start), frame.line(start))
        if hit is not None:
            hit.qualified_name = qualified_kernel_name(container, declarator, hit.name)
            hit.parse_problem = _scope_problem(frame, definition, hit.name)
            return hit
    header_nodes = list(container.children) if container is not definition else list(definition.children)
    if container is not definition:
        header_nodes += list(definition.children)
    attrs: dict[str, object] = {
        "launch_bounds": _launch_bounds(header_nodes, frame),
        "extern_c": _extern_c(container) or _macro_extern_c(frame, anchor, macros),
        "template_params": _template_params(container),
    }
    body_start = body.start_byte if body is not None else end
    cd = _cluster_dims_text(frame, start, body_start)
    if cd is not None:
        attrs["cluster_dims"] = cd
    ns = _namespace(container)
    if ns:
        attrs["namespace"] = ns
    params_node = declarator.child_by_field_name("parameters")
    params = _params(frame, params_node.named_children if params_node is not None else [], macros)
    body_span = frame.span(body) if body is not None else frame.span_of(end, end)
    kernel = Kernel(
        name=node_text(name_node),
        language=language,  # type: ignore[arg-type]
        start_line=frame.line(start),
        end_line=frame.end_line(end),
        span=frame.span_of(start, end),
        name_span=frame.span(name_node),
        body_span=body_span,
        params=params,
        attributes=attrs,
        incomplete=incomplete,
        text=frame.text(start, end),
    )
    if body is not None and body.start_byte < end:
        kernel.features = feat.cuda_features(frame, body, params, macros, (body.start_byte, min(body.end_byte, end)))
    if key is not None:
        kcache.put_kernel(key, kernel)
    kernel.qualified_name = qualified_kernel_name(container, declarator, kernel.name)
    kernel.parse_problem = _scope_problem(frame, definition, kernel.name)
    return kernel


def _scope_problem(frame: Frame, definition: ts.Node, name: str) -> ParseProblem | None:
    """Where a kernel in a scope that is never closed fails to parse (:func:`unclosed_scope`): at its body's
    closing ``}``, which may be the scope's own; ``None`` for a kernel in closed scopes."""
    scope = unclosed_scope(definition)
    body = definition.child_by_field_name("body")
    if scope is None or body is None or not frame.linear:
        return None
    at = frame.to_file(body.end_byte - 1)
    line_start = frame.file.data.rfind(b"\n", 0, at) + 1
    column = len(frame.file.data[line_start:at].decode("utf-8", errors="replace")) + 1
    what = (f"a `{{` is never closed: the `}}` that ends {name} here may be the one of the {scope} "
            f"that holds it")
    return ParseProblem(frame.line(body.end_byte - 1), column, at, what)


def _kernel_from_broken(frame: Frame, anchor: ts.Node, container: ts.Node, declarator: ts.Node,
                        nxt: ts.Node | None, language: str, macros: dict[str, str]) -> Kernel | None:
    name_node = declarator if declarator.type == "identifier" else _declarator_name(declarator)
    if name_node is None:
        return None
    start = anchor.start_byte
    limit = container.end_byte
    if nxt is not None and nxt.start_byte < limit:
        limit = _line_start(frame, nxt.start_byte)
    sib = declarator.next_sibling
    body_start = None
    while sib is not None and sib.start_byte < limit:
        if sib.type == "{" and body_start is None:
            body_start = sib.start_byte
        if sib.type == "function_definition" and body_start is not None:
            limit = min(limit, _line_start(frame, sib.start_byte))
            break
        sib = sib.next_sibling
    end = _bounded_end(frame, start, limit)
    header_nodes = [c for c in container.children if anchor.start_byte <= c.start_byte < declarator.end_byte]
    attrs: dict[str, object] = {
        "launch_bounds": _launch_bounds(header_nodes, frame),
        "extern_c": _extern_c(container),
        "template_params": [],
    }
    ns = _namespace(container)
    if ns:
        attrs["namespace"] = ns
    if declarator.type == "identifier":  # a bare header: the parameters are the ERROR's own children
        plist = []
        sib = declarator.next_sibling
        while sib is not None and sib.type not in ("{", ")", "compound_statement"):
            plist.append(sib)
            sib = sib.next_sibling
    else:
        pnode = declarator.child_by_field_name("parameters")
        plist = pnode.named_children if pnode is not None else []
    params = _params(frame, plist, macros)
    bs = body_start if body_start is not None else end
    kernel = Kernel(
        name=node_text(name_node),
        language=language,  # type: ignore[arg-type]
        start_line=frame.line(start),
        end_line=frame.end_line(end),
        span=frame.span_of(start, end),
        name_span=frame.span(name_node),
        body_span=frame.span_of(bs, end),
        params=params,
        attributes=attrs,
        incomplete=True,
        text=frame.text(start, end),
        qualified_name=qualified_kernel_name(container, declarator, node_text(name_node)),
    )
    if bs < end:
        kernel.features = feat.cuda_features(frame, container, params, macros, (bs, end))
    return kernel


# --------------------------------------------------------------------------------------------
# parameters


def _params(frame: Frame, children: list[ts.Node], macros: dict[str, str]) -> list[Param]:
    out: list[Param] = []
    i = 0
    while i < len(children):
        c = children[i]
        i += 1
        if c.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        start, end = c.start_byte, c.end_byte
        decl = c.child_by_field_name("declarator")
        name_node = _declarator_name(decl) if decl is not None else None
        extra_qualifier = ""
        # a macro qualifier (RESTRICT) swallows the name, which lands in a following ERROR node
        if i < len(children) and children[i].type == "ERROR":
            err = children[i]
            ids = [n for n in err.named_children if n.type == "identifier"]
            if ids:
                if name_node is not None:
                    extra_qualifier = node_text(name_node)
                name_node = ids[-1]
                end = err.end_byte
                i += 1
        text = frame.text(start, end)
        if name_node is None:
            name, type_text = "", " ".join(text.split())
        else:
            name = node_text(name_node)
            type_text = frame.text(start, name_node.start_byte) + frame.text(name_node.end_byte, end)
            type_text = " ".join(type_text.split())
        if c.type == "optional_parameter_declaration" and "=" in type_text:
            type_text = type_text.split("=")[0].strip()
        qualifiers = {extra_qualifier, *type_text.replace("*", " ").split()}
        expanded = " ".join(macros.get(q, q) for q in qualifiers if q)
        is_pointer = _has_pointer(decl) or "*" in type_text or "*" in expanded
        default_node = c.child_by_field_name("default_value")
        out.append(Param(
            name=name,
            type=type_text or None,
            is_pointer=is_pointer,
            is_const=_pointee_const(c, decl) if is_pointer else "const" in type_text.split(),
            is_restrict="__restrict__" in expanded.split() or "__restrict" in expanded.split(),
            default=node_text(default_node) if default_node is not None else None,
            span=frame.span_of(start, end),
        ))
    return out


def _has_pointer(decl: ts.Node | None) -> bool:
    cur = decl
    while cur is not None:
        if cur.type in ("pointer_declarator", "array_declarator", "abstract_pointer_declarator"):
            return True
        cur = cur.child_by_field_name("declarator")
    return False


def _pointee_const(param: ts.Node, decl: ts.Node | None) -> bool:
    """``const T*`` / ``T const*``: a const qualifier outside the pointer declarator."""
    for ch in param.children:
        if ch is decl:
            break
        if ch.type == "type_qualifier" and node_text(ch) == "const":
            return True
    return False


# --------------------------------------------------------------------------------------------
# device functions, macros, dead code, launches, errors


def _device_functions(frame: Frame, device_tokens: list[ts.Node], extra: list[ts.Node],
                      is_dead) -> list[DeviceFunction]:
    out: list[DeviceFunction] = []
    seen: set[int] = set()
    nodes = [d.parent for d in device_tokens] + extra
    for fn in nodes:
        if fn is None or fn.type != "function_definition" or is_dead(fn) or fn.start_byte in seen:
            continue
        if any(c.type == "__global__" for c in fn.children):
            continue
        seen.add(fn.start_byte)
        name = _declarator_name(fn.child_by_field_name("declarator"))
        if name is None:
            continue
        outer = _outer_start(fn)
        out.append(DeviceFunction(name=node_text(name), start_line=frame.line(outer.start_byte),
                                  end_line=frame.end_line(fn.end_byte), span=frame.span_of(outer.start_byte,
                                                                                           fn.end_byte)))
    return out


def _dead_ranges(caps: dict[str, list[ts.Node]]) -> list[tuple[int, int]]:
    """Byte ranges of ``#if 0`` / ``#if false`` branches."""
    out: list[tuple[int, int]] = []
    for node in caps.get("if", []):
        cond = node_text(node.child_by_field_name("condition")).strip()
        if literal_value(cond) == 0 or cond == "false":
            alt = node.child_by_field_name("alternative")
            out.append((node.start_byte, alt.start_byte if alt is not None else node.end_byte))
    return out


def _enclosing_function(node: ts.Node) -> ts.Node | None:
    cur = node.parent
    while cur is not None and cur.type != "function_definition":
        cur = cur.parent
    return cur


def _cached_launch(frame: Frame, call: ts.Node, resolver: CudaResolver, ctx_key: str) -> LaunchSite | None:
    site = _cached_site(frame, call, resolver, ctx_key)
    return replace(site, scope=launch_scope(call), using=using_namespaces(call)) if site is not None else None


def _cached_site(frame: Frame, call: ts.Node, resolver: CudaResolver, ctx_key: str) -> LaunchSite | None:
    """The launch site of ``call`` from the cache, keyed by the text of the function holding it (its scope and
    ``using`` directives are read by the caller, since they lie outside that text)."""
    fn = _enclosing_function(call)
    if fn is None or not frame.linear:
        return _launch(frame, call, resolver)
    key = ("cuda-launch", frame.src[fn.start_byte : fn.end_byte], call.start_byte - fn.start_byte,
           resolver.consts_key, ctx_key)
    hit = kcache.get_launch(key, frame.to_file(call.start_byte), frame.line(call.start_byte))
    if hit is not None:
        return hit
    site = _launch(frame, call, resolver)
    if site is not None:
        kcache.put_launch(key, site)
    return site


def _launch(frame: Frame, call: ts.Node, resolver: CudaResolver) -> LaunchSite | None:
    fn = call.child_by_field_name("function")
    exprs = launch_config(call)
    args = call.child_by_field_name("arguments")
    if fn is None or exprs is None:
        return None
    site = _launch_parts(frame, call, fn, exprs, resolver)
    if site is None:
        return None
    return replace(site, args=[node_text(a) for a in (args.named_children if args is not None else [])
                               if a.type != "comment"], arg_types=arg_types(call))


def _launch_parts(frame: Frame, call: ts.Node, fn: ts.Node, exprs: tuple[ts.Node, ...],
                  resolver: CudaResolver) -> LaunchSite | None:
    """The launch site of ``call`` that launches ``fn`` with the configuration ``exprs`` (grid, block, smem,
    stream), its arguments not yet read."""
    name_node = fn if fn.type in ("identifier", "subscript_expression", "parenthesized_expression", "pointer_expression") else _declarator_name(fn)
    if name_node is None:
        return None
    keys = ("grid", "block", "smem", "stream")
    config: dict[str, str] = {}
    spans: dict[str, ByteSpan] = {}
    resolved: dict[str, str] = {}
    for key, e in zip(keys, exprs, strict=False):
        config[key] = " ".join(node_text(e).split())
        spans[key] = frame.span(e)
        resolved[key] = resolver.resolve(e, call)
    config.setdefault("smem", "0")
    config.setdefault("stream", "default")
    resolved.setdefault("smem", "0")
    resolved.setdefault("stream", "default")
    tmpl = _template_args(fn)
    if tmpl is not None:
        config["template_args"] = " ".join(node_text(tmpl).split())
        spans["template_args"] = frame.span(tmpl)
        resolved["template_args"] = resolver.resolve_template_args(tmpl, call)
    return LaunchSite(
        line=frame.line(call.start_byte),
        kernel_name=node_text(name_node),
        config=config,
        span=frame.span(call),
        config_spans=spans,
        qualified_name=" ".join(node_text(fn).split()),
        resolved_config=resolved,
        pointer_kernels=pointer_kernels(fn, frame.src),
    )


def _macro_launches(frame: Frame, root: ts.Node, resolver: CudaResolver) -> list[LaunchSite]:
    """The launches written through a launch macro of the frame (``LAUNCH(k, n, a, b)`` with ``#define LAUNCH(k, n,
    ...) k<<<...>>>(__VA_ARGS__)``; :mod:`~htam_core.source.analysis.launch_macros`), one site per use, read from
    the use's expansion. The site spans the use; its ``config_spans`` are the use's arguments that are the grid,
    block, shared bytes and stream when each is one parameter of the macro, none when the macro's text computes
    them (no step edits a grid or block that the macro's text writes). A file held in a Python string is not read this way."""
    if frame.parent is not None or frame.segments or b"<<<" not in frame.src:
        return []
    out = []
    for u in launch_macro_uses(frame.src):
        site = _macro_site(frame, root, resolver, u)
        if site is not None:
            out.append(site)
    return out


def _macro_site(frame: Frame, root: ts.Node, resolver: CudaResolver, u: LaunchMacroUse) -> LaunchSite | None:
    """The launch site of one launch macro use, or ``None`` when its expansion is not one ``<<<>>>`` launch."""
    wrapper = b"void __htam_launch_macro() { " + u.text.encode("utf-8") + b"; }"
    sub = parse_cuda_bytes(wrapper).root_node
    calls = captures(G, LAUNCH_QUERY, sub).get("call", [])
    if sub.has_error or len(calls) != 1:
        return None
    call = calls[0]
    fn, exprs, args = call.child_by_field_name("function"), launch_config(call), call.child_by_field_name("arguments")
    use = root.descendant_for_byte_range(u.start, u.end)
    while use is not None and not (use.type == "call_expression" and use.start_byte == u.start):
        use = use.parent
    if fn is None or exprs is None:
        return None
    config = {k: " ".join(node_text(e).split()) for k, e in zip(("grid", "block", "smem", "stream"), exprs, strict=False)}
    resolved = {k: resolver.resolve(e, use) if use is not None else config[k]
                for k, e in zip(("grid", "block", "smem", "stream"), exprs, strict=False)}
    for d in (config, resolved):
        d.setdefault("smem", "0")
        d.setdefault("stream", "default")
    tmpl = _template_args(fn)
    if tmpl is not None:
        config["template_args"] = resolved["template_args"] = " ".join(node_text(tmpl).split())
    return LaunchSite(line=frame.line(u.start), kernel_name=u.kernel, config=config,
                      args=[node_text(a) for a in (args.named_children if args is not None else []) if a.type != "comment"],
                      span=frame.span_of(u.start, u.end), qualified_name=u.callee, resolved_config=resolved,
                      macro=u.macro.name, config_spans=_macro_spans(frame, u))


def _macro_spans(frame: Frame, u: LaunchMacroUse) -> dict[str, ByteSpan]:
    """The file bytes of the use's arguments that are the launch's ``grid``, ``block``, ``smem`` and ``stream``
    (:func:`~htam_core.source.analysis.launch_slots.use_slots`); ``{}`` when the macro's body computes one of them,
    so that the launch is not editable at the use."""
    slots = use_slots(u.macro, len(u.args))
    if isinstance(slots, str) or len(u.arg_spans) != len(u.args):
        return {}
    return {k: frame.span_of(*u.arg_spans[i]) for k, i in zip(SLOTS, slots.config, strict=False)}


def is_dead_span(site: LaunchSite, frame: Frame, dead: list[tuple[int, int]]) -> bool:
    """Whether launch ``site`` (file bytes) starts in one of the ``#if 0`` ranges ``dead`` (frame bytes)."""
    return site.span is not None and any(frame.to_file(s) <= site.span.start < frame.to_file(e) for s, e in dead)


def _api_launches(frame: Frame, root: ts.Node, resolver: CudaResolver) -> list[LaunchSite]:
    """The launches of the frame made through the runtime API (``cudaLaunchKernel((const void*)k, grid, block, args,
    smem, stream)``, ``cudaLaunchKernelEx(&config, k, a, b)``; :mod:`~htam_core.source.analysis.api_launch`), one
    site per call: its ``config_spans`` are the expressions in the grid, block, shared-bytes and stream slots (for
    ``Ex``, the values assigned to the config's fields), its ``args`` the kernel's arguments read from the
    ``void* args[]`` array (``[]`` when unread)."""
    if b"cudaLaunch" not in frame.src:
        return []
    out = []
    for lc in api_launch_calls(root, frame.src):
        site = _launch_parts(frame, lc.call, lc.fn, lc.config, resolver)
        if site is None:
            continue
        out.append(replace(site, args=[node_text(a) for a in lc.kernel_args or ()], arg_types=(), api=lc.api,
                           scope=launch_scope(lc.call), using=using_namespaces(lc.call)))
    return out


def _template_args(fn: ts.Node) -> ts.Node | None:
    cur: ts.Node | None = fn
    while cur is not None:
        if cur.type == "template_function":
            return cur.child_by_field_name("arguments")
        cur = cur.child_by_field_name("name") if cur.type == "qualified_identifier" else None
    return None
