"""CUDA launch-configuration transforms: threads per block (``cuda.block_size``) and
``__launch_bounds__`` (``cuda.launch_bounds``).

Block-size retuning refuses a kernel that writes one output per block (a partial sum at ``out[blockIdx.x]``)
when the grid follows the block size: the output's length would change with it. It keeps the grid consistent: when the grid is a ceil-division over the block size
(``(n + 255) / 256``, ``(n + B - 1) / B``, ``CEIL_DIV(n, 16)``, ``ceil(n / 256.0)``), written with the same
literal or named constant, both change together. Named constants (``#define THREADS``,
``const int threads``, ``constexpr int TILE``) are changed at their definition so every use follows.
Idea source: CUDA C++ Best Practices Guide, "Thread and Block Heuristics"; Nsight Compute's
launch-statistics and occupancy rules.
"""

from __future__ import annotations

import dataclasses
import math
import re

from htam_core.source.analysis import nodes as _ts  # the node queries of the analysis layer
from htam_core.source.analysis.api_launch import api_launch_calls
from htam_core.source.analysis.constants import literal_value
from htam_core.source.analysis.contracts import block_segment_results, block_size_numerics
from htam_core.source.analysis.grid_cover import GridCover, block_literals, division_operands, launch_cover
from htam_core.source.analysis.launch import launch_calls, reads_block_dim
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.reaching import reaching_definition
from htam_core.source.analysis.unit import SiteLaunch
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    DIMS,
    Const,
    CudaTransform,
    CudaUnit,
    grid_xy,
    include_insert_point,
    per_block_output_hazard,
    references,
    stale_comment_notes,
    wrap_grid,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

CUDA_LANGS = ("cuda", "cuda-in-python")
#: 1-D block sizes in the order they are proposed: 256 and 128 first (CUDA C++ Best Practices Guide, "Thread
#: and Block Heuristics": "between 128 and 256 threads per block is a good initial range"), then larger ones.
BLOCK_1D = (256, 128, 512, 1024)
BLOCK_2D = ((32, 8), (32, 16), (16, 16), (32, 32), (64, 4), (16, 8))
SQUARE_2D = ((8, 8), (16, 16), (32, 32))


def _num_value(unit: CudaUnit, node: Node) -> int | None:
    """Integer value of a numeric literal, also ``256.0``/``256.f`` when integral."""
    v = literal_value(unit.t(node))
    return int(v) if v is not None and float(v).is_integer() else None


def _expand(unit: CudaUnit, expr: Node, scope: Node | None) -> Node:
    """Follow an identifier to the value of its nearest dominating definition, a few names deep (``int blocks =
    (n + 255) / 256;``, ``blocks = (n + 255) / 256;``): where the grid is computed, which its edits change (the
    analysis layer's :func:`reaching_definition`, by the rule of the value the grid's form is read from)."""
    expr = _ts.unwrap_parens(expr)
    seen = 0
    while _ts.is_identifier(expr) and scope is not None and seen < 4:
        value = reaching_definition(scope, unit.t(expr), expr.start_byte, unit.src)
        if value is None:
            break
        expr = _ts.unwrap_parens(value)
        seen += 1
    return expr


def grid_literal_edits(unit: CudaUnit, grid: Node, old: int, new: int, dim: str = "x") -> list[TextEdit] | None | str:
    """Edits turning a ceil-division by literal ``old`` into one by ``new``, its literal suffixes kept (``256u``,
    ``256.0f``).

    Returns the edits, ``None`` when ``grid`` contains no literal ``old`` (it does not follow the block),
    or a reason string when the literal is used in a way that is not a ceil-division (the analysis layer's
    :func:`~htam_core.source.analysis.grid_cover.block_literals` decides, on the grid's sympy form).
    """
    found = block_literals(unit.source, grid, old, new, dim)
    if not isinstance(found, list):
        return found
    edits = []
    for n, value in found:
        text = unit.t(n)
        if "." in text:
            suffix = text[text.index(".") :].lstrip(".0123456789")
            edits.append(unit.replace(n, f"{value}.0{suffix}"))
        else:
            digits = text.rstrip("uUlL")
            edits.append(unit.replace(n, f"{value}{text[len(digits):]}"))
    return edits


def _config_names(unit: CudaUnit, expr: Node, scope: Node | None, depth: int = 0) -> set[str]:
    """Identifiers a launch-config expression depends on, following local definitions two levels deep."""
    names = {unit.t(n) for n in _ts.names_and_types(expr)}
    if depth < 2 and scope is not None:
        for name in list(names):
            for d in unit.dims_of(_ts.unwrap_parens(expr), scope) if _ts.is_identifier(expr) else []:
                if d is not expr:
                    names |= _config_names(unit, d, scope, depth + 1)
            for v in unit.local_inits(scope, name):
                names |= _config_names(unit, v, scope, depth + 1)
    return names


