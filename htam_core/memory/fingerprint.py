"""The identity of a kernel in the memory's records (the ``fingerprint`` of a record tuple, docs/MEMORY.md)."""

from __future__ import annotations

import hashlib
import os


def kernel_fingerprint(path: str | os.PathLike[str] | None, kernel_name: str) -> str:
    """A stable id of one kernel in one file (16 hex digits): the real path of the file and the kernel's name.

    It survives edits of the kernel's body, so every step applied to the kernel, from the editor or from
    ``htam optimize`` (whose candidates are written elsewhere but carry the user's file path), lands under one
    id: the history of applied steps and the memory's "on N kernels" evidence count the same thing.

    Args:
        path: the user's file, or ``None`` for untitled text.
        kernel_name: the kernel's name.
    """
    real = os.path.realpath(path) if path else "<text>"
    return hashlib.sha256(f"{real}::{kernel_name}".encode()).hexdigest()[:16]
