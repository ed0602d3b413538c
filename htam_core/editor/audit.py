"""The makeable-actions count: of the code actions the editor lists for a kernel, how many resolve to an edit.

For every kernel of a file, :func:`count_file` ranks the kernel as the editor does before its profile lands (a
:class:`Session`; no profile: the priors and the source facts decide), lists the code actions (:meth:`Session.plan`: only steps
that can be made on the kernel as it is) and then resolves every listed action through the click path
(:meth:`Session.proposal`), counting the ones that give an edit and the *structural* ones among them
(:func:`htam_core.transforms.registry.is_structural`: a launch-parameter, hint-only or math step does not count).
The test of the corpus and ``bench/bench_actions.py`` read these counts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from htam_core.editor.session import Session
from htam_core.source.analysis import Access, KernelFacts, analyze
from htam_core.source.model import Kernel, SourceModel

__all__ = ["KernelCount", "already_fixed", "count_file", "count_kernel", "known_pattern", "structural_refusals"]

#: Collectives that finish a reduction inside a warp (shuffles, ``cg::reduce``, cub's ``BlockReduce::Sum``).
WARP_FINISH = frozenset({"__shfl_down_sync", "__shfl_xor_sync", "__shfl_up_sync", "__shfl_sync",
                         "__reduce_add_sync", "reduce", "Reduce", "Sum"})


@dataclass
class KernelCount:
    """The counts of one kernel.

    Attributes:
        file, kernel, language: where it is.
        pattern: the known pattern the analysis finds (:func:`known_pattern`), or ``None``.
        listed: code actions listed (step ids, best first).
        made: listed actions that resolved to an edit.
        structural: listed actions that resolved and are structural.
        failed: ``[(step id, reason)]`` of listed actions that did not resolve.
        advice: strategies shown as advice (no mechanical transform).
        skipped: ``[(step id, reason)]`` of ranked steps left out because their transform refuses the kernel.
        fixed: for a reduction or softmax kernel already in the fixed form of its pattern (:func:`already_fixed`), the
            facts that show it; ``None`` otherwise.
        refusals: for a kernel with a known pattern and no structural step, ``[(step id, reason)]`` of every
            structural strategy of its language (ranked or not): the transform's refusal, or why a makeable one
            was not listed (its predicate is false, or it ranked below the top N) - which transform to
            generalize next.
        error: why the kernel could not be counted (``None``: counted).
    """

    file: str
    kernel: str
    language: str
    pattern: str | None = None
    listed: list[str] = field(default_factory=list)
    made: list[str] = field(default_factory=list)
    structural: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    refusals: list[tuple[str, str]] = field(default_factory=list)
    fixed: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the counts."""
        return asdict(self)

    def line(self) -> str:
        """One line: ``file:kernel made/listed, structural n, pattern p`` plus the failures."""
        out = (f"{self.file}:{self.kernel} ({self.language}) made {len(self.made)}/{len(self.listed)}, "
               f"structural {len(self.structural)}, pattern {self.pattern or '-'}")
        if self.error:
            out += f"; error: {self.error}"
        for sid, why in self.failed:
            out += f"; FAILED {sid}: {why}"
        for sid, why in self.refusals:
            out += f"; NO STRUCTURAL {sid}: {why}"
        return out


def known_pattern(facts: dict[str, Any]) -> str | None:
    """The known pattern of a kernel from its predicate facts (:func:`htam_core.memory.facts.compute_facts`):
    ``"matmul"``, ``"transpose"``, ``"histogram"`` (data-indexed global atomics), ``"scan"`` (a per-thread prefix over
    the block's segment), ``"softmax"`` (a reduction with
    exp), ``"reduction"`` or ``None``
    (elementwise or not recognized). A kernel with a known pattern should get a structural step."""
    if facts.get("matmul_like"):
        return "matmul"
    if facts.get("transpose_like"):
        return "transpose"
    if facts.get("histogram_like"):
        return "histogram"
    if facts.get("segment_prefix_loop") or facts.get("row_running_scan"):
        return "scan"
    if facts.get("reduction_like") and facts.get("uses_exp"):
        return "softmax"
    if facts.get("reduction_like"):
        return "reduction"
    return None


