"""Several adjacent columns per thread with 16-byte row loads (``cuda.vector_columns``) for a thread-per-column sum.

A column sum with one thread per column (``int c = blockIdx.x * blockDim.x + threadIdx.x; for (i …) s +=
x[i * C + c];``) is coalesced, but every lane loads 2 or 4 bytes per row. The analysis layer finds these loops
(:meth:`~htam_core.source.analysis.facts.KernelFacts.thread_column_loops`). The rewrite gives each thread
``htam_V = 16 / sizeof(E)`` adjacent columns (``E`` the element type of the moving reads)::

    int c = (blockIdx.x * blockDim.x + threadIdx.x) * htam_V;
    if (c >= C) return;                                    // the kernel's own column guard
    float htam_acc[htam_V];  (each set to the accumulator's initial value)
    for (i …) {                                            // the loop's own header
        if (c + htam_V <= C && every row address 16-byte aligned) {
            one 16-byte load per moving pointer; the body once per column k on element k of the load
        } else {
            the body once per column k < C - c, scalar
        }
    }
    for (k …) if (c + k < C) { the statements after the loop, for column c + k and htam_acc[k] }

and every launch's grid x shrinks by ``htam_V`` (rounded up). Each column is summed over the same rows in the same
order as before, so the results are the same bit for bit.

Refused, each with its reason: no such loop; the column not ``blockIdx.x * blockDim.x + threadIdx.x`` in one
local; no column guard ``if (c >= C) return;``; other statements before the loop that depend on the column; a
loop that is not the last loop or is nested; statements after it that combine threads (shuffles, barriers) or
return; an element type unknown or a template parameter (the launch must compute ``htam_V``); a grid whose x
component is not written at the launch; no launch in the file.

Idea source: llm.c ``dev/cuda/matmul_backward_bias.cu`` kernel 7 (``x128`` loads of adjacent columns, one
accumulator per column) after kernel 5; NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized
Memory Access" (Luitjens, 2013).
"""

from __future__ import annotations

from tree_sitter import Node

from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms import _ts
from htam_core.transforms._cuda import CudaTransform, CudaUnit, statement_list
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_lane_columns import _declared, _guard, _reindent, _with, column_loop
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

_WARP_WORDS = ("__shfl", "__syncthreads", "__syncwarp", "reduce", "return", "__ballot")


def _element(unit: CudaUnit, pointer: str) -> str | None:
    pf = unit.facts.pointer(pointer)
    if pf is None or not (pf.element_type or pf.value_type):
        return None
    words = [w for w in (pf.element_type or pf.value_type or "").split() if w not in ("const", "volatile")]
    return " ".join(words) or None


