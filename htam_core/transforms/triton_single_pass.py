"""Single-pass statistics for two-pass Triton row kernels: one loop over the row's column tiles instead of two.

A two-pass row kernel walks the row twice with the same ``for off in range(0, N, BLOCK)`` loop: the first loop
accumulates a statistic (a sum for the mean, a running max), the code between the loops derives a value from it
(``mean = tl.sum(acc, axis=0) / N``, ``row_max = tl.max(m, axis=0)``), and the second loop accumulates a second
sum that reads that value. Both transforms fuse the second loop's body into the first (the loop that re-read the
row disappears) and rewrite its accumulator so that it no longer needs the value in advance:

- ``triton.online_softmax`` (max, then a sum of ``tl.exp(x - row_max)``): the online softmax recurrence. The
  sum is kept relative to the running max, ``s = s * exp(m_prev - m) + exp(x - m)``, and rescaled once after the
  loop by ``exp(m - row_max)``; lanes whose max is still ``-inf`` contribute 0 (no ``nan``). It applies when the
  sum's increment is linear in ``exp(-row_max)``: one ``tl.exp(u - row_max)`` under ``tl.sum``, ``tl.where(c, ., 0)``
  or a factor free of the max.
- ``triton.single_pass_moments`` (a sum for the mean, then a sum of squared deviations): the deviation ``P`` is
  affine in the mean, ``P = P0 + mean * D`` (``D`` its derivative, e.g. ``tl.where(mask, -1.0, 0.0)``), so the
  square sums to ``sum(P0^2) + 2 * mean * sum(P0 * D) + mean^2 * sum(D^2)``: three fp32 sums accumulated in the first
  loop and combined (clamped at 0 per lane) where the second loop was. This is the sum/sum-of-squares method,
  exact in real arithmetic; its fp32 cancellation grows with mean^2/variance (see ``risk`` in the knowledge base).

Facts come from the analysis layer: the loops (:class:`~htam_core.source.analysis.LoopFact` with their
accumulators, :class:`~htam_core.source.analysis.TritonLoop` headers, reads and writes). Refusals name the
missing precondition. Idea source: Milakov and Gimelshein, "Online normalizer calculation for softmax" (2018);
the sum/sum-of-squares variance as in Welford (1962)'s discussion; the Triton layer-norm tutorial's two passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_core.source.analysis import Accumulator, LoopFact, TritonLoop
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._triton import TritonTransform, TritonUnit
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.registry import register
from htam_core.transforms.triton_launch import TRITON_LANGS
from htam_core.types.profile import Profile

_NEG_INF = 'float("-inf")'


@dataclass
class TwoPass:
    """The two loops and what links them (offsets are file offsets)."""

    a: LoopFact
    b: LoopFact
    ta: TritonLoop
    tb: TritonLoop
    a_node: Node
    b_node: Node
    first: Accumulator  # the first loop's statistic
    second: Accumulator  # the second loop's accumulator
    between: list[str]  # names assigned between the loops
    stat: str  # the value the second loop reads (derived from ``first``)


def _stmt_of(unit: TritonUnit, span: tuple[int, int]) -> Node | None:
    """The ``expression_statement`` directly holding the assignment at ``span``."""
    node = unit.node_at(span, syn.PY_ANY_ASSIGNMENT)
    return node.parent if node is not None and node.parent is not None \
        and syn.is_expression_statement(node.parent) else None


def _ids(unit: TritonUnit, node: Node | None) -> set[str]:
    return {unit.t(i) for i in syn.identifiers(node)} if node is not None else set()


def _first_use(unit: TritonUnit, name: str, start: int, end: int) -> str | None:
    """``"write"`` when the first occurrence of ``name`` in ``[start, end)`` is a plain assignment's target whose
    right side does not read it, ``"read"`` for any other first occurrence, ``None`` when it does not occur."""
    for i in syn.identifiers(unit.body):
        if not start <= i.start_byte < end or unit.t(i) != name:
            continue
        p = i.parent
        if p is not None and syn.is_py_assignment(p) and p.child_by_field_name("left") == i \
                and name not in _ids(unit, p.child_by_field_name("right")):
            return "write"
        return "read"
    return None


def find_two_pass(unit: TritonUnit, first_ops: tuple[str, ...]) -> TwoPass | str:
    """The first pair of consecutive top-level tile loops with the same header where the second loop's one
    accumulator reads a value derived from the first loop's ``first_ops`` accumulator; or why there is none."""
    facts = unit.facts
    tf = facts.triton
    if tf is None:
        return f"{unit.kernel.name} has no Triton facts"
    loops = [lp for lp in facts.loops if lp.kind in ("range", "static_range") and lp.depth == 0]
    if len(loops) < 2:
        return f"{unit.kernel.name} has {len(loops)} loop(s) over the row; a two-pass kernel has two or more"
    by_id = {t.loop: t for t in tf.loops}
    whys: list[str] = []
    for a, b in zip(loops, loops[1:], strict=False):
        ta, tb = by_id.get(a.id), by_id.get(b.id)
        if ta is None or tb is None or ta.header != tb.header:
            continue
        firsts = [acc for acc in a.accumulators if acc.op in first_ops]
        if not firsts:
            whys.append(f"the loop on line {a.line} accumulates no {' or '.join(first_ops)}")
            continue
        if len(b.accumulators) != 1 or b.accumulators[0].op != "sum":
            whys.append(f"the loop on line {b.line} accumulates "
                        f"{'nothing' if not b.accumulators else f'{len(b.accumulators)} values'}; "
                        "a second statistics pass accumulates one sum")
            continue
        a_node = unit.node_at(a.span, syn.FOR_LOOP)
        b_node = unit.node_at(b.span, syn.FOR_LOOP)
        if a_node is None or b_node is None:
            continue
        between: list[str] = []
        for s in syn.any_py_assignments(unit.body):
            if a_node.end_byte <= s.start_byte < b_node.start_byte:
                left = s.child_by_field_name("left")
                if left is not None and syn.is_identifier(left) and unit.t(left) not in between:
                    between.append(unit.t(left))
        for first in firsts:
            derived = {first.name}
            for s in syn.py_assignments(unit.body):
                if a_node.end_byte <= s.start_byte < b_node.start_byte and _ids(unit, s.child_by_field_name("right")) \
                        & derived:
                    derived.add(unit.t(s.child_by_field_name("left")))
            stats = [n for n in tb.reads if n in derived]
            if len(stats) == 1:
                return TwoPass(a, b, ta, tb, a_node, b_node, first, b.accumulators[0], between, stats[0])
        whys.append(f"the loop on line {b.line} reads no single value derived from the loop on line {a.line}")
    return whys[0] if whys else f"{unit.kernel.name} has no two consecutive loops over the same column tiles"


