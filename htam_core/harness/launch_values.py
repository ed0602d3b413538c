"""The Triton constexpr values a harness launches a kernel with, read without running anything.

The static profile compiles a Triton kernel ahead of time, so it must pick a value for every
``tl.constexpr`` parameter. A literal at the launch site says it; a launch through a launcher parameter
(``k[grid](x, BLOCK=block)`` in ``def add(x, block=1024)``) does not, and the harness does: its recorded or
written inputs bind ``block`` (``{ name = "block", value = 512 }``), and a direct-launch harness gives the
constexprs in ``kwargs``. :func:`recorded_constexprs` reads those values from the harness and the file's
syntax tree (:mod:`ast`), so that the static profile compiles the launch configuration the harness runs,
not a fallback guess.

A launch through a launcher local (``BLOCK = triton.next_power_of_2(n_cols)`` after ``n_rows, n_cols =
x.shape``) is followed too: the launcher's statements before the launch bind its locals, a tensor input's
``.shape`` / ``.shape[i]`` / ``.size(i)`` is the harness shape evaluated over the first size set, and
``triton.next_power_of_2``, ``triton.cdiv``, ``min`` and ``max`` are evaluated. Only literals, size symbols
and arithmetic over them are evaluated (in this process, no ``eval``): an expression that needs more is left
to the other sources of a value (the static profile's fallback).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htam_core.harness.base import Harness
from htam_core.harness.foreign import launcher_def
from htam_core.types.constexpr import UNKNOWN, is_constexpr_value, read_constexpr

__all__ = ["LAUNCH_OPTIONS", "TRITON_POINTER_TYPES", "launch_value", "recorded_constexprs", "recorded_kernel_args",
           "recorded_pointer_dtypes"]

#: Launch options a Triton launch passes besides the constexprs (part of its launch configuration).
LAUNCH_OPTIONS = ("num_warps", "num_stages")

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift}


def _shape(node: ast.AST, env: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The shape of ``x.shape`` / ``x.size()`` for a tensor ``x`` whose shape ``env`` holds (as ``"x.shape"``)."""
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "size":
        node = ast.Attribute(value=node.func.value, attr="shape")
    if isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name):
        v = env.get(f"{node.value.id}.shape")
        return v if isinstance(v, tuple) else None
    return None


def _dim(shape: tuple[Any, ...] | None, index: Any) -> Any:
    if shape is None or not isinstance(index, int) or isinstance(index, bool) or not -len(shape) <= index < len(shape):
        return None
    return shape[index]


