"""16-byte vectors along the contiguous index of a 2-D kernel (the row form of ``cuda.vectorize_float4``).

A 2-D kernel with one element per thread whose column ``c`` (the global x index) is its contiguous index, under a
bounds check such as ``if (r < M && c < N)`` (the analysis layer's
:func:`~htam_core.source.analysis.rows2d.contiguous_rows`), gets ``V = 16 / sizeof(widest element)`` consecutive
columns per thread (4 floats, 8 halves)::

    size_t c = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 4;     // the first of the thread's columns
    size_t r = ...;
    if (r < M && c < N) {                                                 // the kernel's own check, on that column
        const size_t htam_c0 = c;
        if ((N) - htam_c0 >= 4 && (every vector address 16-byte aligned)) {
            float4 loads of A[r * N + c] and v[c]; the body once per lane k with `const size_t c = htam_c0 + k;`
            on the loaded elements (u[r] read as written); float4 stores
        } else {
            for (int htam_l = 0; htam_l < 4; ++htam_l) { const size_t c = htam_c0 + htam_l; if (c < (N)) body }
        }
    }

and the grid's x of every launch in the file is divided by ``V``, rounded up. The alignment is checked per thread
at run time, so a row that starts off a 16-byte boundary (``N % 4 != 0``, a pointer offset by one element) and the
ragged end of a row take the scalar loop, the kernel's own code, lane by lane. Other element types than all-float
(``__half``, ``__nv_bfloat16``, ``double``, mixed widths, a type template parameter) take one ``alignas`` struct
of ``V`` elements per vector access (one 16-byte copy for the widest type) and a ``#pragma unroll`` lane loop; a
type template parameter keeps ``V`` of the type the launches in the file bind (the grid is divided by it), with
the struct's alignment safe for any other instantiation. Every lane computes what its column's thread computed,
in the same order: the results are the same bit for bit.

Refused, with the analysis layer's reason: not that 2-D shape (:mod:`~htam_core.source.analysis.rows2d`); an element
whose size is not known or as wide as a vector; no launch in the file (the grid must shrink), or one through a
pointer shared with other kernels; a kernel with per-block outputs (the grid decides how many).

Idea source: NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized Memory Access" (Luitjens,
2013); BLAS ``sger`` kernels with ``float4`` columns per thread and a scalar end of row.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import SIZEOF
from htam_core.source.analysis.rows2d import ContiguousRows, RowVector
from htam_core.transforms._cuda import CudaUnit, Launch, launch_dims_edit, per_block_output_hazard
from htam_core.transforms.base import TextEdit
from htam_core.transforms.cuda_vector_loops import align_text

_LANES = "xyzw"


@dataclass
class _Plan:
    """What the rewrite writes: the width, whether it is the float4 form, each vector's local name and element
    type, and the column's type as C text."""

    width: int
    float4: bool
    templated: bool
    names: list[str]
    elems: list[str]
    col_type: str


def _qualifiers_dropped(text: str) -> str:
    return " ".join(w for w in text.split() if w not in ("const", "volatile"))


def _plan(unit: CudaUnit, rows: ContiguousRows) -> _Plan | str:
    """The width and names of the rewrite, or why the elements have no 16-byte vector."""
    sizes: list[int] = []
    elems: list[str] = []
    templated = False
    for v in rows.vectors:
        pf = unit.facts.pointer(v.pointer)
        value = _qualifiers_dropped(pf.value_type or pf.element_type or "") if pf is not None else ""
        size = SIZEOF.get(value)
        if pf is None or size is None:
            return f"{v.pointer} points to {value or 'an unknown type'}, whose size is not known (the grid must " \
                   "shrink by the elements per vector)"
        if size >= 16:
            return f"{v.pointer} already moves 16 bytes per element"
        templated = templated or pf.templated
        sizes.append(size)
        elems.append(_qualifiers_dropped(pf.element_type or value))
    width = 16 // max(sizes)
    f4 = width == 4 and not templated and all(
        (pf := unit.facts.pointer(v.pointer)) is not None and pf.float_elements for v in rows.vectors)
    count: dict[str, int] = {}
    for v in rows.vectors:
        count[v.pointer] = count.get(v.pointer, 0) + 1
    seen: dict[str, int] = {}
    names = []
    for v in rows.vectors:
        k = seen[v.pointer] = seen.get(v.pointer, -1) + 1
        names.append(f"htam_{v.pointer}" + (str(k) if count[v.pointer] > 1 else ""))
    shape = rows.shape
    col_type = f"decltype(htam_{shape.name}0)" if shape.deduced_type else shape.type
    return _Plan(width, f4, templated, names, elems, col_type)


