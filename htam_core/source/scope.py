"""The kernel and its launcher: which parts of a file the guards and labels may look at.

A kernel file usually holds more than the kernel: a ``main()`` that allocates, creates streams and
checks results, an ``if __name__ == "__main__":`` self-test that runs the kernel in bf16, benchmarks
and unrelated helpers. Guards (reward-hack rules) and labels (TF32, reduced precision) must judge the
kernel and the code that launches it, never that scaffolding. This module derives, once, the regions
of a file that are *not* the kernel or its launcher, as line ranges.

Python (tree-sitter-python), at top level:

* in scope: ``@triton.jit``/``autotune``/``heuristics`` kernels; model classes (``Model``/``ModelNew``
  or any class with a ``forward`` method); functions that build a compiled extension
  (``load_inline`` ...); *launchers*: functions that name a kernel or an extension handle, and their
  callers up the chain; every function or class that in-scope code or module-level code refers to;
  module-level statements (they run on import);
* out of scope: ``if __name__ == "__main__":`` blocks, and top-level functions and classes that nothing
  in scope refers to. A file with no kernel, model class or extension (a snippet) keeps every function
  but the drivers. *Drivers* (``main``, ``test_*``, ``bench*``, ``*self_test*``, ``demo*``, ``example*``,
  by name) never join the launcher chain by calling a launcher: they
  are in scope only when in-scope code calls them.

CUDA (tree-sitter-cuda): function definitions anywhere (namespaces, ``extern "C"``, templates); kernels
(``__global__``), functions that name a kernel (host launchers) and their callers except drivers
(``main`` and the names above), ``PYBIND11_MODULE``/``TORCH_LIBRARY`` blocks, and whatever those call
are in scope; file-scope declarations and macros always are. Other function definitions are out.

The rule is our own: a guard that fired on ``main()``'s
``cudaStreamCreate`` refused a correct kernel, and a bf16 ``__main__`` self-test labelled an fp32
RMSNorm as reduced precision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import tree_sitter as ts

from htam_core.source.parsing import new_parser, node_text

__all__ = ["Excluded", "KernelScope", "kernel_scope"]

#: Names of driver functions: self-tests, benchmarks, demos, ``main``.
DRIVER_NAME = re.compile(r"^_*(main|tests?|bench|benchmark|self_?test|selftest|demo|example|run_tests?)"
                         r"(_\w*)?$|^_*test_\w+$|_self_?test$", re.IGNORECASE)
#: Callees whose result is a compiled-extension handle (torch ``load_inline``, CuPy, PyCUDA, NVRTC).
EXTENSION_BUILDERS = frozenset({"load_inline", "load", "compile", "RawKernel", "RawModule", "SourceModule",
                                "ElementwiseKernel", "ReductionKernel", "get_function", "_create_jit_fn"})
#: CUDA blocks that bind host functions for Python (always in scope).
BINDING_MACROS = frozenset({"PYBIND11_MODULE", "TORCH_LIBRARY", "TORCH_LIBRARY_IMPL", "TORCH_EXTENSION_NAME"})
_TRITON_DECORATOR = re.compile(r"\b(jit|autotune|heuristics)\b")


@dataclass(frozen=True)
class Excluded:
    """One region that is not the kernel or its launcher.

    Attributes:
        start_line, end_line: 1-based inclusive lines of the region in the scanned text.
        what: what it is, in words (``"main()"``, ``"the __main__ block"``, ``"function bench (a driver)"``).
    """

    start_line: int
    end_line: int
    what: str


@dataclass(frozen=True)
class KernelScope:
    """The regions of a file outside the kernel and its launcher.

    Attributes:
        excluded: the regions, in source order.
    """

    excluded: tuple[Excluded, ...] = field(default_factory=tuple)

    def covers(self, line: int) -> bool:
        """Whether 1-based ``line`` belongs to the kernel, its launcher or module-level code."""
        return not any(e.start_line <= line <= e.end_line for e in self.excluded)

    def excluded_at(self, line: int) -> Excluded | None:
        """The excluded region holding ``line``, or ``None``."""
        return next((e for e in self.excluded if e.start_line <= line <= e.end_line), None)


@dataclass
class _Def:
    name: str
    node: ts.Node
    refs: set[str]
    kind: str  # "kernel" | "model" | "builder" | "binding" | "function" | "class"


def _identifiers(node: ts.Node) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.add(node_text(n))
        stack.extend(n.children)
    return out


def _calls_builder(node: ts.Node, call_type: str) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == call_type:
            fn = n.child_by_field_name("function")
            if fn is not None and re.split(r"::|\.|->", node_text(fn))[-1].strip() in EXTENSION_BUILDERS:
                return True
        stack.extend(n.children)
    return False


def _closure(defs: list[_Def], roots: set[str], module_refs: set[str], drivers: set[str],
             handles: set[str]) -> set[str]:
    """Names in scope: roots, callers of in-scope names (drivers excepted), callees of in-scope code."""
    by_name = {d.name: d for d in defs}
    scope = set(roots) | (module_refs & set(by_name))
    changed = True
    while changed:
        changed = False
        for d in defs:
            if d.name in scope:
                new = (d.refs & set(by_name)) - scope
                if new:
                    scope |= new
                    changed = True
            elif d.name not in drivers and d.refs & (scope | handles):
                scope.add(d.name)
                changed = True
    return scope


def _main_guard(node: ts.Node) -> bool:
    if node.type != "if_statement":
        return False
    cond = node.child_by_field_name("condition")
    text = re.sub(r"\s+", "", node_text(cond)).replace("'", '"')
    return text in ('__name__=="__main__"', '"__main__"==__name__')


def _python_scope(root: ts.Node) -> KernelScope:
    defs: list[_Def] = []
    mains: list[ts.Node] = []
    module_refs: set[str] = set()
    handles: set[str] = set()
    for st in root.named_children:
        node = st
        decorators = ""
        if st.type == "decorated_definition":
            node = st.child_by_field_name("definition") or st
            decorators = " ".join(node_text(c) for c in st.children if c.type == "decorator")
        if node.type in ("function_definition", "class_definition"):
            name = node_text(node.child_by_field_name("name"))
            refs = _identifiers(node) - {name}
            if node.type == "function_definition" and _TRITON_DECORATOR.search(decorators) and \
                    ("triton" in decorators or "jit" in decorators):
                kind = "kernel"
            elif node.type == "class_definition" and (name in ("Model", "ModelNew") or "forward" in {
                    node_text(c.child_by_field_name("name")) for c in _class_methods(node)}):
                kind = "model"
            elif _calls_builder(node, "call"):
                kind = "builder"
            else:
                kind = "function" if node.type == "function_definition" else "class"
            defs.append(_Def(name, st, refs, kind))
        elif _main_guard(st):
            mains.append(st)
        else:
            module_refs |= _identifiers(st)
            target = st.named_children[0] if st.type == "expression_statement" and st.named_children else None
            if target is not None and target.type == "assignment" and _calls_builder(target, "call"):
                left = target.child_by_field_name("left")
                handles |= _identifiers(left) if left is not None else set()
    kernels = {d.name for d in defs if d.kind == "kernel"}
    roots = {d.name for d in defs if d.kind in ("kernel", "model", "builder")}
    drivers = {d.name for d in defs if DRIVER_NAME.search(d.name)} - kernels
    if not roots and not handles:  # no kernel to anchor on (a snippet): everything but the drivers
        roots = {d.name for d in defs} - drivers
    scope = _closure(defs, roots, module_refs, drivers, handles)
    excluded = [Excluded(m.start_point[0] + 1, m.end_point[0] + 1, "the __main__ block") for m in mains]
    for d in defs:
        if d.name not in scope:
            what = "a driver" if d.name in drivers else "not the kernel or its launcher"
            excluded.append(Excluded(d.node.start_point[0] + 1, d.node.end_point[0] + 1,
                                     f"{'function' if d.kind == 'function' else 'class'} {d.name} ({what})"))
    return KernelScope(tuple(sorted(excluded, key=lambda e: e.start_line)))


def _class_methods(cls: ts.Node) -> list[ts.Node]:
    body = cls.child_by_field_name("body")
    out = []
    for c in body.named_children if body is not None else []:
        fn = c.child_by_field_name("definition") if c.type == "decorated_definition" else c
        if fn is not None and fn.type == "function_definition":
            out.append(fn)
    return out


def _cuda_functions(node: ts.Node, out: list[tuple[ts.Node, ts.Node]], outer: ts.Node | None = None) -> None:
    """``(function_definition, outermost node to report)`` pairs anywhere at file/namespace scope."""
    for c in node.named_children:
        if c.type == "function_definition":
            out.append((c, outer or c))
        elif c.type == "template_declaration":
            _cuda_functions(c, out, outer or c)
        elif c.type in ("namespace_definition", "declaration_list", "linkage_specification", "preproc_if",
                        "preproc_ifdef", "preproc_else", "preproc_elif"):
            _cuda_functions(c, out, None)


def _cuda_name(fn: ts.Node) -> str:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type not in ("function_declarator",):
        d = d.child_by_field_name("declarator")
    if d is None:
        return node_text(fn.child_by_field_name("type")).strip()  # PYBIND11_MODULE(name, m) { ... }
    name = d.child_by_field_name("declarator")
    text = node_text(name)
    return re.split(r"::", text)[-1].split("<")[0].strip()


def _cuda_scope(root: ts.Node) -> KernelScope:
    found: list[tuple[ts.Node, ts.Node]] = []
    _cuda_functions(root, found)
    defs: list[_Def] = []
    for fn, outer in found:
        name = _cuda_name(fn)
        body = fn.child_by_field_name("body")
        head = node_text(outer)[: max(0, (body.start_byte - outer.start_byte) if body is not None else 0)]
        refs = _identifiers(body) if body is not None else set()
        if "__global__" in head:
            kind = "kernel"
        elif name in BINDING_MACROS or any(m in head for m in BINDING_MACROS):
            kind = "binding"
        else:
            kind = "function"
        defs.append(_Def(name, outer, refs - {name}, kind))
    roots = {d.name for d in defs if d.kind in ("kernel", "binding")}
    drivers = {d.name for d in defs if DRIVER_NAME.search(d.name)}
    if not roots:  # no kernel to anchor on (a host-only snippet): everything but the drivers
        roots = {d.name for d in defs} - drivers
    # a kernel named like a driver is still a kernel; the caller rule goes through kernel names
    scope = _closure(defs, roots, set(), drivers - roots, set())
    excluded = []
    for d in defs:
        if d.name not in scope:
            label = "main()" if d.name == "main" else f"function {d.name} (" + (
                "a driver" if d.name in drivers else "not the kernel or its launcher") + ")"
            excluded.append(Excluded(d.node.start_point[0] + 1, d.node.end_point[0] + 1, label))
    return KernelScope(tuple(sorted(excluded, key=lambda e: e.start_line)))


def kernel_scope(text: str, file_language: Literal["cuda", "python"]) -> KernelScope:
    """The regions of ``text`` that are not a kernel, its launcher or module-level code.

    Args:
        text: a whole ``.py`` file, a whole ``.cu``/``.cuh`` file, or CUDA held in a Python string.
        file_language: ``"python"`` or ``"cuda"``.

    Returns:
        A :class:`KernelScope`; lines are 1-based in ``text``. Text that does not parse well still gets
        a scope (tree-sitter recovers); nothing is excluded that the parser could not read as a
        function, class or ``__main__`` block.

    Raises:
        ValueError: another ``file_language``.
    """
    if file_language not in ("cuda", "python"):
        raise ValueError(f"no kernel scope for {file_language!r} text; expected 'cuda' or 'python'")
    root = new_parser(file_language).parse(text.encode("utf-8", errors="surrogatepass")).root_node
    return _python_scope(root) if file_language == "python" else _cuda_scope(root)
