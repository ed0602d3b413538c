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
from typing import Any

from htam_core.harness.base import Harness

__all__ = ["LAUNCH_OPTIONS", "launch_value", "recorded_constexprs"]

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


def _launcher_bindings(h: Harness, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                       sizes: Mapping[str, Any]) -> dict[str, Any]:
    """What each launcher parameter is bound to when the harness calls it with its inputs in order: a
    scalar input's value, else the parameter's literal default."""
    params = [*fn.args.posonlyargs, *fn.args.args]
    defaults = dict(zip([p.arg for p in params][len(params) - len(fn.args.defaults):], fn.args.defaults,
                        strict=True))
    defaults.update({p.arg: d for p, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)
                     if d is not None})
    env: dict[str, Any] = dict(sizes)
    out: dict[str, Any] = {}
    for i, p in enumerate(params):
        if i < len(h.inputs):
            spec = h.inputs[i]
            v = _value(spec.value, env) if spec.is_scalar else None
            if spec.is_scalar and v is not None:
                env[spec.name] = v
            if not spec.is_scalar:  # a tensor input: its shape over the size set, for the launcher's locals
                out[f"{p.arg}.shape"] = tuple(_value(d, sizes) for d in spec.shape or ())
        else:
            v = _number(defaults[p.arg], env) if p.arg in defaults else None
        if v is not None:
            out[p.arg] = v
    for name, d in defaults.items():
        if name not in out and name not in [p.arg for p in params[:len(h.inputs)]]:
            v = _number(d, env)
            if v is not None:
                out[name] = v
    return out


def _bind_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef, before: int, env: dict[str, Any]) -> None:
    """Bind the launcher's locals assigned by its top-level statements before line ``before`` (``n_rows, n_cols
    = x.shape``, ``BLOCK = triton.next_power_of_2(n_cols)``) in ``env``; a local whose value is unknown is
    removed, so that an older binding never stands for it."""
    def bind(target: ast.AST, value: Any) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, int | float | bool):
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
                                       else _number(v, env))
            for target in st.targets:
                bind(target, value)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            bind(st.target, _number(st.value, env))


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
        return {n: v for n in names if n in h.kwargs and (v := _value(h.kwargs[n], env)) is not None}
    try:
        tree = ast.parse(text or "")
    except (SyntaxError, ValueError, RecursionError):
        return {}
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
               and n.name == h.launcher), None)
    if fn is None:
        return {}
    end = fn.end_lineno or fn.lineno
    site = next((s for s in kernel.launch_sites if fn.lineno <= s.line <= end), None)
    if site is None:
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
            v = _number(ast.parse(expr.strip(), mode="eval").body, bound)
        except (SyntaxError, ValueError, RecursionError):
            continue
        if v is not None:
            out[name] = v
    return out
