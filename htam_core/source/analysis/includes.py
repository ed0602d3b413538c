"""Local headers of a CUDA unit: the ``#include "x.h"`` files that sit next to it, parsed once.

Constants and helper functions often live in a small header beside the ``.cu`` file (``#define TILE 16``,
``constexpr int kBlock = 256;``, ``inline int ceil_div(int a, int b)``). :func:`local_headers` finds the
quoted includes of a unit (``#include "helpers.h"``, never ``<...>`` system headers), resolves each
relative to the directory of the file that includes it (as the C preprocessor does first for the
quoted form, [cpp.include]), follows their own quoted includes up to :data:`MAX_DEPTH` levels, and
returns them innermost first, so that a header's definitions come before those of the file using them.
Both the constant evaluator (:class:`htam_core.source.analysis.constants.ConstEnv`) and the host-code
evaluator (:class:`htam_core.harness.cu_eval.Program`) read their facts from this one list.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tree_sitter import Node, Tree

from htam_core.source.analysis.syntax import parse
from htam_core.source.errors import MAX_SOURCE_BYTES

#: how many levels of nested local includes are followed
MAX_DEPTH = 4
#: largest header read, bytes (a local header bigger than this is skipped): the one source limit
MAX_BYTES = MAX_SOURCE_BYTES
_QUOTED = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)


@dataclass(frozen=True)
class Header:
    """One local header, parsed.

    Attributes:
        path: the resolved file path.
        src: its bytes (node offsets index these).
        tree: its CUDA syntax tree (kept so that ``root`` stays valid).
    """

    path: Path
    src: bytes
    tree: Tree

    @property
    def root(self) -> Node:
        """The header's root node."""
        return self.tree.root_node


def quoted_includes(src: bytes) -> list[str]:
    """The file names of the quoted ``#include "..."`` lines of ``src``, in order (``<...>`` is skipped)."""
    return [m.group(1).decode("utf-8", "replace") for m in _QUOTED.finditer(src)]


@lru_cache(maxsize=256)
def _read(path: str, mtime_ns: int) -> Header | None:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError:
        return None
    if len(data) > MAX_BYTES:
        return None
    return Header(p, data, parse(data, "cuda"))


def header_paths(src: bytes | str, path: str | Path | None,
                 include_dirs: Iterable[str | Path] = ()) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """The local headers ``src`` (the text of file ``path``) includes, transitively, innermost first, each once.

    A quoted ``#include "x.h"`` is looked up in the folder of the file that holds the line, then in each of
    ``include_dirs`` (the ``-I`` folders), as the C preprocessor does for the quoted form ([cpp.include]);
    nested includes are followed up to :data:`MAX_DEPTH` levels.

    Args:
        src: the including unit's text.
        path: its file path; ``None`` (in-memory text) resolves only through ``include_dirs``.
        include_dirs: the ``-I`` folders of the build, in order.

    Returns:
        ``(found, missing)``: the resolved header files, and the names that resolved nowhere (a header that
        appears later changes what the unit builds to, so a cache key counts these too).
    """
    data = src.encode("utf-8") if isinstance(src, str) else src
    dirs = [Path(d).resolve() for d in include_dirs]
    found: list[Path] = []
    missing: list[str] = []
    seen: set[Path] = set()

    def resolve(name: str, directory: Path | None) -> Path | None:
        for d in ([directory] if directory is not None else []) + dirs:
            p = (d / name).resolve()
            if p.is_file():
                return p
        return None

    def visit(text: bytes, directory: Path | None, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        for name in quoted_includes(text):
            p = resolve(name, directory)
            if p is None:
                if name not in missing:
                    missing.append(name)
                continue
            if p in seen:
                continue
            seen.add(p)
            try:
                body = p.read_bytes() if p.stat().st_size <= MAX_BYTES else b""
            except OSError:
                body = b""
            visit(body, p.parent, depth + 1)
            found.append(p)

    visit(data, Path(path).resolve().parent if path is not None else None, 1)
    return tuple(found), tuple(missing)


def headers_digest(src: bytes | str, path: str | Path | None, include_dirs: Iterable[str | Path] = ()) -> str:
    """SHA-256 (hex) of the content of every local header ``src`` includes (:func:`header_paths`), with each
    header's path and the names that resolved nowhere: the part of a build's or a task's cache key that a
    header edited next to the ``.cu`` file changes. A unit without quoted includes gets the digest of nothing
    (the same for every such unit).

    Args:
        src: the including unit's text; path: its file (``None`` for in-memory text);
        include_dirs: the ``-I`` folders of the build.
    """
    found, missing = header_paths(src, path, include_dirs)
    h = hashlib.sha256()
    for p in found:
        try:
            body = p.read_bytes()
        except OSError:
            body = b"<unreadable>"
        for part in (str(p).encode("utf-8", "surrogateescape"), hashlib.sha256(body).digest()):
            h.update(len(part).to_bytes(8, "little"))  # length-prefixed: no two lists hash alike
            h.update(part)
    for name in missing:
        h.update(b"missing:" + name.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


def local_headers(src: bytes | str, path: str | Path | None,
                  include_dirs: Iterable[str | Path] = ()) -> tuple[Header, ...]:
    """The local headers ``src`` (the text of file ``path``) includes, innermost first, each once, parsed.

    Args:
        src: the including unit's text.
        path: its file path; ``None`` (in-memory text) gives no headers, since nothing is next to it.
        include_dirs: further ``-I`` folders to look in (:func:`header_paths`).

    Returns:
        The headers found and readable (a missing one is skipped: the compiler reports it, not this).
    """
    if path is None:
        return ()
    out = []
    for p in header_paths(src, path, include_dirs)[0]:
        h = _read(str(p), p.stat().st_mtime_ns) if p.is_file() else None
        if h is not None:
            out.append(h)
    return tuple(out)
