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

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tree_sitter import Node, Tree

from htam_core.source.analysis.syntax import parse

#: how many levels of nested local includes are followed
MAX_DEPTH = 4
#: largest header read, bytes (a local header bigger than this is skipped)
MAX_BYTES = 1 << 20
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


def local_headers(src: bytes | str, path: str | Path | None) -> tuple[Header, ...]:
    """The local headers ``src`` (the text of file ``path``) includes, innermost first, each once.

    Args:
        src: the including unit's text.
        path: its file path; ``None`` (in-memory text) gives no headers, since nothing is next to it.

    Returns:
        The headers found and readable (a missing one is skipped: the compiler reports it, not this).
    """
    if path is None:
        return ()
    data = src.encode("utf-8") if isinstance(src, str) else src
    out: list[Header] = []
    seen: set[Path] = set()

    def visit(text: bytes, directory: Path, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        for name in quoted_includes(text):
            p = (directory / name).resolve()
            if p in seen or not p.is_file():
                continue
            seen.add(p)
            h = _read(str(p), p.stat().st_mtime_ns)
            if h is None:
                continue
            visit(h.src, p.parent, depth + 1)
            out.append(h)

    visit(data, Path(path).resolve().parent, 1)
    return tuple(out)
