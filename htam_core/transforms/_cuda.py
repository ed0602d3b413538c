"""CUDA nodes and edits for the transforms, on top of the analysis layer.

A :class:`CudaUnit` is an editing view of the CUDA text that holds the kernel (a ``.cu`` file, or the
content of the Python string that holds a ``load_inline`` source): the parsed unit is the analysis
layer's :class:`~htam_core.source.analysis.unit.CudaSource` (:func:`~htam_core.source.analysis.unit.cuda_source`,
parsed and cached once per kernel version), never re-parsed here. Facts (constants, loops, accesses, launches) come
from :mod:`htam_core.source.analysis` (:attr:`CudaUnit.facts`, :attr:`CudaUnit.env`); this module adds
the node-level views transforms edit through. Nodes are in fragment offsets; :meth:`CudaUnit.edit`
maps them back to file offsets for :class:`TextEdit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from htam_core.source.analysis import Barrier, KernelFacts, LaunchFacts, analyze, forms
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import Const, int_literal
from htam_core.source.analysis.contracts import block_extent_results, block_segment_results, host_owns_outputs
from htam_core.source.analysis.facts import DIMS
from htam_core.source.analysis.forms import barriers_in, uses_block_linear_index
from htam_core.source.analysis.launch import dims_of
from htam_core.source.analysis.launch_bounds import LaunchBounds, launch_bounds, launch_bounds_node
from htam_core.source.analysis.nodes import Node, references
from htam_core.source.analysis.syntax import statement_start, statements, strip_casts
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.analysis.unit import SiteLaunch as Launch
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms import _notes
from htam_core.transforms.base import TextEdit, UnitTransform

__all__ = ["DIMS", "Const", "CudaUnit", "Launch", "dead_local_edits", "delete_statement_edit", "int_literal", "references",
           "statement_start", "strip_casts", "struct_field_note"]


@dataclass
class Dim:
    """One dimension of a launch's block or grid: the expression, and its constant when known."""

    expr: Node
    const: Const | None = None


def _from_source(name: str, doc: str) -> Any:
    """A read-only property of :class:`CudaUnit` that reads attribute ``name`` of its :class:`CudaSource`."""
    return property(lambda self: getattr(self.source, name), doc=f"{doc} (:attr:`CudaSource.{name}`)")


