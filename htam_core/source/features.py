"""Syntactic kernel features (``KernelFeatures``) from tree-sitter queries.

CUDA: loops with constant trip counts, ``__shared__`` arrays, ``__syncthreads``, atomics, vector
types, ``__ldg``, math intrinsics, warp-shuffle reductions, grid-stride loops, 2-D indexing, and
global loads/stores through pointer parameters (which also sets ``Param.written``).
Triton: ``range``/``tl.static_range`` loops, ``tl.dot``, ``mask=`` arguments, reductions
(``tl.sum``/``max``/``min``/``argmax``/``reduce``), ``tl.load``/``tl.store``, atomics, math calls,
``tl.program_id(1)``. The vocabularies follow the CUDA C++ Programming Guide (math API,
warp shuffle, atomics) and ``triton.language``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import tree_sitter as ts

from htam_core.source.analysis.loops import c_for_header, count_iterations
from htam_core.source.analysis.macros import call_alias
from htam_core.source.analysis.triton_names import triton_names
from htam_core.source.frames import Frame
from htam_core.source.model import KernelFeatures, Loop, Param, SharedDecl, WorkSite
from htam_core.source.parsing import captures, node_text
from htam_core.source.resolve import const_eval, literal_value

Q_C_FEAT = """
(call_expression function: (_) @callee arguments: (argument_list) @cargs) @call
(for_statement) @for
(while_statement) @while
(do_statement) @do
(declaration) @decl
(field_expression argument: (identifier) field: (field_identifier)) @field
(type_identifier) @type
(assignment_expression left: (_) @lhs) @assign
(update_expression argument: (_) @upd)
(subscript_expression argument: (_) @sbase) @sub
(pointer_expression argument: (_) @pbase) @ptr
"""

VECTOR_TYPES = {
    f"{base}{n}" for base in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                              "ulonglong", "float", "double") for n in (1, 2, 3, 4)
} | {"half2", "__half2", "__nv_bfloat162", "nv_bfloat162", "__nv_fp8x2_e4m3", "__nv_fp8x4_e4m3"}
CUDA_MATH = {
    "expf", "exp", "exp2f", "exp10f", "expm1f", "logf", "log", "log2f", "log10f", "log1pf", "powf", "pow",
    "sqrtf", "sqrt", "rsqrtf", "rsqrt", "cbrtf", "tanhf", "tanh", "sinf", "cosf", "tanf", "sin", "cos",
    "erff", "erf", "erfcf", "fmaxf", "fminf", "fmax", "fmin", "fabsf", "fabs", "fmaf", "fma", "floorf",
    "ceilf", "roundf", "truncf", "sincosf", "normcdff", "__expf", "__exp10f", "__logf", "__log2f",
    "__log10f", "__powf", "__sinf", "__cosf", "__tanf", "__sincosf", "__fdividef", "__frcp_rn",
    "__fsqrt_rn", "__frsqrt_rn", "__fmaf_rn", "__fmul_rn", "__fadd_rn", "hexp", "h2exp", "hsqrt",
    "h2sqrt", "__hfma", "__hfma2", "__hmul", "__hmul2", "__hadd", "__hadd2", "tanh_approx",
}
CUDA_REDUCTIONS = {
    "__shfl_down_sync", "__shfl_xor_sync", "__shfl_up_sync", "__shfl_sync", "__reduce_add_sync",
    "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync",
    "Reduce", "Sum", "reduce",
}
CUDA_MMA = {"mma_sync", "wmma::mma_sync", "__hmma_m16n16k16_mma_f32f32", "mma"}
TYPE_BYTES = {
    "char": 1, "unsigned char": 1, "signed char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1, "short": 2,
    "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2, "__nv_bfloat16": 2,
    "nv_bfloat16": 2, "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
    "half2": 4, "__half2": 4, "__nv_bfloat162": 4, "long long": 8, "unsigned long long": 8, "int64_t": 8,
    "uint64_t": 8, "double": 8, "size_t": 8, "float2": 8, "int2": 8, "float4": 16, "int4": 16, "uint4": 16,
    "double2": 16, "float3": 12, "int3": 12,
}


def _callee_name(node: ts.Node) -> str:
    if node.type in ("identifier", "field_identifier"):
        return node_text(node)
    if node.type == "template_function":
        return _callee_name(node.child_by_field_name("name")) if node.child_by_field_name("name") else ""
    if node.type == "qualified_identifier":
        return " ".join(node_text(node).split())
    if node.type == "field_expression":
        f = node.child_by_field_name("field")
        return node_text(f) if f is not None else ""
    return ""


def _root_identifier(node: ts.Node | None) -> str | None:
    """First identifier of an address expression, skipping called names (``reinterpret_cast``)."""
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            return node_text(n)
        kids = list(n.children)
        if n.type in ("call_expression", "call"):
            fn = n.child_by_field_name("function")
            args = n.child_by_field_name("arguments")
            if fn is not None and fn.type in ("template_function", "identifier", "qualified_identifier"):
                kids = [args] if args is not None else []
        if n.type == "attribute":
            obj = n.child_by_field_name("object")
            kids = [obj] if obj is not None else []
        stack.extend(reversed([k for k in kids if k is not None]))
    return None


#: Type words that are not a struct's name (:func:`_struct_values`).
_NOT_STRUCT = frozenset({"const", "volatile", "struct", "class", "int", "unsigned", "signed", "long", "short",
                         "char", "float", "double", "bool", "size_t", "half", "__half", "__nv_bfloat16"})


def _struct_values(params: list[Param]) -> set[str]:
    """Names of the parameters that may be structs passed by value (one type name that is not a scalar type, no
    ``*``, ``&`` or template arguments): their pointer fields (``p.x``) are the kernel's buffers as well."""
    out = set()
    for p in params:
        typ = p.type or ""
        words = [w for w in typ.split() if w not in _NOT_STRUCT]
        if not p.is_pointer and not any(c in typ for c in "*&<") and len(words) == 1 and \
                not re.fullmatch(r"u?int\d+_t|\w+[1-4]", words[0]):
            out.add(p.name)
    return out


