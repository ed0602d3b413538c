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
from htam_core.source import pyregions as pyr
from htam_core.source.frames import Frame
from htam_core.source.model import DeviceFunction, Kernel, LaunchSite, Param
from htam_core.source.parsing import captures, new_parser, node_text
from htam_core.source.resolve import PythonResolver

G = "python"
#: One whole-tree pass: jit candidates, ``k[grid](...)`` launches and string literals (for CUDA strings).
Q_MAIN = """
(decorated_definition definition: (function_definition name: (identifier))) @def
(call function: (subscript value: (_) @k) @sub arguments: (argument_list) @args) @call
(string) @string
(assignment left: (_) right: (call)) @bind
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


def _params(frame: Frame, params_node: ts.Node | list[ts.Node] | None) -> list[Param]:
    """The parameters of a ``parameters`` node (or of its named children, given as a list)."""
    out: list[Param] = []
    nodes = params_node if isinstance(params_node, list) else \
        params_node.named_children if params_node is not None else []
    for p in nodes:
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



@dataclass
class _Jit:
    """One jit definition found in some frame: the nodes, its decorators and its qualified name.

    ``decs`` are ``(name, kind, call arguments, node)`` of each decorator, outermost first; for the
    call form (``alias = triton.jit(fn)``) they come from the calls around ``fn``, and ``alias`` is
    the name the result is bound to (what launches use).
    """

    frame: Frame
    definition: ts.Node
    fn: ts.Node
    name: ts.Node
    decs: list[tuple[str, str, ts.Node | None, ts.Node]]
    end: int
    cut: bool = False
    qualname: str | None = None
    alias: str | None = None
    binding: str | None = None

    @property
    def launch_name(self) -> str:
        """The name launches use: the alias of the call form, else the function's name."""
        return (self.alias or node_text(self.name)).rsplit(".", 1)[-1]


_Tree = tuple[Frame, ts.Node, dict[str, list[ts.Node]]]


def _tree_classes(node: ts.Node) -> list[str] | None:
    """Enclosing class names of ``node`` from the tree, outermost first; ``None`` inside a function."""
    names: list[str] = []
    cur = node.parent
    while cur is not None:
        if cur.type == "function_definition":
            return None
        if cur.type == "class_definition":
            names.insert(0, node_text(cur.child_by_field_name("name")))
        cur = cur.parent
    return names


def _qualify(classes: list[str] | None, name: str) -> str | None:
    return None if classes is None else ".".join([*classes, name])


def _collect(frame: Frame, root: ts.Node, caps: dict[str, list[ts.Node]] | None = None,
             bare: list[Kernel] | None = None) -> tuple[list[_Jit], list[_Tree]]:
    """Jit definitions of the file tree ``root`` and every tree they were read from; half-typed
    jit headers that do not parse as a definition at all go to ``bare`` as incomplete kernels.

    A clean tree is read as is. A tree with errors is read definition by definition (see
    :mod:`htam_core.source.pyregions`): a definition the tree gives intact is taken from it, any
    other is parsed again from its own region (an indented one behind ``if 1:``, so that it parses
    at its own column) and mapped back.
    """
    caps = caps if caps is not None else captures(G, Q_MAIN, root)
    trees: list[_Tree] = [(frame, root, caps)]
    if not root.has_error:
        items = [it for d in caps.get("def", []) if (it := jit_item(frame, d)) is not None]
        return items + _call_forms(trees, items), trees
    src = frame.src
    anchors = pyr.anchors(src, caps.get("string", []))
    items: list[_Jit] = []
    for i, a in enumerate(anchors):
        if a.kind != "def":
            continue
        classes = pyr.enclosing_classes(src, anchors, i)
        fn = root.descendant_for_byte_range(a.byte, a.byte + 3)
        fn = fn.parent if fn is not None else None
        outer = fn.parent if fn is not None and fn.parent is not None and fn.parent.type == "decorated_definition" \
            else fn
        if fn is not None and fn.type == "function_definition" and pyr.intact(src, outer, anchors, i):
            it = jit_item(frame, outer, classes) if outer.type == "decorated_definition" else None
        else:
            it = _reparse(frame, anchors, i, classes, trees, bare)
        if it is not None:
            items.append(it)
    return items + _call_forms(trees, items), trees