def _linear_path(unit: TritonUnit, root: Node, target: Node, free: set[str]) -> str | None:
    """Why ``root`` is not linear in ``target`` (a descendant), else ``None``: the path from ``root`` down to
    ``target`` goes only through parentheses, ``tl.sum``'s first argument, ``tl.where(c, ., 0)`` branches and
    ``*``/``/`` by operands that read none of ``free``."""
    n = target
    while n != root:
        p = n.parent
        if p is None:
            return "the increment was not parsed"
        if syn.is_parenthesized(p):
            n = p
            continue
        if syn.is_argument_list(p) and p.parent is not None and syn.is_py_call(p.parent):
            call = p.parent
            fn = unit.callee(call)
            args = [x for x in p.named_children if not syn.is_keyword_argument(x)]
            if fn == "tl.sum" and args and args[0] == n:
                n = call
                continue
            if fn == "tl.where" and len(args) == 3 and n in args[1:]:
                other = args[2] if n == args[1] else args[1]
                if unit.t(other).strip() in ("0", "0.0", "0.") and not _ids(unit, args[0]) & free:
                    n = call
                    continue
            return f"the increment applies {fn} to it"
        if syn.is_binary_operator(p):
            op = unit.t(p.child_by_field_name("operator"))
            other = p.child_by_field_name("right") if p.child_by_field_name("left") == n else p.child_by_field_name("left")
            if op == "*" or (op == "/" and p.child_by_field_name("left") == n):
                if not _ids(unit, other) & free:
                    n = p
                    continue
            return f"the increment combines it with {op}"
        return f"the increment uses it inside {p.type}"
    return None