def _built_from(unit: CudaUnit, name: str, depth: int = 0) -> set[str]:
    """The names the ``#define`` of ``name`` is built from, following their own ``#define`` lines a few levels
    (``#define THREADS (WARP_SIZE * WARPS)``: ``{"WARP_SIZE", "WARPS"}``); empty for a name with no ``#define``.
    A kernel body that reads one of them assumes the constant's value as much as one that reads the name."""
    value = unit.env.define(name)
    if value is None or depth > 4:
        return set()
    names = set(re.findall(r"[A-Za-z_]\w*", unit.t(value))) - {name}  # a #define's value is raw text
    return names.union(*(_built_from(unit, n, depth + 1) for n in list(names)))


def _block_fixed_by_body(unit: CudaUnit, dim: str, c: Const) -> str | None:
    """Why the kernel's results are tied to its block size ``c`` along ``dim``, or ``None``: the block is a segment
    of its results (:func:`~htam_core.source.analysis.contracts.block_segment_results`), or the body reads a name
    the constant's ``#define`` is built from (``WARPS`` of ``#define THREADS (32 * WARPS)``: a per-warp layout of
    a fixed number of warps, which another block size leaves partly uncovered). A name worth 32, the warp's
    width (``WARP_SIZE``), is no part of the layout's choice: a lane index may read it."""
    if why := block_segment_results(unit.facts, dim, c.value):
        return why
    built = sorted(n for n in _built_from(unit, c.name) if references(unit.body, unit.src, n)
                   and getattr(unit.env.const_name(n, None), "value", None) != 32) if c.name else []
    if built:
        return (f"{unit.kernel.name} reads {built[0]}, which its block size {c.name} is built from: the kernel's "
                f"layout assumes {c.value} threads along {dim}, so another block size would change which elements "
                "its threads cover")
    return None


def shared_with_other_launches(unit: CudaUnit, names: set[str]) -> str | None:
    """Name the launch of another kernel whose configuration uses one of ``names``, if any."""
    own = {la.call.start_byte for la in unit.launches}
    for lc in launch_calls(unit.root, unit.src) + api_launch_calls(unit.root, unit.src):
        call, host = lc.call, lc.host
        if call.start_byte in own:
            continue
        used: set[str] = set()
        for arg in lc.config[:2]:
            used |= _config_names(unit, arg, host)
        ours = {la.host.start_byte for la in unit.launches if la.host is not None}
        common = {
            n for n in used & names
            if host is None or host.start_byte in ours or not unit.local_inits(host, n)
        }
        if common:
            line = unit.src[: call.start_byte].count(b"\n") + 1
            return (
                f"{', '.join(sorted(common))} also configures the launch {unit.t(lc.fn)} "
                f"on line {line} of the CUDA source; give {unit.kernel.name} its own (a constant or local that only "
                "its launch uses, and its body where it reads the value) and htam can retune it"
            )
    return None


def own_block_constant(unit: CudaUnit, launch: SiteLaunch, c: Const, new: int) -> list[TextEdit] | None:
    """Edits that give ``launch`` a block-size constant of its own set to ``new``, when its constant ``c`` (a
    named constant: ``const int threads = 256;``, ``#define THREADS 256``) also configures the launch of another
    kernel, which keeps its block: ``const int <kernel>_<name> = new;`` declared before the launch's statement, and
    the name replaced by it wherever this launch's configuration (grid, block, shared-memory size) writes it.
    ``None`` when ``c`` is shared with no other kernel's launch (the constant itself is edited), or when the split
    would not hold: the kernel's body reads the name (the kernel would need the constant too), or the launch reads
    it through a local (``int blocks = (n + threads - 1) / threads;``, which other code may read as well).
    Idea source: the usual hand edit of a shared launch constant (one constant per kernel)."""
    if not c.name or shared_with_other_launches(unit, {c.name}) is None or references(unit.body, unit.src, c.name):
        return None
    uses = [n for arg in launch.config_args for n in references(arg, unit.src, c.name)]
    if any(c.name in _config_names(unit, arg, launch.host) and not references(arg, unit.src, c.name)
           for arg in launch.config_args) or not uses:
        return None
    taken = {unit.t(n) for n in _ts.names_and_types(unit.root)}
    nth = [la.call.start_byte for la in unit.launches].index(launch.call.start_byte)  # one name per launch
    base = f"{unit.kernel.name}_{c.name}{nth or ''}".replace("::", "_")
    name = next(f"{base}{'_' * k}" for k in range(len(taken) + 2) if f"{base}{'_' * k}" not in taken)
    stmt = launch.call
    while stmt.parent is not None and not _ts.is_block(stmt.parent):
        stmt = stmt.parent
    if stmt.parent is None:
        return None
    indent = _ts.indent_of(unit.src, stmt.start_byte)
    decl = unit.insert(stmt.start_byte, f"const int {name} = {new};  // {unit.kernel.name}'s own block size\n{indent}")
    return [decl] + [unit.replace(n, name) for n in uses]


