"""The layering rules of ARCHITECTURE.md: ``htam_core`` never imports the LSP (pygls, lsprotocol), its packages
import each other only downward along the declared layers, and no two of them form an import cycle.

The package graph comes from ``grimp`` (every import statement, at module level or inside a function); imports
it cannot see (``importlib`` with a literal module name, worker target strings) are checked with ``ast``.
"""

from __future__ import annotations

import ast
import functools
import graphlib
import re
import subprocess
import sys
from pathlib import Path

import grimp

import htam_core

CORE = Path(htam_core.__file__).resolve().parent
LSP_MODULES = ("pygls", "lsprotocol", "htam_server")


def _imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, module, at module level) of every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.lineno, node.module, id(node) in top))
    return out


def test_no_core_module_imports_the_lsp_at_module_level():
    bad = []
    for path in sorted(CORE.rglob("*.py")):
        for line, mod, top in _imports(path):
            if mod.split(".")[0] in LSP_MODULES and (top or mod.split(".")[0] != "htam_server"):
                bad.append(f"{path.relative_to(CORE.parent)}:{line} imports {mod}")
    assert not bad, "htam_core must not import the LSP:\n" + "\n".join(bad)


def test_importing_every_core_module_loads_no_lsp_package():
    code = (
        "import importlib, pkgutil, sys, htam_core\n"
        "for m in pkgutil.walk_packages(htam_core.__path__, 'htam_core.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(','.join(sorted(n for n in sys.modules if n.split('.')[0] in ('pygls', 'lsprotocol'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "", f"LSP packages loaded by htam_core: {out.stdout.strip()}"


# -- layering of htam_core's packages ------------------------------------------------------------------------
#: The declared order of ARCHITECTURE.md ("Layers"), highest first. A package may import only packages in
#: layers below its own; packages that share a layer are independent (neither imports the other).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli",),
    ("editor", "session"),  # the editor's engine side (session.py is being replaced by the editor package)
    ("bench",),
    ("optimize",),
    ("generate", "memory"),
    ("lang",),  # the language backends: delegate to transforms, profile, harness and source
    ("transforms",),
    ("profile",),
    ("measure",),
    ("verify",),
    ("harness",),
    ("runtime",),
    ("source",),
    ("types",),
)
_LAYER_OF = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
#: A string naming a worker target (``"htam_core.measure.gpu:measure_harness"``): an import in another process.
_TARGET_RE = re.compile(r"^htam_core\.(\w+)(?:\.\w+)*:\w+(?:\.\w+)*$")
#: Calls whose string argument names a module to import.
_DYNAMIC_IMPORTS = ("import_module", "find_spec", "__import__", "spec_from_file_location")


@functools.cache
def _graph() -> grimp.ImportGraph:
    """The import graph of ``htam_core`` (every import, at module level or in a function, TYPE_CHECKING too)."""
    return grimp.build_graph("htam_core", cache_dir=None)


def _package(module: str) -> str:
    return module.split(".")[1]


def _where(importer: str, imported: str) -> str:
    details = _graph().get_import_details(importer=importer, imported=imported)
    return ", ".join(f"{d['importer']}:{d['line_number']}" for d in details) or importer


def test_every_core_package_is_in_a_declared_layer():
    children = {m.split(".")[1] for m in _graph().find_children("htam_core")}
    missing = sorted(children - set(_LAYER_OF))
    assert not missing, f"htam_core packages with no layer in LAYERS (and ARCHITECTURE.md): {missing}"


def test_no_package_imports_upward_against_the_declared_layers():
    illegal = _graph().find_illegal_dependencies_for_layers(layers=[set(layer) for layer in LAYERS],
                                                           containers={"htam_core"})
    lines = []
    for dep in sorted(illegal, key=lambda d: (d.importer, d.imported)):
        for route in dep.routes:
            for head in sorted(route.heads):
                for tail in sorted(route.tails):
                    middle = " -> ".join(route.middle)
                    lines.append(f"{dep.importer} imports {dep.imported}: {head} -> "
                                 f"{middle + ' -> ' if middle else ''}{tail} ({_where(head, route.middle[0] if route.middle else tail)})")
    assert not lines, "imports against the declared layers (ARCHITECTURE.md, Layers):\n" + "\n".join(lines)


def test_no_import_cycle_between_core_packages():
    g = _graph()
    packages = sorted(m for m in g.find_children("htam_core"))
    deps = {p: {q for q in packages if q != p and g.direct_import_exists(importer=p, imported=q, as_packages=True)}
            for p in packages}
    try:
        tuple(graphlib.TopologicalSorter(deps).static_order())
    except graphlib.CycleError as exc:
        cycle = exc.args[1]
        hops = [f"{a} -> {b} ({_first_import(a, b)})" for a, b in zip(cycle[1:], cycle, strict=False)]
        raise AssertionError("import cycle between htam_core packages:\n" + "\n".join(hops)) from None


#: Module cycles inside one package that predate the rule (each a set of modules): may only shrink. A cycle is
#: broken by moving the shared piece into its own module, never by hiding an import inside a function.
KNOWN_MODULE_CYCLES = [
    {"htam_core.bench.replay", "htam_core.bench.space", "htam_core.bench.table_fill"},
    {"htam_core.optimize.reproduce", "htam_core.optimize.task"},
    {"htam_core.optimize.evaluate", "htam_core.optimize.measure_cache"},
]