def _field_base(expr: ts.Node | None, structs: set[str]) -> str | None:
    """``p.x`` when ``expr`` (parentheses aside) is the field ``x`` of a struct parameter ``p`` in ``structs``."""
    while expr is not None and expr.type == "parenthesized_expression" and expr.named_child_count == 1:
        expr = expr.named_children[0]
    if expr is None or expr.type != "field_expression":
        return None
    arg = expr.child_by_field_name("argument")
    while arg is not None and arg.type == "field_expression":  # p.buf.data: a nested struct's field
        arg = arg.child_by_field_name("argument")
    if arg is None or arg.type != "identifier" or node_text(arg) not in structs:
        return None
    return "".join(node_text(expr).split())


def _resolve_alias(name: str | None, aliases: dict[str, str]) -> str | None:
    seen: set[str] = set()
    while name is not None and name in aliases and name not in seen:
        seen.add(name)
        name = aliases[name]
    return name


def _c_trip_count(loop: ts.Node, consts: dict[str, str]) -> int | None:
    """Constant trip count of a ``for`` loop whose header uses literals and ``consts`` (macro values)."""
    h = c_for_header(loop, node_text, lambda n: const_eval(n, consts))
    parts = [h.get(k) for k in ("start", "bound", "step")]
    if any(v is None or int(v) != v for v in parts) or h.get("cmp") is None or h.get("update") is None:
        return None
    return count_iterations(int(parts[0]), h["cmp"], int(parts[1]), h["update"], int(parts[2]))


def _in_range(n: ts.Node, rng: tuple[int, int]) -> bool:
    return rng[0] <= n.start_byte < rng[1]


