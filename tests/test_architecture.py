"""The layering rules of ARCHITECTURE.md: ``htam_core`` never imports the LSP (pygls, lsprotocol)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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
