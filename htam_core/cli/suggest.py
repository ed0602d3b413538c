"""``htam suggest FILE --kernel NAME``: rank the next optimization steps for one kernel with HTAM.

Loads the file (:func:`htam_core.source.load`), profiles the kernel
(:func:`htam_core.profile.api.profile_kernel`; static when there is no GPU; when profiling fails the
bottleneck is ``unknown`` and a warning says why), ranks with :class:`htam_core.memory.Ranker` over the
memory store and prints the steps. Each step is tried with the rules engine
(:func:`htam_core.transforms.registry.resolve_step`, the editor's code-action path): a step whose transform
refuses this kernel is listed after every step that is not refused (:func:`made_first`, as the editor's code
actions and hover leave refused steps out), with its one-line reason. ``--json`` prints the list of
``{"rank", "direction", "strategy", "score", "parts", "expected_gain", "evidence", "rationale", "transform",
"risk", ..., "makes_edit", "refusal", "advice", "structural", "refused"}`` objects (``makes_edit``: the rules
engine makes a validated edit for it; ``refusal``: why not, else ``null``; ``advice``: it has no mechanical
transform; ``refused``: it has one, which refuses this kernel; ``structural``: its transform is of kind
``"structural"``, see :data:`htam_core.transforms.registry.KINDS`). Only strategies whose preconditions hold
on the kernel's facts (the analysis layer's, e.g. not retuning an autotuned kernel) are ranked.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from htam_core.cli.errors import UsageError, require_source
from htam_core.cli.kernel_arg import add_kernel_argument, resolve_kernel
from htam_core.memory import (
    ABLATIONS,
    MemoryStoreError,
    Ranker,
    load_knowledge,
    open_store,
    state_from_profile,
)
from htam_core.types.profile import Bottleneck, Profile

if TYPE_CHECKING:
    from htam_core.editor.makeable import Verdict
    from htam_core.memory import KnowledgeBase, RankedStep
    from htam_core.source.model import Kernel, SourceModel


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``suggest`` subcommand."""
    p = subparsers.add_parser("suggest", help="rank the next optimization steps for a kernel",
                              description="Profile a kernel and rank the next optimization steps with HTAM "
                                          "(knowledge-base priors plus transition attention over the memory).")
    p.add_argument("file", help="a .cu, .cuh or .py file")
    add_kernel_argument(p, "the kernel's name")
    p.add_argument("--json", action="store_true", help="print a JSON list of ranked steps")
    p.add_argument("--top", type=int, default=5, help="how many steps to print (default 5)")
    p.add_argument("--ablation", choices=ABLATIONS, default=None, help="switch off one part of HTAM")
    p.add_argument("--history", default="", help="strategy ids applied so far, oldest first, comma-separated")
    p.add_argument("--memory", default=None, metavar="PATH", help="memory store file (default: $HTAM_MEMORY or "
                                                                    "the user data dir)")
    p.add_argument("--workspace-memory", default=None, metavar="PATH",
                   help="workspace store overlaying the user store")
    p.add_argument("--static", action="store_true", help="static profile only, even with a GPU")
    p.add_argument("--seed", type=int, default=0, help="seed of the random ablation (default 0)")
    p.add_argument("--why", default=None, metavar="STRATEGY",
                   help="explain one strategy instead of ranking: its applies predicate on this kernel, the facts "
                        "that decide it, and whether the rules engine makes it")
    p.set_defaults(func=run)


def _profile(path: str, name: str, static: bool) -> tuple[Profile, list[str]]:
    """Profile the kernel; on any profiler failure return a static ``unknown`` profile and a warning."""
    from htam_core.profile.api import profile_kernel  # lazily: start-up speed (see htam_core.cli)

    try:
        return profile_kernel(path, name, static=True if static else None), []
    except Exception as exc:  # the profiler's failure must not stop the ranking
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Profile(kernel=name, bottleneck=Bottleneck("unknown")), [
            f"profiling failed ({msg}); bottleneck unknown, ranking from the source only"]