def cuda_features(frame: Frame, node: ts.Node, params: list[Param], consts: dict[str, str],
                  rng: tuple[int, int]) -> KernelFeatures:
    """Features of the CUDA kernel body lying in local byte range ``rng`` under ``node``.

    ``params`` get ``written`` set for pointers stored through. ``consts`` maps macro names to
    values (used for trip counts and shared-memory sizes).
    """
    f = KernelFeatures()
    caps = captures("cuda", Q_C_FEAT, node, rng)
    pick = {k: [n for n in v if _in_range(n, rng)] for k, v in caps.items()}
    pointer_params = {p.name for p in params if p.is_pointer}
    aliases: dict[str, str] = {}
    stride_names: set[str] = set()
    for decl in pick.get("decl", []):
        quals = {node_text(c) for c in decl.children if c.type in ("type_qualifier", "storage_class_specifier")}
        for d in decl.children_by_field_name("declarator"):
            if "__shared__" in quals:
                f.shared_memory.append(_shared(d, decl, quals, consts))
                continue
            if d.type == "init_declarator":
                name_node = d.child_by_field_name("declarator")
                value = d.child_by_field_name("value")
                while name_node is not None and name_node.type in ("pointer_declarator", "reference_declarator"):
                    name_node = name_node.child_by_field_name("declarator")
                if name_node is not None and value is not None:
                    root = _root_identifier(value)
                    if root is not None and root != node_text(name_node):
                        aliases[node_text(name_node)] = root
                    if "gridDim" in node_text(value):
                        stride_names.add(node_text(name_node))

    def base_param(expr: ts.Node | None, structs: set[str] = _struct_values(params)) -> str | None:  # noqa: B008
        name = _resolve_alias(_root_identifier(expr), aliases)
        return name if name in pointer_params else _field_base(expr, structs)

    pointee = {p.name: _pointee_bytes(p.type) for p in params if p.is_pointer}

    def site(kind: str, node: ts.Node, param: str | None) -> None:
        f.work.append(WorkSite(kind, frame.to_file(node.start_byte), 1, pointee.get(param) if param else None))

    written: set[str] = set()
    store_nodes: set[int] = set()
    for key in ("lhs", "upd"):
        for lhs in pick.get(key, []):
            if lhs.type in ("subscript_expression", "pointer_expression", "field_expression"):
                target = lhs
                while target.type == "field_expression":
                    target = target.child_by_field_name("argument")
                    if target is None:
                        break
                if target is None or target.type not in ("subscript_expression", "pointer_expression"):
                    continue
                base = target.child_by_field_name("argument")
                if target.type == "pointer_expression" and not node_text(target).lstrip().startswith("*"):
                    continue
                p = base_param(base)
                if p is not None:
                    written.add(p)
                    f.stores += 1
                    site("store", target, p)
                    store_nodes.add(target.start_byte)
                    parent = lhs.parent
                    if parent is not None and parent.type == "assignment_expression" and \
                            node_text(parent.child_by_field_name("operator")) != "=":
                        f.loads += 1
                        site("load", target, p)
                    elif key == "upd":
                        f.loads += 1
                        site("load", target, p)
    for key in ("sub", "ptr"):
        for n in pick.get(key, []):
            if n.start_byte in store_nodes:
                continue
            if key == "ptr" and not node_text(n).lstrip().startswith("*"):
                continue
            if (p := base_param(n.child_by_field_name("argument"))) is not None:
                f.loads += 1
                site("load", n, p)
    for call in sorted(pick.get("call", []), key=lambda n: n.start_byte):  # source order, whatever the tree
        callee = call.child_by_field_name("function")
        name = _callee_name(callee) if callee is not None else ""
        name = (call_alias(call) or name) if callee is not None and callee.type == "identifier" else name
        short = name.split("::")[-1]
        args = call.child_by_field_name("arguments")
        if short.startswith("__syncthreads"):
            f.syncthreads += 1
        elif short.startswith("atomic"):
            if short not in f.atomics:
                f.atomics.append(short)
            first = args.named_children[0] if args is not None and args.named_children else None
            p = base_param(first)
            if p is not None:
                written.add(p)
                site("load", call, p)
                site("store", call, p)
                f.work.append(WorkSite("flop", frame.to_file(call.start_byte), 1))
        elif short in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"):
            f.uses_ldg = True
            f.loads += 1
            first = args.named_children[0] if args is not None and args.named_children else None
            site("load", call, base_param(first))
        if short in CUDA_MATH and short not in f.math_calls:
            f.math_calls.append(short)
        if short in CUDA_REDUCTIONS and short not in f.reductions:
            f.reductions.append(short)
        if name in CUDA_MMA or short == "mma_sync":
            f.uses_dot = True
    for loop_key, kind in (("for", "for"), ("while", "while"), ("do", "do")):
        for loop in pick.get(loop_key, []):
            prev = loop.prev_named_sibling
            pragma = prev is not None and prev.type == "preproc_call" and \
                node_text(prev).replace(" ", "").startswith("#pragmaunroll")
            trip = _c_trip_count(loop, consts) if kind == "for" else None
            f.loops.append(Loop(line=frame.line(loop.start_byte), kind=kind, trip_count=trip,
                                span=frame.span(loop), has_unroll_pragma=pragma))
            if kind == "for":
                upd = loop.child_by_field_name("update")
                ut = node_text(upd)
                if "gridDim" in ut or any(s in ut.replace("+=", " ").split() for s in stride_names):
                    f.has_grid_stride_loop = True
    f.loops.sort(key=lambda lp: lp.line)
    for fe in pick.get("field", []):
        obj, fld = fe.child_by_field_name("argument"), fe.child_by_field_name("field")
        if node_text(obj) in ("threadIdx", "blockIdx") and node_text(fld) in ("y", "z"):
            f.uses_2d_index = True
    types = [node_text(t) for t in pick.get("type", [])]
    types += [w for p in params for w in (p.type or "").replace("*", " ").split()]
    for t in types:
        if t in VECTOR_TYPES and t not in f.vector_types:
            f.vector_types.append(t)
    for p in params:
        p.written = p.name in written
    _cuda_flops(frame, pick, params, f)
    f.work.sort(key=lambda w: w.byte)
    return f


