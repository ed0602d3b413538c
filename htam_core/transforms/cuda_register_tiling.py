"""2-D register tiling of a naive matmul (``cuda.register_tile_matmul``): each thread computes a TM x TN block of
outputs from BK x BM and BK x BN shared tiles, reading its fragments of the shared tiles with ``float4`` loads.

The kernel is recognized with :func:`htam_core.transforms.cuda_tiling.match_naive_matmul` (the same pattern as
``cuda.smem_tiling_matmul``), the body is rewritten, and every launch of the kernel gets 1-D blocks of
``(BM/TM) * (BN/TN)`` threads and a grid of ``ceil(M/BM) x ceil(N/BN)`` blocks, sized from the launch's own
arguments. Out-of-range tile elements are zero-filled, so each output accumulates exactly the products of the
original loop in the same k order (bitwise the same sums); the statements after the k loop (the epilogue, e.g.
``C = alpha * acc + beta * C``) run unchanged per output under the original bounds check. An accumulator that
starts from a value of its own output (a bias, ``(bias != NULL) ? bias[o] : 0.0f``) starts from it in every
register-tile element, read under the bounds check. Each operand's tile is loaded with consecutive threads along
its contiguous axis, as the match's layouts say: k for ``A[row * K + k]`` and ``B[col * K + k]``, the row for
``A[k * M + row]`` (``C = A^T B``), the column for ``B[k * N + col]``.

Idea source: S. Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance" (2022), kernels 5-6
(2-D blocktiling, vectorized shared-memory access); CUTLASS's thread-level GEMM (register outer products).
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.device_queries import REFERENCE_SM_COUNT
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    Launch,
    launch_dims_edit,
    param_names,
    references,
    stale_comment_notes,
)
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS, block_words, bounds_edit
from htam_core.transforms.cuda_tiling import (
    IndexVar,
    after_flat_remap,
    constant_value,
    launch_sizes,
    match_naive_matmul,
    operand_index,
)
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")


@dataclass(frozen=True)
class RegisterTile:
    """One register-tiling configuration: block tile BM x BN, k step BK, TM x TN outputs per thread."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def threads(self) -> int:
        """Threads per block: one per TM x TN output block of the BM x BN tile."""
        return (self.bm // self.tm) * (self.bn // self.tn)


#: 128x128 tiles with 8x8 outputs per thread for large matrices, 64x64 with 4x4 for smaller ones; both 256 threads.
#: Where the matrix sides are not known these two are offered in this order.
CONFIGS = (RegisterTile(128, 128, 8, 8, 8), RegisterTile(64, 64, 8, 4, 4))
#: 32x32 tiles with 4x4 outputs per thread (64 threads): offered only where the known sides are too small for
#: either of :data:`CONFIGS` to give the device one block per SM (a batch of 64x64 matrices).
SMALL = RegisterTile(32, 32, 8, 4, 4)


@dataclass(frozen=True)
class KnownSides:
    """The problem at one launch as far as the analysis read it as constants: the row bound ``m``, the column
    bound ``n`` and the batch (the grid's z component), each ``None`` where it is not a constant there."""

    m: int | None
    n: int | None
    batch: int | None
    line: int

    def blocks(self, cfg: RegisterTile) -> int | None:
        """Blocks of a grid of ``cfg`` tiles over this problem (the batch counts: ``gridDim.z`` blocks run side by
        side), or ``None`` when a side is not known. An unknown batch counts as 1 (a lower bound)."""
        if self.m is None or self.n is None:
            return None
        return -(-self.m // cfg.bm) * -(-self.n // cfg.bn) * (self.batch or 1)

    def fits(self, cfg: RegisterTile) -> bool:
        """No known side is smaller than ``cfg``'s block tile (a larger tile leaves most of every block idle)."""
        return (self.m is None or cfg.bm <= self.m) and (self.n is None or cfg.bn <= self.n)


def known_sides(unit: CudaUnit, m: dict) -> list[KnownSides]:
    """Per launch of the matched matmul ``m`` whose row or column bound the analysis layer read as a constant
    (:attr:`~htam_core.source.analysis.facts.LaunchFacts.arg_exprs`: ``const int M = 64`` in ``main``, a
    ``#define``, a literal; or the kernel's own compile-time bound, :func:`constant_value`), the
    :class:`KnownSides`; launches whose sides are both unknown are left out."""
    names = param_names(unit)
    bounds = [m["bounds"][v.name] for v in (m["row"], m["col"])]
    idx = [names.index(b) if b in names else None for b in bounds]
    by_line = {lf.line: lf for lf in unit.facts.launches}
    out = []
    for la in unit.launches:
        lf = by_line.get(la.site.line)
        if lf is None:
            continue
        vals = [constant_value(unit, la, b) if i is None else _integer(lf.arg_exprs[i]) if i < len(lf.arg_exprs)
                else None for i, b in zip(idx, bounds, strict=True)]
        batch = lf.grid[2].value if len(lf.grid) > 2 else 1
        if vals != [None, None]:
            out.append(KnownSides(vals[0], vals[1], batch, la.site.line))
    return out


def _integer(expr: object) -> int | None:
    """The value of a sympy expression that is an integer constant, else ``None``."""
    return int(expr) if getattr(expr, "is_Integer", False) else None  # type: ignore[call-overload]


def choose_configs(sides: list[KnownSides], sm_count: int) -> tuple[RegisterTile, ...] | str:
    """The register tiles to offer, best first, from what is known of the problem (:func:`known_sides`).

    Nothing known: :data:`CONFIGS` in their order. Otherwise a tile larger than a known side is never offered;
    the tiles whose grid gives at least ``sm_count`` blocks (one per SM, the batch counted) come first, the
    largest first (the most reuse per loaded element), then the others by their number of blocks, most first;
    :data:`SMALL` joins only when no tile of :data:`CONFIGS` fills the device. With several launches a tile must
    fit every one and is judged by its smallest grid.

    Args:
        sides: the known sides per launch.
        sm_count: SMs of the target device (:data:`~htam_core.source.analysis.device_queries.REFERENCE_SM_COUNT`).

    Returns:
        The tiles, or why none fits (every tile is larger than a known side).

    Idea source: wave quantization and grid filling (NVIDIA, "Matrix Multiplication Background User's Guide",
    "Dimension Quantization Effects"): a grid of fewer blocks than SMs leaves SMs idle.
    """
    if not sides:
        return CONFIGS
    def blocks(cfg: RegisterTile) -> int | None:
        counts = [s.blocks(cfg) for s in sides]
        return None if None in counts else min(counts)  # type: ignore[type-var]
    fit = [c for c in CONFIGS if all(s.fits(c) for s in sides)]
    known = all(blocks(c) is not None for c in fit)
    if all(s.fits(SMALL) for s in sides) and (not fit or known and all(blocks(c) < sm_count for c in fit)):  # type: ignore[operator]
        fit.append(SMALL)
    if not fit:
        s = sides[0]
        return (f"the matrix sides at the launch on line {s.line} ({_sides_text(s)}) are smaller than the smallest "
                f"register tile, {SMALL.bm}x{SMALL.bn}: most of every block would idle")
    if any(blocks(c) is None for c in fit):
        return tuple(fit)
    full = sorted((c for c in fit if (blocks(c) or 0) >= sm_count), key=lambda c: -c.bm * c.bn)
    return (*full, *sorted((c for c in fit if c not in full), key=lambda c: -(blocks(c) or 0)))


def _sides_text(s: KnownSides) -> str:
    """``"M = 64, N = 64, batch 64"`` for the known parts of ``s``."""
    parts = [f"{w} = {v}" for w, v in (("M", s.m), ("N", s.n)) if v is not None]
    return ", ".join([*parts, *([f"batch {s.batch}"] if s.batch and s.batch > 1 else [])])


def _choice_note(sides: list[KnownSides], cfg: RegisterTile) -> str:
    """``"; sized for M = 64, N = 64, batch 64 (line 24): 256 blocks"`` where the sides are known, else ``""``."""
    if not sides:
        return ""
    s = sides[0]
    n = s.blocks(cfg)
    return f"; sized for {_sides_text(s)} (line {s.line})" + (f": {n} blocks" if n is not None else "")


def sm_count_of(profile: Profile | None) -> int:
    """SMs of the device a profile names (``"sm_90 (static)"``), else of the project's device (sm_90)."""
    target = (profile.device.split() or [""])[0].rstrip("af") if profile is not None and profile.device else ""
    return REFERENCE_SM_COUNT.get(target, REFERENCE_SM_COUNT["sm_90"])


def _uses_builtin(unit: CudaUnit, nodes: list[Node]) -> str | None:
    """The first thread/block builtin used in ``nodes`` other than the batch index ``blockIdx.z``/``gridDim.z``
    (1-D blocks and the resized grid keep z), else ``None``."""
    for s in nodes:
        for n in syn.identifiers(s):
            if unit.t(n) in _BUILTINS:
                p = n.parent
                whole = unit.t(p).replace(" ", "") if p is not None and syn.is_field(p) else unit.t(n)
                if whole not in ("blockIdx.z", "gridDim.z"):
                    return unit.t(n)
    return None


def _index_alias(unit: CudaUnit, stmt: Node, index_decls: tuple[Node, Node]) -> bool:
    """``stmt`` declares locals that only the output index declarations ``index_decls`` read and that read no
    memory: ``int bx = blockIdx.x; int ty = threadIdx.y;`` before ``int row = by * BLOCK_SIZE + ty;`` (the
    NVIDIA samples' spelling). The rewrite recomputes the indices, so such a declaration is left unused, whatever
    it reads (its value changes with 1-D blocks, but nothing uses it)."""
    if not syn.is_declaration(stmt):
        return False
    names = [unit.t(d.child_by_field_name("declarator")) for d in syn.init_declarators(stmt)]
    if not names or not all(n.isidentifier() for n in names):
        return False
    span = (unit.file_byte(stmt), stmt.end_byte + unit.base)
    if any(span[0] <= a.span[0] < span[1] for a in unit.facts.accesses):
        return False
    keep = (stmt, *index_decls)
    return all(any(k.start_byte <= n.start_byte < k.end_byte for k in keep)
               for name in names for n in references(unit.body, unit.src, name))


def _param_index(unit: CudaUnit, name: str) -> int | None:
    names = param_names(unit)
    return names.index(name) if name in names else None


def _a_split(m: dict, cfg: RegisterTile) -> str:
    """The line splitting a thread's linear slot ``htam_l`` of the ``bm x bk`` A panel into its row ``htam_m`` and
    k ``htam_kk`` so that consecutive threads read consecutive elements of A in its layout (``m["a_layout"]``,
    :func:`~htam_core.source.analysis.matmul_operands.operand_layout`): consecutive k of an A row for ``A[row * K +
    k]``, consecutive rows for ``A[k * M + row]``."""
    if m["a_layout"] == "A":
        return f"        const int htam_m = htam_l / {cfg.bk}, htam_kk = htam_l % {cfg.bk};"
    return f"        const int htam_kk = htam_l / {cfg.bm}, htam_m = htam_l % {cfg.bm};"


@register
class CudaRegisterTileMatmul(CudaTransform):
    """Naive matmul -> shared tiles + a TM x TN register tile per thread, ``float4`` shared-fragment loads."""

    id = "cuda.register_tile_matmul"
    languages = CUDA_LANGS
    summary = "2-D register tiling (TMxTN outputs per thread) with shared tiles and float4 fragment loads"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate per register tile :func:`choose_configs` picks from the known matrix sides (without them
        :data:`CONFIGS`: 128x128/8x8 and 64x64/4x4, 256 threads each)."""
        m = match_naive_matmul(unit)
        if isinstance(m, str) and unit.facts.flat_index_split() is not None:
            return after_flat_remap(self, model, kernel, profile, f"not the naive matmul pattern: {m}")
        if isinstance(m, str):
            return self.not_applicable(f"not the naive matmul pattern: {m}")
        if m["general"]:  # a distance or a max-plus product: the per-thread tile sums products only
            return self.not_applicable("the k loop body is not `acc += A[...] * B[...]`; the register tile only "
                                       "sums products (the shared-memory tiling runs this body)")
        why = self._check(unit, kernel, m)
        if why:
            return self.not_applicable(why)
        sizes = launch_sizes(unit, m)
        if isinstance(sizes, str):
            return self.not_applicable(sizes)
        types = self._operand_types(unit, m)
        if isinstance(types, str):
            return self.not_applicable(types)
        sides = known_sides(unit, m)
        configs = choose_configs(sides, sm_count_of(profile))
        if isinstance(configs, str):
            return self.not_applicable(configs)
        old_block = unit.block_dims(unit.launches[0]) or []
        old = tuple(d.const.value for d in old_block if d.const is not None)
        out = []
        for cfg in configs:
            edits = [self._rewrite(unit, m, cfg, types), *self._drop_aliases(unit, m)]
            bounds = bounds_edit(unit, unit.block_threads(unit.launches[0]), cfg.threads)
            if isinstance(bounds, TextEdit):
                edits.append(bounds)
            for la, (mh, nh) in zip(unit.launches, sizes, strict=True):
                grid = ["1", "1"]
                grid["xy".index(m["row"].dim)] = f"(({mh}) + {cfg.bm - 1}) / {cfg.bm}"
                grid["xy".index(m["col"].dim)] = f"(({nh}) + {cfg.bn - 1}) / {cfg.bn}"
                z = self._batch(unit, la)
                if z is not None:
                    grid.append(z)
                edits.append(launch_dims_edit(unit, la, la.grid, grid))
                edits.append(launch_dims_edit(unit, la, la.block, [str(cfg.threads)]))  # type: ignore[arg-type]
            if old:
                edits += stale_comment_notes(
                    unit, f"threads per block {'x'.join(map(str, old))} → {cfg.threads} "
                    f"({cfg.tm}x{cfg.tn} outputs each)", block_words(old), edits)
            vec = "float4 loads of the shared fragments" if types[2] else "scalar shared-fragment loads"
            out.append(self.candidate(
                model,
                f"register-tile {kernel.name}: {cfg.bm}x{cfg.bn} output tiles per block of {cfg.threads} threads, "
                f"{cfg.tm}x{cfg.tn} outputs per thread from {cfg.bk}-deep shared tiles, {vec} (same k order, "
                f"bounds checks kept){_choice_note(sides, cfg)}",
                {"bm": cfg.bm, "bn": cfg.bn, "bk": cfg.bk, "tm": cfg.tm, "tn": cfg.tn, "block": [cfg.threads],
                 "float4": types[2], "layout": m["layout"], "a_layout": m["a_layout"], "batched": m["batched"]},
                edits,
            ))
        return out

    def _check(self, unit: CudaUnit, kernel: Kernel, m: dict) -> str | None:
        """Why the matched kernel cannot be rewritten, or ``None``."""
        row, col = m["row"], m["col"]
        if {row.dim, col.dim} != {"x", "y"}:
            return f"the output indices use blockIdx.{row.dim} and blockIdx.{col.dim}, not x and y"
        if not unit.launches:
            return f"{kernel.name} has no launch site in this file; the grid cannot be resized"
        for la in unit.launches:
            dims = unit.block_dims(la) or []
            for v in (row, col):
                d = "xyz".index(v.dim)
                block = dims[d].const.value if d < len(dims) and dims[d].const is not None else None
                if v.stride is not None and v.stride != block:
                    return (f"{v.name} advances {v.stride} per block but the block on line {la.site.line} has "
                            f"{block if block is not None else 'an unknown number of'} threads in {v.dim}")
        bounds = bounds_edit(unit, unit.block_threads(unit.launches[0]), CONFIGS[0].threads)
        if isinstance(bounds, str):
            return bounds
        others = [s for s in m["stmts"] if s.start_byte < m["guard"].start_byte and s not in (row.decl, col.decl)
                  and s not in m["consumed"] and not _index_alias(unit, s, (row.decl, col.decl))] + m["pre"]
        uses = _uses_builtin(unit, [*others, *m["rest"]])
        if uses:
            return f"code outside the index declarations uses {uses}, which changes meaning with 1-D blocks"
        if any(references(s, unit.src, row.name) or references(s, unit.src, col.name) for s in others):
            return f"statements other than the bounds check use {row.name} or {col.name}"
        if m["acc_init"] is None:
            return "the accumulator has no initializer"
        if _uses_builtin(unit, [m["acc_init"]]):
            return "the accumulator's initial value reads a thread index directly, which changes with 1-D blocks"
        return None

    def _drop_aliases(self, unit: CudaUnit, m: dict) -> list[TextEdit]:
        """Edits deleting the index aliases (:func:`_index_alias`) written before the index declarations: the
        rewrite recomputes the indices, so nothing reads them any more."""
        row, col = m["row"], m["col"]
        first = min(row.decl.start_byte, col.decl.start_byte)
        return [unit.edit(syn.line_start(unit.src, s.start_byte), s.end_byte + 1, "") for s in m["stmts"]
                if s.start_byte < first and _index_alias(unit, s, (row.decl, col.decl))
                and unit.src[s.end_byte:s.end_byte + 1] == b"\n"]

    def _batch(self, unit: CudaUnit, launch: Launch) -> str | None:
        """The launch grid's z component as written (the batch count, kept), or ``None`` for a 2-D grid."""
        dims = unit.dims_of(launch.grid, launch.host)
        return unit.t(dims[2]) if len(dims) > 2 else None

    def _operand_types(self, unit: CudaUnit, m: dict) -> tuple[str, str, bool] | str:
        """``(A's element type, B's element type, float4 fragments possible)``."""
        types = []
        for op in (m["A_ptr"], m["B_ptr"]):
            p = unit.facts.pointer(op)
            t = (p.element_type or "").replace("const", "").strip() if p is not None else ""
            if not t:
                return f"{op} is not a pointer parameter of known element type"
            types.append(t)
        return types[0], types[1], types[0] == types[1] == "float"

    def _rewrite(self, unit: CudaUnit, m: dict, cfg: RegisterTile, types: tuple[str, str, bool]) -> TextEdit:
        """The edit replacing the index declarations through the bounds check with the register-tiled body."""
        row, col = m["row"], m["col"]
        ta, tb, vec = types
        M, N, K, k = m["bounds"][row.name], m["bounds"][col.name], m["K"], m["kname"]
        rd, cd = row.dim, col.dim
        a_load = operand_index(unit, m["A_parts"], {row.name: "htam_r0 + htam_m", k: "htam_k0 + htam_kk"})
        b_load = operand_index(unit, m["B_parts"], {k: "htam_k0 + htam_kk", col.name: "htam_c0 + htam_n"})
        acc, acc_init = m["acc"], unit.t(m["acc_init"])
        et = m["etype"]
        first = min(row.decl.start_byte, col.decl.start_byte)
        indent = syn.indent_of(unit.src, first)
        others = [s for s in m["stmts"] if first <= s.start_byte < m["guard"].start_byte
                  and s not in (row.decl, col.decl) and s not in m["consumed"]] + m["pre"]
        def prefix(v: IndexVar) -> str:
            d = next(x for x in v.decl.named_children if syn.is_init_declarator(x))
            return unit.src[v.decl.start_byte : d.start_byte].decode()

        cond = m["cond"]
        per_output = m["init_loads"] or any(references(m["acc_init"], unit.src, v.name) for v in (row, col))
        if per_output:
            # an initial value of each output's own (a bias: bias[o]): computed at that output's row and
            # column, and read only where the original read it (under the bounds check)
            value = f"{cond} ? ({acc_init}) : ({et})0" if m["init_loads"] else acc_init
            init_lines = [
                f"    for (int htam_j = 0; htam_j < {cfg.tn}; ++htam_j) {{",
                f"        {prefix(row)}{row.name} = htam_r0 + htam_tr * {cfg.tm} + htam_i;",
                f"        {prefix(col)}{col.name} = htam_c0 + htam_tc * {cfg.tn} + htam_j;",
                f"        htam_acc[htam_i][htam_j] = {value};",
                "    }",
            ]
        else:
            init_lines = [f"    for (int htam_j = 0; htam_j < {cfg.tn}; ++htam_j) htam_acc[htam_i][htam_j] = {acc_init};"]
        extra = "".join(f" && {c}" for c in m["extra"])

        if vec:
            frag = [
                "#pragma unroll",
                f"        for (int htam_v = 0; htam_v < {cfg.tm}; htam_v += 4) {{",
                "            const float4 htam_q = *reinterpret_cast<const float4 *>("
                f"&htam_As[htam_kk][htam_tr * {cfg.tm} + htam_v]);",
                "            htam_a[htam_v] = htam_q.x; htam_a[htam_v + 1] = htam_q.y;",
                "            htam_a[htam_v + 2] = htam_q.z; htam_a[htam_v + 3] = htam_q.w;",
                "        }",
                "#pragma unroll",
                f"        for (int htam_v = 0; htam_v < {cfg.tn}; htam_v += 4) {{",
                "            const float4 htam_q = *reinterpret_cast<const float4 *>("
                f"&htam_Bs[htam_kk][htam_tc * {cfg.tn} + htam_v]);",
                "            htam_b[htam_v] = htam_q.x; htam_b[htam_v + 1] = htam_q.y;",
                "            htam_b[htam_v + 2] = htam_q.z; htam_b[htam_v + 3] = htam_q.w;",
                "        }",
            ]
        else:
            frag = [
                "#pragma unroll",
                f"        for (int htam_v = 0; htam_v < {cfg.tm}; ++htam_v) "
                f"htam_a[htam_v] = htam_As[htam_kk][htam_tr * {cfg.tm} + htam_v];",
                "#pragma unroll",
                f"        for (int htam_v = 0; htam_v < {cfg.tn}; ++htam_v) "
                f"htam_b[htam_v] = htam_Bs[htam_kk][htam_tc * {cfg.tn} + htam_v];",
            ]
        lines = [
            f"// register tile: {cfg.bm}x{cfg.bn} outputs per block of {cfg.threads} threads, "
            f"{cfg.tm}x{cfg.tn} per thread",
            "const int htam_tid = threadIdx.x;",
            f"const int htam_tr = htam_tid / {cfg.bn // cfg.tn};",
            f"const int htam_tc = htam_tid % {cfg.bn // cfg.tn};",
            f"const int htam_r0 = blockIdx.{rd} * {cfg.bm};",
            f"const int htam_c0 = blockIdx.{cd} * {cfg.bn};",
            *[unit.t(s) for s in others],
            f"__shared__ alignas(16) {ta} htam_As[{cfg.bk}][{cfg.bm}];  // A tile stored k-major",
            f"__shared__ alignas(16) {tb} htam_Bs[{cfg.bk}][{cfg.bn}];",
            f"{et} htam_acc[{cfg.tm}][{cfg.tn}];",
            "#pragma unroll",
            f"for (int htam_i = 0; htam_i < {cfg.tm}; ++htam_i) {{",
            "#pragma unroll",
            *init_lines,
            "}",
            f"for (int htam_k0 = 0; htam_k0 < {K}; htam_k0 += {cfg.bk}) {{",
            f"    for (int htam_l = htam_tid; htam_l < {cfg.bm * cfg.bk}; htam_l += {cfg.threads}) {{",
            _a_split(m, cfg),
            f"        htam_As[htam_kk][htam_m] = (htam_r0 + htam_m < {M} && htam_k0 + htam_kk < {K}{extra}) "
            f"? {m['A']}[{a_load}] : ({ta})0;",
            "    }",
            f"    for (int htam_l = htam_tid; htam_l < {cfg.bk * cfg.bn}; htam_l += {cfg.threads}) {{",
            # NN: consecutive threads read consecutive columns of a B row; NT: consecutive k of a B row
            f"        const int htam_kk = htam_l / {cfg.bn}, htam_n = htam_l % {cfg.bn};" if m["layout"] == "NN" else
            f"        const int htam_n = htam_l / {cfg.bk}, htam_kk = htam_l % {cfg.bk};",
            f"        htam_Bs[htam_kk][htam_n] = (htam_k0 + htam_kk < {K} && htam_c0 + htam_n < {N}{extra}) "
            f"? {m['B']}[{b_load}] : ({tb})0;",
            "    }",
            "    __syncthreads();",
            "#pragma unroll",
            f"    for (int htam_kk = 0; htam_kk < {cfg.bk}; ++htam_kk) {{",
            f"        {ta} htam_a[{cfg.tm}];",
            f"        {tb} htam_b[{cfg.tn}];",
            *frag,
            "#pragma unroll",
            f"        for (int htam_i = 0; htam_i < {cfg.tm}; ++htam_i) {{",
            "#pragma unroll",
            f"            for (int htam_j = 0; htam_j < {cfg.tn}; ++htam_j)",
            "                htam_acc[htam_i][htam_j] += htam_a[htam_i] * htam_b[htam_j];",
            "        }",
            "    }",
            "    __syncthreads();",
            "}",
            "#pragma unroll",
            f"for (int htam_i = 0; htam_i < {cfg.tm}; ++htam_i) {{",
            "#pragma unroll",
            f"    for (int htam_j = 0; htam_j < {cfg.tn}; ++htam_j) {{",
            f"        {prefix(row)}{row.name} = htam_r0 + htam_tr * {cfg.tm} + htam_i;",
            f"        {prefix(col)}{col.name} = htam_c0 + htam_tc * {cfg.tn} + htam_j;",
            f"        if {cond} {{",
            f"            {et} {acc} = htam_acc[htam_i][htam_j];",
            *["            " + unit.t(s) for s in m["rest"]],
            "        }",
            "    }",
            "}",
        ]
        text = "\n".join(ln if ln.startswith("#") else indent + ln for ln in lines)
        return unit.edit(syn.line_start(unit.src, first), m["end"], text)


