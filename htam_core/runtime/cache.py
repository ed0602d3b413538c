"""On-disk cache of compile results, keyed by content hash.

A static profile compiles the kernel (nvcc, or Triton's AOT compiler plus ptxas). The result
(register counts, spills, shared memory, the tool's log) is a small JSON object stored under a
key that hashes everything the result depends on: the source text, the target, the flags, and a
fingerprint of each tool (its path, size and modification time, or its package version). A
repeated, unchanged profile therefore costs a file read and never starts a compiler.

Location: ``$HTAM_CACHE_DIR`` when set, else ``platformdirs.user_cache_dir("htam")``; entries
live in ``<root>/compile/<k[:2]>/<k>.json``; other results keyed the same way (Nsight Compute counters of one
kernel version, ``<root>/counters/``) use their own namespace. The CLI, the editor and later runs share it.
Writes are atomic (temp file + ``os.replace``), so concurrent profilers never read a half-written entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

#: Bump when the layout of cached values changes, so that old entries are ignored.
CACHE_FORMAT = 2


def cache_root() -> Path:
    """The cache's root directory: ``$HTAM_CACHE_DIR`` or the platform's user cache dir for htam."""
    env = os.environ.get("HTAM_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs  # lazily: worker processes that only parse ptxas logs do not need it

    return Path(platformdirs.user_cache_dir("htam"))


def content_key(**parts: Any) -> str:
    """SHA-256 hex digest of ``parts`` (JSON-serializable values), independent of argument order."""
    blob = json.dumps({"format": CACHE_FORMAT, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def file_fingerprint(path: str | os.PathLike | None) -> str:
    """Identify a tool binary without running it: real path, size and mtime (ns).

    Returns ``"missing"`` when ``path`` is ``None`` or does not exist.
    """
    if path is None:
        return "missing"
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return "missing"
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


@cache
def package_version(name: str) -> str:
    """Installed version of a distribution (``"triton"`` -> ``"3.9.0"``), or ``"missing"``."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"


class CompileCache:
    """A directory of JSON compile results, keyed by :func:`content_key`.

    Args:
        root: cache root; default :func:`cache_root` (evaluated at construction).
        enabled: ``False`` turns every ``get`` into a miss and every ``put`` into a no-op.
        namespace: the sub-directory of the root (``"compile"``: compile results; ``"counters"``: Nsight Compute
            counters of one kernel version, :class:`htam_core.profile.ncu_stage.CountersStage`).

    Attributes:
        hits, misses: counters for this instance (used by tests and ``--json`` extras).
    """

    def __init__(self, root: str | os.PathLike | None = None, *, enabled: bool = True,
                 namespace: str = "compile") -> None:
        self.root = Path(root) if root is not None else cache_root()
        self.namespace = namespace
        self.enabled = enabled
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / self.namespace / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value for ``key``, or ``None`` (missing, unreadable or corrupt entries miss)."""
        if not self.enabled:
            self.misses += 1
            return None
        try:
            with open(self._path(key), encoding="utf-8") as fh:
                value = json.load(fh)
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(value, dict):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` (a JSON-serializable dict) under ``key`` atomically. I/O errors are ignored:
        a cache that cannot be written only costs a recompile."""
        if not self.enabled:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(value, fh)
            os.replace(tmp, path)
        except OSError:
            return
