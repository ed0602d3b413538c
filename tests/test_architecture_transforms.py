"""A ratchet on syntax-tree walking in the transforms: facts about a kernel are derived in the analysis layer
(``htam_core/source/analysis``), and a transform reads them. Two counts may only go down:

* the transform modules that import ``tree_sitter`` (a module that walks nodes imports their type);
* the string literals in the transform modules that name a tree-sitter node type of the CUDA or Python grammar
  (``"identifier"``, ``"subscript_expression"``, ``"call"`` ...): each is a test of a raw node's type.

When a change brings a count down, lower the recorded figure in the same commit, so it cannot creep back up.
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
#: their thread indices from the analysis layer, 583 once the transpose tile read its pattern from there, 581 once
#: restrict_const read the kernel's declarations from there).
MAX_TREE_SITTER_IMPORTERS = 26
MAX_NODE_TYPE_LITERALS = 581


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
    assert len(mods) <= MAX_TREE_SITTER_IMPORTERS, (
        f"{len(mods)} transform modules import tree_sitter (recorded: {MAX_TREE_SITTER_IMPORTERS}); read the facts "
        f"from htam_core.source.analysis instead: {', '.join(mods)}")


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
