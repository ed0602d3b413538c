"""The project's text stands alone: no tracked file cites the workshop's design notes or its shared folder.

The project must install, pass its tests and be understood without anything outside the repository, so
no doc, docstring, comment or script names that design file or the sibling shared checkout. One exception:
benchmark data inputs that are third-party and never shipped. Their default location lives in
``bench/*.py`` (``bench/data_paths.py``), and a test may name it only when it skips without it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# spelled in pieces so that this file does not match itself
_DESIGN = re.compile(r"\bDESIGN" + r"(\.md\b|\s*§|\s+section\b)")
_SHARED = re.compile(r"\.\./" + r"shared\b|/work/" + r"shared\b|[\"']shared[\"']\s*/\s*[\"']data[\"']")
_TEXT_SUFFIXES = {".py", ".md", ".toml", ".ts", ".js", ".json", ".sh", ".lua", ".cu", ".cuh", ".txt", ".cfg",
                  ".yml", ".yaml", ".ini", ".jsonl", ".csv", ""}


def _tracked_text_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    files = [REPO / p for p in out.decode().split("\0") if p]
    return [p for p in files if p.is_file() and p.suffix in _TEXT_SUFFIXES and p.stat().st_size < 2_000_000]


def _allowed_shared(path: Path, text: str) -> bool:
    rel = path.relative_to(REPO).as_posix()
    if re.fullmatch(r"bench/[^/]+\.py", rel):
        return True  # bench scripts may read third-party data inputs from the sibling checkout
    return rel.startswith("tests/") and ("skipif" in text or "pytest.skip" in text)


def test_no_tracked_text_file_cites_the_design_notes_or_the_shared_folder() -> None:
    me = Path(__file__).resolve()
    bad: list[str] = []
    for p in _tracked_text_files():
        if p.resolve() == me:
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        for i, line in enumerate(text.splitlines(), 1):
            if _DESIGN.search(line) or (_SHARED.search(line) and not _allowed_shared(p, text)):
                bad.append(f"{p.relative_to(REPO)}:{i}: {line.strip()[:100]}")
    assert not bad, "state the content inline or in docs/*.md instead:\n" + "\n".join(bad)


def test_the_patterns_catch_what_they_must() -> None:
    assert _DESIGN.search("see " + "DESIGN.md §7") and _DESIGN.search("DESIGN" + " §4")
    assert _SHARED.search("read " + "../shared/data/x.jsonl") and not _DESIGN.search("design of the cache")


# an f-string's field copied into prose: ``{m['probe_s']*1e3:.0f}``, ``{pr['x']}``, or a doubled brace
_UNRENDERED = re.compile(r"\{[A-Za-z_]\w*\[['\"]|\{\{")


def test_docs_hold_no_unrendered_format_fields() -> None:
    """Regression: docs/BENCH.md showed ``{m['probe_s']*1e3:.0f} ms`` and ``{{json,md}}``, text copied from a
    script's f-string instead of its figures. Every Markdown doc and bench result is checked, code blocks
    included (a placeholder there is as wrong)."""
    bad = []
    for p in _tracked_text_files():
        if p.suffix != ".md":
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if _UNRENDERED.search(line):
                bad.append(f"{p.relative_to(REPO)}:{i}: {line.strip()[:100]}")
    assert not bad, "format fields left in the text:\n" + "\n".join(bad)


# a citation of the project's issue tracker ("issue 17", "issues 8 and 9", "issue #3"): the reader of the code
# or the docs has no access to it, so the text must say what it means instead
_ISSUE = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def test_no_tracked_file_cites_an_issue_number() -> None:
    """Code, tests and docs say what they mean, not which tracker issue asked for it (committed results under
    ``bench/results`` are records of their time and keep their wording)."""
    me = Path(__file__).resolve()
    bad = []
    for p in _tracked_text_files():
        rel = p.relative_to(REPO).as_posix()
        if p.resolve() == me or rel.startswith("bench/results/"):
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if _ISSUE.search(line):
                bad.append(f"{rel}:{i}: {line.strip()[:100]}")
    assert not bad, "say what the issue asked for instead of its number:\n" + "\n".join(bad)
    assert _ISSUE.search("see " + "issue 17") and not _ISSUE.search("an issue with the parser")