def _module_cycles(package: str) -> list[set[str]]:
    """The strongly connected components of more than one module among ``package``'s own modules (Tarjan)."""
    g = _graph()
    mods = sorted(g.find_descendants(package) | {package})
    inside = set(mods)
    edges = {m: sorted(t for t in g.find_modules_directly_imported_by(m) if t in inside) for m in mods}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for m in mods:
        if m not in index:
            visit(m)
    return out


def test_no_import_cycle_between_the_modules_of_a_package():
    """Every import counts, function-level ones too, so a cycle cannot be hidden inside a function."""
    g = _graph()
    found = [c for p in sorted(g.find_children("htam_core")) for c in _module_cycles(p)]
    new = [sorted(c) for c in found if not any(c <= known for known in KNOWN_MODULE_CYCLES)]
    assert not new, "import cycles between the modules of one package (move the shared piece to its own module): " \
        + "; ".join(" <-> ".join(c) for c in new)


def test_the_harness_and_measure_modules_have_no_cycle():
    assert not _module_cycles("htam_core.harness") and not _module_cycles("htam_core.measure")


def _first_import(importer_pkg: str, imported_pkg: str) -> str:
    """One ``module:line`` where a module of ``importer_pkg`` imports a module of ``imported_pkg``."""
    g = _graph()
    for m in sorted(g.find_descendants(importer_pkg) | {importer_pkg}):
        for t in sorted(g.find_modules_directly_imported_by(m)):
            if t == imported_pkg or t.startswith(imported_pkg + "."):
                return _where(m, t)
    return "?"


def _hidden_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of the ``htam_core`` modules ``path`` imports without an import statement: a string
    argument of ``importlib.import_module``/``find_spec``/``__import__``, or a worker target string."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        m = _TARGET_RE.match(node.value)
        if m:
            out.append((node.lineno, node.value.split(":")[0]))
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and node.args[0].value.startswith("htam_core."):
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if fn in _DYNAMIC_IMPORTS:
                out.append((node.lineno, node.args[0].value))
    return out


def test_no_dynamic_import_or_worker_target_reaches_up_or_into_a_sibling():
    """``importlib`` and worker targets are imports the graph above cannot see: hold them to the same order.
    A dynamic import across packages (a fallback that dodges a cycle) is refused outright."""
    bad = []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE.parent)
        own = rel.parts[1].removesuffix(".py") if len(rel.parts) > 1 else None
        if own is None or own == "__init__":
            continue
        for line, mod in _hidden_imports(path):
            target = _package(mod) if mod.count(".") else None
            if target is None or target == own:
                continue
            if _LAYER_OF.get(target, -1) <= _LAYER_OF.get(own, len(LAYERS)):
                bad.append(f"{rel}:{line} reaches {mod} (layer of {target!r} is not below {own!r})")
    assert not bad, "imports hidden in strings, against the declared layers:\n" + "\n".join(bad)


# ---- the server: thin, typed, stateless at module level, on the editor layer only -----------------------------
SERVER = Path(__file__).resolve().parents[1] / "server"
#: The most lines a function of the server (a handler or anything it calls) may have, docstring included.
SERVER_FUNCTION_LINES = 20


def _server_modules() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"), str(p))) for p in sorted(SERVER.glob("*.py"))]


def test_every_server_function_is_at_most_20_lines():
    """Every function of every server module, handlers and the functions they call: the logic lives in
    ``htam_core.editor``."""
    mods = _server_modules()
    assert len(mods) >= 10
    long = {f"{p.name}:{n.name}": n.end_lineno - n.lineno + 1 for p, tree in mods for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.end_lineno - n.lineno + 1 > SERVER_FUNCTION_LINES}
    assert not long, long


def test_the_server_imports_only_the_editor_layer():
    """Of ``htam_core``, the server imports ``htam_core.editor`` itself and nothing else (any import statement,
    at module level, in a function or for type checking); the names it takes are the ones the layer exports."""
    import htam_core.editor

    exported = set(htam_core.editor.__all__)
    bad = []
    for p, tree in _server_modules():
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                bad += [f"{p.name}:{n.lineno} import {a.name}" for a in n.names
                        if a.name.split(".")[0] == "htam_core" and a.name != "htam_core.editor"]
            elif isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").split(".")[0] == "htam_core":
                if n.module != "htam_core.editor":
                    bad.append(f"{p.name}:{n.lineno} from {n.module}")
                else:
                    bad += [f"{p.name}:{n.lineno} {a.name} is not exported" for a in n.names if a.name not in exported]
    assert not bad, bad


_MUTABLE_CALLS = ("dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter", "bytearray")


def _mutable(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp):
        return True
    return isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) in _MUTABLE_CALLS


def test_the_server_holds_no_module_level_mutable_state():
    """No module-level dict, list or set (read-only tables are ``MappingProxyType`` or tuples) and no ``global``
    statement: a server's state is its :class:`HtamLanguageServer` instance (and its session)."""
    bad = []
    for p, tree in _server_modules():
        for n in tree.body:
            value = n.value if isinstance(n, ast.Assign | ast.AnnAssign) else None
            if _mutable(value):
                bad.append(f"{p.name}:{n.lineno}")
        bad += [f"{p.name}:{n.lineno} global" for n in ast.walk(tree) if isinstance(n, ast.Global)]
    assert not bad, bad


def test_every_server_function_is_typed():
    """Every parameter (the server ``ls`` among them) and every return of a server function is annotated."""
    bad = []
    for p, tree in _server_modules():
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                args = [*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs]
                bad += [f"{p.name}:{n.name}({a.arg})" for a in args if a.annotation is None and a.arg != "self"]
                bad += [f"{p.name}:{n.name} -> ?"] if n.returns is None else []
    assert not bad, bad
