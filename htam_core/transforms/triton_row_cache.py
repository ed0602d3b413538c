"""Keep the row in registers between two passes of a Triton row kernel when it fits one tile
(``triton.row_in_registers``).

A row kernel that walks its row twice with the same ``for off in range(0, N, BLOCK)`` loop (statistics, then
normalize and store) loads the row from memory twice. When the row fits one tile (``N <= BLOCK``) both loops run
once, and the second one's loads of what the first one already loaded can be dropped::

    if (N > 0) & (N <= BLOCK):   # the row fits one tile: one load, kept in registers
        off = 0
        <first loop's body>
        <the statements between the loops>
        <second loop's body without the loads the first body already made>
    else:
        <the two loops as they were>

A load is dropped when its whole statement (``v = tl.load(x_row + cols).to(tl.float32)``) is written the same
in both bodies, under the same branch conditions (a keyword argument given through a local, ``mask=m`` with ``m =
cols < N``, compares as its value), and its target is assigned nowhere else that can run from that statement in
the first body up to it in the second; a load under a different mask or ``other`` stays.
The rows longer than a tile take the original loops unchanged. Facts (the loops, their headers and bodies) come
from the analysis layer; refusals: fewer than two top-level loops with the same ``range(0, N, BLOCK)`` header,
a step that is not a ``tl.constexpr`` parameter, no load shared by the two bodies.

Idea source: the "keep the row on chip" fusion of the Triton layer-norm and softmax tutorials (a row that fits
one block is loaded once); Apex/PyTorch persistent layer-norm kernels.
"""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.nodes import Node
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._triton import TritonTransform, TritonUnit
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.registry import register
from htam_core.transforms.triton_launch import TRITON_LANGS
from htam_core.types.profile import Profile


def _norm(text: str) -> str:
    return " ".join(text.split())


def _statements(unit: TritonUnit, node: Node) -> list[tuple[Node, tuple[str, ...]]]:
    """Every simple statement under block ``node`` with the branch path that guards it (``("if EVEN_N:then",)``,
    ``("if EVEN_N:else",)``; empty directly in ``node``): two statements with the same path run under the same
    conditions. Statements under a loop or ``with`` are left out."""
    out: list[tuple[Node, tuple[str, ...]]] = []

    def walk(block: Node, path: tuple[str, ...]) -> None:
        for st in block.named_children:
            if syn.is_expression_statement(st):
                out.append((st, path))
            elif syn.is_if(st):
                cond = f"if {_norm(unit.t(st.child_by_field_name('condition')))}"
                body = st.child_by_field_name("consequence")
                if body is not None:
                    walk(body, (*path, f"{cond}:then"))
                for alt in st.children_by_field_name("alternative"):
                    inner = next((c for c in alt.named_children if syn.is_py_block(c)), None)
                    tag = "else" if syn.is_else_clause(alt) else \
                        f"elif {_norm(unit.t(alt.child_by_field_name('condition')))}"
                    if inner is not None:
                        walk(inner, (*path, f"{cond}:{tag}"))

    walk(node, ())
    return out


def _exclusive(p: tuple[str, ...], q: tuple[str, ...]) -> bool:
    """True when paths ``p`` and ``q`` take different branches of the same ``if`` (never both run)."""
    for x, y in zip(p, q, strict=False):
        if x != y:
            return x.rsplit(":", 1)[0] == y.rsplit(":", 1)[0]
    return False


def _assigned(unit: TritonUnit, st: Node) -> str | None:
    """The name a statement assigns (plain or augmented), else ``None``."""
    asg = st.named_children[0] if st.named_children else None
    if asg is None or not syn.is_any_py_assignment(asg):
        return None
    left = asg.child_by_field_name("left")
    return unit.t(left) if left is not None and syn.is_identifier(left) else None


def _target(unit: TritonUnit, st: Node) -> str | None:
    """``name`` of a statement ``name = tl.load(...)...``; ``None`` for anything else."""
    asg = st.named_children[0] if st.named_children else None
    if asg is None or not syn.is_py_assignment(asg):
        return None
    left, right = asg.child_by_field_name("left"), asg.child_by_field_name("right")
    if left is None or not syn.is_identifier(left) or right is None or not unit.calls(right, "tl.load"):
        return None
    return unit.t(left)