def _reparse(frame: Frame, anchors: list[pyr.Anchor], i: int, classes: list[str] | None,
             trees: list[_Tree], bare: list[Kernel] | None = None) -> _Jit | None:
    """Parse the region of the ``def`` at anchor ``i`` on its own; its jit item, if it is one (a
    bare jit header goes to ``bare``)."""
    start, end = pyr.region(anchors, i, len(frame.src))
    prefix = b"if 1:\n" if anchors[i].col > 0 else b""
    sub = frame.sub(start, end, prefix)
    root = new_parser(G).parse(sub.src).root_node
    caps = captures(G, Q_MAIN, root)
    trees.append((sub, root, caps))
    local = anchors[i].byte - start + len(prefix)
    tok = root.descendant_for_byte_range(local, local + 3)
    fn = tok.parent if tok is not None else None
    if fn is None or fn.type != "function_definition" or fn.start_byte != local:
        if tok is not None and fn is not None and fn.type == "ERROR" and bare is not None:
            k = _bare_kernel(sub, fn, tok, classes)
            if k is not None:
                bare.append(k)
        return None
    outer = fn.parent if fn.parent is not None and fn.parent.type == "decorated_definition" else fn
    if outer.type != "decorated_definition":
        return None
    item = jit_item(sub, outer, classes)
    if item is not None:
        # a definition cut short by the end of its region ends at its last non-blank byte
        end_local = min(item.end, len(sub.src))
        while end_local > fn.start_byte and sub.src[end_local - 1 : end_local] in (b" ", b"\t", b"\n", b"\r"):
            end_local -= 1
        item.end = end_local
    return item


Q_DEFS = "(function_definition name: (identifier) @name) @fn"


def _bare_kernel(frame: Frame, err: ts.Node, def_tok: ts.Node, classes: list[str] | None) -> Kernel | None:
    """An incomplete kernel from a jit header left in an ERROR node (``@triton.jit`` then
    ``def name(params`` with the parenthesis still open), or None when it is not one."""
    kids = err.children
    pos = next((j for j, c in enumerate(kids) if c.id == def_tok.id), None)
    if pos is None or pos + 1 >= len(kids) or kids[pos + 1].type != "identifier":
        return None
    decs = [c for c in kids[:pos] if c.type == "decorator"]
    if not any(_kind(_decorator_name(d)[0]) == "jit" for d in decs):
        return None
    name_node = kids[pos + 1]
    params = _params(frame, _header_params(kids[pos + 2 :]))
    start = decs[0].start_byte if decs else def_tok.start_byte
    end = err.end_byte
    while end > start and frame.src[end - 1 : end] in (b" ", b"\t", b"\n", b"\r"):
        end -= 1
    return Kernel(name=node_text(name_node), language="triton", start_line=frame.line(start),
                  end_line=frame.end_line(end), span=frame.span_of(start, end), name_span=frame.span(name_node),
                  body_span=frame.span_of(end, end), params=params,
                  attributes={"decorators": [" ".join(node_text(d).split()) for d in decs]}, incomplete=True,
                  text=frame.text(start, end), qualified_name=_qualify(classes, node_text(name_node)))


def _header_params(after_name: list[ts.Node]) -> list[ts.Node]:
    """The parameter nodes of a jit header kept in an ERROR node, given the ERROR's children after the name:
    the named children of its ``parameters`` node when the list closed, else the flat children after ``(``
    up to ``)`` or ``:``. Nothing after the header counts (the body's identifiers are no parameters)."""
    if not after_name:
        return []
    if after_name[0].type == "parameters":
        return list(after_name[0].named_children)
    if after_name[0].type != "(":
        return []
    out: list[ts.Node] = []
    for c in after_name[1:]:
        if c.type in (")", ":"):
            break
        out.append(c)
    return out


def _call_forms(trees: list[_Tree], items: list[_Jit]) -> list[_Jit]:
    """Kernels made by a call: ``alias = triton.jit(fn)`` (also ``jit(fn, **kw)`` and
    ``triton.autotune(...)(triton.jit(fn))``), with ``fn`` a plain ``def`` of the same scope."""
    out: list[_Jit] = []
    decorated = {it.frame.to_file(it.fn.start_byte) for it in items}
    seen: set[tuple[int, str | None]] = set()  # one kernel per binding (a def may be bound twice)
    for frame, _root, caps in trees:
        for bind in caps.get("bind", []):
            chain = _jit_chain(bind.child_by_field_name("right"))
            left = bind.child_by_field_name("left")
            if chain is None or left is None or left.type != "identifier":
                continue
            decs, target = chain
            fn = _def_in_scope(bind, target)
            if fn is None or frame.to_file(fn.start_byte) in decorated:
                continue
            outer = fn.parent if fn.parent is not None and fn.parent.type == "decorated_definition" else fn
            classes = _tree_classes(bind)
            alias = node_text(left)
            key = (frame.to_file(fn.start_byte), _qualify(classes, alias))
            if key in seen:
                continue
            seen.add(key)
            out.append(_Jit(frame, outer, fn, fn.child_by_field_name("name"), decs, fn.end_byte,
                            qualname=_qualify(classes, alias), alias=alias,
                            binding=" ".join(node_text(bind).split())))
    return out


