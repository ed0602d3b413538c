"""The identity of a kernel in the memory's records (the ``fingerprint`` of a record tuple, docs/MEMORY.md).

A fingerprint is the hash of the kernel's *key*: the project's identity, the file's path relative to its project
root and the kernel's name (``github.com/me/proj/kernels/add.cu::add_kernel``). The project's identity is its git
``origin`` URL, else the name of the folder holding the repository (for a worktree, the main checkout's), else the
project root's folder name: unrelated projects with a ``main.cu::add`` of their own stay apart. It does not depend on
where the project sits on disk, so a project that is moved, cloned a second time or checked out in another worktree
keeps its memory, and two checkouts of one project replay a measured table to the same figures. Records made before this rule (the hash of the file's absolute real
path) are still matched: :func:`fingerprint_aliases` gives both ids of a file, and the lookups by kernel accept
either (no schema change: the ``fingerprint`` column was and stays an opaque id).

A step ``htam optimize`` tried on a copy of the kernel is recorded under the kernel's *tried* id
(:func:`tried_fingerprint`: the kernel's id with :data:`TRIED_MARK` after it): the memory learns from it like from
any record (the ranker reads both ids as the one kernel, :func:`kernel_of`), but it is not a step of the file's own
history (the hover's "Last steps", the prefix its ranking is conditioned on) until ``--apply`` writes it into the file.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from pathlib import Path

__all__ = ["ROOT_MARKERS", "TRIED_MARK", "fingerprint_aliases", "is_tried", "kernel_of", "tried_fingerprint", "kernel_fingerprint", "kernel_key", "legacy_kernel_fingerprint",
           "project_identity", "project_root"]

#: Names whose presence makes a folder a project root (a version-control checkout, a workspace store, a
#: project configuration), looked for from the file's folder upward; the nearest one wins.
ROOT_MARKERS = (".git", ".hg", ".svn", ".htam", "htam.toml")
#: What follows a kernel's id in the records of the candidates ``htam optimize`` tried on copies of it.
TRIED_MARK = "+tried"


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def project_root(path: str | os.PathLike[str]) -> Path:
    """The nearest folder at or above ``path``'s folder that holds one of :data:`ROOT_MARKERS`; the file's own
    folder when none does (a file outside any project is then known by its name).

    Args:
        path: a file path (relative paths are taken from the current directory; symbolic links are kept, so a
            file reached through a linked folder inside a project belongs to that project).
    """
    folder = Path(os.path.abspath(path)).parent
    for d in (folder, *folder.parents):
        if any((d / m).exists() for m in ROOT_MARKERS):
            return d
    return folder


_ORIGIN = re.compile(r'^\s*\[remote\s+"origin"\]\s*$(?P<body>(?:\n(?!\s*\[).*)*)', re.MULTILINE)
_URL = re.compile(r"^\s*url\s*=\s*(?P<url>\S+)\s*$", re.MULTILINE)


@functools.lru_cache(maxsize=256)
def _git_identity(checkout: str) -> str:
    """The identity of the git checkout at folder ``checkout`` (which holds ``.git``): the ``origin`` URL of its
    config (without a trailing ``.git`` or ``/``), else the name of the folder holding the repository's common git
    folder (a worktree's ``.git`` file points into the main checkout's)."""
    dot = Path(checkout) / ".git"
    gitdir = dot
    if dot.is_file():
        try:
            line = dot.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            line = ""
        if line.startswith("gitdir:"):
            gitdir = (Path(checkout) / line.split(":", 1)[1].strip()).resolve()
    common = gitdir
    try:
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        pass
    try:
        config = (common / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        config = ""
    origin = _ORIGIN.search(config)
    url = _URL.search(origin.group("body")) if origin else None
    if url:
        return url.group("url").rstrip("/").removesuffix(".git")
    return common.parent.name if common.name == ".git" else Path(checkout).name


def project_identity(path: str | os.PathLike[str]) -> str:
    """Who the file's project is, independent of where it sits on disk (see the module docstring).

    Args:
        path: a file path.
    """
    folder = Path(os.path.abspath(path)).parent
    for d in (folder, *folder.parents):
        if (d / ".git").exists():
            return _git_identity(str(d))
    return project_root(path).name


def kernel_key(path: str | os.PathLike[str] | None, kernel_name: str) -> str:
    """The readable key a fingerprint hashes: ``<project identity>/<path relative to its project root, with />::
    <kernel name>``, or ``<text>::<kernel name>`` for untitled text.

    Args:
        path: the user's file, or ``None`` for untitled text; kernel_name: the kernel's name.
    """
    if not path:
        return f"<text>::{kernel_name}"
    absolute = Path(os.path.abspath(path))
    rel = absolute.relative_to(project_root(absolute)).as_posix()
    return f"{project_identity(absolute)}/{rel}::{kernel_name}"


def kernel_fingerprint(path: str | os.PathLike[str] | None, kernel_name: str) -> str:
    """A stable id of one kernel in one file (16 hex digits): the hash of :func:`kernel_key`.

    It survives edits of the kernel's body, so every step applied to the kernel, from the editor or from
    ``htam optimize --apply``, lands under one id, and the candidates ``htam optimize`` tried on copies (written
    elsewhere, but carrying the user's file path) under its :func:`tried_fingerprint`: the history of applied
    steps holds the former, and the memory's "on N kernels" evidence counts both as one kernel (:func:`kernel_of`). It survives
    moving the project too (the path is relative to the project root, :func:`project_root`, and the project is
    named by :func:`project_identity`).

    Args:
        path: the user's file, or ``None`` for untitled text.
        kernel_name: the kernel's name.
    """
    return _hash(kernel_key(path, kernel_name))


def legacy_kernel_fingerprint(path: str | os.PathLike[str] | None, kernel_name: str) -> str:
    """The fingerprint records made before the project-relative rule carry: the hash of the file's absolute real
    path and the kernel's name. Only for matching those records (:func:`fingerprint_aliases`)."""
    real = os.path.realpath(path) if path else "<text>"
    return _hash(f"{real}::{kernel_name}")


def fingerprint_aliases(path: str | os.PathLike[str] | None, kernel_name: str) -> tuple[str, ...]:
    """Every id records of this kernel may carry, the current one first: :func:`kernel_fingerprint`, then
    :func:`legacy_kernel_fingerprint` (of a store written before the project-relative rule, at this location)."""
    new = kernel_fingerprint(path, kernel_name)
    old = legacy_kernel_fingerprint(path, kernel_name)
    return (new,) if old == new else (new, old)


def tried_fingerprint(fingerprint: str) -> str:
    """The id of a step ``htam optimize`` tried on a copy of the kernel ``fingerprint`` (a
    :func:`kernel_fingerprint`) and did not write into its file: the memory learns from the record, the file's
    history does not hold it. Idempotent."""
    return fingerprint if is_tried(fingerprint) else fingerprint + TRIED_MARK


def is_tried(fingerprint: str) -> bool:
    """The record id ``fingerprint`` is a :func:`tried_fingerprint`: a candidate, not a step of the file."""
    return fingerprint.endswith(TRIED_MARK)


def kernel_of(fingerprint: str) -> str:
    """The kernel's id of a record id: ``fingerprint`` without the :data:`TRIED_MARK` of a tried candidate (the
    ranker's per-kernel evidence counts both as the same kernel)."""
    return fingerprint.removesuffix(TRIED_MARK)