def block_words(dims: tuple[int, ...]) -> list[str]:
    """Words whose mention in a comment states a block of ``dims`` threads: ``"32-thread"``, ``"32 threads"``
    for 1-D blocks; ``"16 x 16"``, ``"16x16"`` for 2-D ones; and ``"→ 32"``, the end of an earlier step's note."""
    active = [d for d in dims if d > 1]
    if len(active) == 1:
        v = active[0]
        return [f"{v}-thread", f"{v} threads", f"blocks of {v}", f"block of {v}", f"→ {v}"]
    if len(dims) >= 2:
        a, b = dims[0], dims[1]
        return [f"{a} x {b}", f"{a}x{b}", f"{a} × {b}", f"{a}×{b}", f"→ {a}x{b}"]
    return []


def block_mapping_hazard(unit: CudaUnit, dim: str, const: Const) -> str | None:
    """Why the kernel's thread mapping along ``dim`` does not scale with ``blockDim.<dim>``, so that launching it
    with another block extent (now ``const``) would change which elements its threads cover; ``None`` when it
    scales (its indices read ``blockDim``, or the block-size constant they use is the one the retune edits).

    From the analysis layer's facts: an index that multiplies ``blockIdx.<dim>`` by a fixed tile
    (:meth:`~htam_core.source.analysis.KernelFacts.fixed_block_extents`: ``i_base = 128 * blockIdx.x + 8 *
    threadIdx.x`` for 16 threads), or a body that never reads ``threadIdx.<dim>`` while it calls a function that
    may (:attr:`~htam_core.source.analysis.KernelFacts.device_calls`: the mapping is out of sight), or a value
    read once per block and applied to the block's slice
    (:meth:`~htam_core.source.analysis.KernelFacts.per_block_inputs`: a scan's uniform add).
    """
    f = unit.facts
    names = [const.name, *_template_params_bound_to(unit, const.name)] if const.name else []
    for what, line, span in f.fixed_block_extents(dim, const.value):
        written = unit.src[span[0] - unit.base : span[1] - unit.base].decode(errors="replace")
        if any(re.search(rf"\b{re.escape(n)}\b", written) for n in names):
            # `blockIdx.x * BS + threadIdx.x` with the launch's BS (or a template parameter every launch binds to
            # it): the definition is what changes
            continue
        return (f"the index `{' '.join(written.split()) or what}` on line {line} hard-codes the block's "
                f"{const.value} threads along {dim} (blockIdx.{dim} times a constant, not blockDim.{dim}); another "
                "block shape would change which elements each thread covers (retile the index by hand first)")
    if per_block := f.per_block_inputs(dim):
        a = per_block[0]
        return (f"{unit.kernel.name} reads one value per block ({a.shown} on line {a.line}) and "
                f"applies it to the block's slice of blockDim.{dim} elements: another block size would pair the "
                "elements with another block's value (a segment of the current size)")
    if f"threadIdx.{dim}" not in f.builtins_read and f.device_calls:
        return (f"{unit.kernel.name} does not read threadIdx.{dim} itself: its thread mapping is in "
                f"{', '.join(f.device_calls)}, which this check cannot see, so another block shape along {dim} "
                "cannot be shown to cover the same elements")
    return None


def _template_params_bound_to(unit: CudaUnit, name: str) -> list[str]:
    """The kernel's template parameters that every launch binds to the named constant ``name``
    (``k<THREADS><<<g, THREADS>>>`` for ``template <int BS>``: ``["BS"]``), from the launches' facts."""
    params = [p.split()[-1].lstrip("*&") for p in unit.kernel.attributes.get("template_params") or [] if p.split()]
    launches = unit.facts.launches
    return [p for i, p in enumerate(params) if launches and all(
        i < len(la.template_args) and la.template_args[i].strip() == name for la in launches)]


def _grid_held(unit: CudaUnit, launch: SiteLaunch, grid: Node | None, dim: str, held: list[str] | None) -> str | None:
    """Why the block may not change along ``dim`` while ``launch``'s grid (component ``grid``) stays as it is, or
    ``None`` when it may: the kernel's grid-stride loops cover every element for any launch (the grid's text is
    added to ``held``), or no block owns a slice along ``dim``."""
    if unit.facts.covers_any_launch(dim):
        if held is not None:
            held.append(unit.t(launch.grid) if launch.grid is not None else "1")
        return None
    if unit.uses_block_linear_index(dim):
        g = unit.t(grid) if grid is not None else "1"
        return (f"the grid ({g}) does not follow the block size along {dim}, and the kernel indexes "
                f"with blockIdx.{dim}; changing the block would change which elements are covered")
    return None