def run(args: argparse.Namespace) -> int:
    """Rank and print. Returns 0.

    Raises:
        UsageError: missing/unsupported file, unknown kernel, unknown history step, bad --top, or an
            unusable memory store (the message says how to fix it).
    """
    from htam_core.editor.ranking import unranked_reason  # lazily: start-up speed (see htam_core.cli)
    from htam_core.runtime.compiler import settle_incomplete
    from htam_core.source import SourceError, load

    require_source(args.file)
    args.kernel = resolve_kernel(args.file, args.kernel, "suggest")
    if args.top < 1:
        raise UsageError("--top must be at least 1")
    try:
        model = settle_incomplete(load(args.file))  # the compiler decides what is incomplete
    except SourceError as exc:
        raise UsageError(str(exc)) from None
    try:
        kernel = model.kernel(args.kernel)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    unranked = unranked_reason(kernel)  # the hover and the code actions rank nothing for it either
    if unranked:
        raise UsageError(f"{unranked}, then run htam suggest again")
    kb = load_knowledge()
    history = [h.strip() for h in args.history.split(",") if h.strip()]
    unknown = [h for h in history if not kb.has_strategy(h)]
    if unknown:
        raise UsageError(f"unknown strategy id(s) in --history: {', '.join(unknown)}; known ids: "
                         f"{', '.join(s.id for s in kb.strategies)}")
    profile, warnings = _profile(args.file, args.kernel, args.static)
    try:
        store = open_store(args.memory, args.workspace_memory, kb=kb)
    except MemoryStoreError as exc:  # the boundary maps the cause to its exit code (3, or 75 when locked)
        raise UsageError(str(exc)) from exc
    with store:
        ranker = Ranker(kb, store, seed=args.seed, ablation=args.ablation)
        steps = ranker.rank(state_from_profile(profile), history, kernel.features, kernel.language, profile,
                            top=len(kb.strategies), kernel=kernel, model=model)
    if args.why:
        return _why(args, kb, profile, model, kernel, steps)
    warnings = list(profile.warnings) + warnings + store.warnings
    steps, verdicts = made_first(steps, lambda sid: _verdict(kb, sid, model, kernel), args.top)
    if args.json:
        return _print_json(steps, verdicts, warnings)
    print(f"{kernel.identity} ({kernel.language}, lines {kernel.start_line}-{kernel.end_line}): "
          f"{profile.mode} profile, bottleneck {profile.bottleneck.cls}")
    for w in warnings:
        print(f"  warning: {w}")
    if history:
        print(f"  history: {' -> '.join(history)}")
    if not steps:
        print("no applicable strategy in the knowledge base")
    if (first := first_makeable_line(steps, verdicts)) is not None:
        print(first)
    for s, v in zip(steps, verdicts, strict=True):
        gain = "n/a" if s.expected_gain is None else f"{s.expected_gain * 100:+.0f}%"
        print(f"{s.rank}. [{s.direction_name}] {s.title} ({s.strategy})  score {s.score:.3f}  "
              f"(prior {s.parts['prior']:.3f}, transition {s.parts['transition']:+.3f}, "
              f"exploration {s.parts['exploration']:.3f})  expected gain {gain}")
        print(f"   why: {s.rationale}")
        print(f"   evidence: {s.evidence}")
        extra = [f"transform {s.transform}" if s.transform else "no mechanical transform (LLM)"]
        if s.risk:
            extra.append(f"risk: {s.risk}")
        print("   " + "; ".join(extra))
        if v.makeable:
            print("   makeable: the rules engine makes a validated edit"
                  + (" (structural)" if v.structural else ""))
        elif refused(v):
            print(f"   refused here: {first_line(v.reason or 'the transform made no edit')}")
        else:
            print(f"   not made by the rules engine: {v.reason}")
    return 0


def _print_json(steps: list, verdicts: list, warnings: list[str]) -> int:
    """``htam suggest --json``: each ranked step with the rules engine's verdict on stdout, the warnings on
    stderr. Returns 0."""
    json.dump([{**s.to_json(), "makes_edit": v.makeable, "refusal": v.reason, "advice": v.advice,
                "structural": v.structural, "refused": refused(v)}
               for s, v in zip(steps, verdicts, strict=True)], sys.stdout, indent=2)
    sys.stdout.write("\n")
    for w in warnings:
        print(f"htam: warning: {w}", file=sys.stderr)
    return 0


def refused(v: Verdict) -> bool:
    """The rules engine refuses the step on this kernel: it has a mechanical transform, which made no edit (a step
    with no transform is advice, written by a model or a hand, not a refusal)."""
    return not v.makeable and not v.advice


def first_line(reason: str) -> str:
    """A refusal on one line (its first line, stripped)."""
    return reason.strip().splitlines()[0] if reason.strip() else reason


