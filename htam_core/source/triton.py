"""Triton kernels from a tree-sitter-python tree.

A kernel is a function decorated with ``@triton.jit`` / ``@jit`` / ``@triton.jit(...)``, possibly
under ``@triton.autotune(...)`` and ``@triton.heuristics(...)``; its range starts at the first
decorator and ends at the last line of the body. A jit function that is never launched with
``name[grid](...)`` in the file but is called from another jit function is a device helper.
Launch sites are ``name[grid](args, KW=...)`` calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import tree_sitter as ts

from htam_core.source import cache as kcache
from htam_core.source import features as feat
from htam_core.source.frames import Frame
from htam_core.source.model import DeviceFunction, Kernel, LaunchSite, Param
from htam_core.source.parsing import captures, node_text
from htam_core.source.resolve import PythonResolver

G = "python"
#: One whole-tree pass: jit candidates, ``k[grid](...)`` launches and string literals (for CUDA strings).
Q_MAIN = """
(decorated_definition definition: (function_definition name: (identifier))) @def
(call function: (subscript value: (_) @k) @sub arguments: (argument_list) @args) @call
(string) @string
"""
Q_CALLS = "(call function: (identifier) @f)"


@dataclass
class TritonResult:
    """Kernels, helpers and launch sites of one Python tree."""

    kernels: list[Kernel] = field(default_factory=list)
    device_functions: list[DeviceFunction] = field(default_factory=list)


def _decorator_name(dec: ts.Node) -> tuple[str, ts.Node | None]:
    """``("triton.jit", call-args-or-None)`` for one decorator node."""
    expr = dec.named_children[0] if dec.named_children else None
    if expr is None:
        return "", None
    if expr.type == "call":
        return node_text(expr.child_by_field_name("function")), expr.child_by_field_name("arguments")
    return node_text(expr), None


def _kind(name: str) -> str | None:
    parts = name.split(".")
    if parts[-1] in ("jit", "autotune", "heuristics") and (len(parts) == 1 or parts[0] in ("triton", "tl")):
        return parts[-1]
    return None


def _string_value(node: ts.Node) -> str | None:
    if node.type != "string":
        return None
    return "".join(node_text(c) for c in node.named_children if c.type == "string_content")


def _kwargs(args: ts.Node | None) -> dict[str, ts.Node]:
    out: dict[str, ts.Node] = {}
    for a in args.named_children if args is not None else []:
        if a.type == "keyword_argument":
            n, v = a.child_by_field_name("name"), a.child_by_field_name("value")
            if n is not None and v is not None:
                out[node_text(n)] = v
    return out


def _dict_pairs(node: ts.Node | None) -> dict[str, str]:
    out: dict[str, str] = {}
    if node is None or node.type != "dictionary":
        return out
    for pair in node.named_children:
        if pair.type == "pair":
            k, v = pair.child_by_field_name("key"), pair.child_by_field_name("value")
            if k is not None and v is not None:
                out[_string_value(k) or node_text(k)] = " ".join(node_text(v).split())
    return out


def _autotune(args: ts.Node | None) -> dict[str, Any]:
    kw = _kwargs(args)
    positional = [a for a in (args.named_children if args is not None else []) if a.type != "keyword_argument"]
    configs_node = kw.get("configs") or (positional[0] if positional else None)
    key_node = kw.get("key") or (positional[1] if len(positional) > 1 else None)
    out: dict[str, Any] = {"configs": [], "key": []}
    if configs_node is not None and configs_node.type == "list":
        for c in configs_node.named_children:
            if c.type != "call":
                continue
            cargs = c.child_by_field_name("arguments")
            ckw = _kwargs(cargs)
            first = next((a for a in (cargs.named_children if cargs is not None else [])
                          if a.type != "keyword_argument"), None)
            kwargs = _dict_pairs(first if first is not None else ckw.get("kwargs"))
            out["configs"].append({
                "kwargs": kwargs,
                "num_warps": node_text(ckw["num_warps"]) if "num_warps" in ckw else None,
                "num_stages": node_text(ckw["num_stages"]) if "num_stages" in ckw else None,
            })
    elif configs_node is not None:
        out["configs_expr"] = " ".join(node_text(configs_node).split())
    if key_node is not None and key_node.type in ("list", "tuple"):
        out["key"] = [_string_value(k) or node_text(k) for k in key_node.named_children]
    elif key_node is not None:
        out["key_expr"] = node_text(key_node)
    for extra in ("prune_configs_by", "reset_to_zero", "restore_value", "warmup", "rep"):
        if extra in kw:
            out[extra] = " ".join(node_text(kw[extra]).split())
    return out


def _params(frame: Frame, params_node: ts.Node | None) -> list[Param]:
    out: list[Param] = []
    for p in params_node.named_children if params_node is not None else []:
        name_node: ts.Node | None = None
        type_node = default = None
        if p.type == "identifier":
            name_node = p
        elif p.type in ("typed_parameter", "typed_default_parameter", "default_parameter"):
            name_node = p.child_by_field_name("name") or next(
                (c for c in p.named_children if c.type == "identifier"), None)
            type_node = p.child_by_field_name("type")
            default = p.child_by_field_name("value")
        else:
            continue
        if name_node is None:
            continue
        name = node_text(name_node)
        type_text = node_text(type_node) if type_node is not None else None
        out.append(Param(
            name=name,
            type=type_text,
            is_pointer=name.endswith("_ptr") or name.endswith("_ptrs"),
            is_constexpr=type_text is not None and type_text.split(".")[-1] == "constexpr",
            default=node_text(default) if default is not None else None,
            span=frame.span(p),
        ))
    return out


Q_TOP_TOKENS = """
("def") @t
("@") @t
"""
_MAX_TAIL_DEPTH = 8


@dataclass
class _Jit:
    frame: Frame
    definition: ts.Node
    fn: ts.Node
    name: ts.Node
    decs: list[tuple[str, str, ts.Node | None, ts.Node]]
    end: int
    cut: bool = False


def _collect(frame: Frame, root: ts.Node, depth: int, jit: list[_Jit],
             trees: list[tuple[Frame, ts.Node, dict[str, list[ts.Node]]]],
             caps: dict[str, list[ts.Node]] | None = None) -> None:
    """Jit definitions of ``root``; a broken definition that swallowed later top-level code is cut
    at the first ``def``/``@`` indented no deeper than its own ``def``, and that tail is parsed
    again on its own (recursively)."""
    from htam_core.source.parsing import new_parser

    caps = caps if caps is not None else captures(G, Q_MAIN, root)
    trees.append((frame, root, caps))
    for definition in caps.get("def", []):
        item = jit_item(frame, definition)
        if item is None:
            continue
        fn = item.fn
        jit.append(item)
        if not fn.has_error or depth >= _MAX_TAIL_DEPTH:
            continue
        col = definition.start_point[1]
        body = fn.child_by_field_name("body")
        colon = next((c for c in fn.children if c.type == ":"), None)
        after = colon.end_byte if colon is not None else (body.start_byte if body is not None else fn.end_byte)
        tokens = captures(G, Q_TOP_TOKENS, fn, (after, fn.end_byte)).get("t", [])
        cut = min((t.start_byte for t in tokens if t.start_byte >= after and t.start_point[1] <= col
                   and t.start_point[0] > definition.start_point[0]), default=None)
        if cut is None:
            continue
        line_start = frame.src.rfind(b"\n", 0, cut) + 1
        end = line_start
        while end > after and frame.src[end - 1 : end] in (b" ", b"\t", b"\n", b"\r"):
            end -= 1
        item.end, item.cut = end, True
        sub = frame.sub(line_start, fn.end_byte)
        _collect(sub, new_parser(G).parse(sub.src).root_node, depth + 1, jit, trees)


def extract_triton(frame: Frame, root: ts.Node, resolver: PythonResolver | None = None,
                   caps: dict[str, list[ts.Node]] | None = None) -> TritonResult:
    """Triton kernels, helpers and launch sites of the Python tree ``root`` parsed from ``frame.src``.

    ``caps`` are the captures of :data:`Q_MAIN` on ``root`` when the caller already has them.
    """
    resolver = resolver or PythonResolver(root)
    items: list[_Jit] = []
    trees: list[tuple[Frame, ts.Node, dict[str, list[ts.Node]]]] = []
    _collect(frame, root, 0, items, trees, caps)
    jit = [(it.definition, it.fn, it.name, it.decs) for it in items]
    names = {node_text(n) for _, _, n, _ in jit}
    launches: dict[str, list[LaunchSite]] = {}
    seen: set[int] = set()
    for tframe, troot, tcaps in trees:
        tres = resolver if troot is root else PythonResolver(troot)
        for call in tcaps.get("call", []):
            site = _cached_launch(tframe, call, names, tres)
            if site is not None and site.span is not None and site.span.start not in seen:
                seen.add(site.span.start)
                launches.setdefault(site.kernel_name, []).append(site)
    called_from_jit: set[str] = set()
    for _, fn, name, _ in jit:
        body = fn.child_by_field_name("body")
        if body is None:
            continue
        for f in captures(G, Q_CALLS, body).get("f", []):
            if node_text(f) != node_text(name):
                called_from_jit.add(node_text(f))
    out = TritonResult()
    for it in items:
        frame, definition, name = it.frame, it.definition, node_text(it.name)
        start, end = definition.start_byte, it.end
        if name not in launches and name in called_from_jit:
            out.device_functions.append(DeviceFunction(name=name, start_line=frame.line(start),
                                                       end_line=frame.end_line(end), span=frame.span_of(start, end)))
            continue
        out.kernels.append(build_kernel(it, sorted(launches.get(name, []), key=lambda s: s.line)))
    return out


def jit_item(frame: Frame, definition: ts.Node) -> _Jit | None:
    """The jit description of a ``decorated_definition`` node, or None when it is not ``@triton.jit``."""
    fn = definition.child_by_field_name("definition")
    if fn is None or fn.type != "function_definition" or fn.child_by_field_name("name") is None:
        return None
    decs = []
    for d in definition.children:
        if d.type == "decorator":
            dname, dargs = _decorator_name(d)
            decs.append((dname, _kind(dname) or "", dargs, d))
    if not any(k == "jit" for _, k, _, _ in decs):
        return None
    return _Jit(frame, definition, fn, fn.child_by_field_name("name"), decs, fn.end_byte)


def build_kernel(it: _Jit, launch_sites: list[LaunchSite]) -> Kernel:
    """Build (or take from the content cache) the Kernel of jit definition ``it``."""
    frame, definition, fn, name_node, decs = it.frame, it.definition, it.fn, it.name, it.decs
    name = node_text(name_node)
    start, end = definition.start_byte, it.end
    key = None
    if frame.linear:
        key = ("triton", frame.src[start:end], it.cut)
        hit = kcache.get_kernel(key, frame.to_file(start), frame.line(start))
        if hit is not None:
            hit.launch_sites = launch_sites
            return hit
    params = _params(frame, fn.child_by_field_name("parameters"))
    attrs: dict[str, Any] = {"decorators": [" ".join(node_text(d).split()) for _, _, _, d in decs]}
    for _dname, kind, dargs, _ in decs:
        if kind == "autotune":
            attrs["autotune"] = _autotune(dargs)
        elif kind == "heuristics":
            first = next((a for a in (dargs.named_children if dargs is not None else [])
                          if a.type != "keyword_argument"), None)
            if first is None:
                first = _kwargs(dargs).get("values")
            attrs["heuristics"] = _dict_pairs(first)
        elif kind == "jit" and dargs is not None:
            attrs["jit_kwargs"] = {k: " ".join(node_text(v).split()) for k, v in _kwargs(dargs).items()}
    body = fn.child_by_field_name("body")
    kernel = Kernel(
        name=name,
        language="triton",
        start_line=frame.line(start),
        end_line=frame.end_line(end),
        span=frame.span_of(start, end),
        name_span=frame.span(name_node),
        body_span=frame.span(body) if body is not None else frame.span_of(end, end),
        params=params,
        attributes=attrs,
        incomplete=fn.has_error,
        text=frame.text(start, end),
    )
    kernel.features = feat.triton_features(frame, fn, params)
    if key is not None:
        kcache.put_kernel(key, kernel)
    kernel.launch_sites = launch_sites
    return kernel


def _cached_launch(frame: Frame, call: ts.Node, names: set[str], resolver: PythonResolver) -> LaunchSite | None:
    fn = call.parent
    while fn is not None and fn.type != "function_definition":
        fn = fn.parent
    if fn is None or not frame.linear:
        return _launch(frame, call, names, resolver)
    key = ("triton-launch", frame.src[fn.start_byte : fn.end_byte], call.start_byte - fn.start_byte,
           frozenset(names))
    hit = kcache.get_launch(key, frame.to_file(call.start_byte), frame.line(call.start_byte))
    if hit is not None:
        return hit
    resolver.used_module = False
    site = _launch(frame, call, names, resolver)
    if site is not None and not resolver.used_module:
        kcache.put_launch(key, site)
    return site


def _launch(frame: Frame, call: ts.Node, names: set[str], resolver: PythonResolver) -> LaunchSite | None:
    sub = call.child_by_field_name("function")
    if sub is None:
        return None
    value = sub.child_by_field_name("value")
    if value is None:
        return None
    kname = node_text(value).rsplit(".", 1)[-1]
    if kname not in names:
        return None
    lb = next((c for c in sub.children if c.type == "["), None)
    rb = next((c for c in reversed(sub.children) if c.type == "]"), None)
    if lb is None or rb is None:
        return None
    grid_nodes = [c for c in sub.children if c.is_named and lb.end_byte <= c.start_byte and c.end_byte <= rb.start_byte]
    grid_text = " ".join(frame.text(lb.end_byte, rb.start_byte).split())
    config = {"grid": grid_text}
    spans = {"grid": frame.span_of(lb.end_byte, rb.start_byte)}
    resolved = {"grid": resolver.resolve(grid_nodes[0], call) if len(grid_nodes) == 1 else grid_text}
    args: list[str] = []
    arglist = call.child_by_field_name("arguments")
    for a in arglist.named_children if arglist is not None else []:
        if a.type == "keyword_argument":
            n, v = a.child_by_field_name("name"), a.child_by_field_name("value")
            if n is None or v is None:
                continue
            config[node_text(n)] = " ".join(node_text(v).split())
            spans[node_text(n)] = frame.span(v)
            resolved[node_text(n)] = resolver.resolve(v, call)
        elif a.type != "comment":
            args.append(" ".join(node_text(a).split()))
    return LaunchSite(line=frame.line(call.start_byte), kernel_name=kname, config=config, args=args,
                      span=frame.span(call), config_spans=spans, qualified_name=node_text(value),
                      resolved_config=resolved)