def _increment(unit: TritonUnit, acc: Accumulator) -> tuple[Node, Node] | str:
    """``(statement, increment expression)`` of a sum accumulator's ``s += E`` / ``s = s + E``."""
    stmt = _stmt_of(unit, acc.span)
    if stmt is None:
        return f"the update of {acc.name} is not a statement of its own"
    a = stmt.named_children[0]
    right = a.child_by_field_name("right")
    if syn.is_augmented_assignment(a):
        return stmt, right
    if right is not None and syn.is_binary_operator(right):
        left, r = right.child_by_field_name("left"), right.child_by_field_name("right")
        if unit.t(left) == acc.name:
            return stmt, r
        if unit.t(r) == acc.name:
            return stmt, left
    return f"the update of {acc.name} is not `{acc.name} += ...`"


def _splice(unit: TritonUnit, node: Node, repl: dict[int, tuple[int, str]]) -> str:
    """``node``'s text with the sub-ranges ``{start: (end, text)}`` replaced."""
    out = bytearray(unit.src[node.start_byte:node.end_byte])
    for s in sorted(repl, reverse=True):
        e, t = repl[s]
        out[s - node.start_byte:e - node.start_byte] = t.encode()
    return out.decode()


def _line_span(unit: TritonUnit, node: Node) -> tuple[int, int]:
    """Bytes of the whole lines ``node`` occupies (with the final newline)."""
    end = unit.src.find(b"\n", node.end_byte)
    return syn.line_start(unit.src, node.start_byte), (len(unit.src) if end < 0 else end + 1)