@dataclass(frozen=True)
class CudaUnit:
    """An editing view of one kernel's parsed CUDA text.

    The parsed unit itself (bytes, tree, function, body, constants, launches paired with their sites) is
    the analysis layer's :class:`~htam_core.source.analysis.unit.CudaSource`, built and cached once per
    kernel version; this view adds only the model and kernel handles and the edit helpers, and re-derives
    nothing.

    Attributes:
        model: the file's source model.
        kernel: the kernel (one of ``model.kernels``).
        source: the analysis layer's parsed unit of ``kernel``.
    """

    model: SourceModel
    kernel: Kernel
    source: CudaSource

    # ----------------------------------------------------------------- the parsed unit (analysis layer)
    src = _from_source("src", "The unit's bytes.")
    base = _from_source("base", "File offset of ``src[0]``.")
    root = _from_source("root", "The tree's root node.")
    func = _from_source("func", "The kernel's ``function_definition`` node.")
    body = _from_source("body", "The kernel's body (``compound_statement``).")
    env = _from_source("env", "The unit's constants, without template bindings (a ``ConstEnv``).")
    types = _from_source("types", "The unit's type names: its aliases and the kernel's template parameters (a ``TypeEnv``).")
    launches = _from_source("sites", "The kernel's launch sites with their calls (``tuple[Launch, ...]``).")
    params = _from_source("params", "The kernel's ``parameter_declaration`` nodes, in order.")
    declarator = _from_source("declarator", "The kernel's ``function_declarator`` node.")

    @property
    def facts(self) -> KernelFacts:
        """The kernel's facts (:func:`htam_core.source.analysis.analyze`, cached per kernel version)."""
        return analyze(self.model, self.kernel)

    @property
    def spelled_facts(self) -> KernelFacts:
        """The kernel's facts with the constants named outside the kernel kept as their names (``N``, not its
        value; :func:`htam_core.source.analysis.analyze` with ``spell``): the facts an edit's text is made from,
        while :attr:`facts` decides."""
        return analyze(self.model, self.kernel, spell=True)

    def spelled_facts_folding(self, fold: frozenset[str]) -> KernelFacts:
        """:attr:`spelled_facts` with the names ``fold`` folded to their values all the same (a window's radius)."""
        return analyze(self.model, self.kernel, spell=True, fold=fold)

    @property
    def launches_editable(self) -> bool:
        """True when the kernel has a launch in the unit whose grid and block a step may change: one that names
        the kernel, or a function pointer that runs no other kernel (:attr:`LaunchSite.pointer_kernels`). A
        kernel launched only through a pointer or a table that runs other kernels too is, for a step that would
        change the grid, like one launched elsewhere: the launch-independent form is the one to make."""
        return any(not set(la.site.pointer_kernels) - {self.kernel.name} for la in self.launches)

    def t(self, node: Node | None) -> str:
        """Source text of ``node``."""
        return self.source.t(node)

    def file_byte(self, node: Node) -> int:
        """File offset of ``node``'s start (facts' spans are file offsets)."""
        return self.source.file_byte(node)

    def line(self, node: Node) -> int:
        """1-based file line of ``node``'s start (to name a node in a refusal)."""
        return self.source.line(node)

    def node_at(self, span: tuple[int, int], types: tuple[str, ...] = ()) -> Node | None:
        """The node whose file bytes are exactly ``span`` (:meth:`CudaSource.node_at`): how a transform turns
        a fact (a row loop, an accumulator update, an access) into a node to edit."""
        return self.source.node_at(span, types)

    # ----------------------------------------------------------------- edits
    def replace_span(self, span: tuple[int, int], new_text: str) -> TextEdit:
        """Edit replacing the file bytes ``span`` (a fact's span) with ``new_text``."""
        return TextEdit(span[0], span[1], new_text)

    def edit(self, start: int | Node, end: int | None = None, new_text: str = "") -> TextEdit:
        """A :class:`TextEdit` in file offsets for fragment range ``[start, end)`` (or a node's range)."""
        if isinstance(start, Node):
            s, e = start.start_byte, start.end_byte
        else:
            s, e = start, start if end is None else end
        return TextEdit(s + self.base, e + self.base, new_text)

    def replace(self, node: Node, new_text: str) -> TextEdit:
        """Edit replacing ``node``'s text."""
        return self.edit(node.start_byte, node.end_byte, new_text)

    def insert(self, pos: int, new_text: str) -> TextEdit:
        """Edit inserting ``new_text`` at fragment offset ``pos``."""
        return self.edit(pos, pos, new_text)

    # ----------------------------------------------------------------- constants
    def resolve(self, node: Node, scope: Node | None = None) -> Const | None:
        """The integer constant ``node`` evaluates to in ``scope`` (a function), with how to rewrite it, or
        ``None``; see :meth:`htam_core.source.analysis.constants.ConstEnv.const`."""
        return self.env.const(node, scope)

    def local_inits(self, scope: Node, name: str) -> list[Node]:
        """Initializer expressions of declarations of ``name`` inside ``scope``."""
        return self.env.local_inits(scope, name)

    def assigned_in(self, scope: Node, name: str) -> bool:
        """True when ``name`` is assigned, incremented or address-taken in ``scope``."""
        return self.env.assigned_in(scope, name)

    def const_edit(self, c: Const, value: int) -> TextEdit | None:
        """The edit that changes constant ``c`` to ``value`` (``None`` when it cannot be rewritten)."""
        if c.literal is not None:
            return self.replace(c.literal, str(value))
        if c.preproc_range is not None:
            return self.edit(c.preproc_range[0], c.preproc_range[1], str(value))
        return None

    def barriers_in(self, node: Node) -> list[Barrier]:
        """The barriers (:attr:`KernelFacts.barriers`, every spelling in normal form: ``__syncthreads()``,
        ``cg::sync(cta)``, ``cta.sync()``, ``__syncwarp()``) whose call lies inside ``node``."""
        return barriers_in(self, node)

    # ----------------------------------------------------------------- launch dims
    def dims_of(self, expr: Node, scope: Node | None) -> list[Node]:
        """Component expressions of a launch ``grid``/``block`` argument (:func:`~htam_core.source.analysis.launch.dims_of`)."""
        return dims_of(self.env, expr, scope)

    def block_dims(self, launch: Launch) -> list[Dim] | None:
        """The block's dimensions with their constants, or ``None`` when there is no block argument."""
        if launch.block is None:
            return None
        return [Dim(e, self.resolve(e, launch.host)) for e in self.dims_of(launch.block, launch.host)]

    def block_refusal(self, launch: Launch) -> str:
        """Why the first block dimension of ``launch`` without a constant has none, when the analysis knows more than
        "not a constant" (a host template parameter whose instantiations disagree:
        :meth:`~htam_core.source.analysis.constants.ConstEnv.refusal`), as ``" (reason)"``; ``""`` otherwise."""
        bad = next((d.expr for d in self.block_dims(launch) or [] if d.const is None), None)
        why = self.env.refusal(self.t(bad), launch.host) if bad is not None else ""
        return f" ({why})" if why else ""

    def block_threads(self, launch: Launch) -> int | None:
        """Threads per block when every dimension is a compile-time constant, else ``None``."""
        dims = self.block_dims(launch)
        if not dims or any(d.const is None for d in dims):
            return None
        total = 1
        for d in dims:
            total *= d.const.value  # type: ignore[union-attr]
        return total

    def launch_facts(self, launch: Launch) -> LaunchFacts | None:
        """The analysis layer's facts of ``launch`` (:attr:`KernelFacts.launches`, matched by its line), or
        ``None`` when the facts hold no launch on that line."""
        return next((lf for lf in self.facts.launches if lf.line == launch.site.line), None)

    # ----------------------------------------------------------------- kernel facts
    def uses_block_linear_index(self, dim: str) -> bool:
        """True when the kernel multiplies ``blockIdx.<dim>`` by something (each block owns a slice): the analysis
        layer's :meth:`~htam_core.source.analysis.KernelFacts.multiplies_block_index` (casts, cooperative-groups
        ranks), or a product written in the body that no fact holds
        (:func:`~htam_core.source.analysis.forms.uses_block_linear_index`)."""
        return self.facts.multiplies_block_index(dim) or uses_block_linear_index(self.source, dim)

    def launch_bounds_node(self) -> Node | None:
        """The ``__launch_bounds__(...)`` node of the kernel, if any (:func:`~htam_core.source.analysis.forms.
        launch_bounds_node`)."""
        return launch_bounds_node(self.source)

    def launch_bounds(self) -> LaunchBounds | None:
        """The kernel's ``__launch_bounds__`` as one fact in any spelling (a literal, a named constant, a template
        parameter, a macro such as ATen's ``C10_LAUNCH_BOUNDS_1(256)``;
        :func:`~htam_core.source.analysis.launch_bounds.launch_bounds`), or ``None`` without one."""
        return launch_bounds(self.source)


