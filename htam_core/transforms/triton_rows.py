"""``triton.multi_row``: several rows per program for a row kernel whose row fits one tile.

A row kernel runs one program per row: ``r = tl.program_id(0)``, ``cols = tl.arange(0, BLOCK)`` over the row's
columns (masked by ``cols < n_cols``) and ``tl.sum``/``tl.max`` over axis 0. For short rows most of the machine
then runs tiny programs. The rewrite gives each program a ``ROWS x BLOCK`` tile:

- ``r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]`` (a column of row indices) and every 1-D
  ``tl.arange(0, BLOCK)`` becomes ``tl.arange(0, BLOCK)[None, :]``, so every expression over the row broadcasts
  to the 2-D tile and per-row scalars become ``ROWS x 1`` columns;
- reductions over axis 0 become ``axis=1, keep_dims=True`` (per row, broadcastable against the tile);
- every load, store or atomic whose address reads the row index is also masked by ``r < htam_n_rows``
  (the last program's rows past the end);
- the kernel gains ``htam_n_rows`` and ``ROWS: tl.constexpr``; the launch's grid ``(G,)`` becomes
  ``(triton.cdiv(G, ROWS),)`` and passes ``htam_n_rows=G``. ``ROWS`` is chosen at the launch so that the tile
  holds about ``TILE`` elements (``max(1, min(64, TILE // BLOCK))``, a power of two when ``BLOCK`` is one).

Every precondition comes from the analysis layer (:attr:`~htam_core.source.analysis.TritonFacts.axes`,
``row_dependents``, ``control_names``, ``reductions``, ``loops``, ``bounds``); a kernel that loops over column
tiles (a row longer than one tile), branches on a row value, builds ``tl.zeros`` tiles, calls ``tl.dot``, or
uses ``tl.program_id`` inline is refused with the reason. Idea source: the Triton layer-norm/softmax
tutorials' "several rows per program" for small ``N`` and Liger-style row kernels.
"""

from __future__ import annotations

from htam_core.source.analysis import TritonAxis, TritonFacts
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.triton import grid_meta, grid_tuple, heuristics_dict, launch_argument
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._triton import TLaunch, TritonTransform, TritonUnit, add_kwarg
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.registry import register
from htam_core.transforms.triton_launch import TRITON_LANGS
from htam_core.types.profile import Profile

#: Elements per ``ROWS x BLOCK`` tile the candidates aim at (one candidate each), largest rows last.
TILES = (2048, 8192)
#: The most rows one program takes.
MAX_ROWS = 64
_NEW = ("htam_n_rows", "ROWS", "htam_row_mask", "htam_rows")


def _row_axes(kernel: Kernel, tf: TritonFacts) -> tuple[TritonAxis, list[TritonAxis]] | str:
    """The row-index axis and the 1-D column aranges, or why the kernel is not a one-row-per-program kernel."""
    pids = [a for a in tf.axes if a.kind == "program_id"]
    if len(pids) != 1 or pids[0].axis != 0 or tf.program_id_calls != 1:
        return f"{kernel.name} is not indexed by one row id (it needs exactly one `r = tl.program_id(0)`)"
    if any(a.name == pids[0].name for a in tf.aranges()):
        return f"{kernel.name} already gives each program several rows ({pids[0].name} holds a tl.arange of rows)"
    cols = tf.aranges()
    if not cols:
        return f"{kernel.name} has no tl.arange over the row's columns"
    if any(a.ndim != 1 for a in cols):
        return f"{kernel.name} already works on 2-D tiles"
    return pids[0], cols


def _flat_block_index(unit: TritonUnit, tf: TritonFacts, cols: list[TritonAxis]) -> str | None:
    """The block name when a value derived from the program id is combined with a column block size
    (``tl.program_id(0) * BLOCK``: a flat block index, not a row), else ``None``."""
    rows = set(tf.row_dependents)
    blocks = {a.end_text for a in cols if a.end_text}
    for a in syn.any_py_assignments(unit.body):
        right = a.child_by_field_name("right")
        used = {unit.t(i) for i in syn.identifiers(right)} if right is not None else set()
        if used & rows and used & blocks:
            return sorted(used & blocks)[0]
    return None