def _key(unit: TritonUnit, st: Node, path: tuple[str, ...], sts: list[tuple[Node, tuple[str, ...]]]) -> str:
    """Statement ``st``'s text, whitespace-normalized, with each keyword argument given by a name (``mask=m``)
    written as that name's value when the same body assigns it once, earlier, on ``st``'s path (``m = cols <
    N``): the same load spelled through a local mask compares equal."""
    text = unit.src[st.start_byte:st.end_byte]
    cuts: list[tuple[int, int, bytes]] = []
    for kw in syn.keyword_arguments(st):
        val = kw.child_by_field_name("value")
        if val is None or not syn.is_identifier(val):
            continue
        defs = [x for x, p in sts if _assigned(unit, x) == unit.t(val)]
        if len(defs) != 1 or defs[0].start_byte > st.start_byte:
            continue
        dpath = next(p for x, p in sts if x == defs[0])
        asg = defs[0].named_children[0]
        if dpath != path[:len(dpath)] or not syn.is_py_assignment(asg):
            continue
        cuts.append((val.start_byte - st.start_byte, val.end_byte - st.start_byte,
                     unit.src[asg.child_by_field_name("right").start_byte:asg.child_by_field_name("right").end_byte]))
    out = bytearray(text)
    for a, b, new in sorted(cuts, key=lambda c: -c[0]):
        out[a:b] = new
    return _norm(out.decode())


def _indent(text: str, by: str) -> str:
    return "\n".join(by + ln if ln.strip() else ln for ln in text.split("\n"))