#: Floating-point scalar and vector types: values of these types are data, not indices.
FLOAT_TYPES = {"float", "double", "half", "__half", "__nv_bfloat16", "nv_bfloat16", "half2", "__half2",
               "__nv_bfloat162", "nv_bfloat162", "float2", "float3", "float4", "double2"}
_FMA_CALLS = {"fmaf", "fma", "__fmaf_rn", "__hfma", "__hfma2"}


def _pointee_bytes(type_text: str | None) -> int | None:
    words = [w for w in (type_text or "").replace("*", " ").split()
             if w not in ("const", "__restrict__", "__restrict", "restrict", "volatile")]
    return TYPE_BYTES.get(" ".join(words))


def _data_ops(expr: ts.Node | None) -> int:
    """Arithmetic operations in ``expr`` on values (index expressions inside ``[]`` are skipped)."""
    count = 0
    stack = [expr] if expr is not None else []
    while stack:
        n = stack.pop()
        if n.type == "subscript_expression":
            arg = n.child_by_field_name("argument")
            stack.extend([arg] if arg is not None else [])
            continue
        if n.type == "binary_expression" and node_text(n.child_by_field_name("operator")) in ("+", "-", "*", "/"):
            count += 1
        elif n.type == "call_expression":
            name = _callee_name(n.child_by_field_name("function")).split("::")[-1]
            count += 2 if name in _FMA_CALLS else (1 if name in CUDA_MATH else 0)
        stack.extend(n.named_children)
    return count


def _cuda_flops(frame: Frame, pick: dict[str, list[ts.Node]], params: list[Param], f: KernelFeatures) -> None:
    """FLOP sites: arithmetic in declarations of floating variables and in assignments to floating
    variables or through floating pointers (a heuristic over syntax: index arithmetic is integer)."""
    floats = {p.name for p in params if not p.is_pointer and (p.type or "").split()[-1:] and
              (p.type or "").replace("const", "").split()[-1] in FLOAT_TYPES}
    float_ptrs = {p.name for p in params if p.is_pointer and _pointee_bytes(p.type) is not None and
                  any(w in FLOAT_TYPES for w in (p.type or "").replace("*", " ").split())}
    for decl in pick.get("decl", []):
        ty = " ".join(node_text(decl.child_by_field_name("type")).split())
        if ty not in FLOAT_TYPES:
            continue
        for d in decl.children_by_field_name("declarator"):
            name = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            while name is not None and name.type in ("pointer_declarator", "array_declarator",
                                                      "reference_declarator"):
                name = name.child_by_field_name("declarator")
            if name is not None:
                floats.add(node_text(name))
            if d.type == "init_declarator" and (n := _data_ops(d.child_by_field_name("value"))):
                f.work.append(WorkSite("flop", frame.to_file(d.start_byte), n))
    for a in pick.get("assign", []):
        lhs = a.child_by_field_name("left")
        root = _root_identifier(lhs)
        if root not in floats and root not in float_ptrs:
            continue
        n = _data_ops(a.child_by_field_name("right"))
        if node_text(a.child_by_field_name("operator")) in ("+=", "-=", "*=", "/="):
            n += 1
        if n:
            f.work.append(WorkSite("flop", frame.to_file(a.start_byte), n))