def _lane_body(unit: CudaUnit, rows: ContiguousRows, plan: _Plan) -> str:
    """The guarded statements on one line, each vector subscript replaced by its lane local."""
    stmts = rows.shape.stmts
    renames = [(sub, name) for v, name in zip(rows.vectors, plan.names, strict=True) for sub in v.subs]
    return syn.one_line(unit.src, unit.body, stmts[0].start_byte, stmts[-1].end_byte, renames)


def _address(v: RowVector) -> str:
    return f"&{v.array}[{v.index}]"


def _vector_lines(rows: ContiguousRows, plan: _Plan, lane_body: str) -> list[str]:
    """The vector path: loads, the lanes, stores."""
    name, v0 = rows.shape.name, f"htam_{rows.shape.name}0"

    def column(lane: str) -> str:
        return f"const {plan.col_type} {name} = {v0} + {lane}; " if rows.column_used else ""

    vt = ["float4" if plan.float4 else f"{n}_t" for n in plan.names]
    out = [f"    {'const ' if not v.written else ''}{t} {n}_vec = *reinterpret_cast<const {t} *>({_address(v)});"
           if v.read else f"    {t} {n}_vec;" for v, n, t in zip(rows.vectors, plan.names, vt, strict=True)]
    if plan.float4:
        for k, c in enumerate(_LANES):
            decls = " ".join(f"float {n} = {n}_vec.{c};" if v.read else f"float {n};"
                             for v, n in zip(rows.vectors, plan.names, strict=True))
            stores = " ".join(f"{n}_vec.{c} = {n};" for v, n in zip(rows.vectors, plan.names, strict=True) if v.written)
            out.append(f"    {{ {column(str(k))}{decls} {lane_body} {stores} }}")
    else:
        decls = " ".join(f"{e} {n} = {n}_vec.v[htam_l];" if v.read else f"{e} {n};"
                         for v, n, e in zip(rows.vectors, plan.names, plan.elems, strict=True))
        stores = " ".join(f"{n}_vec.v[htam_l] = {n};" for v, n in zip(rows.vectors, plan.names, strict=True) if v.written)
        out += ["    #pragma unroll",
                "    for (int htam_l = 0; htam_l < htam_V; ++htam_l) {",
                f"        {column('htam_l')}{decls} {lane_body} {stores}",
                "    }"]
    out += [f"    *reinterpret_cast<{t} *>({_address(v)}) = {n}_vec;"
            for v, n, t in zip(rows.vectors, plan.names, vt, strict=True) if v.written]
    return out