def load_unit(model: SourceModel, kernel: Kernel) -> CudaUnit | str:
    """The kernel's :class:`CudaUnit`: a view of the analysis layer's cached :class:`CudaSource`
    (:func:`~htam_core.source.analysis.unit.cuda_source`), or why the kernel is not found."""
    src = cuda_source(model, kernel)
    return src if isinstance(src, str) else CudaUnit(model, kernel, src)


def param_names(unit: CudaUnit) -> list[str]:
    """The kernel's parameter names in order (``""`` for an unnamed one;
    :func:`~htam_core.source.analysis.forms.param_names`)."""
    return forms.param_names(unit.source)


def block_thread(unit: CudaUnit) -> tuple[str, str]:
    """``(thread, threads)``: the thread's rank in its block and the block's thread count as CUDA text, for code
    that spreads work over a whole block: ``("threadIdx.x", "blockDim.x")`` when every launch in the file has a
    1-D block and the body reads no ``threadIdx.y``/``threadIdx.z``, else the linear rank over a 3-D block
    (``(threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x``, the order warps are formed in)."""
    one_d = all(not la.block or all(d.value == 1 for d in la.block[1:]) for la in unit.facts.launches) and not any(
        b.startswith(("threadIdx.y", "threadIdx.z")) for b in unit.facts.builtins_read)
    return ("threadIdx.x", "blockDim.x") if one_d else (
        "(threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x", "blockDim.x * blockDim.y * blockDim.z")


