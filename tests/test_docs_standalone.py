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


# -- the reader's docs: README.md, docs/*.md and ARCHITECTURE.md ------------------------------------------------
# a bare tracker number ("#12"; not "C#", "&#12;" or a Markdown heading)
_HASH_NUMBER = re.compile(r"(?<![\w&#])#\d+\b")
_CARRY = re.compile(r"\.dev" + r"carry\b")
# [text](target) and ![alt](target); the target ends at white space or the closing bracket
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _reader_docs() -> list[Path]:
    return [REPO / "README.md", REPO / "ARCHITECTURE.md", *sorted((REPO / "docs").glob("**/*.md"))]


def _prose_lines(path: Path) -> list[tuple[int, str]]:
    return list(enumerate(path.read_text(encoding="utf-8").splitlines(), 1))


def test_reader_docs_stand_alone() -> None:
    """README, docs/ and ARCHITECTURE.md cite no issue number ("issue 12", "#12"), no git-ignored carry folder,
    no design notes and no shared folder: a reader of a clone has none of them."""
    bad = []
    for p in _reader_docs():
        for i, line in _prose_lines(p):
            if (_ISSUE.search(line) or _HASH_NUMBER.search(line) or _CARRY.search(line) or _DESIGN.search(line)
                    or _SHARED.search(line)):
                bad.append(f"{p.relative_to(REPO)}:{i}: {line.strip()[:100]}")
    assert not bad, "say it inline instead:\n" + "\n".join(bad)


def test_the_reader_doc_patterns_catch_what_they_must() -> None:
    assert _HASH_NUMBER.search("fixed in " + "#12") and _HASH_NUMBER.search("(see " + "#3)")
    assert not _HASH_NUMBER.search("C# code") and not _HASH_NUMBER.search("&#12;") and not _HASH_NUMBER.search("## 2")
    assert _CARRY.search("carry " + ".dev" + "carry/llmc") and not _CARRY.search("carry the table")
    assert _LINK.findall("see [x](docs/A.md#sec) and ![i](img/a.png \"t\")") == ["docs/A.md#sec", "img/a.png"]


def _relative_links(path: Path) -> list[tuple[int, str]]:
    out, fenced = [], False
    for i, line in _prose_lines(path):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in _LINK.findall(re.sub(r"`[^`]*`", "", line)):  # code spans hold no links
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL (https:, mailto:) or an anchor in the same file
            out.append((i, target))
    return out


def test_every_relative_link_in_the_docs_resolves() -> None:
    bad = []
    for p in _reader_docs():
        for i, target in _relative_links(p):
            if not (p.parent / target.split("#", 1)[0]).exists():
                bad.append(f"{p.relative_to(REPO)}:{i}: {target}")
    assert not bad, "links to files that do not exist:\n" + "\n".join(bad)


def test_the_readme_is_short_and_in_order() -> None:
    """At most 120 lines: what it is with a screenshot, the two commands, the commands table, the editors,
    links; results, install details and the method live in docs/."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 120, f"README.md has {len(lines)} lines"
    heads = [ln for ln in lines if ln.startswith("## ")]
    assert heads == ["## Two commands, from a fresh clone", "## Commands", "## Editors", "## Read on"], heads
    first = text.index("## ")
    assert any(t.endswith(".png") for _, t in _relative_links(REPO / "README.md")) and text.index("![") < first
    assert "make demo" in text and "make test" in text
    table = [ln for ln in lines if ln.startswith("| `htam")]
    assert table and max(len(ln) for ln in table) <= 120, "keep the commands table's cells short"
    assert max(len(ln) for ln in lines) <= 160
