"""Code actions on a kernel (kind ``refactor.rewrite.htam``) and their lazy resolution.

* The top N ranked steps that can be made on the kernel as it is now (N = ``htam.topN``; checked once per kernel
  version, :mod:`htam_core.editor.makeable`; a strategy with no mechanical transform is advice in the hover, and
  an action only with the LLM engine), titled ``HTAM 1 · Memory access → vectorize loads (float4) ·
  +35% (7/9)`` (``· prior`` without statistics). ``codeAction/resolve`` returns the step's proposal
  (:mod:`htam_core.editor.proposals`: the rules engine's was made when the list was; the LLM writes its own on the
  first resolve, with work-done progress); each action carries the command ``htam.recordApplied``.
  A step that cannot be made becomes a ``window/showMessage`` and an action with neither edit nor command.
* "Create a profiling harness for this kernel" (kind ``refactor.rewrite.htam.harness``) when the harness
  finder has none: it writes the filled-in template into ``htam.toml`` next to the file.
* "Save the inferred harness to htam.toml" (same kind) when the harness was inferred (from ``__main__``, a
  test or ``main()``): it appends the fully filled-in table as a NEW ``[kernel.<name>]`` table, creating
  ``htam.toml`` when missing. It is not offered when that ``htam.toml`` already has a table of this name or
  does not parse (:func:`htam_core.harness.status.saveable_table`): an existing section is never rewritten. The finder
  runs in a helper process (:mod:`htam_core.editor.harness`), started by the first hover or code-action request on
  the kernel; a list requested before it answers (more than :data:`HARNESS_WAIT_S`) leaves the action out and a
  later request offers it.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from htam_core.editor import (
    HarnessStatus,
    Kernel,
    Proposal,
    SourceModel,
    Verdict,
    content_hash,
    render,
    table_header,
)
from htam_server import convert
from htam_server.documents import OpenDocument
from htam_server.progress import WorkProgress
from htam_server.requests import HarnessData, RecordArgs, StepData, action_data, unstructure

if TYPE_CHECKING:
    from htam_server.server import HtamLanguageServer

KIND_STEP = "refactor.rewrite.htam"
KIND_HARNESS = "refactor.rewrite.htam.harness"
TITLE_CREATE = "Create a profiling harness for this kernel"
TITLE_SAVE = "Save the inferred harness to htam.toml"

#: How long a code-action list waits for a running harness check before answering without that action (s).
HARNESS_WAIT_S = 0.02


def _wanted(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == o or kind.startswith(o + ".") for o in only)


def cached_status(ls: HtamLanguageServer, od: OpenDocument, kernel: Kernel) -> HarnessStatus | None:
    """The kernel's harness status when it is known (never checks)."""
    return ls.session.harness.cached(od.path, kernel.key)[1] if od.path is not None else None


def harness_check(ls: HtamLanguageServer, od: OpenDocument, kernel: Kernel) -> asyncio.Future | None:
    """Start (once) the background harness check of one kernel; ``None`` when the answer is cached or the file is
    not saved. Called by hover and code actions, so that the check runs off the event loop, one kernel at a time,
    and the code-action list usually finds it done."""
    if od.path is None:
        return None
    # the saved file is parsed in the helper process; the model travels only for unsaved text (pickling a
    # 3,000-line model holds the GIL for a long time and stalls the event loop)
    model = None if od.on_disk() else od.snapshot_model
    fut = ls.session.harness.start(od.path, kernel.key, model)
    return asyncio.wrap_future(fut) if fut is not None else None