def _call(node: ast.Call, env: Mapping[str, Any]) -> Any:
    """``next_power_of_2(a)``, ``cdiv(a, b)``, ``min``/``max`` and ``x.size(i)`` over ``env``, or ``None``."""
    name = ast.unparse(node.func).rsplit(".", 1)[-1]
    if name == "size" and isinstance(node.func, ast.Attribute) and len(node.args) == 1:
        return _dim(_shape(ast.Attribute(value=node.func.value, attr="shape"), env), _number(node.args[0], env))
    args = [_number(a, env) for a in node.args]
    if node.keywords or any(a is None or isinstance(a, bool) for a in args):
        return None
    if name == "next_power_of_2" and len(args) == 1 and isinstance(args[0], int) and args[0] >= 0:
        return 1 if args[0] <= 1 else 1 << (args[0] - 1).bit_length()
    if name == "cdiv" and len(args) == 2 and args[1]:
        return -(-args[0] // args[1])
    if name in ("min", "max") and len(args) >= 2:
        return (min if name == "min" else max)(args)
    return None


def _number(node: ast.AST, env: Mapping[str, Any]) -> Any:
    """The value of a literal / name / arithmetic / shape / size-helper expression over ``env``, or ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | bool):
        return node.value
    if isinstance(node, ast.Name):
        v = env.get(node.id)
        return v if isinstance(v, int | float | bool) else None
    if isinstance(node, ast.Subscript):
        return _dim(_shape(node.value, env), _number(node.slice, env))
    if isinstance(node, ast.Call):
        return _call(node, env)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _number(node.operand, env)
        return -v if v is not None else None
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _number(node.left, env), _number(node.right, env)
        if a is None or b is None:
            return None
        try:
            return _BINOPS[type(node.op)](a, b)
        except (ArithmeticError, ValueError, OverflowError):
            return None
    return None


def _const(node: ast.AST, env: Mapping[str, Any]) -> Any:
    """The value of a constexpr expression over ``env``: any literal Triton takes for a constexpr (a number, a
    bool, ``None``, a string, a dtype ``tl.float16``: :func:`htam_core.types.constexpr.read_constexpr`), a name
    bound to one, ``t is None`` / ``t is not None`` of a tensor input or a bound name (``HAS_BIAS=bias is not
    None``), else what :func:`_number` evaluates; :data:`~htam_core.types.constexpr.UNKNOWN` when it needs more."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Is | ast.IsNot) \
            and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None:
        left = node.left
        if isinstance(left, ast.Name) and f"{left.id}.shape" in env:
            is_none = False  # a tensor input
        elif (v := _const(left, env)) is not UNKNOWN:
            is_none = v is None
        else:
            return UNKNOWN
        return is_none == isinstance(node.ops[0], ast.Is)
    if isinstance(node, ast.Name) and node.id in env and is_constexpr_value(env[node.id]):
        return env[node.id]
    v = read_constexpr(ast.unparse(node)) if isinstance(node, ast.Constant | ast.Attribute) else UNKNOWN
    if v is UNKNOWN and (v := _number(node, env)) is None:
        return UNKNOWN
    return v


def launch_value(expr: Any, env: Mapping[str, Any]) -> Any:
    """A launch value (a number, or a Python expression string over ``env``: literals, names, arithmetic,
    ``x.shape[i]`` of a tensor whose shape ``env`` holds as ``"x.shape"``, ``triton.next_power_of_2``,
    ``triton.cdiv``, ``min``, ``max``) as a number, or ``None`` when it needs more. Evaluated on the syntax
    tree (:mod:`ast`), never with ``eval``; the one evaluator of launch expressions (the static roofline's
    launch-site values use it too)."""
    return _value(expr, env)


def _value(expr: Any, env: Mapping[str, Any]) -> Any:
    """A harness value (a number, or an expression string over ``env``) as a number, or ``None``."""
    if isinstance(expr, int | float | bool):
        return expr
    if not isinstance(expr, str):
        return None
    try:
        return _number(ast.parse(expr.strip(), mode="eval").body, env)
    except (SyntaxError, ValueError, RecursionError):
        return None


#: Names a direct launch's ``kwargs`` expression may read besides the sizes and inputs (the runner's namespace).
_KWARG_MODULES = frozenset({"triton", "tl", "torch", "math", "cdiv"})


def _kwarg_value(v: Any, env: Mapping[str, Any]) -> Any:
    """A direct launch's ``kwargs`` value as the runner passes it (:func:`htam_core.harness.runner.launch_kwargs`):
    a string that is an expression over the sizes, inputs and modules, or over no name, is evaluated (a number,
    ``"128 * 2"``, a dtype ``"tl.float16"``, a quoted ``"'silu'"``), any other string is passed as it is
    (``"silu"``), a number as it is;
    :data:`~htam_core.types.constexpr.UNKNOWN` when the expression needs more than :func:`_const` reads."""
    if not isinstance(v, str):
        return v if is_constexpr_value(v) else UNKNOWN
    try:
        tree = ast.parse(v, mode="eval").body
    except SyntaxError:
        return v
    roots = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    if not roots <= {k for k in env if "." not in k} | _KWARG_MODULES:
        return v
    return _const(tree, env)


def _call_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    """The positional parameters a call of launcher ``fn`` binds the harness inputs to (``cls`` of a
    ``@classmethod`` left out: the class binds it)."""
    params = [*fn.args.posonlyargs, *fn.args.args]
    return params[1:] if params and any(ast.unparse(d) == "classmethod" for d in fn.decorator_list) else params


def _launcher_bindings(h: Harness, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                       sizes: Mapping[str, Any]) -> dict[str, Any]:
    """What each launcher parameter is bound to when the harness calls it with its inputs in order: a
    scalar input's value, else the parameter's literal default."""
    params = _call_params(fn)
    defaults = dict(zip([p.arg for p in params][len(params) - len(fn.args.defaults):], fn.args.defaults,
                        strict=True))
    defaults.update({p.arg: d for p, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)
                     if d is not None})
    env: dict[str, Any] = dict(sizes)
    out: dict[str, Any] = {}
    for i, p in enumerate(params):
        v: Any = UNKNOWN
        if i < len(h.inputs):
            spec = h.inputs[i]
            if spec.is_scalar and (n := _value(spec.value, env)) is not None:
                env[spec.name] = v = n
            if not spec.is_scalar:  # a tensor input: its shape over the size set, for the launcher's locals
                out[f"{p.arg}.shape"] = tuple(_value(d, sizes) for d in spec.shape or ())
        elif p.arg in defaults:  # any constexpr literal: 1024, "silu", None, tl.float16
            v = _const(defaults[p.arg], env)
        if v is not UNKNOWN:
            out[p.arg] = v
    for name, d in defaults.items():
        if name not in out and name not in [p.arg for p in params[:len(h.inputs)]]:
            v = _const(d, env)
            if v is not UNKNOWN:
                out[name] = v
    return out


