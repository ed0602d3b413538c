"""Where a CUDA file's headers are: the ``-I`` folders every nvcc call of the project adds.

A program often includes a header that is not in its own folder: NVIDIA's samples include ``<helper_cuda.h>``
from a ``Common/`` folder two levels up, a CMake project lists its include folders in ``CMakeLists.txt``, a
Makefile passes ``-I../common``. The compiler finds them because the build says where; htam compiles the file on
its own, so it reads the same places, in this order (:func:`include_dirs`):

1. ``compile_commands.json`` (the compilation database of clangd and CMake's
   ``CMAKE_EXPORT_COMPILE_COMMANDS``), in the file's folder, an ancestor, or an ancestor's ``build/``: the
   ``-I``/``-isystem`` folders of the file's entry (or of an entry in the same folder);
2. a ``Makefile``/``makefile``/``GNUmakefile`` in the file's folder: literal ``-I<dir>`` flags (a flag built from
   make variables is skipped);
3. a ``CMakeLists.txt`` in the file's folder: ``include_directories(...)`` and ``target_include_directories(...)``
   with literal paths or ``${CMAKE_CURRENT_SOURCE_DIR}``/``${CMAKE_CURRENT_LIST_DIR}``;
4. for each header the file includes that none of those folders (nor the file's own, nor the CUDA toolkit's or
   the system's include folder) holds: a search of the file's ancestors, at most :data:`MAX_LEVELS_UP` levels up
   and stopping at a repository root (a ``.git`` entry), each ancestor and its sub-folders up to
   :data:`SEARCH_DEPTH` levels down, nearest ancestor first; the first folder holding the header is used.

Every folder found says why (:attr:`IncludeDir.why`), so the commands can print which one was used. Nothing is
compiled or run here; answers are cached for :data:`TTL_S` seconds by file, text and known folders.

Where the idea comes from: the JSON compilation database (clang's ``compile_commands.json`` format) and the
search a developer does by hand for a missing header.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from htam_core.runtime.toolchain import find_nvcc

__all__ = ["MAX_LEVELS_UP", "SEARCH_DEPTH", "IncludeDir", "describe", "include_dirs", "included_names"]

#: how many ancestors of the file's folder are searched for a build file or a missing header
MAX_LEVELS_UP = 4
#: how deep below each ancestor a missing header is looked for (1: the ancestor's own sub-folders)
SEARCH_DEPTH = 2
#: at most this many folders are visited by one header search
MAX_FOLDERS = 4000
#: seconds an answer is reused
TTL_S = 10.0
#: folders never searched
_SKIP = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", "site-packages",
                   ".mypy_cache", ".pytest_cache", ".ruff_cache", "htam-out"})
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_MAKE_I = re.compile(r"(?<![\w$(])-I[ \t]*([^\s$()'\"\\]+)")
_CMAKE = re.compile(r"\b(include_directories|target_include_directories)\s*\(([^)]*)\)", re.I)
_CMAKE_WORDS = frozenset({"PRIVATE", "PUBLIC", "INTERFACE", "SYSTEM", "BEFORE", "AFTER"})


@dataclass(frozen=True)
class IncludeDir:
    """One ``-I`` folder found for a file.

    Attributes:
        path: the folder (absolute, resolved).
        why: where it came from, one phrase (``"compile_commands.json at /p/build"``, ``"Makefile"``,
            ``"holds helper_cuda.h, 3 levels up"``).
    """

    path: Path
    why: str


def included_names(text: str) -> list[tuple[str, bool]]:
    """The headers ``text`` includes, in order, each once: ``(name, quoted)`` (``quoted`` for ``"x.h"``, else
    ``<x.h>``)."""
    seen: dict[str, bool] = {}
    for m in _INCLUDE.finditer(text):
        seen.setdefault(m.group(2).strip(), m.group(1) == '"')
    return list(seen.items())


def _ancestors(folder: Path) -> list[Path]:
    """``folder`` and its ancestors, at most :data:`MAX_LEVELS_UP` levels up, stopping at a repository root."""
    out = [folder]
    d = folder
    for _ in range(MAX_LEVELS_UP):
        if (d / ".git").exists() or d.parent == d:
            break
        d = d.parent
        out.append(d)
    return out


def _flag_dirs(args: Sequence[str], base: Path) -> list[Path]:
    """The folders of ``-I``, ``-isystem`` and ``--include-path`` flags in ``args``, relative to ``base``."""
    out: list[Path] = []
    it = iter(range(len(args)))
    for i in it:
        a = args[i]
        val = None
        for flag in ("-I", "-isystem", "--include-path=", "-iquote"):
            if a == flag.rstrip("=") and i + 1 < len(args):
                val = args[i + 1]
                next(it, None)
                break
            if a.startswith(flag) and len(a) > len(flag):
                val = a[len(flag):]
                break
        if val:
            out.append((base / val).resolve())
    return out


def _compile_db(folder: Path, name: str) -> tuple[list[Path], str] | None:
    """The include folders of ``name``'s entry (else an entry in ``folder``) of the nearest compilation
    database, with where it is."""
    for anc in _ancestors(folder):
        for db in (anc / "compile_commands.json", anc / "build" / "compile_commands.json"):
            if not db.is_file():
                continue
            try:
                entries = json.loads(db.read_text(encoding="utf-8", errors="replace"))
            except (OSError, ValueError):
                continue
            if not isinstance(entries, list):
                continue
            best: tuple[int, list[Path]] | None = None
            for e in entries:
                if not isinstance(e, dict) or not isinstance(e.get("file"), str):
                    continue
                base = Path(str(e.get("directory") or db.parent))
                f = (base / e["file"]).resolve()
                rank = 0 if f == folder / name else 1 if f.parent == folder else None
                if rank is None or (best is not None and best[0] <= rank):
                    continue
                args = e.get("arguments")
                if not isinstance(args, list):
                    try:
                        args = shlex.split(str(e.get("command") or ""))
                    except ValueError:
                        continue
                best = (rank, _flag_dirs([str(a) for a in args], base))
            if best is not None:
                return best[1], f"compile_commands.json at {db.parent}"
    return None


def _makefile(folder: Path) -> list[Path]:
    """Literal ``-I`` folders of the Makefile in ``folder``."""
    for name in ("GNUmakefile", "makefile", "Makefile"):
        mk = folder / name
        if mk.is_file():
            try:
                text = mk.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return []
            return [(folder / m.group(1)).resolve() for m in _MAKE_I.finditer(text)]
    return []


def _cmake(folder: Path) -> list[Path]:
    """Literal include folders of ``folder``'s ``CMakeLists.txt``."""
    cm = folder / "CMakeLists.txt"
    if not cm.is_file():
        return []
    try:
        text = cm.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for m in _CMAKE.finditer(text):
        words = m.group(2).split()
        if m.group(1).lower() == "target_include_directories":
            words = words[1:]
        for w in words:
            w = w.strip('"')
            if w.upper() in _CMAKE_WORDS:
                continue
            for var in ("${CMAKE_CURRENT_SOURCE_DIR}", "${CMAKE_CURRENT_LIST_DIR}"):
                w = w.replace(var, str(folder))
            if "$" not in w and w:
                out.append((folder / w).resolve())
    return out