@register
class TritonRowInRegisters(TritonTransform):
    """A one-tile fast path that loads the row once for two-pass Triton row kernels."""

    id = "triton.row_in_registers"
    languages = TRITON_LANGS
    summary = "rows that fit one tile are loaded once and kept in registers between the two passes"

    def propose_unit(self, unit: TritonUnit, model: SourceModel, kernel: Kernel,
                     profile: Profile | None) -> list[Candidate] | NotApplicable:
        """One candidate, or the reason there is no pair of passes whose second re-loads the first's row."""
        tf = unit.facts.triton
        if tf is None:
            return self.not_applicable(f"{kernel.name} has no Triton facts")
        loops = list(unit.facts.row_tile_loops())
        by_id = {t.loop: t for t in tf.loops}
        whys: list[str] = []
        for i, (a, b) in enumerate(zip(loops, loops[1:], strict=False)):
            if a.kind != "range" or b.kind != "range":
                whys.append(f"the loops over the row's tiles on lines {a.line} and {b.line} count tiles with "
                            f"tl.{'static_range' if 'static_range' in (a.kind, b.kind) else a.kind}; the one-tile "
                            "path is written for `range(0, N, BLOCK)` loops only")
                continue
            ta, tb = by_id.get(a.id), by_id.get(b.id)
            if ta is None or tb is None or ta.header != tb.header:
                whys.append(f"the loops on lines {a.line} and {b.line} walk different ranges")
                continue
            an, bn = unit.node_at(a.span, syn.FOR_LOOP), unit.node_at(b.span, syn.FOR_LOOP)
            if an is None or bn is None or an.parent != bn.parent:
                continue
            rng = an.child_by_field_name("right")
            args = [c for c in (rng.child_by_field_name("arguments").named_children
                                if rng is not None and rng.child_by_field_name("arguments") is not None else [])]
            if len(args) != 3 or unit.t(args[0]) != "0" or not syn.is_identifier(args[1]):
                whys.append(f"the loop on line {a.line} is not `range(0, N, BLOCK)`")
                continue
            n, block = unit.t(args[1]), unit.t(args[2])
            if block not in kernel.constexpr_params and not unit.is_block_param(block):
                whys.append(f"the step {block} of the loop on line {a.line} is not a tl.constexpr block size")
                continue
            var = unit.t(an.child_by_field_name("left"))
            abody, bbody = an.child_by_field_name("body"), bn.child_by_field_name("body")
            a_sts, b_sts = _statements(unit, abody), _statements(unit, bbody)
            firsts = {(_key(unit, s, d, a_sts), d): (s, d) for s, d in a_sts if _target(unit, s)}
            between = [x for x in syn.any_py_assignments(unit.body)
                       if an.end_byte <= x.start_byte < bn.start_byte]
            dropped: list[Node] = []
            for s, d in b_sts:
                name = _target(unit, s)
                hit = firsts.get((_key(unit, s, d, b_sts), d)) if name else None
                if hit is None:
                    continue
                first = hit[0]
                # the name must hold the first body's value until here: no other assignment that can run between
                # (one in the other branch of the same `if` never runs with these two)
                later_a = [x for x, p in a_sts if x.start_byte > first.start_byte and _assigned(unit, x) == name
                           and not _exclusive(p, d)]
                earlier_b = [x for x, p in b_sts if x.start_byte < s.start_byte and _assigned(unit, x) == name
                             and not _exclusive(p, d)]
                mid = [x for x in between if unit.t(x.child_by_field_name("left")) == name]
                if not (later_a or earlier_b or mid):
                    dropped.append(s)
            if not dropped:
                whys.append(f"the loop on line {b.line} loads nothing the loop on line {a.line} loaded the same way")
                continue
            return [self._candidate(unit, model, kernel, an, bn, n, block, var, dropped, i, [lp.line for lp in loops])]
        if not whys:
            return self.not_applicable(f"{kernel.name} has {len(loops)} top-level loop(s) over the row's tiles; two passes "
                                       "over the same column tiles are needed")
        return self.not_applicable(whys[0])

    def _candidate(self, unit: TritonUnit, model: SourceModel, kernel: Kernel, an: Node, bn: Node, n: str,
                   block: str, var: str, dropped: list[Node], first: int, lines_of: list[int]) -> Candidate:
        """The candidate for passes ``first`` and ``first + 1`` (0-based) of the top-level loops on ``lines_of``;
        its comment and description say which passes share the load and which still load their own."""
        src = unit.src
        ind = syn.indent_of(src, an.start_byte)
        region_start = syn.line_start(src, an.start_byte)
        region = src[region_start:bn.end_byte].decode()
        abody, bbody = an.child_by_field_name("body"), bn.child_by_field_name("body")
        a_text = src[syn.line_start(src, abody.start_byte):abody.end_byte].decode()
        between = src[an.end_byte:syn.line_start(src, bn.start_byte)].decode()
        # the second body without the dropped loads (a block left empty gets `pass`)
        cuts = sorted(((syn.line_start(src, s.start_byte), s) for s in dropped), key=lambda x: -x[0])
        bstart = syn.line_start(src, bbody.start_byte)
        b_bytes = bytearray(src[bstart:bbody.end_byte])
        for ls, s in cuts:
            end = src.find(b"\n", s.end_byte)
            end = bbody.end_byte if end == -1 or end > bbody.end_byte else end + 1
            siblings = [c for c in s.parent.named_children if not syn.is_comment(c)] if s.parent is not None else []
            keep = (syn.indent_of(src, s.start_byte) + "pass\n").encode() if len(siblings) == 1 else b""
            b_bytes[ls - bstart:end - bstart] = keep
        b_text = b_bytes.decode().rstrip("\n")
        one = "    "
        names = ", ".join(sorted({_target(unit, s) or "" for s in dropped}))
        total = len(lines_of)
        pa, pb = first + 1, first + 2
        of = f" (of {total})" if total > 2 else ""
        others = [k + 1 for k in range(total) if k not in (first, first + 1)]
        own = (f"; pass{'es' if len(others) > 1 else ''} {', '.join(map(str, others))} still load"
               f"{'' if len(others) > 1 else 's'} {'their' if len(others) > 1 else 'its'} own") if others else ""
        lines = [f"if ({n} > 0) & ({n} <= {block}):  # the row fits one tile: pass {pb}{of} reuses {names} "
                 f"loaded by pass {pa}{own}",
                 f"{ind}{one}{var} = 0",
                 a_text.rstrip("\n")]
        if between.strip():
            lines.append(_indent(between.strip("\n"), one).rstrip())
        lines += [b_text, f"{ind}else:", _indent(region, one).rstrip()]
        new = "\n".join(lines)
        edit = TextEdit(an.start_byte, bn.end_byte, new)
        own_lines = [lines_of[k - 1] for k in others]
        told = (f"; the other pass{'es' if len(others) > 1 else ''} over the row (line"
                f"{'s' if len(others) > 1 else ''} {', '.join(map(str, own_lines))}) still load"
                f"{'' if len(others) > 1 else 's'} {'their' if len(others) > 1 else 'its'} own") if others else ""
        return self.candidate(
            model,
            f"when a row of {kernel.name} fits one {block} tile, the pass on line {lines_of[first + 1]} reuses "
            f"{names} loaded by the pass on line {lines_of[first]} instead of loading it again{told} "
            "(longer rows take the loops as before)",
            {"reused": sorted({_target(unit, s) or "" for s in dropped}), "fast_path": f"{n} <= {block}"},
            [edit],
        )