def _jit_chain(call: ts.Node | None) -> tuple[list[tuple[str, str, ts.Node | None, ts.Node]], str] | None:
    """``(decorators outermost first, function name)`` of ``triton.jit(fn)``-style calls, else None."""
    decs: list[tuple[str, str, ts.Node | None, ts.Node]] = []
    cur = call
    while cur is not None and cur.type == "call":
        func, args = cur.child_by_field_name("function"), cur.child_by_field_name("arguments")
        if func is None or args is None:
            return None
        if func.type == "call":  # triton.autotune(configs=..., key=...)(inner)
            kname = node_text(func.child_by_field_name("function"))
            if _kind(kname) not in ("autotune", "heuristics"):
                return None
            decs.append((kname, _kind(kname) or "", func.child_by_field_name("arguments"), func))
        else:
            kname = node_text(func)
            if _kind(kname) is None:
                return None
            decs.append((kname, _kind(kname) or "", args, cur))
        first = next((a for a in args.named_children if a.type not in ("keyword_argument", "comment")), None)
        if first is not None and first.type == "identifier":
            return (decs, node_text(first)) if any(k == "jit" for _, k, _, _ in decs) else None
        cur = first
    return None


def _def_in_scope(bind: ts.Node, name: str) -> ts.Node | None:
    """The ``def name`` that the assignment ``bind`` sees: one of its own block (the module or a
    class body), else one of the module (a class attribute ``k = triton.jit(_fn)`` over a
    module-level ``_fn``)."""
    block = bind.parent
    while block is not None and block.type not in ("module", "block"):
        block = block.parent
    scopes = [block] if block is not None else []
    root = bind
    while root.parent is not None:
        root = root.parent
    if root.type == "module" and (block is None or block.id != root.id):
        scopes.append(root)
    for scope_node in scopes:
        for fn in captures(G, Q_DEFS, scope_node).get("fn", []):
            scope = fn.parent.parent if fn.parent is not None and fn.parent.type == "decorated_definition" \
                else fn.parent
            if scope is not None and scope.id == scope_node.id and node_text(fn.child_by_field_name("name")) == name:
                return fn
    return None


def extract_triton(frame: Frame, root: ts.Node, resolver: PythonResolver | None = None,
                   caps: dict[str, list[ts.Node]] | None = None) -> TritonResult:
    """Triton kernels, helpers and launch sites of the Python tree ``root`` parsed from ``frame.src``.

    ``caps`` are the captures of :data:`Q_MAIN` on ``root`` when the caller already has them.
    """
    resolver = resolver or PythonResolver(root)
    bare: list[Kernel] = []
    items, trees = _collect(frame, root, caps, bare)
    names = {it.launch_name for it in items}
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
    for it in items:
        body = it.fn.child_by_field_name("body")
        if body is None:
            continue
        for f in captures(G, Q_CALLS, body).get("f", []):
            if node_text(f) != node_text(it.name):
                called_from_jit.add(node_text(f))
    out = TritonResult()
    for it in sorted(items, key=lambda j: j.frame.to_file(j.definition.start_byte)):
        frame, definition, name = it.frame, it.definition, it.launch_name
        start, end = definition.start_byte, it.end
        if name not in launches and name in called_from_jit:
            out.device_functions.append(DeviceFunction(name=node_text(it.name), start_line=frame.line(start),
                                                       end_line=frame.end_line(end), span=frame.span_of(start, end)))
            continue
        out.kernels.append(build_kernel(it, sorted(launches.get(name, []), key=lambda s: s.line)))
    for k in bare:
        k.launch_sites = sorted(launches.get(k.name, []), key=lambda s: s.line)
    out.kernels.extend(bare)
    return out


def jit_item(frame: Frame, definition: ts.Node, classes: list[str] | None | bool = False) -> _Jit | None:
    """The jit description of a ``decorated_definition`` node, or None when it is not ``@triton.jit``.

    ``classes`` are the enclosing class names (``None``: inside a function); by default they are
    read from the tree.
    """
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
    name = fn.child_by_field_name("name")
    if classes is False:
        classes = _tree_classes(definition)
    return _Jit(frame, definition, fn, name, decs, fn.end_byte,
                qualname=_qualify(classes if isinstance(classes, list) else None, node_text(name)))


def build_kernel(it: _Jit, launch_sites: list[LaunchSite]) -> Kernel:
    """Build (or take from the content cache) the Kernel of jit definition ``it``."""
    frame, definition, fn, name_node, decs = it.frame, it.definition, it.fn, it.name, it.decs
    name = node_text(name_node)
    start, end = definition.start_byte, it.end
    key = None
    if frame.linear:
        key = ("triton", frame.src[start:end], it.cut, it.qualname, it.binding, it.end < fn.end_byte)
        hit = kcache.get_kernel(key, frame.to_file(start), frame.line(start))
        if hit is not None:
            hit.launch_sites = launch_sites
            return hit
    params = _params(frame, fn.child_by_field_name("parameters"))
    attrs: dict[str, Any] = {"decorators": [" ".join(node_text(d).split()) for _, _, _, d in decs]}
    if it.binding is not None:
        attrs["jit_binding"] = it.binding
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
        incomplete=fn.has_error or it.end < fn.end_byte,
        text=frame.text(start, end),
        qualified_name=it.qualname,
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
