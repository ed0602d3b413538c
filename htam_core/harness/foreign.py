"""A Triton kernel launched from another module of its workspace: that module's function is the host launcher.

A kernel module (``rowk.py``) often holds only ``@triton.jit`` functions, and a launcher module imports it and
launches (``ops.py``: ``from rowk import row_softmax`` and ``row_softmax[(n_rows,)](...)`` in ``def softmax(x)``).
The launch is found by the workspace search that ``htam kernels`` uses
(:func:`htam_core.source.workspace.find_launches`); the function around it is the launcher when it is a top-level
function or a ``@staticmethod``/``@classmethod`` of a top-level class, and when the launcher module imports the
kernel's file by a name this module can resolve: ``from rowk import k``, ``import rowk as K``, ``from pkg.kernels
import k``, ``from .kernels import k``, ``from . import kernels``.

The recording runs the launcher module's ``__main__`` (or its tests), which imports the kernel module; a run on a
candidate loads the launcher module again with the candidate's module standing for the kernel module's name
(:func:`launcher_module`), so candidates replace the kernel module's text, as a CUDA kernel's candidates do
under its ``.cpp`` host.

Idea source: how Python resolves an import (``sys.modules`` first, then ``sys.path``; a relative import against
the module's ``__package__``).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from htam_core.source.model import Kernel, SourceModel
from htam_core.source.workspace import WorkspaceLaunch, find_launches
from htam_core.types.language import traits

__all__ = ["ForeignLauncher", "foreign_launcher", "foreign_launches", "launcher_def", "launcher_module", "package_of"]


@dataclass(frozen=True)
class ForeignLauncher:
    """The function of another module that launches a Triton kernel.

    Attributes:
        path: the launcher module's file.
        qualname: the launcher as reached from its module (``"softmax"``, ``"RowSoftmax.forward"``).
        params: the launcher's parameter names (``cls`` of a classmethod left out).
        line: 1-based line of the launch in ``path``.
        kernel_module: the module name the launcher module imports the kernel's file by (``"rowk"``).
        package: the launcher module's package (``"pkg"``), ``None`` for a plain module.
        root: the folder its imports resolve from (above its package, or its own folder).
    """

    path: Path
    qualname: str
    params: tuple[str, ...]
    line: int
    kernel_module: str
    package: str | None
    root: Path


def foreign_launches(model: SourceModel, kernel: Kernel) -> list[WorkspaceLaunch]:
    """The Triton launches of ``kernel`` in other files of its workspace (``[]`` when none, or the search fails)."""
    if not traits(kernel.language).tiles or not model.path:
        return []
    try:
        own = Path(model.path).resolve()
        return [la for la in find_launches(model, kernel) if la.style == "triton" and Path(la.path).resolve() != own]
    except (OSError, ValueError):
        return []


def package_of(host: Path, relative: bool = True) -> tuple[str | None, Path]:
    """``(package, root)`` of the module file ``host``: the dotted folders that hold an ``__init__.py`` above it and
    the folder above them; a folder without one is a package only when the module imports relatively
    (``relative``: a namespace package), else the module is plain and ``root`` is its own folder."""
    d, parts = host.resolve().parent, []
    while (d / "__init__.py").is_file():
        parts.insert(0, d.name)
        d = d.parent
    if parts:
        return ".".join(parts), d
    if relative:
        return host.resolve().parent.name, host.resolve().parent.parent
    return None, host.resolve().parent


def _import_names(tree: ast.Module, package: str | None) -> list[str]:
    """Every module name the module's imports may load (relative ones resolved against ``package``)."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if package is None:
                    continue
                parts = package.split(".")
                up = parts[:len(parts) - (node.level - 1)] if node.level - 1 <= len(parts) else []
                base = ".".join([*up, *([node.module] if node.module else [])])
            if base:
                out.append(base)
            out.extend(f"{base}.{a.name}" if base else a.name for a in node.names)
    return out