def _shared(d: ts.Node, decl: ts.Node, quals: set[str], consts: dict[str, str]) -> SharedDecl:
    dims: list[str] = []
    dim_nodes: list[ts.Node | None] = []
    cur = d
    if cur.type == "init_declarator":
        cur = cur.child_by_field_name("declarator")
    while cur is not None and cur.type == "array_declarator":
        size = cur.child_by_field_name("size")
        dims.insert(0, node_text(size) if size is not None else "")
        dim_nodes.insert(0, size)
        cur = cur.child_by_field_name("declarator")
    name = node_text(cur) if cur is not None else ""
    type_text = " ".join(node_text(decl.child_by_field_name("type")).split())
    dynamic = "extern" in quals
    nbytes: int | None = None
    if dims and not dynamic and type_text in TYPE_BYTES:
        total = TYPE_BYTES[type_text]
        for dim_node in dim_nodes:
            v = const_eval(dim_node, consts)
            if not isinstance(v, int):
                total = -1
                break
            total *= v
        nbytes = total if total >= 0 else None
    if dynamic and dims == [""]:
        dims = []
    return SharedDecl(name=name, type=type_text, dims=dims, bytes=nbytes, dynamic=dynamic)


# --------------------------------------------------------------------------------------------
# Triton

Q_PY_FEAT = """
(call function: (_) @callee arguments: (argument_list) @cargs) @call
(for_statement right: (_)) @for
(while_statement) @while
(keyword_argument name: (identifier) @kw)
(assignment left: (identifier) right: (_)) @assign
"""
TL_PREFIXES = ("tl.", "triton.language.", "tl.math.", "libdevice.", "tl.extra.cuda.libdevice.")
TL_REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum"}
TL_MATH = {"exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sigmoid", "erf", "tanh", "sin", "cos",
           "fma", "abs", "fdiv", "div_rn", "softmax", "cdiv", "umulhi", "pow", "fast_expf", "fast_dividef"}


def triton_features(frame: Frame, fn: ts.Node, params: list[Param]) -> KernelFeatures:
    """Features of the Triton kernel ``fn`` (a ``function_definition``); sets ``Param.written``
    for ``tl.store``/atomic bases and ``Param.is_pointer`` for ``tl.load``/``tl.store`` bases. Calls are read in
    the analysis layer's normal form (:mod:`htam_core.source.analysis.triton_names`: ``language.sum`` is
    ``tl.sum`` in a file that imports ``triton.language as language``)."""
    f = KernelFeatures()
    body = fn.child_by_field_name("body")
    if body is None:
        return f
    root = fn
    while root.parent is not None:
        root = root.parent
    canonical = triton_names(root).canonical
    caps = captures("python", Q_PY_FEAT, body)
    aliases: dict[str, str] = {}
    for assign in caps.get("assign", []):
        name, value = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        root = _root_identifier(value)
        if root is not None and root != node_text(name):
            aliases.setdefault(node_text(name), root)
    names = {p.name: p for p in params}
    f.masks = sum(1 for kw in caps.get("kw", []) if node_text(kw) == "mask")
    for call in sorted(caps.get("call", []), key=lambda n: n.start_byte):  # source order
        callee = canonical(node_text(call.child_by_field_name("function")))
        short = callee.rsplit(".", 1)[-1]
        is_tl = callee.startswith(TL_PREFIXES)
        args = call.child_by_field_name("arguments")
        first = next((a for a in (args.named_children if args is not None else [])
                      if a.type not in ("keyword_argument", "comment")), None)
        if is_tl and short in ("load", "store") or (is_tl and short.startswith("atomic_")):
            base = _resolve_alias(_root_identifier(first), aliases)
            if base in names:
                names[base].is_pointer = True
                if short != "load":
                    names[base].written = True
            at = frame.to_file(call.start_byte)
            if short == "load":
                f.loads += 1
                f.work.append(WorkSite("load", at))
            elif short == "store":
                f.stores += 1
                f.work.append(WorkSite("store", at))
            else:
                f.work += [WorkSite("load", at), WorkSite("store", at), WorkSite("flop", at)]
                if short not in f.atomics:
                    f.atomics.append(short)
        if not is_tl:
            continue
        if short == "dot" or short == "dot_scaled":
            f.uses_dot = True
            f.work.append(WorkSite("dot", frame.to_file(call.start_byte)))
        elif short in TL_REDUCTIONS and short not in f.reductions:
            f.reductions.append(short)
        elif short in TL_MATH and short not in f.math_calls:
            f.math_calls.append(short)
        elif short == "debug_barrier":
            f.syncthreads += 1
        elif short == "program_id" and args is not None:
            for a in args.named_children:
                v = a.child_by_field_name("value") if a.type == "keyword_argument" else a
                if v is not None and literal_value(node_text(v)) in (1, 2):
                    f.uses_2d_index = True
    for loop in caps.get("for", []):
        it = loop.child_by_field_name("right")
        kind, trip = "for", None
        if it.type == "call":
            callee = node_text(it.child_by_field_name("function"))
            short = callee.rsplit(".", 1)[-1]
            if short in ("range", "static_range"):
                kind = short
                a = it.child_by_field_name("arguments")
                vals = [literal_value(node_text(x)) for x in (a.named_children if a is not None else [])
                        if x.type != "keyword_argument"]
                if vals and all(isinstance(v, int) for v in vals) and len(vals) <= 3:
                    start, stop, step = ([0, *vals, 1] if len(vals) == 1 else [*vals, 1])[:3]
                    trip = count_iterations(start, "<" if step > 0 else ">", stop, "+", step) if step else None
        f.loops.append(Loop(line=frame.line(loop.start_byte), kind=kind, trip_count=trip, span=frame.span(loop)))
    for loop in caps.get("while", []):
        f.loops.append(Loop(line=frame.line(loop.start_byte), kind="while", span=frame.span(loop)))
    f.loops.sort(key=lambda lp: lp.line)
    _triton_flops(frame, body, f, canonical)
    f.work.sort(key=lambda w: w.byte)
    return f


