"""The identity of a kernel in the memory's records (the ``fingerprint`` of a record tuple, docs/MEMORY.md).

A fingerprint is the hash of the kernel's *key*: the file's path relative to its project root and the kernel's
name (``kernels/add.cu::add_kernel``). It does not depend on where the project sits on disk, so a project that is
moved, cloned a second time or checked out in another worktree keeps its memory, and two checkouts of one project
replay a measured table to the same figures. Records made before this rule (the hash of the file's absolute real
path) are still matched: :func:`fingerprint_aliases` gives both ids of a file, and the lookups by kernel accept
either (no schema change: the ``fingerprint`` column was and stays an opaque id).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["ROOT_MARKERS", "fingerprint_aliases", "kernel_fingerprint", "kernel_key", "legacy_kernel_fingerprint",
           "project_root"]

#: Names whose presence makes a folder a project root (a version-control checkout, a workspace store, a
#: project configuration), looked for from the file's folder upward; the nearest one wins.
ROOT_MARKERS = (".git", ".hg", ".svn", ".htam", "htam.toml")


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


def kernel_key(path: str | os.PathLike[str] | None, kernel_name: str) -> str:
    """The readable key a fingerprint hashes: ``<path relative to its project root, with />::<kernel name>``, or
    ``<text>::<kernel name>`` for untitled text.

    Args:
        path: the user's file, or ``None`` for untitled text; kernel_name: the kernel's name.
    """
    if not path:
        return f"<text>::{kernel_name}"
    absolute = Path(os.path.abspath(path))
    rel = absolute.relative_to(project_root(absolute)).as_posix()
    return f"{rel}::{kernel_name}"


def kernel_fingerprint(path: str | os.PathLike[str] | None, kernel_name: str) -> str:
    """A stable id of one kernel in one file (16 hex digits): the hash of :func:`kernel_key`.

    It survives edits of the kernel's body, so every step applied to the kernel, from the editor or from
    ``htam optimize`` (whose candidates are written elsewhere but carry the user's file path), lands under one
    id: the history of applied steps and the memory's "on N kernels" evidence count the same thing. It survives
    moving the project too (the path is relative to the project root, :func:`project_root`).

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
