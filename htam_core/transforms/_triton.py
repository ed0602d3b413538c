"""Triton nodes and edits for the transforms, on top of the analysis layer: the kernel's tree-sitter-python
nodes and launches (``kernel[grid](args, **kw)``, located by :mod:`htam_core.source.analysis`), the grid
expression, and local assignments in the launching function. Facts: :attr:`TritonUnit.facts`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from htam_core.source.analysis import KernelFacts, analyze
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.syntax import exact_node
from htam_core.source.analysis.triton import (
    assignments_to,
    grid_expression,
    grid_is_function,
    launch_calls,
    single_local,
)
from htam_core.source.analysis.triton_names import TritonNames
from htam_core.source.analysis.unit import python_source
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms import _notes
from htam_core.transforms.base import TextEdit, UnitTransform

_BLOCK_NAME = re.compile(r"^(BLOCK\w*|TILE\w*|B[MNK]|BLOCK)$")


def is_block_param(name: str) -> bool:
    """True for tile-size constexpr names: ``BLOCK_SIZE``, ``BLOCK_M``, ``TILE_N``, ``BM``/``BN``/``BK``."""
    return bool(_BLOCK_NAME.match(name))


@dataclass
class TLaunch:
    """One launch ``kernel[grid](args, kw=...)``."""

    call: Node
    grid: Node
    args: Node
    kwargs: dict[str, Node]
    host: Node | None
    line: int


@dataclass
class TritonUnit:
    """The kernel's Python tree and its launches (offsets are file offsets)."""

    model: SourceModel
    kernel: Kernel
    src: bytes
    root: Node
    func: Node
    body: Node
    top: Node
    launches: list[TLaunch] = field(default_factory=list)
    names: TritonNames = field(default_factory=TritonNames)

    @property
    def facts(self) -> KernelFacts:
        """The kernel's facts (:func:`htam_core.source.analysis.analyze`, cached per kernel version)."""
        return analyze(self.model, self.kernel)

    def t(self, node: Node | None) -> str:
        """Source text of ``node``."""
        return syn.text(node, self.src)

    def node_at(self, span: tuple[int, int], types: tuple[str, ...] = ()) -> Node | None:
        """The node whose bytes are exactly ``span`` (a fact's ``span``), optionally of one of ``types``."""
        return exact_node(self.root, span[0], span[1], types)

    def replace(self, node: Node, new_text: str) -> TextEdit:
        """Edit replacing ``node``'s text."""
        return TextEdit(node.start_byte, node.end_byte, new_text)

    def insert(self, pos: int, new_text: str) -> TextEdit:
        """Edit inserting at byte ``pos``."""
        return TextEdit(pos, pos, new_text)

    @property
    def body_indent(self) -> str:
        """Indentation of the kernel body's statements."""
        first = self.body.named_children[0] if self.body.named_children else self.body
        return syn.indent_of(self.src, first.start_byte)

    def is_block_param(self, name: str) -> bool:
        """True when constexpr ``name`` sizes a tile: it ends a ``tl.arange(0, name)`` or steps a loop
        (:attr:`~htam_core.source.analysis.TritonFacts.tile_params`), or is named like one
        (:func:`is_block_param`)."""
        tf = self.facts.triton
        return is_block_param(name) or (tf is not None and name in tf.tile_params)

    @property
    def constexpr_annotation(self) -> str:
        """The annotation a new ``tl.constexpr`` parameter gets: the one the kernel's constexpr parameters are
        written with (``tl.constexpr``, ``language.constexpr``, a bare ``constexpr``), else ``<alias>.constexpr``.
        Copying the kernel's own spelling keeps the new parameter readable wherever the old ones are (the Triton
        interpreter reads annotations as text)."""
        own = next((p.type for p in self.kernel.params if p.is_constexpr and p.type), None)
        return own or f"{self.tl}.constexpr"

    @property
    def tl(self) -> str:
        """The file's name for ``triton.language`` (``"tl"``, ``"language"``, ``"tl2"``): new code is written with
        it (:attr:`~htam_core.source.analysis.triton_names.TritonNames.spelling`)."""
        return self.names.spelling

    def callee(self, call: Node) -> str:
        """The function of ``call`` in the analysis layer's normal form (``language.load`` -> ``"tl.load"``)."""
        fn = call.child_by_field_name("function")
        return self.names.canonical(self.t(fn)) if fn is not None else ""

    def calls(self, node: Node, name: str) -> list[Node]:
        """``call`` nodes under ``node`` whose function is ``name`` in normal form (``"tl.load"`` also finds
        ``language.load(...)`` in a file that imports ``triton.language as language``)."""
        return [c for c in syn.py_calls(node) if self.callee(c) == name]

    def kwarg(self, call: Node, name: str) -> Node | None:
        """The ``keyword_argument`` ``name=`` of ``call``, if present."""
        args = call.child_by_field_name("arguments")
        for a in args.named_children if args is not None else []:
            if syn.is_keyword_argument(a) and self.t(a.child_by_field_name("name")) == name:
                return a
        return None

    def assignments(self, scope: Node, name: str) -> list[Node]:
        """``assignment`` nodes ``name = value`` (plain identifier target, plain or augmented) under ``scope``
        (:func:`~htam_core.source.analysis.triton.assignments_to`)."""
        return assignments_to(scope, name, self.src)

    def single_value(self, scope: Node | None, name: str, before: int) -> Node | None:
        """The right-hand side of the only assignment to ``name`` in ``scope`` (before ``before``;
        :func:`~htam_core.source.analysis.triton.single_local`)."""
        return None if scope is None else single_local(scope, name, before, self.src)

    def grid_expr(self, launch: TLaunch) -> Node:
        """The grid expression, following ``grid = ...`` and ``def grid(meta): return ...`` in the host
        (:func:`~htam_core.source.analysis.triton.grid_expression`)."""
        return grid_expression(launch.grid, launch.host, launch.call.start_byte, self.src)

    def grid_uses_meta(self, launch: TLaunch) -> bool:
        """True when the grid is a function of the launch meta-parameters (``lambda meta: ...``;
        :func:`~htam_core.source.analysis.triton.grid_is_function`)."""
        return grid_is_function(launch.grid, launch.host, launch.call.start_byte, self.src)