_TL_DATA_SOURCES = {"load", "dot", "zeros", "full", "zeros_like", "full_like"}


def _tl_short(call: ts.Node, canonical: Callable[[str], str]) -> str | None:
    """The ``tl.*`` function a call makes (``"load"``), reading the callee through ``canonical``; else ``None``."""
    callee = canonical(node_text(call.child_by_field_name("function")))
    return callee.rsplit(".", 1)[-1] if callee.startswith(TL_PREFIXES) else None


def _py_ops(expr: ts.Node | None, tainted: set[str], canonical: Callable[[str], str]) -> tuple[int, bool]:
    """(arithmetic operations on values, whether ``expr`` reads data) of a Triton expression.

    Pointer and mask arguments of ``tl.load`` and subscripts (``x[:, None]``) are not counted."""
    ops, data = 0, False
    stack = [expr] if expr is not None else []
    while stack:
        n = stack.pop()
        if n.type == "identifier" and node_text(n) in tainted:
            data = True
        elif n.type == "binary_operator" and node_text(n.child_by_field_name("operator")) in ("+", "-", "*", "/"):
            ops += 1
        elif n.type == "call":
            short = _tl_short(n, canonical)
            if short in _TL_DATA_SOURCES:
                data = True
            if short == "load":
                continue
            if short in TL_MATH or short in TL_REDUCTIONS:
                ops += 1
        elif n.type == "subscript":
            v = n.child_by_field_name("value")
            stack.extend([v] if v is not None else [])
            continue
        stack.extend(n.named_children)
    return ops, data


def _triton_flops(frame: Frame, body: ts.Node, f: KernelFeatures, canonical: Callable[[str], str]) -> None:
    """FLOP sites of a Triton kernel: arithmetic in statements whose value derives from loaded data (a
    name assigned from ``tl.load``/``tl.dot``/``tl.zeros`` or from such a name), and in stored values.
    Counts are per element of a block (a block op on ``BLOCK`` elements counts as one per element)."""
    tainted: set[str] = set()
    stack = [body]
    nodes: list[ts.Node] = []
    while stack:
        n = stack.pop()
        if n.type in ("assignment", "augmented_assignment") or (n.type == "call" and _tl_short(n, canonical) == "store"):
            nodes.append(n)
        if n.type not in ("function_definition", "lambda"):
            stack.extend(n.named_children)
    for n in sorted(nodes, key=lambda x: x.start_byte):
        if n.type == "call":
            args = n.child_by_field_name("arguments")
            pos = [a for a in (args.named_children if args is not None else []) if a.type != "keyword_argument"]
            kw = {node_text(a.child_by_field_name("name")): a.child_by_field_name("value")
                  for a in (args.named_children if args is not None else []) if a.type == "keyword_argument"}
            value = pos[1] if len(pos) > 1 else kw.get("value")
            ops, _ = _py_ops(value, tainted, canonical)
        else:
            left = n.child_by_field_name("left")
            ops, data = _py_ops(n.child_by_field_name("right"), tainted, canonical)
            names = {node_text(x) for x in ([left] if left is not None else []) if x.type == "identifier"}
            if n.type == "augmented_assignment":
                data = data or bool(names & tainted)
                ops += 1 if data and node_text(n.child_by_field_name("operator")) in ("+=", "-=", "*=", "/=") else 0
            if not data:
                continue
            tainted |= names
        if ops:
            f.work.append(WorkSite("flop", frame.to_file(n.start_byte), ops))