def _bind_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef, before: int, env: dict[str, Any]) -> None:
    """Bind the launcher's locals assigned by its top-level statements before line ``before`` (``n_rows, n_cols
    = x.shape``, ``BLOCK = triton.next_power_of_2(n_cols)``) in ``env``; a local whose value is unknown is
    removed, so that an older binding never stands for it."""
    def bind(target: ast.AST, value: Any) -> None:
        if isinstance(target, ast.Name):
            if value is not UNKNOWN and is_constexpr_value(value):
                env[target.id] = value
            else:
                env.pop(target.id, None)
        elif isinstance(target, ast.Tuple | ast.List):
            values = value if isinstance(value, tuple) and len(value) == len(target.elts) else (None,) * len(target.elts)
            for t, v in zip(target.elts, values, strict=True):
                bind(t, v)

    for st in fn.body:
        if st.lineno >= before:
            break
        if isinstance(st, ast.Assign):
            v = st.value
            value = _shape(v, env) or (tuple(_number(e, env) for e in v.elts) if isinstance(v, ast.Tuple)
                                       else _const(v, env))
            for target in st.targets:
                bind(target, value)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            bind(st.target, _const(st.value, env))


def recorded_constexprs(h: Harness | None, text: str | None, kernel: Any) -> dict[str, Any]:
    """The constexpr values of ``kernel`` that the harness ``h`` launches it with.

    Args:
        h: the kernel's harness (a ``spec`` or ``inferred`` one; others give ``{}``).
        text: the kernel file's Python text (the launcher is read from it).
        kernel: the :class:`htam_core.source.model.Kernel` (Triton), with its parameters and launch sites.

    Returns:
        ``{name: value}`` for the constexpr parameters (and ``num_warps``/``num_stages``) the harness
        determines: a direct launch's
        ``kwargs``; for a launcher, the parameter of the launcher the launch site passes (by keyword or
        position), bound to the harness input at its position or to its literal default. Empty when the
        harness says nothing (or the file does not parse).
    """
    if h is None or not h.traits.launches or getattr(kernel, "language", None) != "triton":
        return {}
    constexprs = [p for p in kernel.params if p.is_constexpr]
    names = [p.name for p in constexprs] + list(LAUNCH_OPTIONS)
    sizes = dict(h.sizes[0]) if h.sizes else {}
    if not h.launcher:
        env = {**sizes, **{i.name: v for i in h.inputs if i.is_scalar and (v := _value(i.value, sizes)) is not None}}
        env.update({f"{i.name}.shape": () for i in h.inputs if not i.is_scalar})
        return {n: v for n in names if n in h.kwargs and (v := _kwarg_value(h.kwargs[n], env)) is not UNKNOWN}
    return _through_launcher(h, text, kernel, names)


def recorded_kernel_args(h: Harness | None, text: str | None, kernel: Any) -> dict[str, Any]:
    """The values of ``kernel``'s scalar parameters (sizes, strides, constexprs) that the harness's launcher
    passes at its launch, over the harness's first size set: each launch argument (by position, or by keyword
    ``M=m``) evaluated over the launcher's parameters bound to the harness inputs and its locals before the launch
    (``M, K = a.shape``, ``n = x.shape[0]``, ``a.shape[1]`` written at the launch). So a kernel parameter takes
    the value of what is passed to it, whatever the launcher calls it (the launcher's ``rows`` for the kernel's
    ``M``). Empty without a launcher harness (``h.launcher``) or when the file does not parse.

    Args:
        h: the kernel's harness.
        text: the kernel file's Python text.
        kernel: the Triton :class:`htam_core.source.model.Kernel`.
    """
    if h is None or not h.traits.launches or getattr(kernel, "language", None) != "triton" or not h.launcher:
        return {}
    return _through_launcher(h, text, kernel, [p.name for p in kernel.params if not p.is_pointer])