def load_unit(model: SourceModel, kernel: Kernel) -> TritonUnit | str:
    """The kernel's :class:`TritonUnit` (function and launches from the analysis layer), or why not found."""
    psrc = python_source(model, kernel)
    if isinstance(psrc, str):
        return psrc
    unit = TritonUnit(model, kernel, psrc.src, psrc.root, psrc.func, psrc.body, psrc.top, names=psrc.names)
    for call, site in launch_calls(psrc, kernel):
        grid = call.child_by_field_name("function").child_by_field_name("subscript")
        args = call.child_by_field_name("arguments")
        kwargs = {
            unit.t(a.child_by_field_name("name")): a for a in args.named_children if syn.is_keyword_argument(a)
        }
        host = call.parent
        while host is not None and not syn.is_function_definition(host):
            host = host.parent
        unit.launches.append(TLaunch(call, grid, args, kwargs, host, site.line))
    return unit


def remove_kwarg(unit: TritonUnit, kw: Node) -> TextEdit:
    """Edit deleting a keyword argument with its separating comma.

    The comma before it is removed (so several removals never overlap); for the first argument the
    comma after it.
    """
    src = unit.src
    prev = kw.prev_named_sibling
    if prev is not None:
        return TextEdit(prev.end_byte, kw.end_byte, "")
    end = kw.end_byte
    j = end
    while j < len(src) and src[j : j + 1] in (b" ", b"\t", b"\n", b"\r"):
        j += 1
    if src[j : j + 1] == b",":
        end = j + 1
        while end < len(src) and src[end : end + 1] in (b" ", b"\t", b"\n", b"\r"):
            end += 1
    return TextEdit(kw.start_byte, end, "")


def add_kwarg(unit: TritonUnit, call: Node, text: str) -> TextEdit:
    """Edit appending ``text`` (``"num_warps=8"``) as the last argument of ``call``."""
    args = call.child_by_field_name("arguments")
    last = args.named_children[-1] if args.named_children else None
    if last is None:
        return TextEdit(args.start_byte + 1, args.start_byte + 1, text)
    return TextEdit(last.end_byte, last.end_byte, f", {text}")