class _Fuse(TritonTransform):
    """Shared checks and edits of the loop fusions (subclasses: the statistic and the rewritten update)."""

    first_ops: tuple[str, ...] = ()
    new_names: tuple[str, ...] = ()

    def common(self, unit: TritonUnit) -> TwoPass | str:
        """The two passes, checked for fusion: same indentation, names free, the second loop's other statements
        independent of the first statistic and safe to run inside the first loop."""
        tp = find_two_pass(unit, self.first_ops)
        if isinstance(tp, str):
            return tp
        used = set(unit.facts.triton.row_dependents) | {p.name for p in unit.kernel.params} | \
            {unit.t(i) for i in syn.identifiers(unit.body)}
        taken = [n for n in self.new_names if n in used]
        if taken:
            return f"{unit.kernel.name} already uses the name {taken[0]}"
        a_body, b_body = tp.a_node.child_by_field_name("body"), tp.b_node.child_by_field_name("body")
        if syn.indent_of(unit.src, a_body.start_byte) != syn.indent_of(unit.src, b_body.start_byte):
            return "the two loops' bodies are indented differently"
        # names the fused statements write must not feed the first loop before it reassigns them
        for name in tp.tb.writes:
            if name in tp.ta.reads and _first_use(unit, name, a_body.start_byte, a_body.end_byte) != "write":
                return f"the loop on line {tp.a.line} reads {name} before assigning it, and the second loop writes it"
        for name in tp.tb.reads:
            if name in tp.between and name not in (tp.stat, tp.second.name):
                return f"the loop on line {tp.b.line} reads {name}, computed between the loops"
        return tp

    def b_statements(self, unit: TritonUnit, tp: TwoPass) -> list[Node]:
        """The second loop's top-level statements."""
        body = tp.b_node.child_by_field_name("body")
        return [c for c in body.named_children if not syn.is_comment(c)]

    def fused_edits(self, unit: TritonUnit, tp: TwoPass, new_stmts: list[str], after: list[str],
                    before: list[str]) -> list[TextEdit]:
        """Edits: ``before`` lines above the first loop, ``new_stmts`` appended to its body, the second loop's lines
        replaced by ``after`` (each at the loops' indentation)."""
        a_body = tp.a_node.child_by_field_name("body")
        inner = syn.indent_of(unit.src, a_body.start_byte)
        outer = syn.indent_of(unit.src, tp.a_node.start_byte)
        last = [c for c in a_body.named_children][-1]
        edits = []
        if before:
            edits.append(unit.insert(syn.line_start(unit.src, tp.a_node.start_byte),
                                     "".join(f"{outer}{ln}\n" for ln in before)))
        if new_stmts:
            edits.append(unit.insert(last.end_byte, "".join(f"\n{inner}{s}" for s in new_stmts)))
        s, e = _line_span(unit, tp.b_node)
        edits.append(TextEdit(s, e, "".join(f"{outer}{ln}\n" for ln in after)))
        return edits

    def copy_statements(self, unit: TritonUnit, tp: TwoPass, skip: set[int]) -> list[str] | str:
        """The second loop's statements (except the start bytes in ``skip``) to append to the first loop's body,
        or why one of them cannot move.

        A statement the first loop already computes is dropped (the same text) or becomes an alias of the first
        loop's value (``x = tl.load(P)`` where the first loop has ``a = tl.load(P)`` becomes ``x = a``: one read of
        the row instead of two), provided the first loop assigns that value and every name it reads once, and no
        statement copied before it rewrites a name it reads."""
        a_body = tp.a_node.child_by_field_name("body")
        a_rhs: dict[str, tuple[str, Node]] = {}
        for c in a_body.named_children:
            if syn.is_expression_statement(c) and c.named_children and syn.is_py_assignment(c.named_children[0]):
                a = c.named_children[0]
                if syn.is_identifier(a.child_by_field_name("left")):
                    a_rhs.setdefault(" ".join(unit.t(a.child_by_field_name("right")).split()),
                                     (unit.t(a.child_by_field_name("left")), c))
        out: list[str] = []
        copied_writes: set[str] = set()
        for st in self.b_statements(unit, tp):
            if st.start_byte in skip:
                continue
            if tp.stat in _ids(unit, st):
                line = unit.src.count(b"\n", 0, st.start_byte) + 1
                return f"the statement on line {line} also reads {tp.stat}"
            a = st.named_children[0] if syn.is_expression_statement(st) and st.named_children else None
            if a is not None and syn.is_py_assignment(a) and syn.is_identifier(a.child_by_field_name("left")):
                target = unit.t(a.child_by_field_name("left"))
                rhs = a.child_by_field_name("right")
                hit = a_rhs.get(" ".join(unit.t(rhs).split()))
                if hit is not None and not _ids(unit, rhs) & copied_writes and self._single_write(unit, tp, hit[1]):
                    if hit[0] != target:
                        out.append(f"{target} = {hit[0]}")
                        copied_writes.add(target)
                    continue
            out.append(unit.t(st))
            copied_writes |= {unit.t(i) for n in syn.any_py_assignments(st)
                              for i in [n.child_by_field_name("left")] if i is not None}
        return out

    @staticmethod
    def _single_write(unit: TritonUnit, tp: TwoPass, st: Node) -> bool:
        """True when the first loop assigns ``st``'s target and every name its right side reads at most once."""
        a = st.named_children[0] if st.named_children else None
        if a is None or not syn.is_py_assignment(a):
            return False
        name = unit.t(a.child_by_field_name("left"))
        return len(unit.assignments(tp.a_node, name)) == 1 \
            and not _ids(unit, a.child_by_field_name("right")) & {w for w in tp.ta.writes
                                                                  if len(unit.assignments(tp.a_node, w)) > 1}

    def later_reads_ok(self, unit: TritonUnit, tp: TwoPass, names: list[str]) -> str | None:
        """Why a name whose final value changes is read after the second loop, else ``None``."""
        for n in names:
            if _first_use(unit, n, tp.b_node.end_byte, unit.body.end_byte) == "read":
                return f"{n} is read after the second loop, and fusing changes its last value"
        return None

    def init_before(self, unit: TritonUnit, tp: TwoPass, acc: Accumulator) -> tuple[str, TextEdit | None] | str:
        """The accumulator's initial-value text, and the edit deleting its declaration when it sits between the
        loops (it must then move above the first loop); or why it cannot move."""
        if acc.decl_span is None or acc.init_text is None:
            return f"{acc.name} has no initial value"
        decl = unit.node_at(acc.decl_span, syn.PY_ASSIGNMENT)
        if decl is None:
            return f"the initial value of {acc.name} was not found"
        if decl.start_byte < tp.a_node.start_byte:
            return acc.init_text, None
        if _ids(unit, decl.child_by_field_name("right")) & (set(tp.between) | set(tp.ta.writes)):
            return f"the initial value of {acc.name} depends on the first loop"
        return acc.init_text, TextEdit(*_line_span(unit, decl.parent), "")