def _through_launcher(h: Harness, text: str | None, kernel: Any, names: list[str]) -> dict[str, Any]:
    """The values of kernel parameters ``names`` at the launch in the harness's launcher (see
    :func:`recorded_kernel_args`); a name whose argument does not evaluate is left out."""
    sizes = dict(h.sizes[0]) if h.sizes else {}
    fn, site = _launcher_and_site(h, text, kernel)
    if fn is None or site is None:
        return {}
    bound = _launcher_bindings(h, fn, sizes)
    _bind_locals(fn, site.line, bound)
    position = {p.name: i for i, p in enumerate(kernel.params)}
    out: dict[str, Any] = {}
    for name in names:
        i = position.get(name, len(site.args))
        expr = site.config.get(name, site.args[i] if i < len(site.args) else None)
        if expr is None:
            continue
        try:
            v = _const(ast.parse(expr.strip(), mode="eval").body, bound)
        except (SyntaxError, ValueError, RecursionError):
            continue
        if v is not UNKNOWN:
            out[name] = v
    return out


#: Triton signature element types of the torch dtypes a harness records (:data:`htam_core.harness.base.DTYPES`).
TRITON_POINTER_TYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int8": "i8",
                        "uint8": "u8", "int16": "i16", "int32": "i32", "int64": "i64", "bool": "i1"}
#: Tensor methods whose result has the receiver's dtype (``x.contiguous()``, ``x.view(-1)``).
_SAME_DTYPE_METHODS = frozenset({"contiguous", "view", "reshape", "flatten", "t", "transpose", "permute", "clone",
                                 "detach", "expand", "squeeze", "unsqueeze", "narrow", "as_strided", "view_as"})
#: Allocators whose result has their first argument's dtype unless ``dtype=`` says another.
_LIKE_ALLOCATORS = frozenset({"empty_like", "zeros_like", "ones_like", "full_like", "randn_like", "rand_like"})
#: Tensor methods that allocate with the receiver's dtype unless ``dtype=`` says another.
_NEW_METHODS = frozenset({"new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"})
#: Allocators whose result is float32 (torch's default dtype) unless ``dtype=`` says another.
_ALLOCATORS = frozenset({"empty", "zeros", "ones", "full", "randn", "rand", "empty_strided"})
#: Casting methods: ``x.float()`` -> float32.
_CAST_METHODS = {"float": "float32", "half": "float16", "bfloat16": "bfloat16", "double": "float64",
                 "int": "int32", "long": "int64", "short": "int16", "bool": "bool", "byte": "uint8", "char": "int8"}


def _dtype_name(node: ast.AST, env: Mapping[str, str], locals_: Mapping[str, ast.AST], depth: int) -> str | None:
    """A dtype expression (``torch.float16``, ``x.dtype``) as a torch dtype name, or ``None``."""
    if isinstance(node, ast.Attribute) and node.attr == "dtype":
        return _tensor_dtype(node.value, env, locals_, depth + 1)
    name = ast.unparse(node).rsplit(".", 1)[-1]
    return {"float": "float32", "half": "float16", "long": "int64", "int": "int32", "double": "float64"}.get(
        name, name if name in TRITON_POINTER_TYPES else None)


def _tensor_dtype(node: ast.AST, env: Mapping[str, str], locals_: Mapping[str, ast.AST], depth: int = 0) -> str | None:
    """The torch dtype name of a launcher tensor expression: a tensor input (``env``), a local assigned once
    (``locals_``), an allocation, a dtype-keeping view or a cast of one; ``None`` when it needs more."""
    if depth > 12:
        return None
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        return _tensor_dtype(locals_[node.id], env, locals_, depth + 1) if node.id in locals_ else None
    if isinstance(node, ast.Subscript):
        return _tensor_dtype(node.value, env, locals_, depth + 1)
    if not isinstance(node, ast.Call):
        return None
    kw = next((k.value for k in node.keywords if k.arg == "dtype"), None)
    if kw is not None:
        return _dtype_name(kw, env, locals_, depth)
    fn = node.func
    short = ast.unparse(fn).rsplit(".", 1)[-1]
    if isinstance(fn, ast.Attribute) and short in _CAST_METHODS and not node.args:
        return _CAST_METHODS[short]
    if isinstance(fn, ast.Attribute) and short == "to" and node.args:
        return _dtype_name(node.args[0], env, locals_, depth) or _tensor_dtype(fn.value, env, locals_, depth + 1)
    if isinstance(fn, ast.Attribute) and (short in _SAME_DTYPE_METHODS or short in _NEW_METHODS):
        return _tensor_dtype(fn.value, env, locals_, depth + 1)
    if short in _LIKE_ALLOCATORS and node.args:
        return _tensor_dtype(node.args[0], env, locals_, depth + 1)
    if short in _ALLOCATORS and ast.unparse(fn).startswith("torch."):
        return "float32"
    return None