def _follow_grid(unit: CudaUnit, launch: SiteLaunch, at: tuple[list[Node], int], c: Const, new: int,
                 out: tuple[list[TextEdit], set[str]], held: list[str] | None) -> str | None:
    """Make ``launch``'s grid component ``at = (grid components, axis)`` follow its block constant ``c`` going to
    ``new`` threads: its edits join ``out[0]`` and the names it changes ``out[1]``; a grid that rounds down becomes a
    ceil-division (:func:`_floor_grid`). Returns why the block may not change, or ``None``."""
    grid_dims, d = at
    group, touched = out
    grid = _expand(unit, grid_dims[d], launch.host) if d < len(grid_dims) else None
    follows = False
    if grid is not None and c.name and references(grid, unit.src, c.name):
        follows = True
        if any(_num_value(unit, n) == c.value for n in _ts.numbers(grid)):
            return f"the grid {unit.t(grid)!r} mixes {c.name} and the literal {c.value}"
    elif grid is not None and reads_block_dim(grid, unit.src, launch.block, d):
        follows = True  # (N + block.x - 1) / block.x: the grid reads the block itself
        if any(_num_value(unit, n) in {c.value, c.value - 1} - {0, 1} for n in _ts.numbers(grid)):
            return f"the grid {unit.t(grid)!r} mixes {unit.t(launch.block)}.{DIMS[d]} and a literal of the block size"
    elif grid is not None and _rounding_down(unit, launch, d) is None:  # a floor grid is rewritten whole below
        ge = grid_literal_edits(unit, grid, c.value, new, DIMS[d])
        if isinstance(ge, str) and not unit.facts.covers_any_launch(DIMS[d]):
            return ge
        if isinstance(ge, list):
            follows = True
            group.extend(ge)
            for g in (launch.grid, grid_dims[d]):
                if _ts.is_identifier(_ts.unwrap_parens(g)):
                    touched.add(unit.t(_ts.unwrap_parens(g)))
    floor = _floor_grid(unit, launch, (grid, d), c, new, group) if grid is not None else False
    if isinstance(floor, str):
        return floor
    if (follows or floor) and (why := per_block_output_hazard(unit, launch)):
        return why
    if not (follows or floor) and (why := _grid_held(unit, launch, grid, DIMS[d], held)):
        return why
    return None


def _rounding_down(unit: CudaUnit, launch: SiteLaunch, d: int) -> GridCover | None:
    """How ``launch``'s grid covers the work along axis ``d`` when it rounds down (``n / 256``: the analysis layer's
    :func:`~htam_core.source.analysis.grid_cover.launch_cover` on the grid's sympy form) and no grid-stride loop
    covers that axis for any grid; else ``None``. The one reading that sends the grid to the floor rewrite
    (:func:`_floor_grid`) rather than to its literal edits (:func:`grid_literal_edits`)."""
    lf = unit.launch_facts(launch)
    cover = launch_cover(unit.source, unit.facts, lf, d) if lf is not None else None
    if cover is None or cover.kind != "floor" or unit.facts.covers_any_launch(DIMS[d]):
        return None
    return cover


def _floor_grid(unit: CudaUnit, launch: SiteLaunch, at: tuple[Node, int], c: Const, new: int,
                group: list[TextEdit]) -> str | bool:
    """When ``launch``'s grid component ``at = (node, axis)`` rounds the work down (``n / 256``: the analysis
    layer's :func:`~htam_core.source.analysis.grid_cover.launch_cover`), replace it in ``group`` by the
    ceil-division ``(n + B - 1) / B`` over block ``c`` going to ``new``, which the kernel's bounds check against
    ``n`` makes exact (``True``); without that check, why the block must stay (another block would cover other
    elements). ``False`` when the grid does not round down."""
    grid, d = at
    cover = _rounding_down(unit, launch, d)
    if cover is None:
        return False
    ops = division_operands(grid, unit.src)
    if not cover.bound_is_work or ops is None:
        why = f"the kernel has no bounds check of its index along {DIMS[d]} against {cover.work}" \
            if not cover.bound_is_work else "it is not written `W / B`, so it cannot become a ceil-division"
        return (f"the grid {unit.t(grid)!r} rounds down ({c.value} * ({cover.work} / {c.value}) threads, exactly "
                f"{cover.work} only when {c.value} divides it) and {why}; another block size would cover other "
                "elements, so the block size is left as is")
    left, op, right = ops
    divisor = c.name if c.name and op == "/" and references(right, unit.src, c.name) else \
        unit.t(right) if op == "/" and reads_block_dim(right, unit.src, launch.block, d) else str(new)
    group.append(unit.replace(grid, f"({unit.t(left)} + {divisor} - 1) / {divisor}"))
    return True