def _affine(unit: TritonUnit, node: Node, stat: str) -> tuple[str, str | None] | str:
    """``(P0, D)``: ``node`` = ``P0 + stat * D`` with ``P0`` and ``D`` free of ``stat`` (``D`` ``None``: 0);
    or why ``node`` is not affine in ``stat``."""
    ids = _ids(unit, node)
    if stat not in ids:
        return unit.t(node), None
    if syn.is_identifier(node):
        return "0.0", "1.0"
    if syn.is_parenthesized(node) and node.named_child_count == 1:
        return _affine(unit, node.named_children[0], stat)
    if syn.is_unary_operator(node) and unit.t(node).startswith("-"):
        r = _affine(unit, node.named_children[-1], stat)
        if isinstance(r, str):
            return r
        return f"(-{r[0]})", (f"(-{r[1]})" if r[1] else None)
    if syn.is_binary_operator(node):
        op = unit.t(node.child_by_field_name("operator"))
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        la, ra = _affine(unit, left, stat), _affine(unit, right, stat)
        if isinstance(la, str):
            return la
        if isinstance(ra, str):
            return ra
        if op in ("+", "-"):
            d = None
            if la[1] and ra[1]:
                d = f"({la[1]} {op} {ra[1]})"
            elif la[1]:
                d = la[1]
            elif ra[1]:
                d = ra[1] if op == "+" else f"(-{ra[1]})"
            return f"({la[0]} {op} {ra[0]})", d
        if op == "*" and not (la[1] and ra[1]):
            dep, free = (la, unit.t(right)) if la[1] else (ra, unit.t(left))
            return f"({dep[0]} * {free})", f"({dep[1]} * {free})"
        if op == "/" and la[1] and not ra[1]:
            return f"({la[0]} / {unit.t(right)})", f"({la[1]} / {unit.t(right)})"
        return f"{stat} enters through {op}, not affinely"
    if syn.is_py_call(node) and unit.callee(node) == "tl.where":
        args = [x for x in node.child_by_field_name("arguments").named_children if not syn.is_keyword_argument(x)]
        if len(args) == 3 and stat not in _ids(unit, args[0]):
            ba, bb = _affine(unit, args[1], stat), _affine(unit, args[2], stat)
            if isinstance(ba, str):
                return ba
            if isinstance(bb, str):
                return bb
            c = unit.t(args[0])
            w = f"{unit.tl}.where"
            return f"{w}({c}, {ba[0]}, {bb[0]})", f"{w}({c}, {ba[1] or '0.0'}, {bb[1] or '0.0'})"
    return f"{stat} enters through {unit.t(node)[:40]!r}, not affinely"


