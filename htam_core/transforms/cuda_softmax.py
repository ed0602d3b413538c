"""Online softmax (``cuda.online_softmax``): merge a row's max pass and its sum-of-exponentials pass into one.

A numerically stable softmax makes three passes over a row: ``m = max_j x_j``, ``s = sum_j exp(x_j - m)``, then
``y_j = exp(x_j - m) / s``. The first two passes merge into one with the running-max rescaling of Milakov and
Gimelshein, "Online normalizer calculation for softmax" (2018): for each element, ``m' = max(m, x)`` and
``s = s * exp(m - m') + exp(x - m')``. The row is then read twice instead of three times.

Recognized: a loop ``m = fmaxf(m, E)`` (also ``fmax``/``max``, and a max written as a comparison and a choice:
``if (E > m) m = E;``, ``m = E > m ? E : m``, ``m = m < E ? E : m``, the analysis layer's
:func:`~htam_core.source.analysis.select.select_step`), the declaration of the
sum ``T s = 0``, and a loop with the same header ``s += expf(E - m)`` (also ``exp``/``__expf``), with ``E`` the same
expression. When both loops are followed by a warp all-reduce (``for (o = 16; o > 0; o >>= 1) m = fmaxf(m,
__shfl_xor_sync(mask, m, o));`` and the sum's, as ``cuda.warp_per_row`` writes them), the two all-reduces become
one that merges ``(m, s)`` pairs the same way. Factors ``exp(a - b)`` are skipped when ``a == b``, so rows that
start with ``-inf`` (masked entries) give 0 for those entries as before, not NaN. Sums are reassociated and
rescaled: results change in the last bits (``changes_numerics``).

:func:`online_pair` recognizes the merged loop body; ``cuda.warp_per_row`` uses it to give the merged loop to a
warp, so the two steps compose in either order.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import analyze
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.constants import is_zero_value
from htam_core.source.analysis.macros import call_alias
from htam_core.source.analysis.nodes import Node
from htam_core.source.analysis.select import select_step
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit, references, statement_list
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import register
from htam_core.types.profile import Profile

MAX_FNS = ("fmaxf", "fmax", "max")
EXP_FNS = ("expf", "exp", "__expf")


def _norm(text: str) -> str:
    return "".join(text.split())


def single_statement(body: Node | None) -> Node | None:
    """The one statement of a loop body (``{ s; }`` or ``s``), else ``None``."""
    if body is None:
        return None
    if syn.is_block(body):
        inner = statement_list(body)
        return inner[0] if len(inner) == 1 else None
    return body


def _assignment(stmt: Node | None, op: str = "=") -> Node | None:
    if stmt is None or not syn.is_expression_statement(stmt) or not stmt.named_children:
        return None
    a = stmt.named_children[0]
    if not syn.is_assignment(a) or a.child_by_field_name("operator").text.decode() != op:
        return None
    return a


def _call(unit: CudaUnit, node: Node | None, names: tuple[str, ...]) -> tuple[str, list[Node]] | None:
    """``(function, arguments)`` when ``node`` calls one of ``names``, also through a macro of the file that stands
    for such a call (``EXPF(v)`` with ``#define EXPF(v) expf(v)``: ``"expf"``, the analysis layer's reading)."""
    node = syn.unwrap_parens(node) if node is not None else None
    if node is None or not syn.is_call(node):
        return None
    fn = call_alias(node) or unit.t(node.child_by_field_name("function"))
    if fn not in names:
        return None
    args = [a for a in node.child_by_field_name("arguments").named_children if not syn.is_comment(a)]
    return fn, args


@dataclass
class MaxStep:
    """``m = F(m, E)`` (``fn`` = F) or ``if (E > m) m = E;`` (``fn`` = ``None``) in a loop body."""

    name: str
    value: Node
    fn: str | None


def max_step(unit: CudaUnit, stmt: Node | None) -> MaxStep | None:
    """Match one running-max update statement, else ``None``."""
    a = _assignment(stmt)
    c = _call(unit, a.child_by_field_name("right"), MAX_FNS) if a is not None else None
    if a is not None and c is not None:
        target = syn.unwrap_parens(a.child_by_field_name("left"))
        if not syn.is_identifier(target) or len(c[1]) != 2:
            return None
        name = unit.t(target)
        mine = [x for x in c[1] if unit.t(syn.unwrap_parens(x)) == name]
        other = [x for x in c[1] if x not in mine]
        if len(mine) != 1 or references(other[0], unit.src, name):
            return None
        return MaxStep(name, other[0], c[0])
    # a max written as a comparison and a choice (`if (E > m) m = E;`, `m = E > m ? E : m`, `m = m > E ? m : E`):
    # the analysis layer's reading; the merged loop keeps the larger with `E > m ? E : m`, which differs from the
    # original only on a NaN, and a NaN makes the row's sum and every output NaN either way
    sel = select_step(unit.src, stmt) if stmt is not None else None
    if sel is None or sel.selection.kind != "max":
        return None
    return MaxStep(sel.name, sel.candidate, None)


def _sum_exp_step(unit: CudaUnit, stmt: Node | None, m: str) -> tuple[str, str, Node] | None:
    """``(s, exp function, E)`` for ``s += EXP(E - m)``."""
    a = _assignment(stmt, "+=")
    if a is None:
        return None
    target = syn.unwrap_parens(a.child_by_field_name("left"))
    c = _call(unit, a.child_by_field_name("right"), EXP_FNS)
    if not syn.is_identifier(target) or c is None or len(c[1]) != 1:
        return None
    diff = syn.unwrap_parens(c[1][0])
    if not syn.is_binary(diff) or unit.t(diff.child_by_field_name("operator")) != "-":
        return None
    if unit.t(syn.unwrap_parens(diff.child_by_field_name("right"))) != m:
        return None
    return unit.t(target), c[0], diff.child_by_field_name("left")


def _shuffle_loop(unit: CudaUnit, stmt: Node | None, name: str) -> tuple[str, str] | None:
    """``(offset variable, mask)`` when ``stmt`` is ``for (int o = 16; o > 0; o >>= 1)`` reducing ``name`` with
    ``__shfl_xor_sync(mask, name, o)`` (a full-warp butterfly all-reduce), else ``None``."""
    if stmt is None or not syn.is_for(stmt):
        return None
    head = _header(unit, stmt)
    body = stmt.child_by_field_name("body")
    calls = [c for c in syn.calls(body) if unit.t(c.child_by_field_name("function"))
             == "__shfl_xor_sync"] if body is not None else []
    if len(calls) != 1:
        return None
    args = calls[0].child_by_field_name("arguments").named_children
    if len(args) != 3 or unit.t(args[1]) != name:
        return None
    o = unit.t(args[2])
    if head != f"int{o}=16|{o}>0|{o}>>=1":
        return None
    # every write in the body goes to `name` (the step `m = f(m, shfl)`, `s += shfl` or `if (v > m) m = v;`)
    writes = [syn.unwrap_parens(a.child_by_field_name("left")) for a in syn.assignments(body)]
    if not writes or any(not syn.is_identifier(w) or unit.t(w) != name for w in writes):
        return None
    return o, unit.t(args[0])


def _header(unit: CudaUnit, loop: Node) -> str:
    """The loop's initializer, condition and update, whitespace dropped, ``|``-joined (to compare ranges)."""
    return "|".join(_norm(unit.t(loop.child_by_field_name(f))).rstrip(";")
                    for f in ("initializer", "condition", "update"))


def _max_expr(fn: str | None, a: str, b: str) -> str:
    return f"{fn}({a}, {b})" if fn else f"(({b}) > ({a}) ? ({b}) : ({a}))"


def merged_update(m: str, s: str, x: str, mn: str, s_type: str, exp: str) -> str:
    """``s`` rescaled to the new max ``mn`` plus ``x``'s term; ``exp(0)`` factors are skipped (``-inf`` safe)."""
    return (f"{s} = ({m} == {mn} ? {s} : {s} * {exp}({m} - {mn})) + "
            f"({x} == {mn} ? ({s_type})1 : {exp}({x} - {mn}));")


def pair_combine(m: str, s: str, m_type: str, fn: str | None, exp: str, om: str, os: str) -> list[str]:
    """The statements folding the running-max/sum pair ``(om, os)`` into ``(m, s)``: the larger max, each sum
    rescaled to it (an ``exp(0)`` factor skipped, so ``-inf`` maxima stay safe). ``fn``: the max function of the
    loop (``None``: a comparison), ``exp``: its exponential."""
    return [f"const {m_type} htam_mn = {_max_expr(fn, m, om)};",
            f"{s} = ({m} == htam_mn ? {s} : {s} * {exp}({m} - htam_mn)) + "
            f"({om} == htam_mn ? {os} : {os} * {exp}({om} - htam_mn));",
            f"{m} = htam_mn;"]


def pair_all_reduce(m: str, s: str, m_type: str, s_type: str, fn: str | None, exp: str, mask: str,
                    indent: str) -> str:
    """A full-warp butterfly all-reduce of running-max/sum pairs ``(m, s)`` (every lane ends with the row's)."""
    return "\n".join(indent + ln for ln in [
        "for (int htam_o = 16; htam_o > 0; htam_o >>= 1) {",
        f"    const {m_type} htam_om = __shfl_xor_sync({mask}, {m}, htam_o);",
        f"    const {s_type} htam_os = __shfl_xor_sync({mask}, {s}, htam_o);",
        *[f"    {x}" for x in pair_combine(m, s, m_type, fn, exp, "htam_om", "htam_os")],
        "}",
    ])


@dataclass
class OnlinePair:
    """The merged loop body: ``x = E; mn = MAX(m, x); s = ...; m = mn;`` (see :func:`merged_update`)."""

    m: str
    s: str
    fn: str | None
    exp: str


def online_pair(unit: CudaUnit, body: Node | None) -> OnlinePair | None:
    """Recognize the body of a merged max/sum loop as :class:`CudaOnlineSoftmax` writes it, else ``None``."""
    if body is None or not syn.is_block(body):
        return None
    st = statement_list(body)
    if len(st) != 4 or not syn.is_declaration(st[0]) or not syn.is_declaration(st[1]):
        return None
    d0 = next((d for d in st[0].named_children if syn.is_init_declarator(d)), None)
    d1 = next((d for d in st[1].named_children if syn.is_init_declarator(d)), None)
    upd, last = _assignment(st[2]), _assignment(st[3])
    if d0 is None or d1 is None or upd is None or last is None:
        return None
    x, mn = unit.t(d0.child_by_field_name("declarator")), unit.t(d1.child_by_field_name("declarator"))
    m, s = unit.t(last.child_by_field_name("left")), unit.t(upd.child_by_field_name("left"))
    if unit.t(last.child_by_field_name("right")) != mn or references(d0.child_by_field_name("value"), unit.src, s) \
            or references(d0.child_by_field_name("value"), unit.src, m):
        return None
    mv = d1.child_by_field_name("value")
    c = _call(unit, mv, MAX_FNS)
    fn = c[0] if c is not None else None
    if _norm(unit.t(mv)) != _norm(_max_expr(fn, m, x)):
        return None
    for exp in EXP_FNS:
        for s_type in ("float", "double"):
            if _norm(unit.t(st[2])) == _norm(merged_update(m, s, x, mn, s_type, exp)):
                return OnlinePair(m, s, fn, exp)
    return None


@register
class CudaOnlineSoftmax(CudaTransform):
    """Merge the max pass and the sum-of-exp pass of a row softmax into one online pass."""

    id = "cuda.online_softmax"
    languages = CUDA_LANGS
    changes_numerics = True
    summary = "online softmax: one pass computes the row max and the rescaled sum of exponentials"

    def refusal_fact(self, unit: CudaUnit, kernel: Kernel, reason: str) -> str | None:
        """A kernel that already keeps its max and sum online is refused as such
        (:meth:`~htam_core.source.analysis.KernelFacts.already_online`), not by the missing max pass."""
        return unit.facts.already_online()

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate per kernel: the first max loop followed by a matching sum-of-exp loop, merged."""
        why = "no loop of the kernel computes a running max (`m = fmaxf(m, x[j])`)"
        for block in [unit.body, *syn.blocks(unit.body)]:
            st = statement_list(block)
            for i, s in enumerate(st):
                if not syn.is_for(s):
                    continue
                ms = max_step(unit, single_statement(s.child_by_field_name("body")))
                if ms is None:
                    continue
                res = self._merge(unit, model, kernel, st, i, ms)
                if isinstance(res, str):
                    why = res
                    continue
                return [res]
        return self.not_applicable(why)

    def _merge(self, unit: CudaUnit, model: SourceModel, kernel: Kernel, st: list[Node], i: int,
               ms: MaxStep) -> Candidate | str:
        m = ms.name
        line = unit.src[: st[i].start_byte].count(b"\n") + 1
        j = i + 1
        w1 = _shuffle_loop(unit, st[j] if j < len(st) else None, m)
        j += 1 if w1 else 0
        if j >= len(st) or not syn.is_declaration(st[j]):
            return f"the max loop on line {line} is not followed by the declaration of a sum"
        decl = st[j]
        ds = [d for d in decl.named_children if syn.is_init_declarator(d)]
        if len(ds) != 1:
            return f"`{unit.t(decl)}` after the max loop on line {line} does not declare one sum"
        s = unit.t(ds[0].child_by_field_name("declarator"))
        loop2 = st[j + 1] if j + 1 < len(st) else None
        if loop2 is None or not syn.is_for(loop2):
            return f"no loop follows the declaration of {s}"
        step = _sum_exp_step(unit, single_statement(loop2.child_by_field_name("body")), m)
        if step is None or step[0] != s:
            return f"the loop after the max loop on line {line} is not `{s} += expf(x - {m})`"
        _, exp, value = step
        if _norm(unit.t(value)) != _norm(unit.t(ms.value)):
            return (f"the sum loop exponentiates {unit.t(value)}, not the {unit.t(ms.value)} the max loop on line "
                    f"{line} reduces")
        if _header(unit, loop2) != _header(unit, st[i]):
            return f"the max loop on line {line} and the sum loop do not run over the same range"
        if references(value, unit.src, s):
            return f"the exponentiated value reads the sum {s}"
        w2 = _shuffle_loop(unit, st[j + 2] if j + 2 < len(st) else None, s)
        if bool(w1) != bool(w2):
            return "only one of the max and the sum is all-reduced over the warp"
        facts = analyze(model, kernel)
        s_acc, m_acc = facts.accumulator(s), facts.accumulator(m)
        if s_acc is None or s_acc.op != "sum" or s_acc.type is None:
            return f"the analysis does not see {s} as a typed sum"
        if s_acc.init_text is None or not is_zero_value(s_acc.init_text):
            return f"the sum {s} does not start at 0"
        s_type = s_acc.type
        # `if (x > m) m = x;` is not an accumulator of the analysis: its type comes from its declaration
        m_type = m_acc.type if m_acc is not None and m_acc.type else self._type(unit, st[:i], m)
        if m_type is None:
            return f"the running max {m} is not declared with a type before its loop"
        indent = syn.indent_of(unit.src, st[i].start_byte)
        ex = unit.t(ms.value)
        loop_head = unit.src[st[i].start_byte : st[i].child_by_field_name("body").start_byte].decode().rstrip()
        lines = [
            unit.t(decl),
            f"{loop_head} {{  // online: running max and rescaled sum in one pass",
            f"    const {m_type} htam_x = {ex};",
            f"    const {m_type} htam_mn = {_max_expr(ms.fn, m, 'htam_x')};",
            "    " + merged_update(m, s, "htam_x", "htam_mn", s_type, exp),
            f"    {m} = htam_mn;",
            "}",
        ]
        text = "\n".join((indent if k else "") + ln for k, ln in enumerate(lines))
        end = (st[j + 2] if w2 else loop2).end_byte
        if w1:
            mask = w1[1]
            text += "\n" + pair_all_reduce(m, s, m_type, s_type, ms.fn, exp, mask, indent)
        edits: list[TextEdit] = [unit.edit(st[i].start_byte, end, text)]
        where = "a warp all-reduce of (max, sum) pairs" if w1 else "the same thread mapping"
        return self.candidate(
            model,
            f"online softmax in {kernel.name}: one pass computes {m} and {s} (rescaling {s} when {m} grows), "
            f"{where}; the row is read once less (float results change in the last bits)",
            {"max": m, "sum": s, "warp": bool(w1)},
            edits,
        )

    @staticmethod
    def _type(unit: CudaUnit, before: list[Node], name: str) -> str | None:
        for s in reversed(before):
            if not syn.is_declaration(s):
                continue
            for d in s.named_children:
                target = d.child_by_field_name("declarator") if syn.is_init_declarator(d) else d
                if target is not None and syn.is_identifier(target) and unit.t(target) == name:
                    return _norm(unit.t(s.child_by_field_name("type")))
        return None
