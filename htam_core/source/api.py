"""Entry points: build a :class:`SourceModel` from a file or a text, find the kernel at a position."""

from __future__ import annotations

import os
from typing import Literal

import tree_sitter as ts

from htam_core.source.cuda import attach_launches, extract_cuda
from htam_core.source.embedded import extract_embedded
from htam_core.source.errors import MAX_SOURCE_BYTES, SourceError, too_large
from htam_core.source.frames import Frame
from htam_core.source.model import Kernel, SourceModel
from htam_core.source.parse_problems import kernel_problem, tree_problems
from htam_core.source.parsing import captures, new_parser
from htam_core.source.positions import LineIndex, parse_bytes
from htam_core.source.triton import Q_MAIN as TRITON_MAIN
from htam_core.source.triton import extract_triton
from htam_core.types.language import traits

FileLanguage = Literal["cuda", "python"]
SUFFIXES: dict[str, FileLanguage] = {".cu": "cuda", ".cuh": "cuda", ".py": "python"}


def language_for_path(path: str | os.PathLike[str]) -> FileLanguage:
    """``"cuda"`` for ``.cu``/``.cuh``, ``"python"`` for ``.py``.

    Raises:
        SourceError: any other suffix.
    """
    suffix = os.path.splitext(str(path))[1].lower()
    if suffix not in SUFFIXES:
        raise SourceError(f"{path}: unsupported file type {suffix or '(none)'!r}; expected .cu, .cuh or .py")
    return SUFFIXES[suffix]


def load(path: str | os.PathLike[str]) -> SourceModel:
    """Read and model the kernels of ``path`` (by suffix: ``.cu``/``.cuh`` CUDA, ``.py`` Python).

    Raises:
        SourceError: the file does not exist, cannot be read or decoded as UTF-8, is larger than
            :data:`~htam_core.source.errors.MAX_SOURCE_BYTES` (checked before it is read), or has
            another suffix.
    """
    lang = language_for_path(path)
    try:
        refusal = too_large(str(path), os.stat(path).st_size) if os.path.isfile(path) else None
    except OSError:
        refusal = None  # open() below says why
    if refusal is not None:
        raise SourceError(refusal)
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory, not a source file") from None
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                          "save it as UTF-8 text, or pass a CUDA/Triton source file") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_text(text, lang, str(path))


def parse_text(text: str, file_language: FileLanguage, path: str | None = None) -> SourceModel:
    """Model the kernels of ``text`` (``file_language`` ``"cuda"`` or ``"python"``).

    Raises:
        SourceError: unknown ``file_language``, or ``text`` is larger than
            :data:`~htam_core.source.errors.MAX_SOURCE_BYTES`.
    """
    if file_language not in ("cuda", "python"):
        raise SourceError(f"unknown file language {file_language!r}; expected 'cuda' or 'python'")
    refusal = too_large(path or "the text", len(text)) if len(text) > MAX_SOURCE_BYTES // 4 else None
    data = text.encode("utf-8", errors="surrogatepass")
    refusal = refusal or too_large(path or "the text", len(data))
    if refusal is not None:
        raise SourceError(refusal)
    tree = new_parser(file_language).parse(parse_bytes(data))
    return build_model(tree, data, text, file_language, path)


def build_model(tree: ts.Tree, data: bytes, text: str, file_language: FileLanguage, path: str | None,
                index: LineIndex | None = None, info: dict | None = None) -> SourceModel:
    """Model from an already parsed ``tree`` of ``data`` (the UTF-8 bytes of ``text``; the tree was
    parsed from ``positions.parse_bytes(data)``, which has the same offsets).

    ``info``, when given, receives file-level context (CUDA ``macros`` and ``ctx_key``) that
    ``Document`` needs to rebuild a single kernel later.
    """
    index = index or LineIndex(data)
    frame = Frame.of(data, index)
    model = SourceModel(path=path, file_language=file_language, text=text)
    root = tree.root_node
    if file_language == "cuda":
        res = extract_cuda(frame, root)
        root = res.root if res.root is not None else root  # problems are read from the parse view
        attach_launches(res.kernels, res.launches)
        if info is not None:
            info.update(macros=res.macros, ctx_key=res.ctx_key)
        model.kernels = res.kernels
        model.device_functions = res.device_functions
        model.errors = res.errors
    else:
        caps = captures("python", TRITON_MAIN, root)
        tri = extract_triton(frame, root, caps=caps)
        emb = extract_embedded(root, data, index, caps.get("string", []))
        model.kernels = tri.kernels + emb.kernels
        model.device_functions = tri.device_functions + emb.device_functions
        model.errors = emb.errors
    if file_language == "cuda":
        model.problems = res.problems
    elif root.has_error:
        model.problems = tree_problems(root, data)
        if file_language == "python":
            model.errors = [str(p) for p in model.problems] + model.errors
    for k in model.kernels:
        if k.incomplete:
            k.parse_problem = kernel_problem(model.problems, data, k.span.start, k.span.end,
                                             grammar=traits(k.language).grammar) or k.parse_problem
    model.kernels.sort(key=lambda k: k.span.start)
    model.device_functions.sort(key=lambda d: d.span.start)
    return model