@register
class TritonOnlineSoftmax(_Fuse):
    """Merge a max pass and a sum-of-exp pass into one online pass."""

    id = "triton.online_softmax"
    languages = TRITON_LANGS
    changes_numerics = True
    summary = "online softmax: merge the max loop and the sum-of-exp loop into one pass with rescaling"
    first_ops = ("max",)
    new_names = ("htam_m_prev",)

    def refusal_fact(self, unit: TritonUnit, kernel: Kernel, reason: str) -> str | None:
        """A kernel that already keeps its max and sum online is refused as such
        (:meth:`~htam_core.source.analysis.KernelFacts.already_online`), not by the missing max pass."""
        return unit.facts.already_online()

    def propose_unit(self, unit: TritonUnit, model: SourceModel, kernel: Kernel,
                     profile: Profile | None) -> list[Candidate] | NotApplicable:
        """One candidate: the fused loop with the online rescaling."""
        tp = self.common(unit)
        if isinstance(tp, str):
            return self.not_applicable(tp)
        m, s, stat = tp.first.name, tp.second.name, tp.stat
        inc = _increment(unit, tp.second)
        if isinstance(inc, str):
            return self.not_applicable(inc)
        stmt, expr = inc
        exps = [c for c in syn.py_calls(expr) if unit.callee(c) in ("tl.exp", "tl.math.exp")
                and stat in _ids(unit, c)]
        if len(exps) != 1 or [i for i in syn.identifiers(expr) if unit.t(i) == stat].__len__() != 1:
            return self.not_applicable(f"the sum of {s} does not read {stat} once, inside one tl.exp")
        arg = [x for x in exps[0].child_by_field_name("arguments").named_children][0]
        if not syn.is_binary_operator(arg) or unit.t(arg.child_by_field_name("operator")) != "-" \
                or unit.t(arg.child_by_field_name("right")) != stat:
            return self.not_applicable(f"the exponent is not `x - {stat}`")
        why = _linear_path(unit, expr, exps[0], {stat, m})
        if why:
            return self.not_applicable(f"the sum of {s} is not linear in tl.exp(x - {stat}): {why}")
        lane_max = tp.first.init_text is not None and unit.names.canonical(tp.first.init_text).startswith("tl.")
        if lane_max and unit.calls(expr, "tl.sum"):
            return self.not_applicable(f"{m} is a per-lane max but the sum of {s} reduces each tile; "
                                       "their shapes do not match")
        max_stmt = _stmt_of(unit, tp.first.span)
        if max_stmt is None or max_stmt.parent != tp.a_node.child_by_field_name("body"):
            return self.not_applicable(f"the update of {m} is not a statement of its own")
        init = self.init_before(unit, tp, tp.second)
        if isinstance(init, str):
            return self.not_applicable(init)
        init_text, move = init
        copied = self.copy_statements(unit, tp, {stmt.start_byte})
        if isinstance(copied, str):
            return self.not_applicable(copied)
        e_new = _splice(unit, expr, {i.start_byte: (i.end_byte, m) for i in syn.identifiers(expr)
                                     if unit.t(i) == stat})
        tl = unit.tl
        update = (f"{s} = {s} * {tl}.where({m} == {_NEG_INF}, 1.0, {tl}.exp(htam_m_prev - {m})) "
                  f"+ {tl}.where({m} == {_NEG_INF}, 0.0, {e_new})")
        after = [] if stat == m else [f"{s} = {s} * {tl}.where({m} == {_NEG_INF}, 0.0, {tl}.exp({m} - {stat}))"]
        inner = syn.indent_of(unit.src, max_stmt.start_byte)
        edits = [unit.insert(syn.line_start(unit.src, max_stmt.start_byte), f"{inner}htam_m_prev = {m}\n")]
        before = [f"{s} = {init_text}"] if move is not None else []
        edits += self.fused_edits(unit, tp, [*copied, update], after, before)
        if move is not None:
            edits.append(move)
        return [self.candidate(
            model, f"merge {kernel.name}'s max loop (line {tp.a.line}) and sum-of-exp loop (line {tp.b.line}) into "
            f"one online pass: {s} is rescaled by exp(old max - new max) as {m} grows", {"max": m, "sum": s}, edits)]