def retune_block(unit: CudaUnit, new_dims: tuple[int, ...], *, mapping_rewritten: bool = False,
                 held: list[str] | None = None) -> list[TextEdit] | str:
    """Edits that change every launch of the kernel to blocks of ``new_dims`` with a consistent grid.

    Args:
        unit: the kernel's CUDA unit (with launches).
        new_dims: threads per block per dimension (``(512,)`` or ``(32, 8)``).
        mapping_rewritten: the caller rewrites the kernel's thread indices for the new block itself (a tiling),
            so :func:`block_mapping_hazard` does not apply; otherwise a mapping that does not scale with
            ``blockDim`` is refused.
        held: when given, receives the text of each grid component kept as it is because grid-stride loops
            cover the kernel's elements along it for any grid
            (:meth:`~htam_core.source.analysis.KernelFacts.covers_any_launch`).

    Returns:
        The edits (deduplicated), or a reason string when the change cannot be made safely.
    """
    if not unit.launches:
        return f"{unit.kernel.name} has no launch site in this file"
    edits: dict[tuple[int, int], TextEdit] = {}
    touched: set[str] = set()
    total_new = math.prod(new_dims)
    for launch in unit.launches:
        dims = unit.block_dims(launch)
        if dims is None:
            return f"the launch on line {launch.site.line} has no block argument"
        if len(dims) != len(new_dims):
            return f"the launch on line {launch.site.line} has a {len(dims)}-D block"
        old_total = unit.block_threads(launch)
        grid_dims = unit.dims_of(launch.grid, launch.host)
        for d, (dim, new) in enumerate(zip(dims, new_dims, strict=True)):
            c = dim.const
            if c is None:
                return f"block dimension {DIMS[d]} ({unit.t(dim.expr)}) is not a compile-time constant"
            if c.value == new:
                continue
            if c.value <= 1:
                return f"block dimension {DIMS[d]} is {c.value}; retuning it would change the work mapping"
            if why := _block_fixed_by_body(unit, DIMS[d], c):
                return why  # the block is a segment, or the body's layout is built on the block size's parts
            own = own_block_constant(unit, launch, c, new)  # another kernel's launch shares c: this one's own
            e = own[0] if own else unit.const_edit(c, new)
            if e is None:
                return f"block dimension {DIMS[d]} ({unit.t(dim.expr)}) is computed; cannot rewrite it"
            if not mapping_rewritten and (why := block_mapping_hazard(unit, DIMS[d], c)):
                return why
            group = own or [e]
            if c.name and not own:
                touched.add(c.name)
            elif not c.name:
                blk = _ts.unwrap_parens(launch.block)
                if _ts.is_identifier(blk):
                    touched.add(unit.t(blk))
            if why := _follow_grid(unit, launch, (grid_dims, d), c, new, (group, touched), held):
                return why
            body_lits = [n for n in _ts.numbers(unit.body) if _num_value(unit, n) == c.value]
            if body_lits and c.value >= 8:
                return f"the kernel body uses the literal {c.value}, which may assume the block size"
            for x in group:
                prev = edits.get((x.start_byte, x.end_byte))
                if prev is not None and prev.new_text != x.new_text:
                    return f"{unit.t(dim.expr)} is shared by block dimensions that would need different values"
                edits[(x.start_byte, x.end_byte)] = x
        lb = bounds_edit(unit, old_total, total_new)
        if isinstance(lb, str):
            return lb
        if lb is not None:
            edits[(lb.start_byte, lb.end_byte)] = lb
    clash = shared_with_other_launches(unit, touched)
    if clash:
        return clash
    return [edits[k] for k in sorted(edits)]


def bounds_edit(unit: CudaUnit, old_total: int | None, new_total: int) -> TextEdit | None | str:
    """Keep an existing ``__launch_bounds__`` valid for a new block size (CUDA C++ Programming Guide, "Launch
    Bounds": a launch with more threads per block than the limit fails).

    Reads the limit in any spelling (:meth:`CudaUnit.launch_bounds`: a literal, a named constant, a template
    parameter, a macro call such as ``C10_LAUNCH_BOUNDS_1(256)``).

    Args:
        unit: the kernel's editing view.
        old_total: threads per block of the launches before the step, or ``None`` when unknown.
        new_total: threads per block after it.

    Returns:
        ``None`` when nothing needs changing (no bounds, a limit of at least ``new_total``, or a template
        parameter that follows the launch's template argument); an edit of the limit's literal when that literal
        is written at the kernel (or as the macro call's argument) and equals the old block size; otherwise a
        one-line reason the block size cannot change.
    """
    lb = unit.launch_bounds()
    if lb is None or lb.template:
        return None
    if lb.max_threads is None:
        return (f"the thread limit of __launch_bounds__ ({lb.text}) is not a compile-time integer here, so a block "
                f"of {new_total} threads may exceed it; the block size is left as is")
    if lb.max_threads >= new_total:
        return None
    if lb.literal_span is not None and lb.max_threads == old_total:
        return unit.replace_span(lb.literal_span, str(new_total))
    return f"__launch_bounds__({lb.text}) is smaller than {new_total} threads"


def _input_note(expr: str) -> str:
    """``", which the program read from its command line or environment: that input no longer sets it"`` when
    the replaced grid expression ``expr`` reads ``argv``/``getenv``/``atoi``-style input, else ``""``: the step
    then drops a knob the user gave the program, and its title says so."""
    if any(w in expr for w in ("argv", "getenv", "atoi", "atol", "strtol", "stoi", "scanf")):
        return ", which the program read from its input: that input no longer sets the grid"
    return ""