def _module_for(tree: ast.Module, kernel_file: Path, host: Path, package: str | None, root: Path) -> str | None:
    """The name under which the module ``tree`` (file ``host``) imports ``kernel_file``, or ``None``."""
    target = kernel_file.resolve()
    for name in _import_names(tree, package):
        rel = Path(*name.split("."))
        for base in (root, host.resolve().parent):
            if (base / rel).with_suffix(".py").resolve() == target:
                return name
    return None


def _enclosing(tree: ast.Module, line: int) -> tuple[str, tuple[str, ...]] | None:
    """``(qualified name, parameters)`` of the top-level function, or the static/class method of a top-level
    class, whose body holds ``line``; ``None`` for another place (an instance method: there is no instance to
    call it on)."""
    def span(n: ast.AST) -> bool:
        return n.lineno <= line <= (n.end_lineno or n.lineno)  # type: ignore[attr-defined]

    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and span(node):
            return node.name, tuple(a.arg for a in node.args.args)
        if isinstance(node, ast.ClassDef) and span(node):
            for m in node.body:
                if not (isinstance(m, ast.FunctionDef) and span(m)):
                    continue
                kinds = {ast.unparse(d) for d in m.decorator_list}
                args = tuple(a.arg for a in m.args.args)
                if "staticmethod" in kinds:
                    return f"{node.name}.{m.name}", args
                if "classmethod" in kinds:
                    return f"{node.name}.{m.name}", args[1:]
            return None
    return None


def launcher_def(tree: ast.Module, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The definition of launcher ``qualname`` in a module's tree: a top-level function (``"softmax"``) or a method
    of a top-level class (``"MatMul.forward"``, as :func:`_enclosing` names it); ``None`` when there is none.
    The one lookup of a launcher by its name, so that a static method is read wherever a function is (the
    launcher's ``M, K = a.shape`` names, its launch)."""
    owner, _, name = qualname.rpartition(".")
    body: list[ast.stmt] = tree.body
    if owner:
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
        if cls is None:
            return None
        body = cls.body
    return next((n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name), None)


def foreign_launcher(model: SourceModel, kernel: Kernel) -> ForeignLauncher | None:
    """The launcher of Triton ``kernel`` in another module of its workspace (see the module docstring), or
    ``None``: no launch elsewhere, or none inside a function htam can call with the tensors, or the module imports
    the kernel's file by no name htam resolves. Never raises."""
    for la in foreign_launches(model, kernel):
        host = Path(la.path)
        try:
            tree = ast.parse(host.read_text(encoding="utf-8", errors="replace"))
        except (OSError, SyntaxError, ValueError):
            continue
        found = _enclosing(tree, la.line)
        relative = any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))
        package, root = package_of(host, relative)
        name = _module_for(tree, Path(model.path or ""), host, package, root)
        if found is not None and name is not None:
            return ForeignLauncher(host.resolve(), found[0], found[1], la.line, name, package, root)
    return None


_LOADED: dict[tuple[str, int], ModuleType] = {}


def launcher_module(h: Any, kernel_module: ModuleType) -> ModuleType:
    """The launcher module of harness ``h`` (:attr:`~htam_core.harness.base.Harness.launcher_path`) loaded with
    ``kernel_module`` (the candidate's or the oracle's module) standing for the name it imports the kernel's file
    by (:attr:`~htam_core.harness.base.Harness.kernel_module`); one load per kernel module.

    Raises:
        ImportError, SyntaxError, or whatever the launcher module raises at import (the caller reports it).
    """
    key = (str(h.launcher_path), id(kernel_module))
    if key in _LOADED:
        return _LOADED[key]
    host = Path(h.launcher_path)
    package, root = package_of(host, bool(h.kernel_module and "." in h.kernel_module))
    for d in (str(h.launcher_root or root), str(host.parent)):
        if d not in sys.path:
            sys.path.insert(0, d)
    name = f"{package}.{host.stem}" if package else f"htam_launcher_{host.stem}"
    saved = sys.modules.get(h.kernel_module)
    sys.modules[h.kernel_module] = kernel_module
    try:
        spec = importlib.util.spec_from_file_location(name, host)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {host}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is not None:
            sys.modules[h.kernel_module] = saved
        else:
            sys.modules.pop(h.kernel_module, None)
    _LOADED[key] = module
    return module
