"""An editable document with incremental re-parsing (``tree.edit`` + ``parser.parse(new, old)``).

The LSP server keeps one :class:`Document` per open file and calls :meth:`Document.apply_change`
for each ``textDocument/didChange`` content change, then :meth:`Document.kernel_at` for hovers
and code actions. The model is rebuilt lazily, only when asked for after a change.

Fast path (per keystroke): while every edit since the last full model lies inside the body of
one kernel (the usual case when typing in a kernel) and the tree has no errors,
:meth:`Document.kernel_at` rebuilds only that kernel from the new tree and moves the launch
sites of the last full model by the edits' byte/line delta (a kernel body holds no launch site
and no definition that launch configurations resolve through). Anything else rebuilds the whole
model. ``tests/source/test_document.py`` checks both paths against a full parse.

A tree with errors is modelled kernel by kernel (every definition that the tree does not give
intact is parsed again from its own region), so a half-typed definition or an unclosed bracket
near the top hides nothing. Only when kernels of the last good model vanish from a Python file
(an unclosed string swallowing them) does the document keep that model and mark it ``stale``.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import tree_sitter as ts

from htam_core.source import cuda as cuda_mod
from htam_core.source import triton as triton_mod
from htam_core.source.api import FileLanguage, build_model, kernel_at_byte
from htam_core.source.errors import SourceError
from htam_core.source.frames import Frame
from htam_core.source.model import ByteSpan, Kernel, SourceModel
from htam_core.source.parsing import new_parser
from htam_core.source.positions import LineIndex, parse_bytes
from htam_core.types.language import traits


def _collapsed(root: ts.Node) -> bool:
    """The Python grammar gave up on the file: an ERROR root, or a root made of ERROR nodes only."""
    if root.type == "ERROR":
        return True
    named = [c for c in root.named_children if c.type != "comment"]
    return bool(named) and all(c.type == "ERROR" for c in named)


class Document:
    """One open source file.

    Args:
        text: full text.
        file_language: ``"cuda"`` or ``"python"``.
        path: file path or URI, copied into the model.

    Raises:
        SourceError: unknown ``file_language``.
    """

    def __init__(self, text: str, file_language: FileLanguage, path: str | None = None) -> None:
        if file_language not in ("cuda", "python"):
            raise SourceError(f"unknown file language {file_language!r}; expected 'cuda' or 'python'")
        self.file_language: FileLanguage = file_language
        self.path = path
        self._parser = new_parser(file_language)
        self._last_good: SourceModel | None = None
        self._base: SourceModel | None = None  # last full model of a clean tree (fast path)
        self._base_info: dict = {}
        self._dirty: tuple[int, int] | None = None  # current-coordinate window holding all edits
        self._delta = 0  # total byte delta of the edits since ``_base``
        self._fast: dict[int, Kernel | None] = {}
        self._set_text(text)
        self.tree: ts.Tree = self._parser.parse(parse_bytes(self._data))

    def _set_text(self, text: str) -> None:
        self._text = text
        self._data = text.encode("utf-8", errors="surrogatepass")
        self._index = LineIndex(self._data)
        self._model: SourceModel | None = None

    @property
    def text(self) -> str:
        """Current full text."""
        return self._text

    @property
    def index(self) -> LineIndex:
        """Line index of the current text."""
        return self._index

    def apply_change(self, start_line: int | None, start_col: int | None, end_line: int | None,
                     end_col: int | None, new_text: str, encoding: str = "utf-16") -> None:
        """Apply one LSP content change: replace the 0-based range ``[start, end)`` (columns in
        ``encoding`` code units) by ``new_text``, or the whole text when the range is ``None``.
        The tree is edited and re-parsed incrementally.

        Raises:
            ValueError: unknown encoding, negative position, or end before start.
        """
        if start_line is None or start_col is None or end_line is None or end_col is None:
            self._set_text(new_text)
            self.tree = self._parser.parse(parse_bytes(self._data))
            self._base = None
            return
        idx = self._index
        start = idx.to_byte(start_line, start_col, encoding)
        old_end = idx.to_byte(end_line, end_col, encoding)
        if old_end < start:
            raise ValueError(f"change range ends ({end_line}:{end_col}) before it starts ({start_line}:{start_col})")
        new_bytes = new_text.encode("utf-8", errors="surrogatepass")
        if start > 0 and self._data[start - 1 : start] == b"\r":
            # the parser sees a lone \r as \n; an edit right after one can turn it into (or out of)
            # half of a \r\n, so the edit starts at the \r
            start -= 1
            new_bytes = b"\r" + new_bytes
        data = self._data[:start] + new_bytes + self._data[old_end:]
        start_point = idx.point(start)
        old_end_point = idx.point(old_end)
        parsed = parse_bytes(data)
        seg = parsed[start : start + len(new_bytes)]  # rows as the parser counts them
        nl = seg.count(b"\n")
        if nl:
            new_end_point = (start_point[0] + nl, len(seg) - seg.rfind(b"\n") - 1)
        else:
            new_end_point = (start_point[0], start_point[1] + len(new_bytes))
        self.tree.edit(start_byte=start, old_end_byte=old_end, new_end_byte=start + len(new_bytes),
                       start_point=start_point, old_end_point=old_end_point, new_end_point=new_end_point)
        self._text = data.decode("utf-8", errors="surrogatepass")
        self._data = data
        self._index = LineIndex(data)
        self._model = None
        self.tree = self._parser.parse(parsed, self.tree)
        d = len(new_bytes) - (old_end - start)
        if self._dirty is None:
            self._dirty = (start, start + len(new_bytes))
        else:
            ds, de = self._dirty
            self._dirty = (min(ds, start), max(de + d if de >= old_end else de, start + len(new_bytes)))
        self._delta += d
        self._fast = {}

    @property
    def model(self) -> SourceModel:
        """The model of the current text (rebuilt lazily after changes).

        For Python, when the tree collapsed into errors (an ERROR root, or syntax errors that
        made kernels of the last good model disappear) and an earlier good model exists, that model
        is returned (copied) with ``stale=True`` and the current text and errors.
        """
        if self._model is None:
            info: dict = {}
            fresh = build_model(self.tree, self._data, self._text, self.file_language, self.path, self._index,
                                info)
            root = self.tree.root_node
            clean = not root.has_error
            self._base = fresh if clean else None
            self._base_info = info
            self._dirty, self._delta, self._fast = None, 0, {}
            broken = False
            if self.file_language == "python" and root.has_error and self._last_good is not None:
                # error recovery re-parses every definition on its own, so only kernels that really
                # vanished (an unclosed string swallowing them) make the last good model worth more
                lost = {k.name for k in self._last_good.kernels} - {k.name for k in fresh.kernels}
                broken = bool(lost)
            if broken and self._last_good is not None:
                self._model = replace(copy.copy(self._last_good), text=self._text, stale=True,
                                      errors=fresh.errors or ["the file does not parse; showing the last good model"],
                                      problems=fresh.problems)
            else:
                self._model = fresh
                if not (self.file_language == "python" and _collapsed(root) and not fresh.kernels):
                    self._last_good = fresh
        return self._model

    def kernel_at(self, line: int, col: int, encoding: str = "utf-16") -> Kernel | None:
        """Kernel enclosing the LSP position ``(line, col)`` (0-based line, column in ``encoding``
        code units), or ``None``.

        Raises:
            ValueError: unknown encoding or negative position.
        """
        if self._model is None and self._base is not None:
            byte = self._index.to_byte(line, col, encoding)
            found, kernel = self._fast_kernel_at(byte)
            if found:
                return kernel
        model = self.model
        if model.stale:
            # positions in the current text no longer match the stale model's bytes
            last = self._last_good
            if last is None:
                return None
            return kernel_at_byte(model, LineIndex(last.text.encode("utf-8", errors="surrogatepass")).to_byte(
                line, col, encoding))
        return kernel_at_byte(model, self._index.to_byte(line, col, encoding))

    def _fast_kernel_at(self, byte: int) -> tuple[bool, Kernel | None]:
        """``(True, kernel)`` when the fast path applies (see module docstring), else ``(False, None)``."""
        base, dirty = self._base, self._dirty
        if base is None or dirty is None:
            return False, None
        ds, de = dirty
        delta = self._delta
        owner = None
        for k in base.kernels:
            bs, be = k.body_span.start, k.body_span.end + delta
            if bs < ds and de < be and k.span.start <= ds:
                owner = k
                break
        if owner is None or traits(owner.language).embedded:
            return False, None
        if not (owner.span.start <= byte <= owner.span.end + delta):
            return False, None
        if any(owner.body_span.start <= s.span.start < owner.body_span.end for k in base.kernels
               for s in k.launch_sites if s.span is not None):
            return False, None
        if owner.span.start in self._fast:
            return True, self._fast[owner.span.start]
        node = self.tree.root_node.descendant_for_byte_range(owner.name_span.start, owner.name_span.end)
        frame = Frame.of(self._data, self._index)
        kernel: Kernel | None = None
        if self.tree.root_node.has_error and not _errors_confined(self.tree.root_node, node, owner, delta):
            return False, None
        while node is not None:
            if self.file_language == "cuda" and node.type == "function_definition":
                kernel = cuda_mod.kernel_for_node(frame, node, self._base_info.get("macros", {}),
                                                  self._base_info.get("ctx_key", ""))
                break
            if self.file_language == "python" and node.type == "decorated_definition":
                item = triton_mod.jit_item(frame, node)
                kernel = triton_mod.build_kernel(item, []) if item is not None else None
                break
            node = node.parent
        if kernel is None or kernel.name != owner.name:
            return False, None
        kernel.launch_sites = [_shift_site(s, ds, delta, self._index) for s in owner.launch_sites]
        kept = {a: owner.attributes[a] for a in ("overload", "shared_name") if a in owner.attributes}
        if kept:  # the same identity and key as in the file's model (the header is unchanged)
            kernel.attributes = {**kernel.attributes, **kept}
        self._fast[owner.span.start] = kernel
        return True, kernel


def _errors_confined(root: ts.Node, inner: ts.Node | None, owner: Kernel, delta: int) -> bool:
    """Every syntax error lies inside the body of ``owner`` (whose name node is ``inner``) and that
    body still ends where it did (shifted by ``delta``) with a real closing token."""
    if inner is None:
        return False
    chain: set[int] = set()
    cur: ts.Node | None = inner
    definition = None
    while cur is not None:
        chain.add(cur.id)
        if cur.type in ("function_definition", "decorated_definition") and definition is None:
            definition = cur
        cur = cur.parent
    if definition is None:
        return False
    body_end = owner.body_span.end + delta
    node = root
    while node.id != definition.id:
        bad = [c for c in node.children if c.has_error or c.is_error or c.is_missing]
        if len(bad) != 1 or bad[0].id not in chain:
            return False
        node = bad[0]
    fn = definition.child_by_field_name("definition") if definition.type == "decorated_definition" else definition
    body = fn.child_by_field_name("body") if fn is not None else None
    if body is None or body.end_byte != body_end:
        return False
    last = body.children[-1] if body.children else None
    if last is None or last.is_missing:
        return False
    header_bad = [c for c in (fn.children if fn is not None else []) if c.id != body.id and c.has_error]
    return not header_bad


def _shift_site(site, window_start: int, delta: int, index: LineIndex):
    """Launch site of the last full model moved to the current text (it lies outside the edits)."""
    if site.span is None or site.span.start < window_start:
        return replace(site)
    span = ByteSpan(site.span.start + delta, site.span.end + delta)
    return replace(site, span=span, line=index.line_of(span.start) + 1,
                   config_spans={k: ByteSpan(v.start + delta, v.end + delta) for k, v in site.config_spans.items()})