def kernel_at_byte(model: SourceModel, byte: int) -> Kernel | None:
    """The innermost kernel whose definition contains file byte ``byte`` (its end included)."""
    best: Kernel | None = None
    for k in model.kernels:
        if k.span.start <= byte <= k.span.end:
            if best is None or (k.span.end - k.span.start) < (best.span.end - best.span.start):
                best = k
    return best


def kernel_at(model: SourceModel, line: int, col: int, encoding: str = "utf-16") -> Kernel | None:
    """Kernel enclosing the LSP position ``(line, col)`` (0-based line, column in ``encoding`` units:
    ``"utf-16"``, ``"utf-8"`` or ``"utf-32"``), or ``None``. The name, decorators, template line
    and body all count as inside.

    Raises:
        ValueError: unknown encoding or negative position.
    """
    index = LineIndex(model.text.encode("utf-8", errors="surrogatepass"))
    return kernel_at_byte(model, index.to_byte(line, col, encoding))


def incomplete_reason(kernel: Kernel, waits: str = "steps are ranked") -> str | None:
    """Why a command does not act on ``kernel`` yet, or ``None`` when it is complete: one sentence, shared by
    the hover and code actions, ``htam suggest``, ``htam optimize`` and ``htam profile``, so a half-typed
    kernel (``incomplete``: error recovery kept it) gets the same line everywhere.

    Args:
        kernel: a :class:`~htam_core.source.model.Kernel`.
        waits: what waits for the kernel to parse (``"steps are ranked"``, ``"it is profiled"``).

    Returns:
        For a kernel the compiler accepts (:attr:`Kernel.compiles`, see ``runtime.compiler``): ``"htam could not
        read NAME (its parser stops at line L, column C: WHAT), though nvcc accepts the file: WAITS once htam can
        read it"``. Otherwise ``"NAME is incomplete (it does not parse at line L, column C: WHAT): WAITS once it
        parses; finish or fix it there first"`` (the position of :attr:`Kernel.parse_problem`, the first ERROR/MISSING node in
        it), or ``None``.
    """
    if not getattr(kernel, "incomplete", False):
        return None
    p = getattr(kernel, "parse_problem", None)
    if getattr(kernel, "compiles", None):  # valid code: the parser's limit, not the user's to fix
        where = f"at line {p.line}, column {p.column}: {p.what}" if p is not None else \
            f"in lines {kernel.start_line}-{kernel.end_line}"
        compiler = traits(kernel.language).compiler
        return (f"htam could not read {kernel.name} (its parser stops {where}), though {compiler} accepts the file: "
                f"{waits} once htam can read it")
    if p is None:
        return (f"{kernel.name} is incomplete (lines {kernel.start_line}-{kernel.end_line} do not parse yet): "
                f"{waits} once it parses; finish it first")
    return (f"{kernel.name} is incomplete (it does not parse at line {p.line}, column {p.column}: {p.what}): "
            f"{waits} once it parses; finish or fix it there first")


def without_incomplete(model: SourceModel, kernel: Kernel) -> tuple[SourceModel, Kernel, list[Kernel]]:
    """The model of ``model.text`` with every half-typed kernel (``incomplete``) other than
    ``kernel`` blanked out, so that a complete kernel can be compiled while another one of the
    file is still being typed.

    Their launch sites (``k<<<...>>>(...)``, the call without its ``;``) are blanked as well, so that the
    compiler's messages about the rest of the file name none of them. Blanking turns each byte of those
    ranges into a space and keeps every line ending,
    so byte offsets and line numbers (also in compiler messages) stay those of ``model.text``.

    Returns:
        ``(model, kernel, blanked)``: the new model, ``kernel`` as found in it (same start byte),
        and the kernels that were blanked; the inputs themselves (and ``[]``) when nothing is
        incomplete.
    """
    blanked = [k for k in model.kernels if k.incomplete and k.span.start != kernel.span.start]
    if not blanked or model.stale:
        return model, kernel, []
    data = bytearray(model.text.encode("utf-8", errors="surrogatepass"))
    ranges = [(k.span.start, k.span.end) for k in blanked]
    # their launches too, so that the compiler's messages about the rest name none of them
    ranges += [(s.span.start, s.span.end) for k in blanked for s in k.launch_sites if s.span is not None
               and not kernel.span.start <= s.span.start < kernel.span.end]
    for start, end in ranges:
        for i in range(start, min(end, len(data))):
            if data[i] not in (0x0A, 0x0D):
                data[i] = 0x20
    new = parse_text(bytes(data).decode("utf-8", errors="surrogatepass"), model.file_language, model.path)
    same = next((k for k in new.kernels if k.span.start == kernel.span.start and k.name == kernel.name), None)
    if same is None:
        return model, kernel, []
    return new, same, blanked


def is_kernel_file(model: SourceModel) -> bool:
    """Whether the file is worth the assistant's attention: every CUDA file (kernels, helpers or
    launches may live in it); a Python file only when it holds Triton kernels or CUDA strings."""
    if model.file_language == "cuda":
        return True
    return bool(model.kernels)
