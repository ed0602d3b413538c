"""Launch sites anywhere in the workspace: the workspace launch index and the joint launch unit.

A kernel is often defined in one file and launched from another: a ``.cpp``/``.cu`` host file, a
``#define`` wrapper in its own file, the CUDA string of a Python ``torch.utils.cpp_extension.load_inline``
call, a cupy ``RawKernel``/``RawModule`` launcher, or (Triton) another module that imports the kernel and
calls ``kernel[grid](...)``. This module finds those launches and makes them readable by the rest of the
engine the way the compiler reads them: as one translation unit.

- :func:`find_launches` lists a kernel's launches outside its own definition's reach, each a
  :class:`WorkspaceLaunch` (file, byte range, line, grid/block expressions, template arguments and the
  values that are known).
- :func:`launch_unit` builds a :class:`LaunchUnit`: the kernel's file followed by the texts that launch it
  (whole host files, a ``#define`` body wrapped in a host function, the content of a Python string, a cupy
  call written as a host function's ``<<<>>>`` launch by :mod:`htam_core.source.pylaunch`), parsed
  as one :class:`~htam_core.source.model.SourceModel`. The analysis layer reads its launches, constants and
  ``dim3`` variables as in a single file, so every launch-aware fact (and every transform that reads
  facts) works unchanged; :meth:`LaunchUnit.locate` maps edits on the joint text back to per-file edits. A
  kernel held in a Python string gets its launch texts inserted at the end of its own string (one CUDA text).
- :func:`declaring_files` lists the headers that declare a kernel (a step that changes its parameter types
  edits them too).

A file launches the user's kernel only when its launch binds to the user's definition, as the compiler binds it
(:mod:`htam_core.source.kernel_binding`): a file that defines a kernel of that name itself, or whose includes
reach another definition and not the user's, launches that other kernel and is left out.

The search is bounded: the kernel file's folder and its sub-folders, or the enclosing git repository
when there is one within :data:`MAX_LEVELS_UP` levels (or an explicit workspace root), at most
:data:`MAX_FILES` files of :data:`MAX_SOURCE_BYTES` each, skipping build and environment folders. A file is
read only when its size or modification time changed (a cache keyed by path, mtime and size).

Where the idea comes from: the compiler sees a kernel and its launch in one translation unit (``#include``
or separate compilation with a declaration); cupy's ``RawKernel.__call__(grid, block, args)`` and
``RawModule.get_function`` (cupy documentation, "User-Defined Kernels"); PyTorch's
``torch.utils.cpp_extension.load_inline(cuda_sources=...)``; Triton's ``kernel[grid](...)`` launch syntax.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import io
import os
import re
import time
import tokenize
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from htam_core.source.analysis import analyze
from htam_core.source.analysis.facts import Dim
from htam_core.source.analysis.header_macros import define_lines, included_launch_macros
from htam_core.source.analysis.unit import cuda_fragments
from htam_core.source.api import parse_text
from htam_core.source.errors import MAX_SOURCE_BYTES
from htam_core.source.kernel_binding import OTHER, UNSEEN, binding, binding_through_includers, defines_kernel
from htam_core.source.model import Kernel, SourceModel
from htam_core.source.pylaunch import cupy_handles, cupy_launches, imported_handles, python_text

#: file suffixes searched for launches of a CUDA kernel (C/C++/CUDA host code and Python launchers)
CUDA_LAUNCHER_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".py")
#: file suffixes searched for launches of a Triton kernel
TRITON_LAUNCHER_SUFFIXES = (".py",)
#: at most this many files are listed per search
MAX_FILES = 2000
#: how far up from the kernel's folder a git repository root is looked for
MAX_LEVELS_UP = 6
#: a file htam writes into every output folder it creates (``htam optimize --out``): such a folder holds copies of
#: the user's files (the best kernel, its edited launcher), never launches of the user's kernel, and is not searched
OUTPUT_MARKER = ".htam-output"
#: folders never searched
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "env", "__pycache__", "build",
                       "dist", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages"})

_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)[ \t]*((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)
_CUPY_MAKERS = (b"RawKernel", b"RawModule")
#: a Python file's CUDA strings are read for launches only when it compiles CUDA from strings
_PY_CUDA_LOADERS = (b"load_inline", b"cpp_extension", b"RawModule", b"RawKernel")


@dataclass(frozen=True)
class WorkspaceLaunch:
    """One launch of a kernel found in the workspace.

    Attributes:
        path: the file that holds the launch.
        style: ``"cuda"`` (a ``<<<>>>`` launch in host code), ``"macro"`` (inside a ``#define`` body),
            ``"python-string"`` (in CUDA text held in a Python string, e.g. ``load_inline``'s ``cuda_sources``),
            ``"cupy"`` (``f((grid,), (block,), args)`` on a cupy kernel object) or ``"triton"``
            (``kernel[grid](...)`` in another module).
        span: the launch call's bytes in ``path`` (UTF-8 offsets, end exclusive).
        line: 1-based line of the call in ``path``.
        grid: the grid expression as written (Triton: the subscript).
        block: the block expression as written, ``None`` when the launch has none (Triton).
        template_args: the template arguments of the launched callee as written (``k<float, 256>`` ->
            ``("float", "256")``); for Triton the constexpr keyword arguments (``"BLOCK=1024"``).
        grid_value, block_value: the components' integer values when every component is known, else ``None``.
        editable: the launch lies in text the joint unit holds (:func:`launch_unit`), so a step can edit it.
    """

    path: str
    style: str
    span: tuple[int, int]
    line: int
    grid: str
    block: str | None
    template_args: tuple[str, ...] = ()
    grid_value: tuple[int, ...] | None = None
    block_value: tuple[int, ...] | None = None
    editable: bool = True

    @property
    def known(self) -> bool:
        """Whether the block's size is known (a constant, or a Triton launch whose constexprs are given)."""
        return self.block_value is not None or (self.style == "triton" and bool(self.template_args))

    def to_json(self) -> dict[str, object]:
        """JSON form, for ``htam kernels --json`` and the editor."""
        return {"path": self.path, "style": self.style, "line": self.line, "span": list(self.span),
                "grid": self.grid, "block": self.block, "template_args": list(self.template_args),
                "grid_value": list(self.grid_value) if self.grid_value else None,
                "block_value": list(self.block_value) if self.block_value else None,
                "known": self.known, "editable": self.editable}


@dataclass(frozen=True)
class Fragment:
    """A piece of some file's text that holds launches, as the joint unit appends it.

    Attributes:
        path: the file.
        base: byte offset of ``text`` in the file.
        text: the file's text from ``base`` (the whole file, a ``#define`` body, a Python string's content).
        style: the :attr:`WorkspaceLaunch.style` of the launches in it.
        prefix, suffix: text the joint unit writes around it (a ``#define`` body becomes a host function);
            edits there are not the user's and are refused.
        to_user: how a step's new text in ``text`` is written in the user's file when ``text`` is a translation
            of equal length (a cupy component: C to Python, :func:`~htam_core.source.pylaunch.python_text`;
            ``None`` when it cannot be); ``None``: as it is.
        launch: for the first grid component of a cupy launch, the Python call it stands for: ``(span, line,
            grid, block)`` as written.
        fixed: why a step may not edit it (a value other code of the file reads too), or ``""``.
    """

    path: str
    base: int
    text: str
    style: str
    prefix: str = ""
    suffix: str = ""
    to_user: Callable[[str], str | None] | None = None
    launch: tuple[tuple[int, int], int, str, str] | None = None
    fixed: str = ""


@dataclass(frozen=True)
class _Segment:
    """Where a fragment's text sits in the joint unit (byte offsets)."""

    start: int
    end: int
    fragment: Fragment


@dataclass
class LaunchUnit:
    """A kernel's file joined with the texts that launch it, parsed as one unit.

    Attributes:
        own: the kernel file's model; ``model`` is its text with the fragments inserted at ``at``.
        model: the joint model (path and language of the kernel's file).
        kernel: the kernel in ``model``.
        segments: where each inserted fragment sits in ``model.text``.
        files: texts of workspace files that differ from disk, by resolved path.
        at: the kernel file's byte offset the fragments are inserted at (``None``: after its text; a kernel in a
            Python string: the end of the string's content, so kernel and launches are one CUDA text).
        inserted: bytes inserted there (the fragments with their glue).
    """

    own: SourceModel
    model: SourceModel
    kernel: Kernel
    segments: tuple[_Segment, ...] = field(default_factory=tuple)
    files: Mapping[str, str] = field(default_factory=dict)
    at: int | None = None
    inserted: int = 0

    def text_of(self, path: str) -> str | None:
        """The text of ``path`` the unit was built from (the kernel's file, a given text, or the file on disk)."""
        if path == self.own.path:
            return self.own.text
        if path in self.files:
            return self.files[path]
        data = _read_bytes(path)
        return None if data is None else _decode(data)

    @property
    def own_bytes(self) -> int:
        """Where the inserted fragments start: joint offsets below it are the kernel file's own."""
        return len(self.own.text.encode("utf-8")) if self.at is None else self.at

    def locate(self, start: int, end: int) -> tuple[str | None, int, int] | None:
        """Where the joint unit's bytes ``[start, end)`` are in the user's files: ``(None, start, end)`` for the
        kernel's file (also a ``#define`` body of it, or a cupy launch in it), ``(path, s, e)`` for another file,
        or ``None`` when they fall outside the user's text (the glue between the parts, or a wrapper the joint
        unit wrote)."""
        if end <= self.own_bytes:
            return None, start, end
        if start >= self.own_bytes + self.inserted:  # the kernel file's text after the inserted fragments
            return None, start - self.inserted, end - self.inserted
        seg = self.segment(start, end)
        if seg is None:
            return None
        shift = seg.fragment.base - seg.start
        path = None if seg.fragment.path == self.own.path else seg.fragment.path
        return path, start + shift, end + shift

    def segment(self, start: int, end: int) -> _Segment | None:
        """The inserted fragment that holds the joint unit's bytes ``[start, end)``, if one does."""
        return next((g for g in self.segments if g.start <= start and end <= g.end), None)

    def fixed(self, start: int, end: int) -> str:
        """Why no step may edit the joint unit's bytes ``[start, end)`` (:attr:`Fragment.fixed`), or ``""``."""
        seg = self.segment(start, end) if self.own_bytes < end and start < self.own_bytes + self.inserted else None
        return seg.fragment.fixed if seg is not None else ""

    def user_text(self, start: int, end: int, new_text: str) -> str | None:
        """A step's ``new_text`` for the joint unit's bytes ``[start, end)`` as written in the user's file: as it
        is, or translated where the fragment is a translation (a cupy component); ``None`` when it cannot be."""
        seg = self.segment(start, end) if self.own_bytes < end and start < self.own_bytes + self.inserted else None
        if seg is None or seg.fragment.to_user is None:
            return new_text
        return seg.fragment.to_user(new_text)

    def file_line(self, line: int) -> tuple[str, int] | None:
        """The file and 1-based line of the joint unit's line ``line`` when it lies in an appended fragment (a
        launcher's line), else ``None`` (the kernel's own file, whose lines are the joint unit's)."""
        data = self.model.text.encode("utf-8")
        start, pos = 0, 0
        for _ in range(line - 1):
            pos = data.find(b"\n", start)
            if pos < 0:
                return None
            start = pos + 1
        if start < self.own_bytes:
            return None
        if start >= self.own_bytes + self.inserted:  # the kernel file's own lines after the inserted fragments
            gap = data[self.own_bytes:self.own_bytes + self.inserted].count(b"\n")
            return self.own.path, line - gap
        seg = next((g for g in self.segments if g.start <= start <= g.end), None)
        if seg is None:
            return None
        offset = seg.fragment.base + (start - seg.start)
        text = (self.text_of(seg.fragment.path) or "").encode("utf-8")
        return seg.fragment.path, text.count(b"\n", 0, offset) + 1

    def relabel(self, message: str) -> str:
        """``message`` with each ``line N`` of the joint unit that lies in a launcher written as ``line M of
        host.cpp`` (messages of the analysis layer and the transforms count the joint unit's lines)."""
        def one(m: re.Match[str]) -> str:
            where = self.file_line(int(m.group(1)))
            if where is None:
                return m.group(0)
            return f"line {where[1]}" if where[0] == self.own.path else f"line {where[1]} of {Path(where[0]).name}"
        return re.sub(r"\bline (\d+)\b", one, message)

    def launches(self) -> list[WorkspaceLaunch]:
        """The kernel's launches that lie in the appended fragments, mapped to their files: the analysis layer's
        launch facts of the joint unit (:attr:`~htam_core.source.analysis.KernelFacts.launches`), with the grid and
        block as written at the site."""
        sites = {(s.span.start, s.span.end): s for s in self.kernel.launch_sites}
        out = []
        for lf in analyze(self.model, self.kernel).launches:
            seg = next((g for g in self.segments if lf.span and g.start <= lf.span[0] and lf.span[1] <= g.end), None)
            site = sites.get(lf.span) if lf.span else None
            call = next((g.fragment for g in self.segments if g.fragment.launch is not None and lf.span
                         and lf.span[0] <= g.start and g.end <= lf.span[1]), None)
            if call is not None and call.launch is not None:  # a cupy call written as a <<<>>> launch
                span, line, grid, block = call.launch
                out.append(WorkspaceLaunch(call.path, call.style, span, line, grid, block, (),
                                           _values(lf.grid), _values(lf.block)))
                continue
            if seg is None or site is None:
                continue
            f = seg.fragment
            start, end = lf.span[0] + f.base - seg.start, lf.span[1] + f.base - seg.start
            line = (self.text_of(f.path) or "").encode("utf-8").count(b"\n", 0, start) + 1
            out.append(WorkspaceLaunch(
                f.path, f.style, (start, end), line, site.config.get("grid", ""), site.config.get("block"),
                lf.template_args or tuple(f"{k}={v}" for k, v in lf.kwargs), _values(lf.grid), _values(lf.block)))
        return out


def _values(dims: Sequence[Dim]) -> tuple[int, ...] | None:
    """The components' values when every one is known (and there is one), else ``None``."""
    vals = tuple(d.value for d in dims)
    return vals if vals and all(v is not None for v in vals) else None  # type: ignore[return-value]


# ----------------------------------------------------------------------------- the search


def workspace_root(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> Path:
    """The folder searched for launches of a kernel in ``path``: ``root`` when given (an editor's workspace
    folder that contains ``path``), else the git repository that holds ``path`` (a ``.git`` entry within
    :data:`MAX_LEVELS_UP` levels up), else ``path``'s own folder."""
    here = Path(path).resolve().parent
    if root is not None:
        r = Path(root).resolve()
        if here == r or r in here.parents:
            return r
    d = here
    for _ in range(MAX_LEVELS_UP + 1):
        if (d / ".git").exists():
            return d
        if d.parent == d:
            break
        d = d.parent
    return here


#: seconds a folder's listing is reused (an editor asks once per transform and keystroke burst)
LISTING_TTL_S = 5.0
_LISTINGS: dict[tuple[Path, tuple[str, ...]], tuple[float, list[Path]]] = {}


def mark_output_folder(folder: str | os.PathLike[str]) -> None:
    """Write :data:`OUTPUT_MARKER` into ``folder`` (an existing output folder of htam), so that the launch search
    leaves it and its sub-folders out. A folder that cannot be written to is left as it is (no error)."""
    try:
        Path(folder, OUTPUT_MARKER).write_text("htam output folder: copies of kernels, not searched for launches\n",
                                               encoding="utf-8")
    except OSError:
        pass


def _listing(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """Files under ``root`` with one of ``suffixes``, sorted, at most :data:`MAX_FILES` (reused for
    :data:`LISTING_TTL_S` seconds)."""
    key = (root, suffixes)
    hit = _LISTINGS.get(key)
    now = time.monotonic()
    if hit is not None and now - hit[0] < LISTING_TTL_S:
        return hit[1]
    out = _walk(root, suffixes)
    if len(_LISTINGS) > 32:
        _LISTINGS.clear()
    _LISTINGS[key] = (now, out)
    return out


def _walk(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """The walk behind :func:`_listing`."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if OUTPUT_MARKER in filenames:  # htam's own output (optimize --out): copies of the user's files, not theirs
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(suffixes):
                out.append(Path(dirpath) / name)
                if len(out) >= MAX_FILES:
                    return out
    return out


_BYTES: dict[str, tuple[int, int, bytes | None]] = {}


def _read_bytes(path: str) -> bytes | None:
    """The bytes of ``path`` (``None`` when unreadable or over :data:`MAX_SOURCE_BYTES`), cached by mtime."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    hit = _BYTES.get(path)
    if hit is not None and hit[:2] == (st.st_mtime_ns, st.st_size):
        return hit[2]
    data: bytes | None = None
    if st.st_size <= MAX_SOURCE_BYTES:
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = None
    _BYTES[path] = (st.st_mtime_ns, st.st_size, data)
    return data


def _decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _macro_fragments(path: str, data: bytes, kernel: Kernel | str) -> list[Fragment]:
    """``#define`` bodies of ``data`` that launch ``kernel`` (``#define LAUNCH(n) k<<<...>>>(...)``), each wrapped
    in a host function whose parameters are the macro's (``int``), so the body parses as a statement."""
    name = kernel if isinstance(kernel, str) else kernel.name
    out = []
    for m in _DEFINE.finditer(data):
        body = m.group(3)
        if b"<<<" not in body or not re.search(rb"\b" + re.escape(name.encode()) + rb"\b", body):
            continue
        params = [p.strip() for p in m.group(2).decode("utf-8", "replace").split(",")]
        decl = ", ".join(f"int {p}" for p in params if p.isidentifier())
        text = _decode(body)
        if text is None:
            continue
        out.append(Fragment(path, m.start(3), text, "macro",
                            prefix=f"\nstatic void htam_macro_{m.group(1).decode()}({decl}) {{ ",
                            suffix=";\n}\n"))
    return out


def _string_fragments(path: str, data: bytes, name: str) -> list[Fragment]:
    """The contents of Python string literals of ``data`` that launch ``name`` with ``<<<>>>`` (the CUDA source
    of a ``load_inline`` call); raw contents, so offsets are the file's."""
    text = _decode(data)
    if text is None:
        return []
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln.encode("utf-8")))
    out = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    for tok in tokens:
        if tok.type != tokenize.STRING or "<<<" not in tok.string or name not in tok.string \
                or defines_kernel(tok.string.encode("utf-8"), name):
            continue
        m = re.match(r"(?i)[rbuf]*('''|\"\"\"|'|\")", tok.string)
        if m is None:
            continue
        q = m.group(1)
        content = tok.string[m.end(): len(tok.string) - len(q)]
        line, col = tok.start
        base = starts[line - 1] + len(lines[line - 1][:col].encode("utf-8")) + len(tok.string[: m.end()].encode("utf-8"))
        out.append(Fragment(path, base, content, "python-string"))
    return out


def _mentions(data: bytes, name: str) -> bool:
    """Whether ``data`` holds the identifier ``name``."""
    return re.search(rb"\b" + re.escape(name.encode()) + rb"\b", data) is not None


def _cuda_binds_elsewhere(path: str, data: bytes, model: SourceModel, kernel: Kernel, root: Path,
                          files: Mapping[str, str]) -> bool:
    """Whether the C/C++/CUDA file ``path``'s launches of ``kernel``'s name bind to another kernel of that name: its
    translation unit (its text and the headers it includes, looked up beside each including file and then in the
    workspace ``root``) sees another definition and not the user's (:func:`~htam_core.source.kernel_binding.binding`),
    or, seeing none itself, every file that includes it that sees one sees another
    (:func:`~htam_core.source.kernel_binding.binding_through_includers`). Python files: ``False`` (read by their
    own rules). ``files``: texts that differ from disk, by resolved path."""
    if not model.path or path.endswith(".py"):
        return False
    got = binding(path, data, model.path, kernel.name, [root])
    if got == UNSEEN:
        def read(p: str) -> bytes | None:
            return files[p].encode("utf-8") if p in files else _read_bytes(p)
        listing = [p for p in _listing(root, CUDA_LAUNCHER_SUFFIXES) if p.suffix != ".py"]
        got = binding_through_includers(path, model.path, kernel.name, listing, read, [root])
    return got == OTHER


def _defines_python(data: bytes, name: str) -> bool:
    """Whether ``data`` defines a function called ``name`` itself (``def name(``): another Triton kernel."""
    return re.search(rb"^[ \t]*def[ \t]+" + re.escape(name.encode()) + rb"[ \t]*\(", data, re.M) is not None


def _cuda_file_fragments(path: str, data: bytes, kernel: Kernel, model: SourceModel) -> list[Fragment]:
    """The texts of one workspace file that may launch CUDA kernel ``name``: a Python file's CUDA strings (when it
    compiles CUDA from strings), else its ``#define`` bodies and the whole file."""
    name, stem = kernel.name, Path(model.path).stem
    if path.endswith(".py"):
        # a CUDA string or a cupy call launches the user's kernel only when the Python file compiles it with that
        # kernel's file (``load(sources=["add.cu", ...])``, ``RawModule(path="add.cu")``, ``#include "add.cu"``,
        # reading it): a string that only declares or launches a kernel of the same name belongs to another program
        if not any(m in data for m in _PY_CUDA_LOADERS) or not re.search(
                rb"\b" + re.escape(stem.encode()) + rb"\.(?:cu|cuh|h|hpp)\b", data):
            return []
        return (_string_fragments(path, data, name) if b"<<<" in data else []) + _cupy_fragments(path, data, kernel)
    header = _header_launch_macros(path, data, model)
    if b"<<<" not in data and not header:
        return []
    text = _decode(data)
    return _macro_fragments(path, data, name) + ([Fragment(path, 0, text, "cuda", prefix=f"\n{header}\n" if header
                                                           else "\n")] if text else [])


def _header_launch_macros(path: str, data: bytes, model: SourceModel) -> str:
    """The ``#define`` lines of the launch macros the headers ``path`` includes define (``#include
    "common.cuh"`` holding ``#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)``;
    :func:`~htam_core.source.analysis.header_macros.included_launch_macros`, looked up beside ``path`` and then
    in the kernel's workspace root), written before the file's text in the joint unit so that its uses of them
    read as launches; ``""`` when there are none."""
    if b"#" not in data or not model.path:
        return ""
    return define_lines(included_launch_macros(data, path, [workspace_root(model.path)]))


def _triton_file_fragments(path: str, data: bytes, kernel: Kernel, model: SourceModel) -> list[Fragment]:
    """A Python module that imports the kernel's module (it names its stem) and subscripts: the whole module."""
    stem = Path(model.path).stem
    text = _decode(data) if b"[" in data and _mentions(data, stem) else None
    return [Fragment(path, 0, text, "triton", prefix="\n")] if text is not None else []


def _no_fragments(path: str, data: bytes, kernel: Kernel) -> list[Fragment]:
    """No same-file launch wrappers (Triton)."""
    return []


def _no_launches(path: str, data: bytes, name: str) -> list[WorkspaceLaunch]:
    """No launches outside the joint unit (Triton)."""
    return []


def _importer_fragments(path: str, data: bytes, kernel: Kernel, model: SourceModel) -> list[Fragment]:
    """The cupy calls of another Python file that imports the kernel objects of the kernel's module
    (``from kernels import kern``, ``import kernels`` and ``kernels.kern(...)``), as :func:`_cupy_fragments`."""
    stem = Path(model.path).stem if model.path else ""
    if not stem or not path.endswith(".py") or not re.search(
            rb"^[ \t]*(?:from[ \t]+[\w.]*\b" + re.escape(stem.encode()) + rb"[ \t]+import|import[ \t][^\n]*\b"
            + re.escape(stem.encode()) + rb"\b)", data, re.M):
        return []
    handles = _own_handles(model.text, kernel.name)
    text = _decode(data) if handles else None
    if text is None:
        return []
    try:
        names = imported_handles(ast.parse(text), stem, set(handles))
    except (SyntaxError, ValueError):
        return []
    return _cupy_fragments(path, data, kernel, names) if names else []


@functools.lru_cache(maxsize=64)
def _own_handles(text: str, name: str) -> frozenset[str]:
    """The names the kernel's own Python file binds to its cupy kernel objects (cached by text)."""
    try:
        return frozenset(cupy_handles(ast.parse(text), name))
    except (SyntaxError, ValueError):
        return frozenset()


@dataclass(frozen=True)
class _Search:
    """How kernels of one language are launched from elsewhere: the registry entry of :data:`_SEARCHES`.

    Attributes:
        suffixes: workspace files that may launch them.
        same_file: launch texts in the kernel's own file (``#define`` bodies).
        file_fragments: launch texts of one other file ``(path, data, kernel, kernel's model) -> fragments``.
        defines: whether a file defines its own kernel of that name (then it is not a launcher).
        foreign: launches the joint unit cannot hold (cupy calls in Python), read on their own.
        foreign_markers: bytes a file must hold for ``foreign`` to be asked.
        insert_at: where in the kernel's file the joint unit inserts the fragments (``None``: after its text),
            or ``-1`` when it cannot hold them.
        own_file: whether the kernel's own file is searched as a launcher too (cupy calls of a kernel held in
            a Python string of that file).
        binds_elsewhere: whether a file that names the kernel and defines none of that name itself still launches
            another kernel of that name (its translation unit sees another definition; ``_cuda_binds_elsewhere``).
    """

    suffixes: tuple[str, ...]
    same_file: Callable[[str, bytes, Kernel], list[Fragment]]
    file_fragments: Callable[[str, bytes, Kernel, SourceModel], list[Fragment]]
    defines: Callable[[bytes, str], bool]
    foreign: Callable[[str, bytes, str], list[WorkspaceLaunch]]
    foreign_markers: tuple[bytes, ...] = ()
    insert_at: Callable[[SourceModel, Kernel], int | None] = lambda model, kernel: None
    own_file: bool = False
    binds_elsewhere: Callable[[str, bytes, SourceModel, Kernel, Path, Mapping[str, str]], bool] = \
        lambda path, data, model, kernel, root, files: False


def _fragments(model: SourceModel, kernel: Kernel, root: Path, files: Mapping[str, str]) -> list[Fragment]:
    """Every text that may launch ``kernel``: same-file ``#define`` bodies, then other files in ``root`` (their
    text from ``files`` when it holds them, else from disk)."""
    search = _SEARCHES[kernel.language]
    own = str(Path(model.path).resolve()) if model.path else ""
    out = search.same_file(model.path or "", model.text.encode("utf-8"), kernel)
    if not model.path:
        return out
    for p in _listing(root, search.suffixes):
        sp = str(p)
        if sp == own:
            continue
        data = files[sp].encode("utf-8") if sp in files else _read_bytes(sp)
        # a launcher names the kernel; one of a kernel in a Python string imports the kernel's module instead
        named = _mentions(data, Path(model.path).stem if search.own_file else kernel.name) if data else False
        if data is not None and named and not search.defines(data, kernel.name) \
                and not search.binds_elsewhere(sp, data, model, kernel, root, files):
            out.extend(search.file_fragments(sp, data, kernel, model))
    return out


_UNITS: dict[tuple[object, ...], LaunchUnit | None] = {}


def launch_unit(model: SourceModel, kernel: Kernel, root: str | os.PathLike[str] | None = None,
                files: Mapping[str, str] | None = None) -> LaunchUnit | None:
    """The kernel's file joined with the workspace texts that launch it, or ``None`` when nothing outside the
    kernel's own definition's file launches it (or the kernel is held in a Python string).

    Args:
        model: the kernel's file (its ``path`` locates the workspace; in-memory text searches only its own
            ``#define`` bodies).
        kernel: a kernel of ``model`` (CUDA or Triton).
        root: the workspace folder (see :func:`workspace_root`).
        files: texts of workspace files that differ from disk, by resolved path (an optimize run's edited
            launchers, an editor's unsaved buffers); other files are read from disk.

    Never raises for unreadable files: they are skipped. Cached by the texts involved.
    """
    search = _SEARCHES.get(kernel.language)
    if search is None or kernel.incomplete:
        return None
    at = search.insert_at(model, kernel)
    if at is not None and at < 0:
        return None
    ws = workspace_root(model.path, root) if model.path else Path(".")
    frags = _fragments(model, kernel, ws, files or {})
    if not frags:
        return None
    # the kernel by name and place: same-name kernels of one file (f32::scale, f64::scale) are different units
    key = (model.text, kernel.name, kernel.span.start, at,
           tuple((f.path, f.base, f.text, f.prefix, f.suffix) for f in frags))
    if key in _UNITS:
        return _UNITS[key]
    if len(_UNITS) > 64:
        _UNITS.clear()
    data = model.text.encode("utf-8")
    start = len(data) if at is None else at
    parts: list[str] = []
    pos = start
    segments = []
    for f in frags:
        glue = f.prefix if f.prefix.startswith("\n") else "\n" + f.prefix
        pos += len(glue.encode("utf-8"))
        seg_end = pos + len(f.text.encode("utf-8"))
        segments.append(_Segment(pos, seg_end, f))
        parts += [glue, f.text, f.suffix]
        pos = seg_end + len(f.suffix.encode("utf-8"))
    inserted = "".join(parts)
    joint = parse_text(data[:start].decode("utf-8") + inserted + data[start:].decode("utf-8"), model.file_language,
                       model.path)
    found = next((k for k in joint.kernels if k.name == kernel.name and k.span.start == kernel.span.start), None)
    unit = None
    if found is not None and any(start <= s.span.start < pos for s in found.launch_sites if s.span is not None):
        unit = LaunchUnit(model, joint, found, tuple(segments), dict(files or {}), at, pos - start)
    _UNITS[key] = unit
    return unit


def find_launches(model: SourceModel, kernel: Kernel, root: str | os.PathLike[str] | None = None,
                  files: Mapping[str, str] | None = None) -> list[WorkspaceLaunch]:
    """Every launch of ``kernel`` outside its own file's host code: ``#define`` wrappers in its file, other
    C/C++/CUDA files, CUDA strings in Python files, cupy launchers and (Triton) launches in other modules.

    Args:
        model, kernel, root, files: as for :func:`launch_unit`.

    Returns:
        The launches, joint-unit ones first (in fragment order), then cupy ones the joint unit does not hold
        (``editable`` False). A kernel held in a Python string: the cupy calls of its own file.
    """
    unit = launch_unit(model, kernel, root, files)
    out = unit.launches() if unit is not None else []
    search = _SEARCHES.get(kernel.language)
    if search is None or not model.path or not search.foreign_markers:
        return out
    paths = [Path(model.path)] if search.own_file else _listing(workspace_root(model.path, root), search.suffixes)
    held = {(la.path, la.span) for la in out}
    for p in paths:
        data = model.text.encode("utf-8") if search.own_file else _read_bytes(str(p))
        if data is not None and _mentions(data, kernel.name) and any(m in data for m in search.foreign_markers):
            out.extend(la for la in search.foreign(str(p), data, kernel.name) if (la.path, la.span) not in held)
    return out


def declaring_files(model: SourceModel, kernel: Kernel, root: str | os.PathLike[str] | None = None
                    ) -> list[tuple[str, str]]:
    """The workspace files, other than the kernel's own, that declare CUDA kernel ``kernel`` without defining or
    launching it (a header's ``__global__ void k(float*, const float*, int);``): ``(path, text)``, sorted by path.
    A file that launches the kernel (``<<<``, or a launch macro of a header it includes) is read with it in the
    joint unit (:func:`launch_unit`), its declarations there. The same bounded search as :func:`launch_unit`;
    ``[]`` for a kernel in a Python string or a model with no path."""
    search = _SEARCHES.get(kernel.language)
    if search is None or not model.path or search.own_file:
        return []
    own = Path(model.path).resolve()
    proto = re.compile(rb"__global__[^;{}]*\b" + re.escape(kernel.name.encode()) + rb"\s*\([^;{}]*\)[^;{}]*;")
    out = []
    for p in _listing(workspace_root(model.path, root), search.suffixes):
        if p.suffix == ".py" or p.resolve() == own:
            continue
        data = _read_bytes(str(p))
        if data is None or b"<<<" in data or not proto.search(data) or defines_kernel(data, kernel.name) \
                or _header_launch_macros(str(p), data, model):  # a launcher: the joint unit holds it
            continue
        text = _decode(data)
        if text is not None:
            out.append((str(p), text))
    return out


def calling_files(model: SourceModel, name: str, root: str | os.PathLike[str] | None = None
                  ) -> list[tuple[str, bytes]]:
    """The workspace's C/C++/CUDA files, other than the model's own, that call a function ``name`` (``run(`` in
    their text): ``(path, bytes)``, sorted by path, for reading a launch wrapper's arguments at its calls
    (:func:`~htam_core.source.analysis.launch_aliases.launch_aliases`). The same bounded search as
    :func:`launch_unit`; ``[]`` for a model with no path. Never raises for unreadable files: they are skipped."""
    if not model.path or not name.isidentifier():
        return []
    own = Path(model.path).resolve()
    call = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*\(")
    out = []
    for p in _listing(workspace_root(model.path, root), CUDA_LAUNCHER_SUFFIXES):
        if p.suffix == ".py" or p.resolve() == own:
            continue
        data = _read_bytes(str(p))
        if data is not None and call.search(data):
            out.append((str(p), data))
    return out


def launcher_files(model: SourceModel, kernel: Kernel, names: Sequence[str] = (),
                   root: str | os.PathLike[str] | None = None) -> list[Path]:
    """The workspace files, other than the kernel's own, that may run ``kernel``: they name it or one of
    ``names`` (the host functions of its file that launch it, ``launch_add``), define no kernel of that name
    themselves and do not see another one through their includes (a ``launch_expert.cu`` that includes a
    ``binarize_expert.cuh`` defining a kernel of the same name runs that kernel, not this one). The same bounded search as :func:`launch_unit` (folder or repository, suffixes of the kernel's
    language, :data:`MAX_FILES`), sorted by path; the harness picks the program among them.

    Args:
        model, kernel, root: as for :func:`launch_unit` (a model with no path has no workspace: ``[]``).
        names: further identifiers a launcher file may name instead of the kernel.
    """
    search = _SEARCHES.get(kernel.language)
    if search is None or not model.path:
        return []
    own = Path(model.path).resolve()
    out = []
    ws = workspace_root(model.path, root)
    for p in _listing(ws, search.suffixes):
        if p.resolve() == own:
            continue
        data = _read_bytes(str(p))
        if data is None or search.defines(data, kernel.name):
            continue
        if any(_mentions(data, n) for n in (kernel.name, *names)) \
                and not search.binds_elsewhere(str(p), data, model, kernel, ws, {}):
            out.append(p)
    return out


# ----------------------------------------------------------------------------- cupy


def _string_end(model: SourceModel, kernel: Kernel) -> int | None:
    """The end of the content of the triple-quoted Python string that holds ``kernel`` (where the joint unit
    writes its cupy launches, inside the same CUDA text), or ``-1`` when it is not one (a one-line string
    cannot hold the host functions' lines)."""
    data = model.text.encode("utf-8")
    for s, e in cuda_fragments(data):
        if s <= kernel.name_span.start < e:
            return e if data[e:e + 3] in (b'"""', b"'''") else -1
    return -1


def _python_file_fragments(path: str, data: bytes, kernel: Kernel) -> list[Fragment]:
    """The launches of a kernel held in a Python string, in its own file: the other CUDA strings that launch it
    with ``<<<>>>`` (a ``load_inline`` launcher kept in a string of its own, ``cuda_sources=KERNEL + LAUNCHER``) and
    its cupy calls (:func:`_cupy_fragments`)."""
    return _string_fragments(path, data, kernel.name) + _cupy_fragments(path, data, kernel)


def _cupy_fragments(path: str, data: bytes, kernel: Kernel, handles: set[str] | None = None) -> list[Fragment]:
    """The cupy launches of ``kernel`` in the Python file ``data`` (its own, or one importing ``handles``), each a
    host function whose ``<<<>>>`` launch is the call (:func:`~htam_core.source.pylaunch.cupy_launches`): the grid
    and block components and the values they name are fragments of the file, the rest glue."""
    if kernel.attributes.get("template_params") or (handles is None and not any(m in data for m in _CUPY_MAKERS)):
        return []
    params = tuple((p.name, p.type or "int") for p in kernel.params)
    return list(_cupy_fragments_of(path, data, kernel.name, params, None if handles is None else frozenset(handles)))


@functools.lru_cache(maxsize=64)
def _cupy_fragments_of(path: str, data: bytes, name: str, params: tuple[tuple[str, str], ...],
                       handles: frozenset[str] | None) -> tuple[Fragment, ...]:
    """:func:`_cupy_fragments` of one file's bytes (cached: an editor asks once per transform)."""
    text = _decode(data)
    if text is None:
        return ()
    out: list[Fragment] = []
    for la in cupy_launches(text, name, params, None if handles is None else set(handles)):
        glue = ""
        for i, piece in enumerate(la.pieces):
            if piece.span is None:
                glue += piece.text
                continue
            launch = (la.span, la.line, la.grid, la.block) if i == la.launch_piece else None
            out.append(Fragment(path, piece.span[0], piece.text, "cupy", prefix=glue, to_user=python_text,
                                launch=launch, fixed=piece.fixed))
            glue = ""
        if out and glue:
            out[-1] = dataclasses.replace(out[-1], suffix=glue)
    return tuple(out)


def _cupy_launches(path: str, data: bytes, name: str) -> list[WorkspaceLaunch]:
    """``f((grid,), (block,), args)`` calls of the cupy kernel objects of ``data`` that name ``name``:
    ``f = cp.RawKernel(src, "name")``, ``f = module.get_function("name")``."""
    text = _decode(data) if path.endswith(".py") else None
    if text is None:
        return []
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    handles = cupy_handles(tree, name)
    consts = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.Constant)
              and isinstance(node.value.value, int)}
    starts = [0]
    for ln in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(ln.encode("utf-8")))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in handles \
                and len(node.args) >= 2:
            seg = [ast.get_source_segment(text, a) or "" for a in node.args[:2]]
            span = (_offset(text, starts, node.lineno, node.col_offset),
                    _offset(text, starts, node.end_lineno or node.lineno, node.end_col_offset or 0))
            out.append(WorkspaceLaunch(path, "cupy", span, node.lineno, seg[0], seg[1], (),
                                       _py_dims(node.args[0], consts), _py_dims(node.args[1], consts),
                                       editable=False))
    return out


def _offset(text: str, starts: list[int], line: int, col_utf8: int) -> int:
    """File byte offset of ``ast``'s (1-based line, UTF-8 column)."""
    return starts[line - 1] + col_utf8


def _py_dims(node: ast.expr, consts: dict[str, int]) -> tuple[int, ...] | None:
    """The integer components of a cupy grid/block argument (a tuple or an int; module-level int names known)."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List) else [node]
    vals = []
    for it in items:
        if isinstance(it, ast.Constant) and isinstance(it.value, int):
            vals.append(it.value)
        elif isinstance(it, ast.Name) and it.id in consts:
            vals.append(consts[it.id])
        else:
            return None
    return tuple(vals)


#: how kernels of each language are launched from elsewhere (the kernel's ``language`` is the key)
_SEARCHES: dict[str, _Search] = {
    "cuda": _Search(CUDA_LAUNCHER_SUFFIXES, _macro_fragments, _cuda_file_fragments, defines_kernel,
                    _cupy_launches, _CUPY_MAKERS, binds_elsewhere=_cuda_binds_elsewhere),
    "triton": _Search(TRITON_LAUNCHER_SUFFIXES, _no_fragments, _triton_file_fragments, _defines_python,
                      _no_launches),
    "cuda-in-python": _Search((".py",), _python_file_fragments, _importer_fragments, defines_kernel, _cupy_launches,
                              _CUPY_MAKERS, insert_at=_string_end, own_file=True),
}