@register
class TritonSinglePassMoments(_Fuse):
    """Merge a mean pass and a squared-deviation pass into one pass of fp32 sums."""

    id = "triton.single_pass_moments"
    languages = TRITON_LANGS
    changes_numerics = True
    summary = "single-pass mean and variance: the squared-deviation loop folded into the mean loop as fp32 sums"
    first_ops = ("sum",)
    new_names = ("htam_q0", "htam_q1", "htam_q2", "htam_p0", "htam_dp")

    def propose_unit(self, unit: TritonUnit, model: SourceModel, kernel: Kernel,
                     profile: Profile | None) -> list[Candidate] | NotApplicable:
        """One candidate: the fused loop with the three sums, combined where the second loop was."""
        tp = self.common(unit)
        if isinstance(tp, str):
            return self.not_applicable(tp)
        q, stat = tp.second.name, tp.stat
        inc = _increment(unit, tp.second)
        if isinstance(inc, str):
            return self.not_applicable(inc)
        stmt, expr = inc
        prods = [n for n in syn.walk(expr) if syn.is_binary_operator(n) and (
            (unit.t(n.child_by_field_name("operator")) == "*"
             and unit.t(n.child_by_field_name("left")) == unit.t(n.child_by_field_name("right")))
            or (unit.t(n.child_by_field_name("operator")) == "**" and unit.t(n.child_by_field_name("right")) == "2"))]
        if len(prods) != 1:
            return self.not_applicable(f"the sum of {q} is not a sum of one square (P * P or P ** 2)")
        prod = prods[0]
        p_node = prod.child_by_field_name("left")
        while syn.is_parenthesized(p_node) and p_node.named_child_count == 1:
            p_node = p_node.named_children[0]
        stmts = self.b_statements(unit, tp)
        pdef = None
        skip = {stmt.start_byte}
        free = {stat}
        if syn.is_identifier(p_node) and stat not in _ids(unit, expr):
            defs = [st for st in stmts if syn.is_expression_statement(st) and st.named_children
                    and syn.is_py_assignment(st.named_children[0])
                    and unit.t(st.named_children[0].child_by_field_name("left")) == unit.t(p_node)
                    and st.start_byte < stmt.start_byte]
            if not defs or stat not in _ids(unit, defs[-1]):
                return self.not_applicable(f"{unit.t(p_node)} in the sum of {q} is not defined from {stat} in the loop")
            pdef = defs[-1]
            name = unit.t(p_node)
            later = [st for st in stmts if st.start_byte > pdef.start_byte and st.start_byte != stmt.start_byte]
            if any(name in _ids(unit, st) for st in later):
                return self.not_applicable(f"{name} is read again after it is centered; cannot drop the centering")
            skip.add(pdef.start_byte)
            free.add(name)
            aff = _affine(unit, pdef.named_children[0].child_by_field_name("right"), stat)
        elif stat in _ids(unit, p_node):
            aff = _affine(unit, p_node, stat)
        else:
            return self.not_applicable(f"the square in the sum of {q} does not read {stat}")
        if isinstance(aff, str):
            return self.not_applicable(f"the deviation is not affine in {stat}: {aff}")
        p0, dp = aff
        if dp is None:
            return self.not_applicable(f"the deviation does not depend on {stat}")
        why = _linear_path(unit, expr, prod, free)
        if why:
            return self.not_applicable(f"the sum of {q} is not linear in the square: {why}")
        if tp.second.init_text is None or tp.second.decl_span is None:
            return self.not_applicable(f"{q} has no initial value")
        decl = unit.node_at(tp.second.decl_span, syn.PY_ASSIGNMENT)
        if decl is None or _ids(unit, decl.child_by_field_name("right")) & (set(tp.ta.writes) | set(tp.between)):
            return self.not_applicable(f"the initial value of {q} depends on the first loop")
        copied = self.copy_statements(unit, tp, skip)
        if isinstance(copied, str):
            return self.not_applicable(copied)
        changed = [unit.t(pdef.named_children[0].child_by_field_name("left"))] if pdef is not None else []
        why = self.later_reads_ok(unit, tp, changed)
        if why:
            return self.not_applicable(why)
        new = [f"htam_p0 = {p0}", f"htam_dp = {dp}"]
        for k, (x, y) in enumerate((("htam_p0", "htam_p0"), ("htam_p0", "htam_dp"), ("htam_dp", "htam_dp"))):
            new.append(f"htam_q{k} += " + _splice(unit, expr, {prod.start_byte: (prod.end_byte, f"({x} * {y})")}))
        plain = all(syn.is_call_or_group(n)
                    for n in _ancestors(prod, expr))
        total = f"htam_q0 + 2.0 * {stat} * htam_q1 + {stat} * {stat} * htam_q2"
        after = [f"{q} = {q} + " + (f"{unit.tl}.maximum({total}, 0.0)" if plain else f"({total})")]
        before = [f"htam_q{k} = {tp.second.init_text}" for k in range(3)]
        # statements that precede the sum in the second loop and are copied must come before the new sums
        edits = self.fused_edits(unit, tp, [*copied, *new], after, before)
        return [self.candidate(
            model, f"fold {kernel.name}'s squared-deviation loop (line {tp.b.line}) into its mean loop (line "
            f"{tp.a.line}): sums of P0^2, P0*D and D^2 in fp32 give sum(({unit.t(p_node)})^2) once {stat} is known",
            {"mean": stat, "sum": q}, edits)]


def _ancestors(node: Node, stop: Node) -> list[Node]:
    """``node``'s ancestors up to and including ``stop``."""
    out: list[Node] = []
    if node == stop:
        return out
    p = node.parent
    while p is not None:
        out.append(p)
        if p == stop:
            break
        p = p.parent
    return out