def _with_numerics(unit: CudaUnit, current: tuple[int, ...], cand: Candidate) -> Candidate:
    """``cand`` (a new block size for a kernel launched with ``current``) marked with how its results may differ
    (:func:`~htam_core.source.analysis.contracts.block_size_numerics` over each block dimension over one thread):
    a kernel whose threads combine each other's values gets ``changes_numerics``, with ``reorders_only`` where the
    combination is shown to be the same terms in another order, so a static run follows only a change it can show
    equal. Idea source: the CUDA C++ Programming Guide's note that float addition is not associative."""
    kinds = {block_size_numerics(unit.facts, DIMS[d], v) for d, v in enumerate(current) if v > 1}
    if kinds - {"exact"}:
        cand.changes_numerics = True
        cand.reorders_only = "unknown" not in kinds
    return cand


def _rounded_words(unit: CudaUnit, old: tuple[int, ...], new: tuple[int, ...]) -> str:
    """The words a candidate that changes the block from ``old`` to ``new`` adds when a launch's grid rounds the
    work down (``n / 256``) along a changed axis and the step makes it a ceil-division (:func:`_floor_grid`), else
    ``""``."""
    changed = [d for d, (a, b) in enumerate(zip(old, new, strict=False)) if a != b]
    floors = {la.grid[d].text: cover.bound for la in unit.facts.launches for d in changed if d < len(la.grid)
              and (cover := launch_cover(unit.source, unit.facts, la, d)).kind == "floor" and cover.bound_is_work
              and not unit.facts.covers_any_launch(DIMS[d])}
    return "".join(f"; the grid `{g}` rounded down: it becomes a ceil-division, so every one of the {b} elements the "
                   "bounds check lets through gets a thread" for g, b in floors.items())


@register
class CudaBlockSize(CudaTransform):
    """Retune threads per block at the launch site, keeping the grid consistent."""

    id = "cuda.block_size"

    kind = "launch"
    languages = CUDA_LANGS
    summary = "retune threads per block at the launch site (grid follows)"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """Candidates for other block sizes: 128..1024 for 1-D blocks, 32x8 .. 32x32 shapes for 2-D ones, and for
        3-D blocks the same x-y shapes with the z component kept."""
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; the block size is unknown")
        dims = unit.block_dims(unit.launches[0])
        if dims is None:
            return self.not_applicable("the launch has no block argument")
        consts: list[Const | None] = [d.const for d in dims]
        if any(c is None for c in consts):
            bad = next(unit.t(d.expr) for d in dims if d.const is None)
            # the output contract is the reason that stays once the block size is made a constant: say it too
            hazard = per_block_output_hazard(unit, unit.launches[0])
            return self.not_applicable(f"the block size {bad} is not a compile-time constant"
                                       + unit.block_refusal(unit.launches[0]) + (f"; and {hazard}" if hazard else ""))
        current = tuple(c.value for c in consts)  # type: ignore[union-attr]
        active = [v for v in current if v > 1]
        if len(active) == 1 and len(current) <= 3:
            axis = current.index(active[0])
            options = []
            for v in BLOCK_1D:
                shape = list(current)
                shape[axis] = v
                options.append(tuple(shape))
        elif len(current) in (2, 3):
            # x and y retuned over the 2-D shapes; a z component is kept (threads per block stay <= 1024)
            shared = consts[0].name is not None and consts[0].name == consts[1].name  # type: ignore[union-attr]
            z = current[2:]
            options = [(*xy, *z) for xy in (SQUARE_2D if shared else BLOCK_2D)
                       if xy[0] * xy[1] * (z[0] if z else 1) <= 1024]
            if not options:
                return self.not_applicable(f"no 2-D shape keeps block {current} within 1024 threads")
        else:
            return self.not_applicable(f"block shape {current} is not handled")
        out: list[Candidate] = []
        reasons: list[str] = []
        for shape in options:
            if shape == current:
                continue
            held: list[str] = []
            edits = retune_block(unit, shape, held=held)
            if isinstance(edits, str):
                reasons.append(edits)
                continue
            label = "x".join(map(str, shape))
            edits += stale_comment_notes(unit, f"threads per block {'x'.join(map(str, current))} → {label}",
                                         block_words(current), edits)
            grid_words = ("the grid is recomputed from the same block size" if not held else
                          f"the grid ({', '.join(dict.fromkeys(held))}) is kept: its grid-stride loops cover every "
                          "element with any grid and block") + _rounded_words(unit, current, shape)
            out.append(_with_numerics(unit, current, self.candidate(
                model,
                f"launch {kernel.name} with {label} threads per block (was {'x'.join(map(str, current))}); "
                + grid_words,
                {"block": list(shape), "previous_block": list(current)},
                edits,
            )))
        if not out:
            return self.not_applicable(reasons[0] if reasons else "no other block size to try")
        return out