def statement_list(body: Node) -> list[Node]:
    """The statements of a compound statement: named children without comments and without the ``#pragma`` line
    that belongs to a loop (:func:`~htam_core.source.analysis.syntax.statements`; the pragma travels with its loop,
    :func:`statement_start`)."""
    return statements(body)


def statement_span(unit: CudaUnit, node: Node) -> tuple[int, int]:
    """The byte range of a statement with its line when it is alone on it (:func:`~htam_core.source.analysis.nodes.
    statement_span`)."""
    return syn.statement_span(unit.src, node)


def include_insert_point(unit: CudaUnit) -> int:
    """Where to put a file-level helper: after the last top-level ``#include``, else at the start
    (:func:`~htam_core.source.analysis.nodes.include_insert_point`)."""
    return syn.include_insert_point(unit.root, unit.src)


def per_block_output_hazard(unit: CudaUnit, launch: Launch | None = None, shrink: bool = False) -> str | None:
    """Why a step that changes the kernel's grid would change its output's shape, or ``None``: the kernel writes an
    output indexed by ``blockIdx`` and no ``threadIdx`` (:meth:`KernelFacts.per_block_outputs`, a partial sum per
    block: ``if (tid == 0) out[blockIdx.x] = sdata[0];``), so the output has one element per block, and a new grid
    gives another number of them than the caller reads. With ``launch``, the hazard is lifted where that launch's
    host owns the contract (:func:`~htam_core.source.analysis.contracts.host_owns_outputs`: the block count is a
    host local and the host allocates and reads the outputs with it), since the launch and the output's size then
    change together (``shrink``: the step only gives fewer blocks, and a host that reads the caller's buffer with
    the count keeps the contract too). Idea source: M. Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA, 2007): each block
    writes its partial result, and the host or a second pass reads one per block."""
    outs = unit.facts.per_block_outputs()
    if not outs:
        return None
    a = outs[0]
    why = (f"{unit.kernel.name} writes one output per block ({a.shown} on line {a.line}): the "
           "number of outputs is the number of blocks, so changing the grid would change the output's length")
    if launch is None:
        return why + "; the launch and the output's size would have to change together"
    owner = host_owns_outputs(unit.env, launch, param_names(unit), sorted({o.pointer for o in outs}), shrink)
    return None if owner is None else f"{why}, and {owner}"


def _dims_key(dims: tuple[Any, ...]) -> tuple[Any, ...]:
    """A launch component list as compared across versions: each component's folded form, else its text."""
    return tuple(d.expr if d.expr is not None else " ".join(d.text.split()) for d in dims)


def launch_change_hazard(unit: CudaUnit, new: KernelFacts) -> str | None:
    """Why an edit that gives the kernel's launches those of ``new`` (the facts of the same kernel in the edited
    text, launches in the same order) breaks its output contract, or ``None``. The checks the block-size step
    makes itself, read from the two versions' launches: a launch whose grid changes (compared folded: ``(n +
    THREADS - 1) / THREADS`` changes with ``THREADS``; a grid of ``cols`` blocks does not) while the kernel writes
    one output per block the host does not own (:func:`per_block_output_hazard` with that launch), and a block
    dimension that changes where each block's results are those of a segment of its own size
    (:func:`~htam_core.source.analysis.contracts.block_segment_results`). A block-size change that keeps the grid
    and what each block writes keeps the contract. Idea source: as :func:`per_block_output_hazard`."""
    old = unit.facts
    for la, site, nl in zip(old.launches, unit.launches, new.launches, strict=False):
        if _dims_key(la.grid) != _dims_key(nl.grid) and (why := per_block_output_hazard(unit, site)):
            return why
        for d, (ob, nb) in enumerate(zip(la.block, nl.block, strict=False)):
            if ob.value and ob.value != nb.value and (why := block_segment_results(old, DIMS[d], ob.value)):
                return why
    return None