def made_first(steps: list[RankedStep], verdict: Callable[[str], Verdict], top: int
               ) -> tuple[list[RankedStep], list[Verdict]]:
    """The ``top`` steps ``htam suggest`` lists, and their verdicts: the ranked ``steps`` (every applicable strategy,
    best score first) with the ones the rules engine refuses on this kernel moved below every step it does not
    refuse, so the list never leads with a refused step when another exists; refused ones fill the list's end only
    when fewer than ``top`` others apply (each printed with its reason). The positions are renumbered (``rank``);
    the scores stay.

    ``verdict(strategy_id)`` is asked lazily in score order, only until ``top`` steps that are not refused are
    found (each verdict runs a transform)."""
    kept: list[tuple[RankedStep, Verdict]] = []
    skipped: list[tuple[RankedStep, Verdict]] = []
    for s in steps:
        if len(kept) >= top:
            break
        v = verdict(s.strategy)
        (skipped if refused(v) else kept).append((s, v))
    listed = (kept + skipped)[:top]
    return ([dataclasses.replace(s, rank=i) for i, (s, _) in enumerate(listed, start=1)],
            [v for _, v in listed])


def _place(rank: int | None, top: int) -> str:
    """Where a ranked strategy stands: ``rank`` (1-based, ``None`` when the ranking left it out) against ``top``
    (the number of steps ``htam suggest`` lists)."""
    if rank is None:
        return "so it may be ranked, but the ranking left it out here"
    if rank <= top:
        return f"so it is ranked number {rank} (listed)"
    return f"so it is ranked number {rank} (run with --top {rank} to see it)"


def first_makeable_line(steps: list[RankedStep], verdicts: list[Verdict]) -> str | None:
    """The line that points at the first listed step the rules engine makes, when the top-ranked one is not
    (refused steps sit below the others, but the ones only a model or a hand can write keep their score's place,
    so the first step ``htam optimize --engine rules`` takes can sit lower in the list); ``None`` when
    the first step is makeable or nothing is listed. Names how many of the listed steps it makes none of."""
    if not steps or verdicts[0].makeable:
        return None
    k = next((i for i, v in enumerate(verdicts) if v.makeable), None)
    if k is None:
        return (f"  the rules engine makes none of these {len(steps)} steps (each says why below; a larger --top "
                "lists more)")
    s = steps[k]
    return (f"  first step the rules engine makes: {s.rank}. {s.title} ({s.strategy}); the ones above it are "
            "refused here or need a model or a hand (each says why)")


def _verdict(kb: KnowledgeBase, strategy: str, model: SourceModel, kernel: Kernel) -> Verdict:
    """Whether the rules engine makes ``strategy`` for ``kernel``, and why not (the editor's check and sentence,
    :func:`htam_core.editor.makeable.check`)."""
    # start-up cost: loads psutil and 23 more project modules, only when this runs
    from htam_core.editor.makeable import check

    return check(kb.strategy(strategy), model, kernel, llm_hint="Run `htam optimize --engine llm`")


def _why(args: argparse.Namespace, kb: KnowledgeBase, profile: Profile, model: SourceModel, kernel: Kernel,
         steps: list[RankedStep]) -> int:
    """``--why STRATEGY``: print whether the strategy's ``applies`` predicate holds on the kernel's facts (the
    ranker's rule: a strategy is ranked unless it is definitely false, or not for the kernel's language), the facts
    that decide it (:meth:`~htam_core.memory.predicates.Predicate.because`), its place in the ranking ``steps``
    (every ranked strategy, the list ``htam suggest`` prints the top ``--top`` of), and the rules engine's verdict on
    it. Returns 0.

    Raises:
        UsageError: an unknown strategy id (the message lists the known ones).
    """
    from htam_core.memory.facts import compute_facts  # lazily: start-up speed (see htam_core.cli)

    if not kb.has_strategy(args.why):
        raise UsageError(f"unknown strategy id for --why: {args.why}; known ids: "
                         f"{', '.join(s.id for s in kb.strategies)}")
    s = kb.strategy(args.why)
    facts = compute_facts(kernel.features, kernel.language, profile, kernel, model)
    if facts["language"] in s.languages:
        value, because = s.applies.evaluate(facts), s.applies.because(facts)
    else:
        value, because = False, [f"language = {facts['language']!r}, not one of {', '.join(s.languages)}"]
    rank = next((r.rank for r in steps if r.strategy == s.id), None)
    v = _verdict(kb, s.id, model, kernel)
    made = "makes a validated edit" if v.makeable else f"does not make it: {v.reason}"
    if args.json:
        json.dump({"strategy": s.id, "applies": s.applies.text, "value": value, "ranked": value is not False,
                   "rank": rank,
                   "because": because, "makes_edit": v.makeable, "refusal": v.reason}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    word = {True: "true", False: "false", None: "unknown"}[value]
    listed = "so it is not ranked" if value is False else _place(rank, args.top)
    print(f"{s.id} on {kernel.name}: applies = \"{s.applies.text}\" is {word}, {listed}: {'; '.join(because)}")
    print(f"  rules engine: {made}")
    return 0