def _launcher_tensor_dtypes(h: Harness, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
    """The dtype of each launcher parameter bound to a tensor input of ``h`` (the inputs in order)."""
    params = _call_params(fn)
    return {p.arg: spec.dtype for p, spec in zip(params, h.inputs, strict=False) if not spec.is_scalar}


def _single_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.AST]:
    """The launcher's locals assigned exactly once, by a plain ``name = value``."""
    seen: dict[str, list[ast.AST]] = {}
    for st in ast.walk(fn):
        if isinstance(st, ast.Assign):
            for t in st.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        seen.setdefault(n.id, []).append(st.value if isinstance(t, ast.Name) else ast.Constant(None))
        elif isinstance(st, ast.AugAssign | ast.AnnAssign) and isinstance(st.target, ast.Name):
            seen.setdefault(st.target.id, []).extend([ast.Constant(None)] * 2)
    return {k: v[0] for k, v in seen.items() if len(v) == 1}


def recorded_pointer_dtypes(h: Harness | None, text: str | None, kernel: Any) -> dict[str, str]:
    """The torch dtype name of each pointer parameter of Triton ``kernel`` as harness ``h`` launches it.

    Args:
        h: the kernel's harness (a ``spec`` or ``inferred`` one; others give ``{}``).
        text: the Python text of the file that holds the harness's launcher.
        kernel: the :class:`htam_core.source.model.Kernel` (Triton), with its parameters and launch sites.

    Returns:
        ``{param: dtype}`` (``"int64"``, ``"float16"``) for the pointers whose tensor the harness determines: a
        direct launch's ``args`` name the inputs; a launcher's launch site passes a launcher parameter bound to a
        tensor input, or a local allocated from one (``torch.empty_like(x)``, ``torch.empty(n, dtype=x.dtype)``,
        ``x.new_zeros(...)``, ``torch.empty(n)`` is float32), or a view or cast of one. Empty when the harness says
        nothing (or the file does not parse). Raises nothing.
    """
    if h is None or not h.traits.launches or getattr(kernel, "language", None) != "triton":
        return {}
    pointers = [p.name for p in kernel.params if p.is_pointer]
    if not h.launcher:
        by_name = {i.name: i.dtype for i in h.inputs if not i.is_scalar}
        return {p: by_name[a] for p, a in zip([q.name for q in kernel.params], h.args, strict=False)
                if p in pointers and a in by_name}
    fn, site = _launcher_and_site(h, text, kernel)
    if fn is None or site is None:
        return {}
    env, locals_ = _launcher_tensor_dtypes(h, fn), _single_locals(fn)
    out: dict[str, str] = {}
    for i, p in enumerate(kernel.params):
        expr = site.config.get(p.name, site.args[i] if i < len(site.args) else None)
        if p.name not in pointers or expr is None:
            continue
        try:
            d = _tensor_dtype(ast.parse(expr.strip(), mode="eval").body, env, locals_)
        except (SyntaxError, ValueError, RecursionError):
            continue
        if d in TRITON_POINTER_TYPES:
            out[p.name] = d
    return out


@dataclass(frozen=True)
class _Site:
    """A launch read from a launcher module's syntax tree (the fields of ``LaunchSite`` read here)."""

    line: int
    args: list[str]
    config: dict[str, str]


def _launcher_and_site(h: Harness, text: str | None, kernel: Any) -> tuple[Any, Any]:
    """The harness's launcher function (:mod:`ast`) and the kernel's launch site inside it: in ``text`` (the
    kernel's file, its launch sites), or in the launcher module :attr:`Harness.launcher_path` (the launch read
    from that module's tree)."""
    foreign = bool(getattr(h, "launcher_path", None))
    try:
        if foreign:
            text = Path(h.launcher_path).read_text(encoding="utf-8", errors="replace")  # type: ignore[arg-type]
        tree = ast.parse(text or "")
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None, None
    fn = launcher_def(tree, h.launcher or "")
    if fn is None:
        return None, None
    end = fn.end_lineno or fn.lineno
    if not foreign:
        return fn, next((s for s in kernel.launch_sites if fn.lineno <= s.line <= end), None)
    calls = [c for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript)
             and ast.unparse(c.func.value).rsplit(".", 1)[-1] == kernel.name]
    return fn, (_Site(calls[0].lineno, [ast.unparse(a) for a in calls[0].args],
                      {k.arg: ast.unparse(k.value) for k in calls[0].keywords if k.arg}) if calls else None)
