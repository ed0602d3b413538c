"""CUDA memory-access transforms: read-only loads through ``__ldg`` (``cuda.ldg``) and ``float4``
vectorization of elementwise kernels (``cuda.vectorize_float4``). The float4 body is a grid-stride loop with a
scalar tail and a run-time 16-byte alignment check, so it is correct for any grid: with a launch site the grid
shrinks 4x; without one (launched from another file) it is offered as it is, launch-independent. Where the index is
used beyond ``P[i]`` (a row ``i / cols``, a table read ``scale[r]``), each lane evaluates those uses with its own
element's index; the cases without a per-lane form are refused
(:mod:`htam_core.source.analysis.elementwise_uses`). A 2-D kernel whose column is its contiguous index (``A[r * N + c]``
under ``if (r < M && c < N)``) takes the row form instead (:mod:`htam_core.transforms.cuda_vector_rows`): 16 / sizeof(T)
columns per thread, the grid's x divided by that.

Idea sources: CUDA C++ Programming Guide, "Read-Only Data Cache Load Function"; NVIDIA developer
blog, "CUDA Pro Tip: Increase Performance with Vectorized Memory Access" (Luitjens, 2013).
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import SIZEOF
from htam_core.source.analysis.elementwise_uses import ElementwiseUses, elementwise_uses
from htam_core.source.analysis.facts import PointerFacts
from htam_core.source.analysis.forms import (
    Elementwise,
    elementwise,
    is_global_index,
    is_lvalue,
    predicate_reason,
)
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.pointer_uses import address_test, const_view_read, in_load_builtin
from htam_core.source.analysis.rows2d import contiguous_rows
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import (
    CudaTransform,
    CudaUnit,
    block_extent_hazard,
    references,
    statement_list,
    struct_field_note,
    wrap_grid,
)
from htam_core.transforms._grid_loop import WIDE, grid_step, header, index_type
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.cuda_qualifiers import not_aliased, pointer_params
from htam_core.transforms.cuda_vector_loops import align_text, vectorize_loops, width_text
from htam_core.transforms.cuda_vector_rows import vectorize_rows
from htam_core.transforms.registry import propose, register
from htam_core.types.profile import Profile

#: Element types ``__ldg`` has overloads for (CUDA 12/13 ``sm_32_intrinsics.h``).
LDG_TYPES = {
    "char", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int", "unsigned",
    "long", "unsigned long", "long long", "unsigned long long", "float", "double", "float2", "float4",
    "double2", "int2", "int4", "uint2", "uint4", "char2", "char4", "short2", "short4", "uchar2", "uchar4",
    "ushort2", "ushort4", "__half", "__half2", "half", "half2", "__nv_bfloat16", "__nv_bfloat162",
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
}


def element_type(unit: CudaUnit, param: Node) -> str:
    """The pointee type of a pointer parameter, qualifiers dropped (``"float"``)."""
    t = param.child_by_field_name("type")
    return unit.t(t).strip() if t is not None else ""


@register
class CudaLdg(CudaTransform):
    """Loads of read-only inputs that are not ``const __restrict__`` routed through ``__ldg``. Such a pointer may
    alias an output as far as nvcc can tell, so its loads take the coherent path; ``__ldg(&p[i])`` asserts what the
    kernel's own code shows (it never writes through ``p``) and loads through the read-only data cache. A read-only
    input that is ``const __restrict__`` already takes that path (nvcc emits ``ld.global.nc`` for its loads, also
    through a local pointer derived from it): refused, wrapping it would change nothing. An output or an escaping
    pointer cannot go through the read-only path. Risk (the knowledge base's): wrong results if another pointer
    writes the same data during the kernel; ``cuda.restrict_const`` states the same promise in the signature.

    Idea source: CUDA C++ Programming Guide, "Read-Only Data Cache Load Function" (the compiler uses the read-only
    path by itself only for data it can prove read-only for the kernel's lifetime: ``const`` with ``__restrict__``).
    """

    id = "cuda.ldg"

    kind = "hint"
    languages = CUDA_LANGS
    summary = "read-only loads through __ldg for inputs that are not const __restrict__"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate wrapping every load of the eligible inputs (``p[i]`` as ``__ldg(&p[i])``, a float4 view's
        element as ``__ldg(&reinterpret_cast<const float4 *>(p)[k])``), or the refusal naming, per pointer
        parameter, why its loads are not routed through ``__ldg``."""
        eligible, reasons, outputs = [], [], []
        for name, p, _decl, has_const, has_restrict in pointer_params(unit):
            facts = unit.facts.pointer(name)
            if facts is not None and (facts.mode in ("write", "readwrite") or facts.writes):
                outputs.append(name)  # an output is never a candidate: it cannot be const nor read through __ldg
            elif facts is not None and facts.volatile:
                reasons.append(f"{name} points to volatile data: each read must reach memory (another thread, "
                               "kernel or the host may change it during the kernel), which the read-only cache "
                               "does not, and __ldg has no overload for a volatile pointer")
            elif facts is not None and facts.mode == "read" and not (has_const and has_restrict) \
                    and value_type(unit, name, p) in LDG_TYPES:  # type: ignore[arg-type]
                eligible.append(name)
            elif facts is None or facts.mode != "unused":
                reasons.append(_ldg_reason(unit, name, p, facts, has_const and has_restrict))  # type: ignore[arg-type]
        eligible, aliased = not_aliased(model, kernel, eligible, set(outputs))
        reasons += aliased
        edits, used, viewed = self._wrap_loads(unit, eligible)
        reasons += [f"the read-only input {n} is not const __restrict__ (cuda.restrict_const marks it so, which "
                    "covers its loads through a derived pointer or a view of a type __ldg has no overload for: "
                    "__ldg wraps indexed loads and const views of its own types such as float4)"
                    for n in viewed]
        reasons += [f"the loads of {n} already go through __ldg" for n in eligible
                    if n not in used and n not in viewed and (pf := unit.facts.pointer(n)) is not None and pf.reads]
        if not edits:
            why = "; ".join(reasons) if reasons else (
                f"every pointer parameter is written ({', '.join(outputs)}); none is a read-only input"
                if outputs and not eligible else struct_field_note(unit) or "no indexed load of a read-only input")
            return self.not_applicable(f"no load to route through __ldg: {why}")
        return [self.candidate(
            model, f"load {', '.join(used)} through the read-only data cache with __ldg in {kernel.name} (not "
            "const __restrict__, so nvcc does not by itself; correct while no other pointer writes that data during "
            "the kernel)", {"params": used}, edits)]

    @staticmethod
    def _wrap_loads(unit: CudaUnit, names: list[str]) -> tuple[list[TextEdit], list[str], list[str]]:
        """``__ldg(&…)`` around every read of the pointers ``names`` whose every use is such a read: an indexed
        read ``p[i]``, or an element read through a const view of a type ``__ldg`` has an overload for
        (``reinterpret_cast<const float4 *>(p + off)[k]``, the form the float4 steps write); a read already an
        ``__ldg`` argument and an alignment test of the address (``(reinterpret_cast<unsigned long long>(p) & 15ull)
        == 0ull``: no load) are left as they are. The edits, the pointers that got one, and the pointers left out
        because some load goes through a derived pointer or another view (wrapping only part of its loads would be
        a half step: ``cuda.restrict_const`` covers them all)."""
        edits: list[TextEdit] = []
        used: list[str] = []
        viewed: list[str] = []
        for name in names:
            mine: list[TextEdit] = []
            for ref in references(unit.body, unit.src, name):
                if address_test(ref, unit.t):
                    continue
                sub = _wrappable_load(unit, ref)
                if sub is None:
                    viewed.append(name)
                    break
                if not in_load_builtin(sub, unit.t):
                    mine += [unit.insert(sub.start_byte, "__ldg(&"), unit.insert(sub.end_byte, ")")]
            else:
                if mine:
                    edits += mine
                    used.append(name)
        return edits, used, viewed


def _wrappable_load(unit: CudaUnit, ref: Node) -> Node | None:
    """The element read ``__ldg`` can wrap that the pointer name ``ref`` is the base of: ``p[i]`` read only, or a
    const view's element ``reinterpret_cast<const float4 *>(p + off)[k]`` of a type in :data:`LDG_TYPES`
    (:func:`const_view_read`); ``None`` for any other use."""
    sub = ref.parent
    if sub is not None and syn.is_subscript(sub) and sub.child_by_field_name("argument") == ref:
        return None if is_lvalue(sub) and not in_load_builtin(sub, unit.t) else sub
    view = const_view_read(ref, unit.t)
    return view[0] if view is not None and view[1] in LDG_TYPES else None


def _ldg_reason(unit: CudaUnit, name: str, p: Node, facts: PointerFacts | None, const_restrict: bool) -> str:
    """Why the loads of pointer parameter ``name`` (not written by the kernel) are not wrapped in ``__ldg``."""
    if facts is None or facts.mode != "read":
        return (f"{name} is not provably read-only: it escapes (passed to a function, cast to a mutable pointer "
                "or stored), so not every use is a visible load")
    if value_type(unit, name, p) not in LDG_TYPES:
        return f"{name} points to {_type_words(unit, name, p) or 'an unknown type'}, which __ldg has no overload for"
    if not const_restrict:
        return f"the read-only input {name} has no indexed load to wrap"
    return f"the loads of {name} already take the read-only path: its pointer is const __restrict__"


def value_type(unit: CudaUnit, name: str, p: Node) -> str:
    """The pointee type of pointer parameter ``name`` with type aliases resolved (the analysis layer's
    ``PointerFacts.value_type``: ``floatX`` -> ``float`` under ``typedef float floatX;``), else as written."""
    pf = unit.facts.pointer(name)
    return (pf.value_type if pf is not None and pf.value_type else None) or element_type(unit, p)


def _type_words(unit: CudaUnit, name: str, p: Node) -> str:
    """``floatX`` or ``floatX (__nv_bfloat16)``: the written pointee type, with what it resolves to if it differs."""
    written, resolved = element_type(unit, p), value_type(unit, name, p)
    return written if written == resolved else f"{written} ({resolved})"


def tile_first(unit: CudaUnit, model: SourceModel, kernel: Kernel, lines: list[int]) -> str | None:
    """Why the loop form of float4, which would widen the loops on ``lines``, defers to the shared-memory tile, or
    ``None``.

    A matmul-like loop (:meth:`~htam_core.source.analysis.KernelFacts.matmul_loops`: its two operands indexed by
    different thread/block dimensions or strides, so the threads of a block re-read each other's rows) in a kernel
    without shared memory is the tile's loop: the tile cuts that traffic by the tile size, 16-byte loads only cut
    instructions, and the tile step reads the scalar loop, not the float4 form. Where the tile is made on the kernel
    (``cuda.smem_tiling_matmul`` gives a validated candidate), the float4 loop would only make it unreachable; the
    tiled kernel's own loads can take vectors after it. Where it is not made, float4 is made as before.

    Idea source: Kirk and Hwu, "Programming Massively Parallel Processors", ch. 5 (tiling for data reuse before
    memory-access tuning)."""
    dots = [lp for lp in unit.facts.matmul_loops() if lp.line in lines]
    if not dots or kernel.features.shared_memory:
        return None
    tiled = propose("cuda.smem_tiling_matmul", model, kernel)
    if isinstance(tiled, NotApplicable) or not tiled:
        return None
    return (f"the loop on line {dots[0].line} re-reads operands the block's threads share (a matmul-like loop): the "
            "shared-memory tile is made on it and reads the scalar loop, so it comes first (its tiles' loads can "
            "take vectors after it)")


@register
class CudaVectorizeFloat4(CudaTransform):
    """``float4`` main loop with a scalar tail and a 16-byte alignment check for float elementwise kernels; for
    other element types (``__half``, ``__nv_bfloat16``, ``double``, integers, mixed) the same loop over
    ``16 / sizeof(widest)``-element vectors through one ``alignas`` struct per pointer (:func:`_generic_body`)."""

    id = "cuda.vectorize_float4"
    languages = CUDA_LANGS
    summary = "float4 vectorized elementwise loop with scalar tail and alignment fallback"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate: the elementwise form (every launch's 1-D grid is divided by 4, rounded up; a kernel with
        no launch site in the file gets the launch-independent form, the same grid-stride body correct for any grid,
        launch unchanged), else the loop form (strided and row loops, launch unchanged)."""
        res = self._elementwise(unit, model, kernel)
        if not isinstance(res, NotApplicable):  # the elementwise and row forms give a thread several elements
            hazard = block_extent_hazard(unit)
            return self.not_applicable(hazard) if hazard else res
        rows = self._rows(unit, model, kernel, res.reason)
        if not isinstance(rows, NotApplicable) and (hazard := block_extent_hazard(unit)):
            rows = self.not_applicable(hazard)
        if not isinstance(rows, NotApplicable):
            return rows
        return self._loops(unit, model, kernel, rows.reason)

    def _rows(self, unit: CudaUnit, model: SourceModel, kernel: Kernel, why_not_elementwise: str
              ) -> list[Candidate] | NotApplicable:
        """The row form (:mod:`htam_core.transforms.cuda_vector_rows`): a 2-D kernel whose column is its contiguous
        index takes 16 / sizeof(T) columns per thread; the refusal adds why to ``why_not_elementwise`` when the kernel
        has a column index (:func:`~htam_core.source.analysis.rows2d.contiguous_rows`)."""
        rows = contiguous_rows(unit)
        if rows is None:
            return self.not_applicable(why_not_elementwise)
        made = rows if isinstance(rows, str) else vectorize_rows(unit, rows)
        if isinstance(made, str):
            return self.not_applicable(f"{why_not_elementwise}; as a 2-D kernel along its column: {made}")
        edits, plan = made
        assert not isinstance(rows, str)
        vec = "float4" if plan.float4 else f"16-byte ({plan.width}-element)"
        cand = self.candidate(
            model,
            f"vectorize {kernel.name} along its contiguous index {rows.shape.name}: {plan.width} consecutive "
            f"columns per thread with {vec} loads/stores of {', '.join(dict.fromkeys(v.pointer for v in rows.vectors))} "
            f"(the scalar code at a row's ragged end or a misaligned row); the grid's x shrinks {plan.width}x",
            {"vector_width": plan.width, "pointers": list(dict.fromkeys(v.pointer for v in rows.vectors)),
             "form": "rows", "column": rows.shape.name},
            edits,
        )
        return [cand]

    def _elementwise(self, unit: CudaUnit, model: SourceModel, kernel: Kernel) -> list[Candidate] | NotApplicable:
        """The ``if (i < n)`` elementwise form."""
        ew = elementwise(unit, invariant_terms=True, per_element_terms=True)
        if isinstance(ew, str):
            return self.not_applicable(f"not an elementwise kernel: {ew}")
        why = predicate_reason(unit, ew, "the vector form (its lanes load and store together)")
        if why:
            return self.not_applicable(why)
        ptrs = pointer_params(unit)
        used = [(n, p) for n, p, *_ in ptrs if references(unit.body, unit.src, n)]
        if not used:
            return self.not_applicable(struct_field_note(unit) or f"{kernel.name} uses no pointer parameter")
        uses = elementwise_uses(unit, ew, [n for n, _ in used])
        if isinstance(uses, str):
            return self.not_applicable(uses)
        if not uses.writes:
            return self.not_applicable(f"{kernel.name} stores nothing through its pointers")
        why = _store_only_reason(unit, uses)
        if why:
            return self.not_applicable(why)
        vec = [(n, q) for n, q in used if n in uses.vectorized]
        width = _vector_width(unit, vec)
        if isinstance(width, str):
            return self.not_applicable(width)
        names = [n for n, _ in vec]
        # a type template parameter (`const scalar_t *`) stays generic whatever this unit launches: another unit may
        # instantiate it with double, so its lanes are `16 / sizeof(scalar_t)`, never float4 nor a fixed count
        templated = any(pf.templated for n, _ in vec if (pf := unit.facts.pointer(n)) is not None)
        f4 = width == 4 and not templated and all(value_type(unit, n, q) == "float" for n, q in vec)  # type: ignore[arg-type]
        if f4:
            body_text = self._body(unit, ew, uses)
        else:
            types = {n: element_type(unit, q) for n, q in vec}  # type: ignore[arg-type]
            body_text = _generic_body(unit, ew, uses, types, width, templated)
        per_lane = list(dict.fromkeys(" ".join(unit.t(u).split()) for u in uses.index_uses))
        return self._elementwise_candidates(unit, model, kernel, ew, names, body_text, width, f4, per_lane)

    def _elementwise_candidates(self, unit: CudaUnit, model: SourceModel, kernel: Kernel, ew: Elementwise,
                                names: list[str], body_text: str, width: int, f4: bool, per_lane: list[str]
                                ) -> list[Candidate] | NotApplicable:
        """The elementwise form's candidate: ``body_text`` in place of the guarded code, and every launch's 1-D
        grid divided by ``width`` (rounded up), or the launch left alone (launch-independent) when it cannot be
        edited; ``f4``: the body is the float4 form (all-float elements); ``per_lane``: the index's other uses
        (``idx / cols``), each evaluated by every lane with its own element's index."""
        vec, aligned = ("float4", "16-byte aligned") if f4 else (f"16-byte ({width}-element)", "aligned to its vector")
        lanes = {"per_lane": per_lane} if per_lane else {}
        note = f"; each lane computes {', '.join(f'`{u}`' for u in per_lane)} with its own {ew.name}" if per_lane else ""
        stmts = statement_list(unit.body)
        first = stmts.index(ew.decl)
        last_node = ew.guard if ew.form == "if" else ew.stmts[-1]
        between = [s for s in stmts[first + 1 :] if s.start_byte < ew.guard.start_byte]
        indent = syn.indent_of(unit.src, ew.decl.start_byte) or "    "
        kept = "".join(f"{unit.t(s)}\n{indent}" for s in between)
        edits = [unit.edit(ew.decl.start_byte, last_node.end_byte, kept + body_text.replace("\n", "\n" + indent))]
        if not unit.launches_editable:
            # launched from another file or through a pointer shared with other kernels: the body is a grid-stride loop, so it is correct as it stands for any grid
            return [self.candidate(
                model,
                f"vectorize {kernel.name} with {vec} loads/stores, launch-independent: correct for any grid (a "
                f"grid-stride loop with a scalar tail; falls back to scalar when a pointer is not {aligned}), so the "
                f"grid is unchanged (a grid of 1/{width} the blocks does the same work){note}",
                {"vector_width": width, "pointers": names, "launch": "independent", **lanes},
                edits,
            )]
        for la in unit.launches:
            e = wrap_grid(unit, la, f"(({{}}) + {width - 1}) / {width}")
            if isinstance(e, str):
                return self.not_applicable(e)
            edits.append(e)
        return [
            self.candidate(
                model,
                f"vectorize {kernel.name} with {vec} loads/stores (scalar tail; falls back to scalar when a "
                f"pointer is not {aligned}); the grid shrinks {width}x{note}",
                {"vector_width": width, "pointers": names, **lanes},
                edits,
            )
        ]

    def _loops(self, unit: CudaUnit, model: SourceModel, kernel: Kernel, why_not_elementwise: str
               ) -> list[Candidate] | NotApplicable:
        """The loop form (:mod:`htam_core.transforms.cuda_vector_loops`): strided and row loops get a 16-byte
        vector main loop (``float4`` for float elements, a 16-byte struct of ``16 / sizeof(T)`` elements for
        ``__nv_bfloat16``, ``half``, template ``T`` ...) with an alignment check and a scalar tail; the launch is
        unchanged."""
        if not unit.facts.loops:  # no loop form to try: the elementwise reason is the one reason
            return self.not_applicable(why_not_elementwise)
        res = vectorize_loops(unit)
        if isinstance(res, str):
            return self.not_applicable(f"{why_not_elementwise}; and no float4 loop: {res}")
        edits, lines = res
        if why := tile_first(unit, model, kernel, lines):
            return self.not_applicable(f"{why_not_elementwise}; and {why}")
        cand = self.candidate(
            model,
            f"vectorize the loop(s) on line(s) {', '.join(map(str, lines))} of {kernel.name} with 16-byte vector "
            "loads/stores (float4 for float elements, 16 / sizeof(T) elements otherwise, one vector per group where a "
            "step walks a group of consecutive elements; scalar tail; the scalar loop does everything when a base is "
            "not aligned)",
            {"vector_width": 4, "loops": lines},
            edits,
        )
        # a sum visits a thread's elements in another order: float results may differ in the last bits
        cand.changes_numerics = any(a.op == "sum" for lp in unit.facts.loops if lp.line in lines
                                    for a in lp.accumulators)
        cand.reorders_only = cand.changes_numerics  # the same terms, summed four lanes at a time
        return [cand]

    @staticmethod
    def _body(unit: CudaUnit, ew: Elementwise, uses: ElementwiseUses) -> str:
        """The float4 form's body: one ``float4`` per pointer of ``uses.vectorized``, the guarded code once per
        component (``x``, ``y``, ``z``, ``w``) with the index's other uses evaluated with the lane's own index."""
        lane_text, scalar = _lane_and_scalar(unit, ew, uses.subs)
        writes, cond_writes = sorted(uses.writes), uses.cond_writes
        loaded = sorted(uses.reads | cond_writes)
        ptrs = uses.vectorized
        align = " | ".join(f"reinterpret_cast<unsigned long long>({p})" for p in ptrs)
        lines = [
            *_grid_stride_head(unit, ew),
            "    long long htam_tail = 0;",
            f"    if ((({align}) & 15ull) == 0ull) {{",
            "        const long long htam_n4 = htam_n / 4;",
            f"        {header('htam_v', WIDE, 'htam_gid', 'htam_v < htam_n4', 'htam_stride')} {{",
        ]
        for p in ptrs:
            if p in loaded:
                const = "const " if p not in writes else ""
                lines.append(f"            {const}float4 htam_{p}4 = reinterpret_cast<const float4 *>({p})[htam_v];")
            else:
                lines.append(f"            float4 htam_{p}4;")
        for k, c in enumerate("xyzw"):
            decls = " ".join(
                f"float htam_{p} = htam_{p}4.{c};" if p in loaded else f"float htam_{p};" for p in ptrs
            )
            stores = " ".join(f"htam_{p}4.{c} = htam_{p};" for p in writes)
            lines.append(f"            {{ {decls} {_lane_index(ew, uses, f'htam_v * 4 + {k}')}{lane_text} {stores} }}")
        for p in writes:
            lines.append(f"            reinterpret_cast<float4 *>({p})[htam_v] = htam_{p}4;")
        lines += ["        }", "        htam_tail = htam_n4 * 4;", "    }", *_scalar_tail(ew, scalar)]
        return "\n".join(lines)


def _store_only_reason(unit: CudaUnit, uses: ElementwiseUses) -> str | None:
    """Why the elementwise vector form would widen only stores, or ``None``: no vectorized pointer is read
    (``uses.reads`` empty) while the data comes from loads strided along ``threadIdx.x`` (the analysis layer's
    access facts), such as ``rgba[4 * i + 0..2]`` of an RGBA-to-gray kernel. Those loads stay scalar, each lane's
    ``k`` elements apart, so the form would vectorize a store and leave the traffic that matters as it is.

    Idea source: NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized Memory Access"
    (Luitjens, 2013): the gain is in the loads and stores that move the data, 16 bytes per lane.
    """
    if uses.reads:
        return None
    gathered = set(uses.gathers)
    strided = [a for a in unit.facts.global_accesses()
               if a.pointer in gathered and a.kind == "read" and a.pattern("x") == "strided"]
    if not strided:
        return None
    loads = ", ".join(dict.fromkeys(f"{a.shown}" for a in strided[:3]))
    return (f"the vector form would widen only the stores to {', '.join(sorted(uses.writes))}: the loads {loads} "
            f"stay scalar, consecutive lanes {strided[0].stride('threadIdx.x')} elements apart, so it is not offered")


def _lane_and_scalar(unit: CudaUnit, ew: Elementwise, subs: list[tuple[Node, str]]) -> tuple[str, str]:
    """The elementwise form's guarded code twice: on one line with every ``P[i]`` of ``subs`` replaced by the
    lane's local ``htam_P`` (the vector loop's body), and as written (the scalar tail's body); each braced when the
    kernel's form is an early return."""
    start = ew.consequence.start_byte if ew.form == "if" else ew.stmts[0].start_byte
    end = ew.consequence.end_byte if ew.form == "if" else ew.stmts[-1].end_byte
    scalar = unit.src[start:end].decode()
    lane_text = syn.one_line(unit.src, unit.body, start, end, [(sub, f"htam_{name}") for sub, name in subs])
    if ew.form == "return":
        return "{ " + lane_text + " }", "{\n" + scalar + "\n}"
    return lane_text, scalar


def _scalar_tail(ew: Elementwise, scalar: str) -> list[str]:
    """The last lines of the elementwise form's body: the grid-stride scalar loop from ``htam_tail`` (every element
    when a pointer was not aligned) with the kernel's index declared from it and the guarded code ``scalar``."""
    typ = index_type(ew)
    return [f"    {header('htam_j', WIDE, 'htam_tail + htam_gid', 'htam_j < htam_n', 'htam_stride')} {{",
            f"        const {typ} {ew.name} = ({typ})htam_j;",
            *("        " + ln.strip() if ln.strip() else "" for ln in scalar.splitlines()),
            "    }", "}"]


def _grid_stride_head(unit: CudaUnit, ew: Elementwise) -> list[str]:
    """The first lines of the elementwise form's body: its opening brace, the element count ``htam_n`` (0 when the
    guard's extra condition is false), the grid's stride and the thread's global index."""
    return [
        "{",
        f"    const long long htam_n = {ew.extra} ? (long long)({unit.t(ew.bound)}) : 0ll;" if ew.extra else
        f"    const long long htam_n = (long long)({unit.t(ew.bound)});",
        f"    const long long htam_stride = {grid_step(WIDE)};",
        "    const long long htam_gid = " + ("(long long)blockIdx.x * blockDim.x + threadIdx.x;" if
                                         is_global_index(unit, ew.gid) else f"(long long)({unit.t(ew.gid)});"),
    ]


def _vector_width(unit: CudaUnit, used: list[tuple[str, Node]]) -> int | str:
    """Elements per 16-byte vector of the elementwise form: ``16 / sizeof(widest pointee)`` over the pointers
    ``used`` (4 for float, 8 for ``__half``/``__nv_bfloat16``, 2 for double), or why there is none (a pointee whose
    size the analysis does not know, a template parameter ``T``, whose width the launch would need, or one as wide
    as a vector already)."""
    sizes = {}
    for n, q in used:
        vt = value_type(unit, n, q)
        size = SIZEOF.get(" ".join(w for w in vt.split() if w not in ("const", "volatile")))
        if size is None:
            return f"{n} points to {_type_words(unit, n, q)}, whose size is not known (the grid must shrink by it)"
        sizes[n] = size
    widest = max(sizes.values())
    if widest >= 16:
        return f"{max(sizes, key=sizes.get)} already moves 16 bytes per element"
    return 16 // widest


def _lane_index(ew: Elementwise, uses: ElementwiseUses, element: str) -> str:
    """The lane's own index declared under the kernel's name (``const int idx = (int)(htam_v * 4 + 1); ``), for
    the guarded code's uses of the index other than ``P[idx]`` (``idx / cols``), or ``""`` when it has none.
    ``element``: the lane's element number as C text."""
    if not uses.index_uses:
        return ""
    typ = index_type(ew)
    return f"const {typ} {ew.name} = ({typ})({element}); "


def _generic_body(unit: CudaUnit, ew: Elementwise, uses: ElementwiseUses, types: dict[str, str], width: int,
                  templated: bool = False) -> str:
    """The elementwise form's body for elements other than all-float: a grid-stride loop over vectors of
    ``width`` elements, one ``struct alignas(width * sizeof(E)) { E v[width]; }`` per pointer (one 16-byte load or
    store for the widest type, 8- or 4-byte ones for narrower types), the guarded code once per element in an
    unrolled lane loop, each pointer's alignment checked for its own vector, and the scalar loop for the tail
    (or everything when a pointer is not aligned). ``uses``: the analysis layer's facts (the pointers moved as
    vectors, the ``P[i]`` accesses that become a lane's element; the index's other uses, ``i / cols``, are evaluated
    by each lane with its own index, :func:`_lane_index`). ``types``: each vector pointer's pointee as written.
    ``templated``: a pointee is a type template parameter, so the lanes are ``16 / sizeof(widest)`` as written
    (another unit may instantiate ``double``, or a 12-byte struct: one lane then), not this unit's ``width``.

    Idea source: NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized Memory Access"
    (Luitjens, 2013); ``half2``/``__nv_bfloat162`` loads are the 4-byte case of the same idea."""
    lane_text, scalar = _lane_and_scalar(unit, ew, uses.subs)
    writes, loaded, ptrs = sorted(uses.writes), sorted(uses.reads | uses.cond_writes), uses.vectorized
    elem = {q: " ".join(w for w in types[q].split() if w not in ("const", "volatile")) for q in ptrs}
    align = " | ".join(f"(reinterpret_cast<unsigned long long>({q}) & (sizeof(htam_{q}_t) - 1))" for q in ptrs)
    lines = [
        *_grid_stride_head(unit, ew),
        f"    constexpr int htam_V = {width_text(sorted(set(elem.values()))) if templated else width};"
        "  // elements per vector: 16 bytes of the widest element type",
        *(f"    struct alignas({align_text(elem[q]) if templated else f'htam_V * sizeof({elem[q]})'}) htam_{q}_t "
          f"{{ {elem[q]} v[htam_V]; }};" for q in ptrs),
        "    long long htam_tail = 0;",
        f"    if (({align}) == 0ull) {{",
        "        const long long htam_nv = htam_n / htam_V;",
        f"        {header('htam_v', WIDE, 'htam_gid', 'htam_v < htam_nv', 'htam_stride')} {{",
        *(f"            {'const ' if q not in writes else ''}htam_{q}_t htam_{q}_vec = "
          f"reinterpret_cast<const htam_{q}_t *>({q})[htam_v];" if q in loaded else f"            htam_{q}_t htam_{q}_vec;"
          for q in ptrs),
        "            #pragma unroll",
        "            for (int htam_l = 0; htam_l < htam_V; ++htam_l) {",
        "                { " + " ".join(f"{elem[q]} htam_{q} = htam_{q}_vec.v[htam_l];" if q in loaded else
                               f"{elem[q]} htam_{q};" for q in ptrs)
        + f" {_lane_index(ew, uses, 'htam_v * htam_V + htam_l')}{lane_text} " + " ".join(f"htam_{q}_vec.v[htam_l] = htam_{q};" for q in writes) + " }",
        "            }",
        *(f"            reinterpret_cast<htam_{q}_t *>({q})[htam_v] = htam_{q}_vec;" for q in writes),
        "        }",
        "        htam_tail = htam_nv * htam_V;",
        "    }",
        *_scalar_tail(ew, scalar),
    ]
    return "\n".join(lines)