def block_extent_hazard(unit: CudaUnit) -> str | None:
    """Why a step that gives each thread several elements (hence each block several times its extent, the grid
    shrunk to match) would change the kernel's results, or ``None``: a thread reads a range or element that its
    block index places (:func:`~htam_core.source.analysis.contracts.block_extent_results` with ``index_only``,
    for the block of each launch along x and y: a loop from the block's first element). Idea source: as
    :func:`launch_change_hazard`."""
    blocks = [la.block[d].value if d < len(la.block) else None for la in unit.facts.launches for d in (0, 1)]
    for d, dim in enumerate(("x", "y")):
        values = {b for b in blocks[d::2]} or {None}
        for v in sorted(values, key=lambda b: b or 0):
            if why := block_extent_results(unit.facts, dim, v, index_only=True):
                return (f"{why}; more elements per thread would give each block another extent the same way, so "
                        "the step is not made")
    return None


def wrap_grid(unit: CudaUnit, launch: Launch, fmt: str) -> TextEdit | str:
    """Edit applying ``fmt`` (``"htam_sm_grid({}, 8)"``) to a launch's 1-D block count, or why not (a kernel with
    per-block outputs, :func:`per_block_output_hazard`; a grid that is not 1-D).

    Handles an inline expression, an inline ``dim3(expr)`` and a ``dim3`` variable (its ``.x``); the
    edit is always at the launch, so other launches sharing a variable are unaffected.
    """
    why = per_block_output_hazard(unit)
    if why:
        return why
    dims = unit.dims_of(launch.grid, launch.host)
    if len(dims) != 1:
        return f"the grid on line {launch.site.line} is not 1-D"
    g = syn.unwrap_parens(launch.grid)
    if syn.is_call(g) and unit.t(g.child_by_field_name("function")) == "dim3":
        return unit.replace(dims[0], fmt.format(unit.t(dims[0])))
    if syn.is_identifier(g) and (_declared_type(unit, launch, unit.t(g)) == "dim3" or (
            dims[0] is not g and not unit.local_inits(launch.host, unit.t(g)))):
        # a dim3 variable (local or at file scope, its components maybe set elsewhere): its x changes, y and z stay
        v = unit.t(g)
        return unit.replace(launch.grid, "dim3(" + fmt.format(f"{v}.x") + f", {v}.y, {v}.z)")
    return unit.replace(launch.grid, fmt.format(unit.t(launch.grid)))


def _declared_type(unit: CudaUnit, launch: Launch, name: str) -> str | None:
    """The declared type of the variable ``name`` a launch's host function sees: its own last declaration of it
    before the launch, else one at file scope (``dim3 grid;`` above ``main``); ``None`` when neither is found."""
    def declares(d: Node) -> bool:
        return any(unit.t(x).split("(")[0].split("=")[0].split("[")[0].strip() == name
                   for x in d.children_by_field_name("declarator"))

    scopes = [[d for d in syn.declarations(launch.host) if d.start_byte < launch.call.start_byte]
              if launch.host is not None else [],
              [d for d in unit.root.named_children if syn.is_declaration(d)]]
    for decls in scopes:
        found = [d for d in decls if declares(d)]
        if found:
            return unit.t(syn.declaration_type(found[-1]))
    return None