class TritonTransform(UnitTransform[TritonUnit]):
    """Base of the Triton transforms: ``propose`` loads the kernel's :class:`TritonUnit` with
    :func:`load_unit`; subclasses implement ``propose_unit(unit, model, kernel, profile)``."""

    def load_unit(self, model: SourceModel, kernel: Kernel) -> TritonUnit | str:
        """The kernel's :class:`TritonUnit` (module-level :func:`load_unit`), or why it is not found."""
        return load_unit(model, kernel)


def reads_of(unit: TritonUnit, scope: Node, name: str) -> list[Node]:
    """Identifier nodes reading ``name`` under ``scope`` (assignment targets left out)."""
    targets = {a.child_by_field_name("left").start_byte for a in unit.assignments(scope, name)}
    return [n for n in syn.identifiers(scope) if unit.t(n) == name and n.start_byte not in targets]


def orphan_removals(unit: TritonUnit, scope: Node | None, names: list[str], edits: list[TextEdit]) -> list[TextEdit]:
    """Edits deleting the assignments ``name = <literal or expression>`` in ``scope`` that ``edits`` orphan.

    A name is orphaned when every read of it lies inside a span that ``edits`` replace or delete (so after the
    edits nothing reads it). Only a name with exactly one assignment, a statement alone on its lines, is
    removed; the deletion takes its whole lines. Names whose deletion would orphan others (``grid`` reading
    ``BLOCK``) are followed until nothing changes. Returns the deletions (on the original text).
    """
    if scope is None:
        return []
    spans = [(e.start_byte, e.end_byte) for e in edits if e.end_byte > e.start_byte]
    removed: list[TextEdit] = []
    pending = list(dict.fromkeys(names))
    while pending:
        name = pending.pop(0)
        assigns = unit.assignments(scope, name)
        if len(assigns) != 1 or not syn.is_py_assignment(assigns[0]):
            continue
        stmt = assigns[0].parent
        if stmt is None or not syn.is_expression_statement(stmt) or not syn.only_space_before(unit.src, stmt.start_byte):
            continue
        end = stmt.end_byte
        if unit.src[end : end + 1] not in (b"\n", b""):
            continue  # something follows on the line (a comment, another statement)
        if any(not any(s <= n.start_byte and n.end_byte <= e for s, e in spans) for n in reads_of(unit, scope, name)):
            continue
        start = syn.line_start(unit.src, stmt.start_byte)
        if any(s < end + 1 and start < e for s, e in spans):
            continue  # overlaps an edit
        removed.append(TextEdit(start, min(end + 1, len(unit.src)), ""))
        spans.append((start, end + 1))
        rhs = assigns[0].child_by_field_name("right")
        pending += [unit.t(n) for n in syn.identifiers(rhs)] if rhs is not None else []
    return removed


def _docstrings(unit: TritonUnit) -> list[Node]:
    """The module docstring and the docstrings of the kernel and of the functions that launch it."""
    blocks = [unit.root, unit.body] + [la.host.child_by_field_name("body") for la in unit.launches
                                       if la.host is not None]
    out: list[Node] = []
    for block in blocks:
        first = next((c for c in block.named_children if not syn.is_comment(c)), None) if block is not None else None
        if first is not None and syn.is_expression_statement(first) and first.named_children \
                and syn.is_string(first.named_children[0]) and first.named_children[0] not in out:
            out.append(first.named_children[0])
    return out


def stale_text_notes(unit: TritonUnit, note: str, tokens: list[str], edits: list[TextEdit]) -> list[TextEdit]:
    """Edits that note ``note`` in the docstrings (module, kernel, launching functions) and the ``#`` comments of
    the kernel and its launching functions that mention ``tokens``, the old setting's words
    (:mod:`htam_core.transforms._notes`); ``edits``: the transform's edits so far (their text is skipped)."""
    scopes = [unit.top] + [la.host for la in unit.launches if la.host is not None]
    comments = [c for scope in scopes for c in syn.comments(scope)]
    return (_notes.docstring_notes(unit.src, _docstrings(unit), note, tokens, edits)
            + _notes.comment_notes(unit.src, 0, comments, note, tokens, edits))