async def code_actions(ls: HtamLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    """The actions for the kernel at ``params.range.start``."""
    od = ls.docs.get(params.text_document.uri)
    only = params.context.only if params.context is not None else None
    if od is None or (only and not (_wanted(KIND_STEP, only) or _wanted(KIND_HARNESS, only))):
        return None
    kernel = (await ls.locate(od, params.range.start)).kernel
    if kernel is None:
        return None
    out = await _step_actions(ls, od, kernel) if _wanted(KIND_STEP, only) else []
    if _wanted(KIND_HARNESS, only) and od.path is not None:
        out += await _harness_actions(ls, od, kernel)
    if not convert.supports_resolve(ls):  # older clients: compute edits now, drop what cannot be made
        resolved = [await resolve(ls, a, quiet=True) for a in out]
        out = [a for a in resolved if a.edit is not None]
    return out


async def _step_actions(ls: HtamLanguageServer, od: OpenDocument, kernel: Kernel) -> list[types.CodeAction]:
    """The ranked steps that can be made (the check makes their proposals: resolve returns them). A step is a
    ranked step of the memory (``strategy``, ``evidence``, and what :func:`render.action_title` reads)."""
    a = await ls.analysis(od, kernel, hover=False)  # the ranking the hover reads too
    p = await ls.plan(od, kernel, a)  # only steps that can be made; their verdicts hold the proposals
    return [_step_action(od, kernel, step, i, p.verdicts.get(step.strategy)) for i, step in enumerate(p.actions, 1)]


async def _harness_actions(ls: HtamLanguageServer, od: OpenDocument, kernel: Kernel) -> list[types.CodeAction]:
    """*Create a profiling harness* (no harness: the template) or *Save the inferred harness to htam.toml*
    (an inferred one that may be saved: :func:`htam_core.harness.status.saveable_table`)."""
    task = harness_check(ls, od, kernel)
    if task is not None:  # not known yet: wait briefly, else offer it in a later request
        await asyncio.wait({task}, timeout=HARNESS_WAIT_S)
    st = cached_status(ls, od, kernel)
    if st is None or not st.spec_path or not (convert.supports_create(ls) or os.path.exists(st.spec_path)):
        return []
    if st.snippet:
        data = unstructure(HarnessData(od.uri, kernel.key, "harness"))
        return [types.CodeAction(title=TITLE_CREATE, kind=KIND_HARNESS, data=data)]
    if st.save_text:
        data = unstructure(HarnessData(od.uri, kernel.key, "save-harness"))
        return [types.CodeAction(title=TITLE_SAVE, kind=KIND_HARNESS, data=data)]
    return []


def _step_action(od: OpenDocument, kernel: Kernel, step: Any, position: int, verdict: Verdict | None = None
                 ) -> types.CodeAction:
    data = StepData(od.uri, kernel.key, step.strategy, step.evidence)
    rec = RecordArgs(od.uri, step.strategy, kernel.key)
    note = verdict.proposal.title_note if verdict is not None and verdict.proposal is not None else ""
    return types.CodeAction(title=render.action_title(step, position, note), kind=KIND_STEP, data=unstructure(data),
                            command=types.Command(title="HTAM: record applied step", command="htam.recordApplied",
                                                  arguments=[unstructure(rec)]))


def _no_edit(ls: HtamLanguageServer, action: types.CodeAction, reason: str, quiet: bool) -> types.CodeAction:
    if not quiet:
        ls.show(f"HTAM: {reason}", types.MessageType.Warning)
    action.edit = None
    action.command = None
    return action


async def resolve(ls: HtamLanguageServer, action: types.CodeAction, quiet: bool = False) -> types.CodeAction:
    """Give the action its edit (off the event loop). Never returns a broken edit: a step that cannot be made
    comes back with neither edit nor command, and the reason is shown."""
    data = action_data(action.data)
    if data is None:
        return _no_edit(ls, action, "this action's data names no HTAM step or harness; ask for the actions again",
                        quiet)
    od = ls.docs.get(data.uri)
    if od is None:
        return _no_edit(ls, action, "the document is no longer open", quiet)
    model = await ls.synced_model(od)
    kernel = od.kernel_named(data.kernel, model)
    if kernel is None:
        return _no_edit(ls, action, f"kernel {data.kernel!r} is no longer in the file", quiet)
    if isinstance(data, HarnessData):
        return await _resolve_harness(ls, action, od, kernel, quiet, save=data.type == "save-harness")
    return await _resolve_step(ls, action, od, model, kernel, data, quiet)


async def _propose(ls: HtamLanguageServer, title: str, *args: object) -> Proposal:
    """:meth:`Session.proposal` in a thread, with work-done progress while the LLM writes it."""
    progress = WorkProgress(ls, f"HTAM: writing “{title}” with the LLM") if ls.session.engine == "llm" else None
    if progress is not None:
        await progress.begin("waiting for the model…")
    try:
        return await asyncio.to_thread(ls.session.proposal, *args)
    finally:
        if progress is not None:
            progress.end()


async def _resolve_step(ls: HtamLanguageServer, action: types.CodeAction, od: OpenDocument, model: SourceModel,
                        kernel: Kernel, data: StepData, quiet: bool) -> types.CodeAction:
    await ls.ensure_ready()
    version, view = od.version, ls.session.profile_view(od.path or od.uri, kernel)
    res = await _propose(ls, action.title, model, kernel, data.step, view.profile, data.evidence)
    if not res.ok:
        return _no_edit(ls, action, f"cannot make “{action.title}”: {res.reason}", quiet)
    if od.text != model.text or od.version != version:
        return _no_edit(ls, action, "the document changed while the edit was computed; ask for the actions "
                                    "again", quiet)
    action.edit = convert.workspace_edit(ls, od, res.edits)
    rec = RecordArgs(od.uri, data.step, kernel.key, content_hash(kernel), res.description)
    action.command = types.Command(title="HTAM: record applied step", command="htam.recordApplied",
                                   arguments=[unstructure(rec)])
    return action


async def _resolve_harness(ls: HtamLanguageServer, action: types.CodeAction, od: OpenDocument, kernel: Kernel,
                           quiet: bool, save: bool) -> types.CodeAction:
    st = await asyncio.to_thread(ls.session.harness.status, od.path, kernel.key, await ls.synced_model(od))
    text = (st.save_text if save else st.snippet) if st is not None else None
    if st is None or not text or not st.spec_path:
        why = "the harness finder did not answer; try again" if st is None else (
            f"{kernel.key} already has a harness ({st.line})" if not save else
            f"the inferred harness of {kernel.key} cannot be saved now ({st.line})")
        return _no_edit(ls, action, why, quiet)
    action.edit = convert.append_edit(ls, st.spec_path, text)
    if not quiet:
        ls.show(f"HTAM: the inferred harness of {kernel.key} goes into {st.spec_path} as a new {table_header(kernel.key)} "
                "table: adjust it there; it now wins over inference" if save else
                f"HTAM: the harness template for {kernel.key} goes into {st.spec_path}: check the guessed shapes, "
                "write the reference, then profile again", types.MessageType.Info)
    return action