def grid_xy(unit: CudaUnit, launch: Launch) -> tuple[str, str] | str:
    """The texts of a launch grid's x and y block counts, to write in an expression at the launch (``grid.x``,
    ``grid.y`` of a ``dim3`` variable, declared in the host function or at file scope; the arguments of an inline ``dim3(a, b)``; a 1-D count and ``"1"``), or why
    not: a kernel with per-block outputs (:func:`per_block_output_hazard`), a grid with a z component, a grid
    variable of another kind than ``dim3`` or a number."""
    why = per_block_output_hazard(unit)
    if why:
        return why
    dims = unit.dims_of(launch.grid, launch.host)
    if len(dims) > 2:
        return f"the grid on line {launch.site.line} has a z component, which a 2-D grid-stride kernel repeats"
    g = syn.unwrap_parens(launch.grid)
    if syn.is_call(g) and unit.t(g.child_by_field_name("function")) == "dim3":
        texts = [unit.t(d) for d in dims]
        return texts[0], texts[1] if len(texts) > 1 else "1"
    if not syn.is_identifier(g):
        return unit.t(launch.grid), "1"
    name = unit.t(g)
    typ = _declared_type(unit, launch, name)
    if typ == "dim3" or (typ is None and dims[0] is not g):
        return f"{name}.x", f"{name}.y"
    if typ is not None and "dim3" not in typ:
        return name, "1"
    return f"the grid `{name}` on line {launch.site.line} is not a local htam can read as a dim3 or a number"


def launch_dims_edit(unit: CudaUnit, launch: Launch, expr: Node, new_dims: list[str]) -> TextEdit:
    """Edit giving a launch's grid or block argument the components ``new_dims``.

    A ``dim3`` variable read only by this launch gets its initializer rewritten (so it stays read); anything else
    is replaced at the launch by ``dim3(...)``.
    """
    g = syn.unwrap_parens(expr)
    comps = unit.dims_of(expr, launch.host)
    inner = ", ".join(new_dims)
    if syn.is_identifier(g) and comps and comps[0] is not g and launch.host is not None:
        lst = comps[0].parent
        uses = references(launch.host, unit.src, unit.t(g))
        if lst is not None and syn.is_brace_or_call_list(lst) and len(uses) == 2:
            open_, close = unit.src[lst.start_byte : lst.start_byte + 1].decode(), unit.src[lst.end_byte - 1 : lst.end_byte].decode()
            return unit.replace(lst, f"{open_}{inner}{close}")
    return unit.replace(expr, f"dim3({inner})")


def smem_edit(unit: CudaUnit, launch: Launch, size: str) -> TextEdit | str:
    """The edit making launch ``launch`` pass ``size`` (an expression, bytes) of dynamic shared memory, or one line
    why not: ``k<<<g, b>>>`` gets ``, size`` after its block; a launch that passes ``0`` (``k<<<g, b, 0, s>>>``, or
    the argument of a launch macro's shared-bytes slot) gets it replaced; a launch that passes another size, and one
    written through a launch macro whose ``#define`` has no shared-bytes slot, are refused. A runtime-API launch
    (:attr:`~htam_core.source.analysis.unit.SiteLaunch.api`) gets it in its shared-bytes argument, added after the
    arguments array when absent; a ``cudaLaunchKernelEx`` whose config sets no ``dynamicSmemBytes`` is refused."""
    line = launch.site.line
    if len(launch.config_args) > 2:
        c = unit.resolve(launch.config_args[2], launch.host)
        if c is None or c.value != 0:
            return f"the launch on line {line} already passes dynamic shared memory"
        return unit.replace(launch.config_args[2], size)
    if launch.block is None:
        return f"the launch on line {line} has no block"
    if launch.site.macro:
        return (f"the launch on line {line} is written through the macro {launch.site.macro}, whose #define passes "
                "no dynamic shared-memory size")
    if launch.api:  # cudaLaunchKernel(k, g, b, args): after the arguments array; a config: no field to fill
        if launch.smem_after is None:
            return f"the launch on line {line} ({launch.api}) sets no dynamicSmemBytes field in its configuration"
        return unit.insert(launch.smem_after.end_byte, f", {size}")
    return unit.insert(launch.block.end_byte, f", {size}")