def body_text(unit: CudaUnit, rows: ContiguousRows, plan: _Plan) -> str:
    """The block that replaces the guarded statements: the vector path under the width and alignment check, the
    kernel's own statements lane by lane otherwise (this module's docstring)."""
    shape = rows.shape
    name, v0, width = shape.name, f"htam_{shape.name}0", "4" if plan.float4 else "htam_V"
    bound = " ".join(unit.t(shape.bound).split())
    if plan.float4:
        align = " | ".join(f"reinterpret_cast<unsigned long long>({_address(v)})" for v in rows.vectors)
        check = f"(({align}) & 15ull) == 0ull"
        head = []
    else:
        check = " | ".join(f"(reinterpret_cast<unsigned long long>({_address(v)}) & (alignof({n}_t) - 1))"
                           for v, n in zip(rows.vectors, plan.names, strict=True)) + " == 0ull"
        check = f"({check.removesuffix(' == 0ull')}) == 0ull"
        head = [f"constexpr int htam_V = {plan.width};  // elements per vector: 16 bytes of the widest element type",
                *(f"struct alignas({align_text(e) if plan.templated else f'htam_V * sizeof({e})'}) {n}_t "
                  f"{{ {e} v[htam_V]; }};" for n, e in zip(plan.names, plan.elems, strict=True))]
    stmts = shape.stmts
    original = unit.src[stmts[0].start_byte : stmts[-1].end_byte].decode()
    lines = [
        "{",
        *(f"    {h}" for h in head),
        f"    const {'auto' if shape.deduced_type else shape.type} {v0} = {name};",
        f"    if (({bound}) - {v0} >= {width} && {check}) {{",
        *(f"    {ln}" for ln in _vector_lines(rows, plan, _lane_body(unit, rows, plan))),
        "    } else {",
        f"        for (int htam_l = 0; htam_l < {width}; ++htam_l) {{",
        f"            const {plan.col_type} {name} = {v0} + htam_l;",
        f"            if ({name} < ({bound})) {{",
        *(f"                {ln.strip()}" for ln in original.splitlines() if ln.strip()),
        "            }",
        "        }",
        "    }",
        "}",
    ]
    return "\n".join(lines)


def _grid_edit(unit: CudaUnit, la: Launch, width: int) -> TextEdit | str:
    """The launch's grid with its x divided by ``width`` (rounded up), y and z kept, or why not."""
    why = per_block_output_hazard(unit, la)
    if why:
        return why
    comps = unit.dims_of(la.grid, la.host)
    g = syn.unwrap_parens(la.grid)
    if comps and comps[0] is not g:  # components written at the launch or in a dim3 variable's initializer
        return launch_dims_edit(unit, la, la.grid, [f"(({unit.t(comps[0])}) + {width - 1}) / {width}",
                                                    *(unit.t(c) for c in comps[1:])])
    text = unit.t(la.grid)
    if syn.is_identifier(g) or syn.is_call(g):  # a dim3 (or a number) behind a name or a macro
        return unit.replace(la.grid, f"dim3((dim3({text}).x + {width - 1}) / {width}, dim3({text}).y, dim3({text}).z)")
    return unit.replace(la.grid, f"(({text}) + {width - 1}) / {width}")


def vectorize_rows(unit: CudaUnit, rows: ContiguousRows) -> tuple[list[TextEdit], _Plan] | str:
    """The edits of the row form (the column's declaration, the guarded statements, every launch's grid) and the
    plan (width, float4 or not), or why it is not made.

    Args:
        unit: the kernel.
        rows: its 2-D shape from :func:`~htam_core.source.analysis.rows2d.contiguous_rows`.
    """
    plan = _plan(unit, rows)
    if isinstance(plan, str):
        return plan
    if not unit.launches or not unit.launches_editable:
        return (f"{unit.kernel.name} has no launch in this file that can be edited alone; each thread takes "
                f"{plan.width} columns, so the grid's x must shrink with it")
    shape = rows.shape
    ind = syn.indent_of(unit.src, shape.guard.start_byte) or "    "
    edits = [unit.replace(shape.gid, f"({unit.t(shape.gid)}) * {plan.width}")]
    text = body_text(unit, rows, plan)
    if shape.form == "if" and shape.consequence is not None:
        edits.append(unit.replace(shape.consequence, text.replace("\n", "\n" + ind)))
    else:
        start, end = shape.stmts[0].start_byte, shape.stmts[-1].end_byte
        edits.append(unit.edit(start, end, text.replace("\n", "\n" + ind)))
    for la in unit.launches:
        e = _grid_edit(unit, la, plan.width)
        if isinstance(e, str):
            return e
        edits.append(e)
    return edits, plan