@register
class CudaLaunchBounds(CudaTransform):
    """Add ``__launch_bounds__(N)`` matching the launch's constant block size."""

    id = "cuda.launch_bounds"

    kind = "hint"
    reads_launch = True
    languages = CUDA_LANGS
    summary = "add __launch_bounds__ matching the launch's block size"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate: ``__launch_bounds__(N)`` with N the largest constant block size of the launches.

        Idea source: CUDA C++ Programming Guide, "Launch Bounds" (lets ptxas budget registers for N).
        """
        if kernel.attributes.get("launch_bounds") or unit.launch_bounds_node() is not None:
            return self.not_applicable(f"{kernel.name} already has __launch_bounds__")
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; the block size is unknown")
        sizes = []
        for launch in unit.launches:
            n = unit.block_threads(launch)
            if n is None:
                blk = unit.t(launch.block) if launch.block is not None else "none"
                return self.not_applicable(f"the block size ({blk}) on line {launch.site.line} is not a constant"
                                           + unit.block_refusal(launch))
            sizes.append(n)
        n = max(sizes)
        if n > 1024:
            return self.not_applicable(f"block size {n} exceeds 1024 threads")
        pos = unit.declarator.start_byte
        edit = unit.insert(pos, f"__launch_bounds__({n}) ")
        note = "" if len(set(sizes)) == 1 else f" (largest of the launches' sizes {sorted(set(sizes))})"
        return [
            self.candidate(
                model,
                f"declare __launch_bounds__({n}) on {kernel.name} to match its {n}-thread blocks{note}",
                {"max_threads": n},
                [edit],
            )
        ]


def _grid_local_edit(unit: CudaUnit, launch: SiteLaunch, value: str) -> TextEdit | None:
    """The edit giving ``value`` to the plain local a launch's grid names (``int blocksPerGrid = 96;`` read by this
    launch only), so no local is left unread; ``None`` for any other grid (a ``dim3``, an expression, a local read
    elsewhere), which the launch argument takes."""
    g = _ts.unwrap_parens(launch.grid) if launch.grid is not None else None
    if not _ts.is_identifier(g) or launch.host is None:
        return None
    name = unit.t(g)
    inits = unit.local_inits(launch.host, name)
    if len(inits) != 1 or unit.assigned_in(launch.host, name) or len(references(launch.host, unit.src, name)) != 2:
        return None
    init = inits[0]
    decl = init.parent.parent if init.parent is not None else None
    if not _ts.is_declaration(decl) or _ts.is_brace_or_call_list(init) or \
            "dim3" in unit.t(_ts.declaration_type(decl)):
        return None
    return unit.replace(init, value)


#: htam's grid cap, shared with the grid-stride step: ``htam_sm_grid(blocks, per_sm)`` is ``blocks`` capped at
#: ``per_sm`` blocks per SM of the current device.
SM_GRID_HELPER = "htam_sm_grid"
SM_GRID_TEXT = """
// htam: cap a 1-D grid at per_sm blocks per SM (grid-stride kernels cover any n with any grid)
static inline unsigned int htam_sm_grid(long long blocks, int per_sm)
{
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const long long cap = (long long)(sms > 0 ? sms : 1) * per_sm;
    return (unsigned int)(blocks < cap ? blocks : cap);
}
"""
#: The y of a 2-D grid capped with :data:`SM_GRID_HELPER` along x: ``htam_sm_rows(cols, rows, per_sm)`` is as many
#: rows of blocks (at most ``rows``, at least 1) as the cap leaves once x has ``htam_sm_grid(cols, per_sm)``.
ROWS_HELPER = "htam_sm_rows"
_ROWS_HELPER_TEXT = """
// htam: the y blocks of a 2-D grid of at most per_sm blocks per SM whose x is htam_sm_grid(cols, per_sm)
static inline unsigned int htam_sm_rows(long long cols, long long rows, int per_sm)
{
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const long long cap = (long long)(sms > 0 ? sms : 1) * per_sm;
    const long long x = cols < cap ? cols : cap;
    const long long y = cap / (x > 0 ? x : 1);
    return (unsigned int)(rows < y ? rows : y);
}
"""
GRID_HELPER = "htam_sm_blocks"
_GRID_HELPER_TEXT = """
// htam: a grid of per_sm blocks per SM of the current device (grid-stride kernels cover any n with any grid)
static inline unsigned int htam_sm_blocks(int per_sm)
{
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    return (unsigned int)((sms > 0 ? sms : 1) * per_sm);
}
"""
#: Blocks per SM the grid is sized to: 8 and 32, as the grid-stride step caps its grid.
GRID_PER_SM = (8, 32)


@register
class CudaGridSize(CudaTransform):
    """Size the grid of a grid-stride kernel to a multiple of the device's SM count, the block held."""

    id = "cuda.grid_size"

    kind = "launch"
    languages = CUDA_LANGS
    summary = "size a grid-stride kernel's grid to a multiple of the SM count"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """Candidates launching ``8`` and ``32`` blocks per SM (``htam_sm_blocks(8)``, read on the device at run
        time) for a kernel whose grid-stride loops cover every element with any grid
        (:meth:`~htam_core.source.analysis.KernelFacts.covers_any_launch` along x, nothing read along y or z).

        Idea source: NVIDIA developer blog, "CUDA Pro Tip: Write Flexible Kernels with Grid-Stride Loops" (a grid
        of a multiple of the SM count); CUDA C++ Best Practices Guide, "Occupancy".
        """
        f = unit.facts
        if not unit.launches:
            return self.not_applicable(f"{kernel.name} has no launch site in this file; its grid is set where it is "
                                       "launched")
        if not f.covers_any_launch("x"):
            if f.grid_stride_loops and (why := per_block_output_hazard(unit)):
                return self.not_applicable(why)  # the loops cover any grid; the per-block outputs do not
            return self.not_applicable(f"{kernel.name} has no grid-stride loop that alone decides what each thread "
                                       "covers along x, so its grid cannot change by itself")
        other = sorted(b for b in f.builtins_read if b.endswith((".y", ".z")))
        z = [b for b in other if b.endswith(".z")]
        if z:
            return self.not_applicable(f"{kernel.name} reads {z[0]}: a grid along z is not resized")
        if other and not f.covers_any_launch("y"):
            return self.not_applicable(f"{kernel.name} reads {other[0]} outside a grid-stride loop along y: only a "
                                       "grid whose every dimension is grid-strided is resized")
        if other:
            return self._two_d(unit, model, kernel)
        helper = [] if GRID_HELPER.encode() in unit.src else [unit.insert(include_insert_point(unit), _GRID_HELPER_TEXT)]
        out: list[Candidate] = []
        for per_sm in GRID_PER_SM:
            call = f"{GRID_HELPER}({per_sm})"
            if all(unit.t(la.grid).replace(" ", "") == call for la in unit.launches):
                continue
            edits = [_grid_local_edit(unit, la, call) or wrap_grid(unit, la, call) for la in unit.launches]
            bad = next((e for e in edits if isinstance(e, str)), None)
            if bad:
                return self.not_applicable(bad)
            e0 = edits[0]
            was = unit.src[e0.start_byte - unit.base:e0.end_byte - unit.base].decode(errors="replace")  # type: ignore[union-attr]
            out.append(dataclasses.replace(self.candidate(
                model,
                f"launch {kernel.name} with {per_sm} blocks per SM (read on the device at run time; the grid was "
                f"`{' '.join(was.split())}`{_input_note(was)}); its grid-stride loops cover every element with any grid",
                {"blocks_per_sm": per_sm}, helper + edits), helpers={GRID_HELPER: _GRID_HELPER_TEXT}))
        if not out:
            return self.not_applicable(f"{kernel.name} is already launched with {GRID_HELPER}(...)")
        return out

    def _two_d(self, unit: CudaUnit, model: SourceModel, kernel: Kernel) -> list[Candidate] | NotApplicable:
        """Candidates for a 2-D grid-stride kernel (x and y loops decide all it covers): the grid is capped at
        ``8`` and ``32`` blocks per SM, x first (``htam_sm_grid(gx, 8)``), y with the blocks left
        (``htam_sm_rows(gx, gy, 8)``), never more blocks along a dimension than the launch had: the data's extent
        along each is known only to the launch's grid, and a block past it would find no work.

        Idea source: as :meth:`propose_unit`; x first since the loops' x is the contiguous dimension.
        """
        helpers = {SM_GRID_HELPER: SM_GRID_TEXT, ROWS_HELPER: _ROWS_HELPER_TEXT}
        inserts = [unit.insert(include_insert_point(unit), text) for name, text in helpers.items()
                   if name.encode() not in unit.src]
        out: list[Candidate] = []
        for per_sm in GRID_PER_SM:
            edits: list[TextEdit] = []
            for la in unit.launches:
                xy = grid_xy(unit, la)
                if isinstance(xy, str):
                    return self.not_applicable(xy)
                if f"{ROWS_HELPER}(" in unit.t(la.grid):
                    return self.not_applicable(f"{kernel.name} is already launched with {ROWS_HELPER}(...)")
                gx, gy = xy
                edits.append(unit.replace(la.grid, f"dim3({SM_GRID_HELPER}({gx}, {per_sm}), "
                                                   f"{ROWS_HELPER}({gx}, {gy}, {per_sm}))"))
            out.append(dataclasses.replace(self.candidate(
                model,
                f"launch {kernel.name} with at most {per_sm} blocks per SM (read on the device at run time), x first, "
                f"never more blocks along x or y than the grid {unit.t(unit.launches[0].grid)}; its grid-stride loops "
                "along x and y cover every element with any grid",
                {"blocks_per_sm": per_sm}, inserts + edits), helpers=helpers))
        return out
