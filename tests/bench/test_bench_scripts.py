"""``bench/`` is readable: every script a user runs has a module docstring (or, for shell, a header comment) and an
entry in ``docs/BENCH.md``, and every script ``docs/BENCH.md`` lists exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
DOC = REPO / "docs" / "BENCH.md"


def _scripts() -> list[Path]:
    return sorted([*BENCH.glob("*.py"), *BENCH.glob("*.sh"), *(BENCH / "families").glob("*.py")])


def test_every_script_says_what_it_does() -> None:
    missing = []
    for p in _scripts():
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".py":
            doc = ast.get_docstring(ast.parse(text)) or ""
        else:
            doc = " ".join(ln.lstrip("# ") for ln in text.splitlines()[1:4] if ln.startswith("#"))
        if len(doc.split()) < 8:
            missing.append(p.relative_to(REPO).as_posix())
    assert not missing, f"bench scripts without a docstring saying what they measure: {missing}"


def test_every_script_has_a_bench_md_entry_and_back() -> None:
    doc = DOC.read_text(encoding="utf-8")
    names = {p.relative_to(REPO).as_posix() for p in _scripts()}
    assert not [n for n in names if f"`{n}`" not in doc], "add a row to docs/BENCH.md, 'The scripts in `bench/`'"
    listed = set(re.findall(r"`(bench/[\w/]+\.(?:py|sh))`", doc))
    assert not [n for n in listed if not (REPO / n).is_file()], "docs/BENCH.md names a script that is gone"
