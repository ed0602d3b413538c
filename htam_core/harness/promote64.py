"""The float64 twin of a CUDA start: its device code with ``float`` promoted to ``double``, the reference of an
output the start fills with a long float32 sum (:mod:`htam_core.verify.long_sum_rule`).

The twin keeps the file's device code (the ``__global__`` and ``__device__`` functions, the macros, types and
declarations at file scope) and drops its host functions (``main()`` and the other functions with neither
qualifier): a direct launch of the harness (an inferred ``main()`` or a ``grid``/``block`` in ``htam.toml``) runs
the kernel from the harness, never through the file's host code, so nothing the promotion would change there runs.
In what is kept:

* every ``float`` type becomes ``double`` (declarations, parameters, casts, ``sizeof(float)``, a ``typedef float
  real;``), so the harness runs it with its float32 buffers and scalars given as float64 of the same values;
* a float literal loses its suffix (``0.5f`` -> ``0.5``, ``1e-6F`` -> ``1e-6``);
* a single-precision math function becomes its double one (``sqrtf`` -> ``sqrt``, ``__expf`` -> ``exp``,
  ``fmaxf`` -> ``fmax``, ``__fmul_rn`` -> ``__dmul_rn``), ``__fdividef(a, b)`` a division.

When the twin would not compute the same function in double, it is refused, with one line saying why, and the
start stays the reference (:func:`float64_twin`): half or bfloat16 values, float vector types (``float4``: their
loads and alignment change), textures and surfaces, inline PTX, float bit casts (``__float_as_int``), dynamic
shared memory (``extern __shared__``: the launch gives its size in bytes of floats), and a template kernel (its
instantiations are in host code).

Idea source: mixed-precision verification, where a kernel's float32 results are checked against the same
algorithm evaluated in a wider type (Higham, "Accuracy and Stability of Numerical Algorithms", ch. 1 and 4).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

from htam_core.source.analysis.syntax import file_scope_nodes, parse_cuda, walk

#: Single-precision math functions and their double-precision names.
FLOAT_MATH: dict[str, str] = {
    **{f"{n}f": n for n in (
        "sqrt", "rsqrt", "cbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "sin",
        "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf",
        "erfc", "fabs", "fmax", "fmin", "fma", "fmod", "floor", "ceil", "round", "trunc", "rint", "nearbyint",
        "copysign", "hypot", "remainder", "lround", "llround", "lrint", "ldexp", "frexp", "normcdf", "sincos")},
    "__expf": "exp", "__exp10f": "exp10", "__logf": "log", "__log2f": "log2", "__log10f": "log10",
    "__powf": "pow", "__sinf": "sin", "__cosf": "cos", "__tanf": "tan", "__sincosf": "sincos",
    "__fmaf_rn": "__fma_rn", "__fmaf_rz": "__fma_rz", "__fmaf_ru": "__fma_ru", "__fmaf_rd": "__fma_rd",
    "__fadd_rn": "__dadd_rn", "__fsub_rn": "__dsub_rn", "__fmul_rn": "__dmul_rn", "__fdiv_rn": "__ddiv_rn",
    "__fsqrt_rn": "__dsqrt_rn", "__frcp_rn": "__drcp_rn", "__frsqrt_rn": "rsqrt",
    "__float2int_rn": "__double2int_rn", "__float2int_rz": "__double2int_rz",
    "__float2int_ru": "__double2int_ru", "__float2int_rd": "__double2int_rd",
    "__fdividef": "htam_fdividef64",
}
#: Names whose use means the twin would not compute the same function in double: name -> what it is.
UNPROMOTABLE: dict[str, str] = {
    **dict.fromkeys(("half", "__half", "half2", "__half2", "__nv_bfloat16", "__nv_bfloat162", "__float2half",
                     "__half2float", "__float2bfloat16"), "half or bfloat16 values"),
    **dict.fromkeys(("float1", "float2", "float3", "float4", "make_float2", "make_float3", "make_float4"),
                    "float vector types (their loads and alignment change in double)"),
    **dict.fromkeys(("texture", "cudaTextureObject_t", "cudaSurfaceObject_t", "tex1Dfetch", "tex1D", "tex2D",
                     "tex3D", "surf2Dread", "surf2Dwrite"), "textures or surfaces"),
    **dict.fromkeys(("__float_as_int", "__int_as_float", "__float_as_uint", "__uint_as_float"),
                    "float bit casts"),
    **dict.fromkeys(("__saturatef", "wmma", "__int2float_rn"), "a single-precision intrinsic with no double twin"),
}
#: A helper the twin defines for ``__fdividef``.
_PRELUDE = "__device__ __forceinline__ double htam_fdividef64(double a, double b) { return a / b; }\n"
_FLOAT_LITERAL = re.compile(r"^[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][+-]?\d+)?[fF]$")
_ASM = re.compile(rb"\basm\b|\b__asm__\b")
_DYNAMIC_SHARED = re.compile(rb"\bextern\s+__shared__\b|\b__shared__\s+extern\b")


@dataclass(frozen=True)
class Float64Twin:
    """The float64 twin of a start, or why there is none.

    Attributes:
        text: the twin's source (``None`` when refused).
        reason: when refused, one line saying why (``"the float64 reference is not built: the kernel uses half or
            bfloat16 values (line 7)"``); ``""`` otherwise.
    """

    text: str | None
    reason: str = ""


def _is_device_function(fn: ts.Node, src: bytes) -> bool:
    """``fn`` carries ``__global__`` or ``__device__`` (a ``__host__ __device__`` function too)."""
    decl = fn.child_by_field_name("declarator")
    head = src[fn.start_byte:decl.start_byte if decl is not None else fn.end_byte]
    return b"__global__" in head or b"__device__" in head


def _top_functions(root: ts.Node) -> list[ts.Node]:
    """The function definitions at file scope (:func:`~htam_core.source.analysis.syntax.file_scope_nodes`), not
    those nested in other functions, in source order."""
    return sorted(file_scope_nodes(root, "function_definition"), key=lambda f: f.start_byte)


def _name_of(fn: ts.Node, src: bytes) -> str:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    name = d.child_by_field_name("declarator") if d is not None else None
    return src[name.start_byte:name.end_byte].decode() if name is not None else ""


def _refusal(root: ts.Node, src: bytes, kept: list[ts.Node], kernel: str) -> str:
    """Why the device code ``kept`` has no float64 twin (module docstring), ``""`` when it has one."""
    k = next((f for f in kept if _name_of(f, src) == kernel), None)
    if k is None:
        return f"the kernel {kernel} is not defined in the file's device code"
    if k.parent is not None and k.parent.type == "template_declaration":
        return f"{kernel} is a template kernel (its instantiations are in host code)"
    for f in kept:
        text = src[f.start_byte:f.end_byte]
        line = f.start_point[0] + 1
        if _ASM.search(text):
            return f"the device code holds inline PTX (asm), near line {line}"
        if _DYNAMIC_SHARED.search(text):
            return f"the device code uses dynamic shared memory (its size is given in bytes of floats), near line {line}"
    hosts = _hosts(root, src)
    for n in walk(root):
        if n.type in ("identifier", "type_identifier", "primitive_type", "field_identifier", "preproc_arg"):
            names = re.findall(r"[A-Za-z_]\w*", src[n.start_byte:n.end_byte].decode("utf-8", "replace"))
            what = next((UNPROMOTABLE[w] for w in names if w in UNPROMOTABLE), None)
            if what and not any(h.start_byte <= n.start_byte < h.end_byte for h in hosts):
                return f"the kernel uses {what} (line {n.start_point[0] + 1})"
    return ""


def _hosts(root: ts.Node, src: bytes) -> list[ts.Node]:
    return [f for f in _top_functions(root) if not _is_device_function(f, src)]


_TOKEN = re.compile(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fF]?\b|[A-Za-z_]\w*(?:\s*\()?|\S")


def _macro_token(m: re.Match[str]) -> str:
    tok = m.group(0)
    name = tok.rstrip("( \t")
    if tok.endswith("(") and name in FLOAT_MATH:
        return FLOAT_MATH[name] + tok[len(name):]
    if name == "float" and not tok.endswith("("):
        return "double"
    return tok[:-1] if _FLOAT_LITERAL.match(tok) else tok


def promote_macro(text: str) -> str:
    """A macro's replacement text (``1e-6f``, ``sqrtf((x) * 0.5f)``, ``(float)(v)``) promoted as the device code
    is: the preprocessor gives it no tree, so it is read token by token."""
    return _TOKEN.sub(_macro_token, text)


def _edit(n: ts.Node, src: bytes) -> bytes | None:
    """The promoted text of ``n``, or ``None`` when it stays."""
    text = src[n.start_byte:n.end_byte].decode("utf-8", "replace")
    if n.type == "preproc_arg":
        new = promote_macro(text)
        return new.encode() if new != text else None
    if n.type == "primitive_type" and text == "float":
        return b"double"
    if n.type == "number_literal" and _FLOAT_LITERAL.match(text):
        return text[:-1].encode()
    if n.type == "identifier" and text in FLOAT_MATH and n.parent is not None and n.parent.type == "call_expression" \
            and n.parent.child_by_field_name("function") == n:
        return FLOAT_MATH[text].encode()
    return None


def float64_twin(text: str, kernel: str) -> Float64Twin:
    """The float64 twin of the CUDA file ``text`` for its kernel ``kernel`` (module docstring).

    Args:
        text: the start's ``.cu`` source.
        kernel: the kernel the harness launches.

    Returns:
        A :class:`Float64Twin`: its text, or ``text=None`` and one line saying why the float64 reference is not
        built (the start then stays the reference). Never raises for odd code.

    Idea source: checking a float32 kernel against the same algorithm run in double (Higham, ch. 4).
    """
    src = text.encode("utf-8")
    root = parse_cuda(src).root_node
    hosts = _hosts(root, src)
    kept = [f for f in _top_functions(root) if f not in hosts]
    why = _refusal(root, src, kept, kernel)
    if why:
        return Float64Twin(None, f"the float64 reference is not built: {why}; the start stays the reference")
    edits = [(h.start_byte, h.end_byte, b"") for h in hosts]
    for n in walk(root):
        new = _edit(n, src)
        if new is not None and not any(h.start_byte <= n.start_byte < h.end_byte for h in hosts):
            edits.append((n.start_byte, n.end_byte, new))
    out = src
    for s, e, new in sorted(edits, reverse=True):
        out = out[:s] + new + out[e:]
    return Float64Twin(_PRELUDE + out.decode("utf-8", "replace"))