class CudaTransform(UnitTransform[CudaUnit]):
    """Base of the CUDA transforms: ``propose`` loads the kernel's :class:`CudaUnit` with
    :func:`load_unit`; subclasses implement ``propose_unit(unit, model, kernel, profile)``."""

    def load_unit(self, model: SourceModel, kernel: Kernel) -> CudaUnit | str:
        """The kernel's :class:`CudaUnit` (module-level :func:`load_unit`), or why it is not found."""
        return load_unit(model, kernel)


def stale_comment_notes(unit: CudaUnit, note: str, words: list[str], edits: list[TextEdit]) -> list[TextEdit]:
    """Edits that note ``note`` ("threads per block 32 → 256") in every comment of the kernel's CUDA text that
    states the old setting (one of ``words``), so that no comment describes code the edit changed
    (:mod:`htam_core.transforms._notes`); ``edits``: the transform's edits so far (their text is skipped)."""
    return _notes.comment_notes(unit.src, unit.base, syn.comments(unit.root), note, words, edits)


def dead_local_edits(unit: CudaUnit, names: tuple[str, ...], spans: list[tuple[int, int]]) -> list[TextEdit]:
    """Edits deleting the declarations of the locals ``names`` (a stencil's clamped coordinates, ``int xx =
    min(max(x + dx, 0), W - 1);``, a coarsened kernel's unread locals) that nothing reads once the code at the file
    bytes ``spans`` (``(start, end)`` pairs) is rewritten: every reference to each name outside its declaration
    lies in one of ``spans``. A
    declaration statement is deleted when every name it declares is such a local; otherwise only those
    declarators are (``unsigned t = threadIdx.x, i = ...;`` keeps ``i``)."""
    out = []
    for decl in syn.declarations(unit.body):
        parts = decl.children_by_field_name("declarator")
        inside = [*spans, (decl.start_byte + unit.base, decl.end_byte + unit.base)]
        dead = [d for d in parts if unit.t(syn.declared_identifier(d)) in names and all(
            any(s <= r.start_byte + unit.base and r.end_byte + unit.base <= e for s, e in inside)
            for r in syn.references(unit.body, unit.src, unit.t(syn.declared_identifier(d))))]
        if dead and len(dead) == len(parts):
            out.append(delete_statement_edit(unit, (decl.start_byte + unit.base, decl.end_byte + unit.base)))
        elif dead:  # `unsigned t = threadIdx.x, i = ...;` with t dead: the others stay declared
            alive = ", ".join(unit.t(d) for d in parts if d not in dead)
            out.append(unit.edit(parts[0].start_byte, parts[-1].end_byte, alive))
    return out


def delete_statement_edit(unit: CudaUnit, span: tuple[int, int]) -> TextEdit:
    """An edit deleting the statement at file bytes ``span`` (``(start, end)``, file offsets) of ``unit``'s text,
    with its line when it stands alone on it (a statement sharing its line with other code: its bytes only)."""
    s, e = span[0] - unit.base, span[1] - unit.base
    start = unit.src.rfind(b"\n", 0, s) + 1
    end = unit.src.find(b"\n", e)
    end = len(unit.src) if end < 0 else end
    if unit.src[start:s].strip() or unit.src[e:end].strip():
        return unit.edit(s, e, "")
    return unit.edit(start, min(end + 1, len(unit.src)), "")


def struct_field_note(unit: CudaUnit) -> str:
    """One line naming the buffers the kernel reads through a struct passed by value (``p.x``: the analysis reads
    them as parameters, :mod:`htam_core.source.analysis.struct_params`), for a step that rewrites pointer parameters
    only; ``""`` when there are none."""
    fields = [p.name for p in unit.facts.pointers if "." in p.name]
    return (f"{unit.kernel.name} reaches its buffers through a struct passed by value ({', '.join(fields)}), which "
            "this step does not rewrite") if fields else ""
