"""A ratchet on syntax-tree walking in the transforms: facts about a kernel are derived in the analysis layer
(``htam_core/source/analysis``), and a transform reads them. Two counts may only go down:

* the transform modules that import ``tree_sitter`` (a module that walks nodes imports their type);
* the string literals in the transform modules that name a tree-sitter node type of the CUDA or Python grammar
  (``"identifier"``, ``"subscript_expression"``, ``"call"`` ...): each is a test of a raw node's type.

When a change brings a count down, lower the recorded figure in the same commit, so it cannot creep back up.

A transform asks what a node is through the analysis layer's node queries (``htam_core.source.analysis.nodes``:
``is_loop(s)``, ``declarations(body)``, ``unit.node_at(span, FOR_LOOP)``), and imports from ``htam_core`` only its
own package, the analysis layer, the source model and the shared types.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import htam_core
from htam_core.source.parsing import language

TRANSFORMS = Path(htam_core.__file__).resolve().parent / "transforms"

#: Recorded on 2026-12-05 (26 of 35 transform modules; 593 node-type literals, 591 once the matmul tilings read
#: their thread indices from the analysis layer, 583 once the transpose tile read its pattern from there, 113 once
#: the transforms asked the analysis layer's node queries, ``htam_core.source.analysis.nodes``, what a node is, 59
#: once they named the node a fact's span stands for through its selectors, 38 once the launch and qualifier
#: transforms asked the node queries too. None of those 38 tests a node's type: they are field names
#: (``child_by_field_name("type")``), C type names (``"float"``), parameter keys (``{"block": ...}``) and message
#: words that share a spelling with a node type).
MAX_TREE_SITTER_IMPORTERS = 0
MAX_NODE_TYPE_LITERALS = 38

#: The transform modules still allowed to import ``tree_sitter``, each with the reason (none left).
TREE_SITTER_IMPORTERS_LEFT: dict[str, str] = {}

#: What a transform module may import from ``htam_core``: the transforms package (its base, the registry, the
#: shared CUDA/Triton editing views), the analysis layer, the source model's types and the shared types.
ALLOWED_IMPORTS = ("htam_core.transforms", "htam_core.source.analysis", "htam_core.source.model", "htam_core.types")

#: The framework modules of the package, which also read files (not transforms): each with what else it imports.
FRAMEWORK_IMPORTS = {
    "registry.py": ("htam_core.source", "htam_core.source.positions", "htam_core.source.workspace"),
    "validate.py": ("htam_core.source.api",),
}


def _node_types() -> frozenset[str]:
    """The named node types of the CUDA and Python grammars."""
    out: set[str] = set()
    for grammar in ("cuda", "python"):
        lang = language(grammar)
        out |= {lang.node_kind_for_id(i) for i in range(lang.node_kind_count) if lang.node_kind_is_named(i)}
    return frozenset(out)


def tree_sitter_importers(folder: Path = TRANSFORMS) -> list[str]:
    """The modules of ``folder`` that import ``tree_sitter`` (any import statement)."""
    out = []
    for p in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(m == "tree_sitter" or m.startswith("tree_sitter.") for m in mods):
                out.append(p.name)
                break
    return out


def node_type_literals(folder: Path = TRANSFORMS) -> dict[str, int]:
    """Per module of ``folder``: how many string literals name a grammar node type."""
    names = _node_types()
    out: dict[str, int] = {}
    for p in sorted(folder.glob("*.py")):
        n = 0
        for tok in tokenize.generate_tokens(io.StringIO(p.read_text(encoding="utf-8")).readline):
            if tok.type != tokenize.STRING:
                continue
            try:
                v = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):
                continue
            if isinstance(v, str) and v in names:
                n += 1
        if n:
            out[p.name] = n
    return out


def test_transform_modules_importing_tree_sitter_only_go_down():
    mods = tree_sitter_importers()
    assert set(mods) <= set(TREE_SITTER_IMPORTERS_LEFT), (
        f"{sorted(set(mods) - set(TREE_SITTER_IMPORTERS_LEFT))} import tree_sitter; take Node and the node queries "
        "from htam_core.source.analysis.nodes instead")
    assert len(mods) <= MAX_TREE_SITTER_IMPORTERS, (
        f"{len(mods)} transform modules import tree_sitter (recorded: {MAX_TREE_SITTER_IMPORTERS}); read the facts "
        f"from htam_core.source.analysis instead: {', '.join(mods)}")


def project_imports(path: Path) -> list[str]:
    """The ``htam_core`` modules ``path`` imports (any import statement, at module level or in a function)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return [m for m in out if m == "htam_core" or m.startswith("htam_core.")]


def stray_imports(folder: Path = TRANSFORMS) -> dict[str, list[str]]:
    """Per module of ``folder``: the ``htam_core`` imports outside :data:`ALLOWED_IMPORTS` (and, for a framework
    module, outside its :data:`FRAMEWORK_IMPORTS`)."""
    out: dict[str, list[str]] = {}
    for p in sorted(folder.glob("*.py")):
        extra = FRAMEWORK_IMPORTS.get(p.name, ())
        bad = [m for m in project_imports(p)
               if m not in extra and not any(m == a or m.startswith(a + ".") for a in ALLOWED_IMPORTS)]
        if bad:
            out[p.name] = bad
    return out


def test_transforms_import_only_their_package_and_the_analysis_layer():
    assert stray_imports() == {}, (
        "transform modules import from htam_core only the transforms package, the analysis layer "
        "(htam_core.source.analysis), the source model and the shared types")


def test_node_type_tests_in_transforms_only_go_down():
    per = node_type_literals()
    total = sum(per.values())
    worst = ", ".join(f"{k} {v}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:5])
    assert total <= MAX_NODE_TYPE_LITERALS, (
        f"{total} node-type string literals in the transforms (recorded: {MAX_NODE_TYPE_LITERALS}); move the walking "
        f"into htam_core.source.analysis (most: {worst})")


def test_the_counters_see_what_they_count(tmp_path):
    (tmp_path / "walks.py").write_text('from tree_sitter import Node\n\ndef f(n: Node) -> bool:\n'
                                       '    return n.type == "identifier" or n.type in ("call_expression", "x")\n')
    (tmp_path / "clean.py").write_text('import json\n\nKIND = "structural"\n')
    assert tree_sitter_importers(tmp_path) == ["walks.py"]
    assert node_type_literals(tmp_path) == {"walks.py": 2}
    (tmp_path / "reads.py").write_text("from htam_core.source.analysis import nodes\n\ndef f():\n"
                                       "    from htam_core.source.workspace import find_launches\n")
    assert stray_imports(tmp_path) == {"reads.py": ["htam_core.source.workspace"]}
