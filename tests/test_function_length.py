"""No function in ``htam_core`` over :data:`MAX_LINES` lines, except the listed ones, whose length may only shrink.

A long function is split into named steps. The functions that were longer when the rule came are listed in
``tests/long_functions_allowlist.txt`` as ``file::qualified name::lines``: a listed function may not grow past
its number, and one that is gone must leave the list (one split below the limit should leave it too), so the list
only shrinks. Length counts the ``def`` line to the last line of the body, decorators excluded, docstring
included.

Regenerate the list after shortening functions: ``python tests/test_function_length.py > tests/long_functions_allowlist.txt``
(then check the diff only lowers or removes lines).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ALLOWLIST = Path(__file__).with_name("long_functions_allowlist.txt")
#: The most lines a function of ``htam_core`` may have.
MAX_LINES = 80


def long_functions(limit: int = MAX_LINES) -> dict[str, int]:
    """``"file::qualified name"`` -> lines, for every function of ``htam_core`` over ``limit`` lines."""
    out: dict[str, int] = {}
    for path in sorted((REPO / "htam_core").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()

        def visit(node: ast.AST, scope: list[str], rel: str = rel) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = [*scope, child.name]
                    if not isinstance(child, ast.ClassDef):
                        n = (child.end_lineno or child.lineno) - child.lineno + 1
                        if n > limit:
                            out[f"{rel}::{'.'.join(name)}"] = n
                    visit(child, name)

        visit(ast.parse(path.read_text(encoding="utf-8")), [])
    return out


def _allowed() -> dict[str, int]:
    out = {}
    for line in ALLOWLIST.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, n = line.rpartition("::")
            out[key] = int(n)
    return out


def test_no_function_is_longer_than_the_limit_or_than_it_was() -> None:
    allowed = _allowed()
    grown = {k: n for k, n in long_functions().items() if n > allowed.get(k, MAX_LINES)}
    assert not grown, (f"functions over {MAX_LINES} lines (split them into named steps), or longer than listed in "
                       f"{ALLOWLIST.name}: {grown}")


def test_the_allowlist_only_shrinks() -> None:
    """A listed function that is gone leaves the list. One split below the limit should leave it too, and a
    shorter one should have its number lowered; that is not enforced, so that branches editing the same function
    merge (the number still caps it)."""
    defined = long_functions(0)
    stale = sorted(k for k in _allowed() if k not in defined)
    assert not stale, f"remove these lines from {ALLOWLIST.name} (no such function any more): {stale}"


if __name__ == "__main__":
    print(f"# Functions of htam_core over {MAX_LINES} lines (tests/test_function_length.py): file::name::lines.")
    print("# A ratchet: a line may only be lowered or removed. Regenerate: python tests/test_function_length.py")
    for key, n in sorted(long_functions().items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{key}::{n}")