@register
class TritonMultiRow(TritonTransform):
    """``ROWS x BLOCK`` tiles: several short rows per program, with a row mask."""

    id = "triton.multi_row"
    languages = TRITON_LANGS
    summary = "several rows per program: a ROWS x BLOCK tile with a row mask, grid divided by ROWS"

    def propose_unit(
        self, unit: TritonUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate per :data:`TILES` target (fewer when a literal block leaves one row per program)."""
        facts = unit.facts
        tf = facts.triton
        if tf is None:
            return self.not_applicable(f"{kernel.name} has no Triton facts")
        if tf.autotuned:
            return self.not_applicable(f"{kernel.name} is under @triton.autotune; its grid depends on the configs")
        axes = _row_axes(kernel, tf)
        if isinstance(axes, str):
            return self.not_applicable(axes)
        pid, cols = axes
        flat = _flat_block_index(unit, tf, cols)
        if flat is not None:
            return self.not_applicable(f"the program id of {kernel.name} indexes blocks of {flat} elements, not rows")
        if facts.row_tile_loops():
            return self.not_applicable(f"{kernel.name} loops over column tiles, so its rows are longer than one tile")
        if facts.loops:
            return self.not_applicable(f"{kernel.name} has a loop (line {facts.loops[0].line}), which several rows "
                                       "per program would have to run per row")
        if tf.dots:
            return self.not_applicable(f"{kernel.name} calls tl.dot; it is a matmul tile, not a row kernel")
        if tf.tensor_shapes:
            return self.not_applicable(f"{kernel.name} builds a {tf.tensor_shapes[0]} tile with tl.zeros/tl.full, "
                                       "which would need a ROWS dimension")
        branch = [n for n in tf.control_names if n in tf.row_dependents]
        if branch:
            return self.not_applicable(f"{kernel.name} branches on {branch[0]}, a per-row value")
        if any(r.axis not in (0, None) for r in tf.reductions):
            return self.not_applicable(f"{kernel.name} reduces over an axis other than the row")
        blocks = [a.end_text for a in cols]
        bounds = [b for b in tf.bounds if b.block in blocks]
        if not bounds:
            return self.not_applicable(f"{kernel.name} masks no column against a row length (cols < n_cols)")
        names = {p.name for p in kernel.params} | {k for k, _ in facts.constants}
        taken = [n for n in _NEW if n in names or n in tf.row_dependents]
        if taken:
            return self.not_applicable(f"{kernel.name} already uses the name {taken[0]}")
        if len(unit.launches) != 1:
            return self.not_applicable(f"{kernel.name} is launched from {len(unit.launches)} places; "
                                       "expected one launch to resize")
        la = unit.launches[0]
        grid = grid_tuple(la.call, la.host, unit.src)
        if grid is None:
            return self.not_applicable(f"the grid of {kernel.name} ({unit.t(la.grid)}) is not a tuple (rows,), "
                                       "written in the launch, in a local, a lambda or a grid function")
        dims = [d for d in grid.named_children if not syn.is_comment(d)]
        if len(dims) != 1:
            return self.not_applicable(f"the grid of {kernel.name} has {len(dims)} dimensions; expected (rows,)")
        block = blocks[0]
        block_val = launch_argument(la.call, kernel, block, unit.src) if block is not None else None
        heur = heuristics_dict(unit.top, unit.src)
        by_heuristics = block_val is None and heur is not None and block in (kernel.attributes.get("heuristics") or {})
        if block_val is None and not by_heuristics:
            return self.not_applicable(f"{block} is not passed at the launch of {kernel.name} (its default "
                                       "chooses it), so the rows per program cannot follow it")
        kernel_edits = self._kernel_edits(unit, kernel, tf, pid, cols, la)
        if isinstance(kernel_edits, str):
            return self.not_applicable(kernel_edits)
        if by_heuristics:
            return [self._heuristics_candidate(unit, model, kernel, la, dims[0], heur, block, tile, kernel_edits)
                    for tile in TILES]
        literal = facts.constant(block) if syn.is_integer(block_val) else None
        out: list[Candidate] = []
        for tile in TILES:
            rows = max(1, min(MAX_ROWS, tile // literal)) if literal else None
            if rows == 1:
                continue
            edits = list(kernel_edits) + self._launch_edits(unit, la, dims[0], block_val, tile, rows)
            how = f"{rows} rows" if rows else f"max(1, min({MAX_ROWS}, {tile} // {block})) rows"
            out.append(self.candidate(
                model, f"give each program of {kernel.name} {how} ({rows or 'ROWS'} x {block} tile of about "
                f"{tile} elements) with a row mask; the grid shrinks by ROWS", {"tile": tile, "rows": rows}, edits))
        if not out:
            return self.not_applicable(f"{block}={literal} already fills a tile of {max(TILES)} elements per row")
        return out

    def _kernel_edits(self, unit: TritonUnit, kernel: Kernel, tf: TritonFacts, pid: TritonAxis,
                      cols: list[TritonAxis], la: TLaunch) -> list[TextEdit] | str:
        """The kernel-side edits (row ids, column broadcast, masks, reductions, parameters), or why not."""
        edits: list[TextEdit] = []
        call = unit.node_at(pid.call_span, syn.PY_CALL) if pid.call_span else None
        stmt = unit.node_at(pid.span, syn.PY_ASSIGNMENT) if pid.span else None
        if call is None or stmt is None:
            return f"the row id of {kernel.name} was not found"
        edits.append(unit.replace(call, f"({unit.t(call)} * ROWS + {unit.tl}.arange(0, ROWS)[:, None])"))
        indent = syn.indent_of(unit.src, stmt.start_byte)
        edits.append(unit.insert(stmt.end_byte, f"\n{indent}htam_row_mask = {pid.name} < htam_n_rows"))
        for a in cols:
            node = unit.node_at(a.call_span, syn.PY_CALL) if a.call_span else None
            if node is None:
                return f"the tl.arange of {a.name} was not found"
            edits.append(TextEdit(node.end_byte, node.end_byte, "[None, :]"))
        rows = set(tf.row_dependents)
        for m in tf.memops:
            node = unit.node_at(m.span, syn.PY_CALL)
            args = node.child_by_field_name("arguments") if node is not None else None
            pos = [a for a in args.named_children if syn.is_positional_argument(a)] if args else []
            if not pos:
                return f"the tl.{m.op} on line {m.line} has no address argument"
            if not {unit.t(i) for i in syn.identifiers(pos[0])} & rows:
                continue  # the same for every row (a weight vector): no row mask needed
            mask = unit.kwarg(node, "mask")
            if mask is not None:
                v = mask.child_by_field_name("value")
                edits.append(unit.replace(v, f"{unit.t(v) if syn.is_identifier(v) else f'({unit.t(v)})'} & htam_row_mask"))
            elif m.op == "load" and len(pos) > 1 or m.op != "load" and len(pos) > 2:
                return f"the tl.{m.op} on line {m.line} passes its mask positionally"
            else:
                edits.append(add_kwarg(unit, node, "mask=htam_row_mask"))
        for r in tf.reductions:
            node = unit.node_at(r.span, syn.PY_CALL)
            if node is None:
                return f"the tl.{r.fn} on line {r.line} was not found"
            if unit.kwarg(node, "keep_dims") is not None:
                return f"the tl.{r.fn} on line {r.line} already sets keep_dims"
            ax = unit.kwarg(node, "axis")
            args = node.child_by_field_name("arguments")
            pos = [a for a in args.named_children if syn.is_positional_argument(a)]
            if ax is not None:
                edits.append(unit.replace(ax, "axis=1, keep_dims=True"))
            elif len(pos) > 1:
                edits.append(unit.replace(pos[1], "1, keep_dims=True"))
            else:
                edits.append(add_kwarg(unit, node, "axis=1, keep_dims=True"))
        params = unit.func.child_by_field_name("parameters")
        plist = [p for p in params.named_children if not syn.is_comment(p)]
        first_default = next((k for k, p in enumerate(plist) if syn.is_default_parameter(p)), None)
        npos = len([a for a in la.args.named_children if syn.is_positional_argument(a)])
        if first_default is not None:
            if npos > first_default:
                return f"the launch of {kernel.name} passes defaulted parameters positionally"
            edits.append(unit.insert(plist[first_default].start_byte, f"htam_n_rows, ROWS: {unit.constexpr_annotation}, "))
        elif plist:
            edits.append(unit.insert(plist[-1].end_byte, f", htam_n_rows, ROWS: {unit.constexpr_annotation}"))
        else:
            return f"{kernel.name} has no parameters"
        return edits

    def _heuristics_candidate(self, unit: TritonUnit, model: SourceModel, kernel: Kernel, la: TLaunch, dim, heur,
                              block: str, tile: int, kernel_edits: list[TextEdit]) -> Candidate:
        """The candidate for a block chosen by ``@triton.heuristics``: ``ROWS`` is chosen there too, from the block,
        and the grid reads it from the launch's meta-parameters (a plain tuple grid becomes a lambda)."""
        pairs = [p for p in heur.named_children if p.is_named and p.child_count > 0]  # the pairs, not comments
        rule = f'"ROWS": lambda args: max(1, min({MAX_ROWS}, {tile} // args["{block}"]))'
        edits = list(kernel_edits)
        edits.append(unit.insert(pairs[-1].end_byte, f", {rule}") if pairs else
                     unit.insert(heur.start_byte + 1, rule))
        meta = grid_meta(la.call, la.host, unit.src)
        g = unit.t(dim)
        if meta is not None:
            edits.append(unit.replace(dim, f'triton.cdiv({g}, {meta}["ROWS"])'))
        else:
            grid = dim.parent
            edits.append(unit.replace(grid, f'lambda meta: (triton.cdiv({g}, meta["ROWS"]),)'))
        edits.append(add_kwarg(unit, la.call, f"htam_n_rows={g}"))
        return self.candidate(
            model, f"give each program of {kernel.name} max(1, min({MAX_ROWS}, {tile} // {block})) rows, chosen by "
            f"@triton.heuristics next to {block} (a tile of about {tile} elements), with a row mask; the grid "
            "shrinks by ROWS", {"tile": tile, "rows": None}, edits)

    def _launch_edits(self, unit: TritonUnit, la: TLaunch, dim, block_val, tile: int,
                      rows: int | None) -> list[TextEdit]:
        """Grid ``(cdiv(G, ROWS),)`` and the ``htam_n_rows``/``ROWS`` arguments; ``htam_rows`` when computed."""
        g = unit.t(dim)
        edits: list[TextEdit] = []
        if rows is None:
            # before the launch, or before the grid's own statement when the grid is a local set earlier
            stmt = dim if dim.start_byte < la.call.start_byte and dim.end_byte <= la.call.start_byte else la.call
            while stmt.parent is not None and not syn.is_py_block_or_module(stmt.parent):
                stmt = stmt.parent
            indent = syn.indent_of(unit.src, stmt.start_byte)
            edits.append(unit.insert(syn.line_start(unit.src, stmt.start_byte),
                                     f"{indent}htam_rows = max(1, min({MAX_ROWS}, {tile} // ({unit.t(block_val)})))"
                                     "  # rows per program: a tile of about "
                                     f"{tile} elements\n"))
        val = str(rows) if rows else "htam_rows"
        edits.append(unit.replace(dim, f"triton.cdiv({g}, {val})"))
        edits.append(add_kwarg(unit, la.call, f"htam_n_rows={g}, ROWS={val}"))
        return edits