def _system_dirs() -> list[Path]:
    """The CUDA toolkit's and the system's include folders (a header there is no missing header)."""
    out = [Path("/usr/include"), Path("/usr/local/include")]
    nvcc = find_nvcc()
    if nvcc:
        out.insert(0, Path(nvcc).resolve().parent.parent / "include")
    return out


def _search(anchor: Path, names: list[str]) -> dict[str, tuple[Path, int]]:
    """For each of ``names``, the first folder holding it: ancestors of ``anchor`` nearest first, each with its
    sub-folders up to :data:`SEARCH_DEPTH` levels (breadth first, by name), with the level it was found at."""
    found: dict[str, tuple[Path, int]] = {}
    visited = 0
    for level, anc in enumerate(_ancestors(anchor)):
        frontier = [anc]
        for depth in range(SEARCH_DEPTH + 1):
            nxt: list[Path] = []
            for d in frontier:
                visited += 1
                if visited > MAX_FOLDERS:
                    return found
                for n in names:
                    if n not in found and (d / n).is_file():
                        found[n] = (d.resolve(), level)
                if len(found) == len(names):
                    return found
                if depth < SEARCH_DEPTH:
                    try:
                        subs = sorted(e.name for e in os.scandir(d) if e.is_dir(follow_symlinks=False))
                    except OSError:
                        subs = []
                    nxt += [d / s for s in subs if s not in _SKIP and not s.startswith(".")]
            frontier = nxt
    return found


_CACHE: dict[tuple[str, str, tuple[str, ...]], tuple[float, list[IncludeDir]]] = {}


def include_dirs(source: str | os.PathLike[str], text: str | None = None,
                 known: Sequence[str | os.PathLike[str]] = ()) -> list[IncludeDir]:
    """The ``-I`` folders the CUDA file ``source`` needs beyond its own folder and ``known``, each with why.

    Args:
        source: the file (``.cu``, ``.cuh``, ``.cpp``, ...); its folder anchors the search.
        text: its text (read from ``source`` when ``None``; an unsaved buffer may differ).
        known: folders already passed with ``-I`` (a candidate's own folder and its original's). When given, the
            last one anchors the search: a candidate in ``htam-out/`` is searched from its original's folder.

    Returns:
        The folders, in the order of the module's rules, each once, none of ``known`` nor the file's own.
        Never raises: an unreadable file or build file counts as none.
    """
    src = Path(source).resolve()
    if text is None:
        try:
            text = src.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    known_dirs = [Path(k).resolve() for k in known]
    key = (str(src), hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
           tuple(str(k) for k in known_dirs))
    hit = _CACHE.get(key)
    now = time.monotonic()
    if hit is not None and now - hit[0] < TTL_S:
        return list(hit[1])
    anchor = known_dirs[-1] if known_dirs else src.parent
    out: list[IncludeDir] = []
    have = {src.parent, *known_dirs}

    def add(d: Path, why: str) -> None:
        if d not in have and d.is_dir():
            have.add(d)
            out.append(IncludeDir(d, why))

    db = _compile_db(anchor, src.name)
    if db is not None:
        for d in db[0]:
            add(d, db[1])
    for d in _makefile(anchor):
        add(d, f"Makefile in {anchor.name}/")
    for d in _cmake(anchor):
        add(d, f"CMakeLists.txt in {anchor.name}/")
    system = _system_dirs()
    missing = [n for n, quoted in included_names(text)
               if (quoted or "." in n) and not any((d / n).is_file() for d in (*have, *system))]
    found = _search(anchor, missing) if missing else {}
    by_dir: dict[Path, list[str]] = {}
    for n in missing:
        if n in found:
            by_dir.setdefault(found[n][0], []).append(n)
    for d, names in by_dir.items():
        level = next(found[n][1] for n in names)
        up = "its own folder's sub-folder" if level == 0 else f"{level} level{'s' if level > 1 else ''} up"
        add(d, f"holds {', '.join(names)}; searched from {anchor.name}/, {up}")
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[key] = (now, out)
    return list(out)


def describe(dirs: Sequence[IncludeDir]) -> list[str]:
    """One line per folder, for the commands' notes: ``include folder /p/Common (holds helper_cuda.h, ...)``."""
    return [f"include folder {d.path} ({d.why})" for d in dirs]