@register
class CudaVectorColumns(CudaTransform):
    """Give each thread of a thread-per-column sum 16 bytes of adjacent columns, loaded as one vector per row."""

    id = "cuda.vector_columns"
    languages = CUDA_LANGS
    summary = ("several adjacent columns per thread in a thread-per-column sum: one 16-byte load per row, one "
               "accumulator per column; the grid's x shrinks to match")

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate (the kernel body and every launch's grid x), or why not."""
        got = self._make(unit, kernel)
        if isinstance(got, str):
            return self.not_applicable(got)
        edits, line, width = got
        return [self.candidate(
            model,
            f"give each thread of {kernel.name} {width} adjacent columns: the reads of the loop on line {line} "
            "become one 16-byte load per row (a scalar path for the last columns and unaligned rows), one "
            "accumulator per column; the launches' grid x shrinks to match",
            {"width": width, "launches": len(unit.launches)},
            edits,
        )]

    def _make(self, unit: CudaUnit, kernel: Kernel) -> tuple[list[TextEdit], int, str] | str:  # noqa: C901
        f = unit.facts
        name = kernel.name
        loops = f.thread_column_loops()
        if not loops:
            return (f"{name} has no thread-per-column sum with scalar reads (a loop whose start does not depend on "
                    "threadIdx.x, a `sum` accumulator reading `S * i + c`, c coalesced along threadIdx.x)")
        split = loops[0]
        placed = column_loop(unit, split)
        if isinstance(placed, str):
            return placed
        fact, loop, pre, post = placed
        stmts = statement_list(unit.body)
        acc = fact.accumulators[0]
        col = next((t.name for t in f.thread_indices if t.is_global and t.expr == split.column), None)
        col_decl = next((st for st in pre if st.type == "declaration" and _declared(unit, st) == [col]), None)
        if col is None or col_decl is None:
            return f"the column `{split.column}` is not `blockIdx.x * blockDim.x + threadIdx.x` held in one local"
        acc_decl = unit.node_at(acc.decl_span, ("declaration",)) if acc.decl_span else None
        if acc_decl is None or acc_decl not in pre or acc.type is None or acc.init_text is None:
            return f"the accumulator {acc.name} is not declared with its type and initial value before the loop"
        guard = next((st for st in pre if _guard(unit, st, col) is not None), None)
        if guard is None:
            return f"{name} has no column guard `if ({col} >= n) return;` before the loop"
        bound = unit.t(_guard(unit, guard, col))
        for st in pre:
            if st in (col_decl, acc_decl, guard):
                continue
            words = {unit.t(i) for i in _ts.of_type(st, "identifier")}
            if col in words or "threadIdx" in words or acc.name in words:
                return f"the statement `{' '.join(unit.t(st).split())[:60]}` before the loop depends on the column"
        for st in post:
            text = unit.t(st)
            if any(w in text for w in _WARP_WORDS) or _ts.of_type(st, ("for_statement", "while_statement")):
                return (f"the statement `{' '.join(text.split())[:60]}` after the loop combines threads, returns or "
                        "loops; only per-column statements can be repeated per column")
        moving = [a for a in f.accesses_in(fact) if a.space == "global" and a.kind != "write"
                  and a.stride(fact.var or "") != 0]
        types = sorted({_element(unit, a.pointer) or "" for a in moving})
        if "" in types or len(types) != 1:
            return "the moving reads have unknown or different element types"
        elem = types[0]
        tmpl = unit.func.parent if unit.func.parent is not None and unit.func.parent.type == "template_declaration" \
            else None
        params = tmpl.child_by_field_name("parameters") if tmpl is not None else None
        if params is not None and elem in {unit.t(i) for i in _ts.of_type(params, "type_identifier")}:
            return f"the element type {elem} is a template parameter; the launch cannot compute the columns per thread"
        width = f"(16 / sizeof({elem}))"
        if not unit.launches:
            return f"{name} has no launch site in this file; its grid must shrink"
        edits: list[TextEdit] = []
        for la in unit.launches:
            dims = unit.dims_of(la.grid, la.host)
            if not dims or not (la.call.start_byte <= dims[0].start_byte < la.call.end_byte):
                return f"the grid's x on line {la.site.line} is not written at the launch"
            edits.append(unit.replace(dims[0], f"(({unit.t(dims[0])}) + {width} - 1) / {width}"))
        subs = []
        for a in moving:
            node = unit.node_at(a.span, ("subscript_expression",))
            if node is None:
                return f"the read `{a.pointer}[{a.index_text}]` is not a subscript"
            subs.append((a.pointer, node))
        body_node = loop.child_by_field_name("body")
        if body_node is None:
            return f"the loop on line {fact.line} has no body"
        inner = body_node if body_node.type == "compound_statement" else None
        body_src = unit.t(body_node)[1:-1] if inner is not None else unit.t(body_node)
        b0 = body_node.start_byte + (1 if inner is not None else 0)

        def rendered(vector: bool) -> str:
            renames: list[tuple[Node, str]] = [(c, "") for c in _ts.of_type(body_node, "comment")]
            taken: set[int] = set()
            if vector:
                for p, node in subs:
                    renames.append((node, f"htam_{p}.v[htam_k]"))
                    taken.update(range(node.start_byte, node.end_byte))
            for i in _ts.of_type(body_node, "identifier"):
                if i.start_byte in taken:
                    continue
                if unit.t(i) == col:
                    renames.append((i, f"({col} + htam_k)"))
                elif unit.t(i) == acc.name:
                    renames.append((i, "htam_acc[htam_k]"))
            out = bytearray(body_src.encode())
            for n, new in sorted(renames, key=lambda x: -x[0].start_byte):
                out[n.start_byte - b0:n.end_byte - b0] = new.encode()
            return " ".join(ln.strip() for ln in out.decode().splitlines() if ln.strip())

        ind = _ts.indent_of(unit.src, stmts[0].start_byte) or "    "
        pointers = sorted({p for p, _ in subs})
        aligned = " && ".join(f"((unsigned long long)&{unit.t(n)} & 15ull) == 0ull"
                              for p, n in {p: n for p, n in subs}.items())
        loads = " ".join(f"htam_pack_{p} htam_{p} = *reinterpret_cast<const htam_pack_{p} *>(&{unit.t(n)});"
                         for p, n in {p: n for p, n in subs}.items())
        packs = [f"struct alignas(16) htam_pack_{p} {{ {elem} v[htam_V]; }};" for p in pointers]
        header = _with(unit, loop, [(body_node, "")]).rstrip()
        post_renamed = ""
        if post:
            rn: list[tuple[Node, str]] = [(c, "") for st in post for c in _ts.of_type(st, "comment")]
            for st in post:
                for i in _ts.of_type(st, "identifier"):
                    if unit.t(i) == col:
                        rn.append((i, f"({col} + htam_k)"))
                    elif unit.t(i) == acc.name:
                        rn.append((i, "htam_acc[htam_k]"))
            post_renamed = " ".join(" ".join(_with(unit, st, [(n, t) for n, t in rn
                                                               if st.start_byte <= n.start_byte < st.end_byte]
                                                     ).split()) for st in post)
        col_init = col_decl.children_by_field_name("declarator")[0].child_by_field_name("value")
        lines = ["{",
                 f"{ind}// several adjacent columns per thread (cuda.vector_columns): one 16-byte load per row",
                 f"{ind}constexpr int htam_V = {width};",
                 *[f"{ind}{x}" for x in packs]]
        for st in pre:
            if st == col_decl:
                lines.append(f"{ind}{' '.join(_with(unit, st, [(col_init, f'({unit.t(col_init)}) * htam_V')]).split())}")
            elif st == acc_decl:
                lines.append(f"{ind}{acc.type} htam_acc[htam_V];")
                lines.append(f"{ind}for (int htam_k = 0; htam_k < htam_V; htam_k++) htam_acc[htam_k] = {acc.init_text};")
            else:
                lines.append(f"{ind}{_reindent(unit.t(st), '')}")
        lines += [
            f"{ind}{' '.join(header.split())} {{",
            f"{ind}{ind}if ({col} + htam_V <= {bound} && {aligned}) {{",
            f"{ind}{ind}{ind}{loads}",
            f"{ind}{ind}{ind}#pragma unroll",
            f"{ind}{ind}{ind}for (int htam_k = 0; htam_k < htam_V; htam_k++) {{ {rendered(True)} }}",
            f"{ind}{ind}}} else {{",
            f"{ind}{ind}{ind}for (int htam_k = 0; htam_k < htam_V && {col} + htam_k < {bound}; htam_k++) "
            f"{{ {rendered(False)} }}",
            f"{ind}{ind}}}",
            f"{ind}}}",
        ]
        if post:
            lines.append(f"{ind}for (int htam_k = 0; htam_k < htam_V && {col} + htam_k < {bound}; htam_k++) {{ "
                         f"{post_renamed} }}")
        lines.append("}")
        edits.append(unit.replace(unit.body, "\n".join(lines)))
        return edits, fact.line, width