def already_fixed(facts: KernelFacts) -> str | None:
    """The facts showing that a reduction kernel is already in the fixed form of its pattern, or ``None``.

    A softmax is in its fixed form when a loop already keeps the running max and the rescaled sum online
    (:meth:`~htam_core.source.analysis.KernelFacts.already_online`) and its row reductions run across lanes (a
    Triton program, or a CUDA warp finish); a thread-per-row online softmax is not (warp per row is left).

    The rule: every global read of an input (a pointer the kernel does not write; the output's own
    read-modify-write does not count) inside a loop is a 16-byte vector load (``Access.vector``: ``float4``/``int4``
    casts, or a helper that reinterprets its pointer as one, :func:`htam_core.source.analysis.cuda.
    vector_helpers`) or a read no 16-byte load can widen (one element per warp and row, never two adjacent ones
    per thread: :meth:`~htam_core.source.analysis.KernelFacts.broadcast_reads`), at least one of them a vector
    load, and the partial sums are finished inside a warp (a shuffle, ``cg::reduce``) or through
    atomics into shared memory (privatized, one global atomic per block). Such a kernel has nothing left for
    the vectorize, warp-shuffle or several-elements-per-thread steps; what remains (tuning the split, fusing)
    is not a mechanical step. Coalescing of the vectors themselves is not checked beyond this.
    """
    if facts.online_stats and (facts.triton is not None or any(c in WARP_FINISH for c, _ in facts.collectives)):
        # a softmax in the online form whose row reductions already run across lanes: nothing is left for the
        # online-softmax, warp-per-row or multi-row steps but tuning
        finish = "in the Triton program's tile reductions" if facts.triton is not None else "inside a warp"
        o = facts.online_stats[0]
        return (f"the loop on line {o.line} keeps the running max {o.max} and the sum {o.sum} rescaled to it in one "
                f"pass (online softmax), and its row reductions finish {finish}")
    written = {a.pointer for a in facts.global_accesses() if a.kind != "read"}
    reads = [a for a in facts.global_accesses() if a.kind == "read" and a.loops and a.pointer not in written]
    broadcast = set(facts.broadcast_reads())
    if not any(a.vector for a in reads) or not all(a.vector or a in broadcast for a in reads):
        return None
    warp = [(c, line) for c, line in facts.collectives if c in WARP_FINISH]
    shared_atomic = [line for c, line in facts.collectives if c.startswith("atomic")
                     and any(a.space == "shared" and a.kind == "readwrite" and a.line == line for a in facts.accesses)]
    if not warp and not shared_atomic:
        return None

    def lines(xs: list[Access]) -> str:
        return ", ".join(sorted({f"line {a.line}" for a in xs}, key=lambda s: int(s.split()[1])))

    finish = (f"{warp[0][0]} on line {warp[0][1]}" if warp else f"shared-memory atomics on line {shared_atomic[0]}")
    scalar = [a for a in reads if not a.vector]
    if not scalar:
        return (f"every global read in a loop is a 16-byte vector load ({lines(reads)}); the partial sums finish "
                f"with {finish}")
    return (f"every global read in a loop is a 16-byte vector load ({lines([a for a in reads if a.vector])}) or one "
            f"element per warp and row, never two adjacent ones per thread ({lines(scalar)}); the partial sums "
            f"finish with {finish}")


def count_kernel(session: Session, path: str, model: SourceModel, kernel: Kernel, top: int = 5) -> KernelCount:
    """The :class:`KernelCount` of ``kernel`` of ``model`` (blocking; ``session`` must be warmed up)."""
    from htam_core.memory.facts import compute_facts

    c = KernelCount(path, kernel.name, kernel.language)
    if kernel.incomplete:
        c.error = "incomplete kernel (it does not parse)"
        return c
    facts = compute_facts(kernel.features, kernel.language, None, kernel, model)
    c.pattern = known_pattern(facts)
    p = session.plan(model, kernel, session.analyze(path, kernel, top, model), top)
    c.listed = [s.strategy for s in p.actions]
    c.advice = [s.strategy for s, _ in p.advice]
    c.skipped = [(s.strategy, v.reason or "") for s, v in p.skipped]
    for s in p.actions:
        res = session.proposal(model, kernel, s.strategy, None)
        if res.ok:
            c.made.append(s.strategy)
            if p.verdicts[s.strategy].structural:
                c.structural.append(s.strategy)
        else:
            c.failed.append((s.strategy, res.reason or "no edit"))
    if c.pattern in ("reduction", "softmax") and not c.structural:
        c.fixed = already_fixed(analyze(model, kernel))
    if c.pattern and not c.structural:
        c.refusals = structural_refusals(session, model, kernel, facts, {s.strategy for s in p.actions})
    return c


def structural_refusals(session: Session, model: SourceModel, kernel: Kernel, facts: dict[str, Any],
                        listed: set[str]) -> list[tuple[str, str]]:
    """``[(step id, reason)]`` for every knowledge-base strategy of the kernel's language whose transform is
    structural: the transform's refusal (:func:`htam_core.editor.makeable.check`, cached per kernel version), or,
    for one that makes an edit, ``"makeable; its predicate is false"`` / ``"makeable; ranked below the top N"``
    (blocking: it runs those transforms)."""
    from htam_core.transforms.registry import is_structural

    verdict = session.makeable.computing(model, kernel)
    out: list[tuple[str, str]] = []
    for s in session.memory.kb.strategies:
        if facts["language"] not in s.languages or not is_structural(s.transform) or s.id in listed:
            continue
        v = verdict(s.id)
        if not v.makeable:
            out.append((s.id, v.reason or "the transform made no edit"))
        elif s.applies.evaluate(facts) is False:
            out.append((s.id, f"makeable; its predicate is false ({s.applies.text})"))
        else:
            out.append((s.id, "makeable; ranked below the top N"))
    return out


def count_file(session: Session, path: str, top: int = 5) -> list[KernelCount]:
    """The counts of every kernel of the file ``path`` (blocking). A file that cannot be read is one count with
    its error."""
    from htam_core.source import SourceError, load

    try:
        model = load(path)
    except (SourceError, OSError, UnicodeDecodeError) as exc:
        return [KernelCount(path, "", "", error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)]
    return [count_kernel(session, path, model, k, top) for k in model.kernels]
