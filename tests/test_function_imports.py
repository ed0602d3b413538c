"""No function-level import of a project module without its reason.

An ``import`` of ``htam_core``/``htam_server`` (or a relative one) inside a function must carry a comment on
the same line or on the line just above it, saying why it is not at the top of the module: a cycle it avoids,
an optional heavy dependency, or start-up cost (ARCHITECTURE.md, "Layers"). The imports that had none when the
rule came are listed in ``tests/function_imports_allowlist.txt`` (a ratchet): a new uncommented import fails,
and a listed one that is gone or now commented must leave the list, so the list only shrinks.

Regenerate the list after removing or commenting imports: ``python tests/test_function_imports.py > tests/function_imports_allowlist.txt``
(then check the diff only removes lines).
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ALLOWLIST = Path(__file__).with_name("function_imports_allowlist.txt")
PACKAGES = (REPO / "htam_core", REPO / "server")
PROJECT = ("htam_core", "htam_server")


def _has_reason(lines: list[str], lineno: int) -> bool:
    """A ``#`` comment on the import's first line, or a comment line just above it (for a block of imports on
    consecutive lines: above the block's first statement)."""
    same = lines[lineno - 1]
    above = lines[lineno - 2].strip() if lineno >= 2 else ""
    return "#" in same or above.startswith("#")


def uncommented_imports(path: Path) -> list[str]:
    """``"file::function::module"`` for each function-level project import of ``path`` without a reason
    (one entry per imported module; ``function`` is the qualified name, classes included)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    rel = path.relative_to(REPO).as_posix()
    found: list[str] = []

    reasoned: set[int] = set()  # ids of import statements whose block carries a reason

    def check(stmt: ast.Import | ast.ImportFrom, prev: ast.AST | None, scope: list[str]) -> None:
        # a block of imports on consecutive lines shares the comment above its first statement
        chained = (isinstance(prev, (ast.Import, ast.ImportFrom)) and id(prev) in reasoned
                   and prev.end_lineno == stmt.lineno - 1)
        if chained or _has_reason(lines, stmt.lineno):
            reasoned.add(id(stmt))
            return
        mods = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else ["." * stmt.level + (stmt.module or "")]
        found.extend(f"{rel}::{'.'.join(scope)}::{m}" for m in mods if m.startswith(".") or m.split(".")[0] in PROJECT)

    def visit(node: ast.AST, scope: list[str], in_function: bool) -> None:
        prev: ast.AST | None = None
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, [*scope, child.name], True)
            elif isinstance(child, ast.ClassDef):
                visit(child, [*scope, child.name], in_function)
            elif in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                check(child, prev, scope)
            else:
                visit(child, scope, in_function)
            prev = child

    visit(ast.parse(text), [], False)
    return found


def current() -> list[str]:
    """Every uncommented function-level project import of the packages, sorted."""
    return sorted(e for pkg in PACKAGES for p in sorted(pkg.rglob("*.py")) for e in uncommented_imports(p))


def _allowlist() -> Counter[str]:
    return Counter(ln.strip() for ln in ALLOWLIST.read_text(encoding="utf-8").splitlines()
                   if ln.strip() and not ln.startswith("#"))


def test_no_new_uncommented_function_level_import() -> None:
    new = Counter(current()) - _allowlist()
    assert not new, ("function-level imports of project modules need a comment on the same or preceding line "
                     "saying why (cycle, optional heavy dependency, start-up cost):\n  "
                     + "\n  ".join(sorted(new.elements())))


def test_the_allowlist_only_shrinks() -> None:
    stale = _allowlist() - Counter(current())
    assert not stale, (f"remove these lines from {ALLOWLIST.name} (the import is gone or now has its comment):\n  "
                       + "\n  ".join(sorted(stale.elements())))


def test_the_rule_sees_a_bare_import_and_accepts_a_commented_one(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from htam_core.x import y\n\n"
                 "def g():\n    # start-up cost: x pulls in sympy\n    from htam_core.x import y\n    import htam_core.v\n\n"
                 "    import htam_core.after_a_blank_line\n"
                 "class C:\n    def h(self):\n        import htam_server.z  # cycle: z imports this module\n\n"
                 "        from . import w\n", encoding="utf-8")
    assert uncommented_imports(f) == [
        "m.py::f::htam_core.x", "m.py::g::htam_core.after_a_blank_line", "m.py::C.h::."]


if __name__ == "__main__":
    print("# Function-level imports of project modules without a comment saying why (tests/test_function_imports.py).")
    print("# A ratchet: lines may only be removed. Regenerate: python tests/test_function_imports.py")
    print("\n".join(current()))
