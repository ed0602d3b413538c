"""The Triton constexpr values a harness launches a kernel with, read without running anything.

The static profile compiles a Triton kernel ahead of time, so it must pick a value for every
``tl.constexpr`` parameter. A literal at the launch site says it; a launch through a launcher parameter
(``k[grid](x, BLOCK=block)`` in ``def add(x, block=1024)``) does not, and the harness does: its recorded or
written inputs bind ``block`` (``{ name = "block", value = 512 }``), and a direct-launch harness gives the
constexprs in ``kwargs``. :func:`recorded_constexprs` reads those values from the harness and the file's
syntax tree (:mod:`ast`), so that the static profile compiles the launch configuration the harness runs,
not a fallback guess.

Only literals, size symbols and arithmetic over them are evaluated (in this process, no ``eval``): an
expression that needs more is left to the other sources of a value (the static profile's fallback).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

from htam_core.harness.base import Harness

__all__ = ["LAUNCH_OPTIONS", "recorded_constexprs"]

#: Launch options a Triton launch passes besides the constexprs (part of its launch configuration).
LAUNCH_OPTIONS = ("num_warps", "num_stages")

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift}


def _number(node: ast.AST, env: Mapping[str, Any]) -> Any:
    """The value of a literal / name / arithmetic expression over ``env``, or ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | bool):
        return node.value
    if isinstance(node, ast.Name):
        v = env.get(node.id)
        return v if isinstance(v, int | float | bool) else None
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
    if h is None or h.kind not in ("spec", "inferred") or getattr(kernel, "language", None) != "triton":
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
