"""Code actions on a kernel (kind ``refactor.rewrite.htam``) and their lazy resolution.

* The top N ranked steps that can be made on the kernel as it is now (N = ``htam.topN``; checked once per kernel
  version, :mod:`htam_core.editor.makeable`; a strategy with no mechanical transform is advice in the hover, and
  an action only with the LLM engine), titled ``HTAM 1 · Memory access → vectorize loads (float4) ·
  +35% (7/9)`` (``· prior`` without statistics). The edit is computed in ``codeAction/resolve`` (mechanical
  transform, or the LLM with work-done progress); each action carries the command ``htam.recordApplied``.
  A step that cannot be made becomes a ``window/showMessage`` and an action with neither edit nor command.
* "Create a profiling harness for this kernel" (kind ``refactor.rewrite.htam.harness``) when the harness
  finder has none: it writes the filled-in template into ``htam.toml`` next to the file.
* "Save the inferred harness to htam.toml" (same kind) when the harness was inferred (from ``__main__``, a
  test or ``main()``): it appends the fully filled-in table as a NEW ``[kernel.<name>]`` table, creating
  ``htam.toml`` when missing. It is not offered when that ``htam.toml`` already has a table of this name or
  does not parse (:func:`htam_core.harness.status.saveable_table`): an existing section is never rewritten. The finder runs in a
  helper process, started by the first hover or code-action request on the kernel; a list requested before
  it answers (more than :data:`HARNESS_WAIT_S`) leaves the action out and a later request offers it.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from lsprotocol import types

from htam_core.editor import content_hash, render
from htam_core.harness.status import HarnessStatus
from htam_server.convert import workspace_edit
from htam_server.progress import WorkProgress

KIND_STEP = "refactor.rewrite.htam"
KIND_HARNESS = "refactor.rewrite.htam.harness"
TITLE_CREATE = "Create a profiling harness for this kernel"
TITLE_SAVE = "Save the inferred harness to htam.toml"

#: How long a code-action list waits for a running harness check before answering without that action (s).
HARNESS_WAIT_S = 0.02

_harness_cache: dict[tuple[str, str], tuple[tuple, Any]] = {}


def _wanted(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == o or kind.startswith(o + ".") for o in only)


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _stamp(path: str) -> tuple:
    d, stem = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
    return _mtime(path), _mtime(os.path.join(d, "htam.toml")), _mtime(os.path.join(d, f"{stem}_ref.py"))


def cached_status(path: str, kernel_name: str) -> tuple[bool, HarnessStatus | None]:
    """``(known, status)`` from the cache of :func:`harness_status` (valid while the files are unchanged)."""
    hit = _harness_cache.get((path, kernel_name))
    if hit is not None and hit[0] == _stamp(path):
        return True, hit[1]
    return False, None


def harness_status(path: str, kernel_name: str, model: Any) -> HarnessStatus | None:
    """The kernel's :class:`~htam_core.harness.status.HarnessStatus`, or ``None`` when the helper did not answer.

    Runs the finder in a helper process (:mod:`htam_server.harness_probe`); call it from a thread. Cached
    until the file, its ``htam.toml`` or its ``_ref.py`` sibling change on disk. ``model`` is a snapshot of
    the file's source model (used for the template).
    """
    from htam_server.harness_probe import probe_in_process

    known, st = cached_status(path, kernel_name)
    if known:
        return st
    stamp = _stamp(path)
    st = probe_in_process(path, kernel_name, model)
    if st is not None:
        _harness_cache[(path, kernel_name)] = (stamp, st)
    return st


_harness_tasks: dict[tuple[str, str], asyncio.Future] = {}


def harness_check(od, kernel) -> asyncio.Future | None:
    """Start (once) the background harness check of one kernel; ``None`` when the answer is cached.

    Called by hover and code actions, so that the check (it reads and parses files) runs off the event
    loop, one kernel at a time, and the code-action list usually finds it done.
    """
    if od.path is None:
        return None
    if cached_status(od.path, kernel.name)[0]:
        return None
    key = (od.path, kernel.name)
    task = _harness_tasks.get(key)
    if task is None or task.done():
        # the saved file is parsed in the helper process; the model travels only for unsaved text (pickling a
        # 3,000-line model holds the GIL for a long time and stalls the event loop)
        model = None if od.on_disk() else od.snapshot_model
        task = asyncio.ensure_future(asyncio.to_thread(harness_status, od.path, kernel.name, model))
        _harness_tasks[key] = task
        task.add_done_callback(lambda _t: _harness_tasks.pop(key, None))
    return task


def _supports_create(ls) -> bool:
    ws = ls.client_capabilities.workspace
    we = ws.workspace_edit if ws is not None else None
    # a client that lists the "create" resource operation applies CreateFile inside documentChanges, even when
    # it does not also set documentChanges itself (Neovim 0.11 advertises resourceOperations only)
    return bool(we is not None and we.resource_operations
                and types.ResourceOperationKind.Create in we.resource_operations)


def _supports_resolve(ls) -> bool:
    td = ls.client_capabilities.text_document
    ca = td.code_action if td is not None else None
    rs = ca.resolve_support if ca is not None else None
    return bool(rs is not None and "edit" in rs.properties)


async def code_actions(ls, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    """The actions for the kernel at ``params.range.start``."""
    od = ls.docs.get(params.text_document.uri)
    if od is None:
        return None
    only = params.context.only if params.context is not None else None
    if only and not (_wanted(KIND_STEP, only) or _wanted(KIND_HARNESS, only)):
        return None
    kernel = (await ls.locate(od, params.range.start)).kernel
    if kernel is None:
        return None
    out: list[types.CodeAction] = []
    if _wanted(KIND_STEP, only):
        a = await ls.analysis(od, kernel, hover=False)  # the ranking the hover reads too
        p = await ls.plan(od, kernel, a)
        for i, step in enumerate(p.actions, 1):  # only steps that can be made
            out.append(_step_action(od, kernel, step, i, p.verdicts.get(step.strategy)))
    if _wanted(KIND_HARNESS, only) and od.path is not None:
        out += await _harness_actions(ls, od, kernel)
    if not _supports_resolve(ls):  # older clients: compute edits now, drop what cannot be made
        resolved = [await resolve(ls, a, quiet=True) for a in out]
        out = [a for a in resolved if a.edit is not None]
    return out


async def _harness_actions(ls, od, kernel) -> list[types.CodeAction]:
    """*Create a profiling harness* (no harness: the template) or *Save the inferred harness to htam.toml*
    (an inferred one that may be saved: :func:`htam_core.harness.status.saveable_table`)."""
    task = harness_check(od, kernel)
    if task is not None:  # not known yet: wait briefly, else offer it in a later request
        await asyncio.wait({task}, timeout=HARNESS_WAIT_S)
    st = cached_status(od.path, kernel.name)[1]
    if st is None or not st.spec_path or not (_supports_create(ls) or os.path.exists(st.spec_path)):
        return []
    data = {"uri": od.uri, "kernel": kernel.name}
    if st.snippet:
        return [types.CodeAction(title=TITLE_CREATE, kind=KIND_HARNESS, data={"type": "harness", **data})]
    if st.save_text:
        return [types.CodeAction(title=TITLE_SAVE, kind=KIND_HARNESS, data={"type": "save-harness", **data})]
    return []


def _step_action(od, kernel, step, position: int, verdict=None) -> types.CodeAction:
    data = {"type": "step", "uri": od.uri, "kernel": kernel.name, "step": step.strategy, "evidence": step.evidence}
    rec = {"uri": od.uri, "kernel": kernel.name, "step": step.strategy}
    note = verdict.proposal.title_note if verdict is not None and verdict.proposal is not None else ""
    return types.CodeAction(title=render.action_title(step, position, note), kind=KIND_STEP, data=data,
                            command=types.Command(title="HTAM: record applied step", command="htam.recordApplied",
                                                  arguments=[rec]))


def _no_edit(ls, action: types.CodeAction, reason: str, quiet: bool) -> types.CodeAction:
    if not quiet:
        ls.show(f"HTAM: {reason}", types.MessageType.Warning)
    action.edit = None
    action.command = None
    return action


async def resolve(ls, action: types.CodeAction, quiet: bool = False) -> types.CodeAction:
    """Compute the action's edit (off the event loop). Never returns a broken edit: a step that cannot be
    made comes back with neither edit nor command, and the reason is shown."""
    data = action.data if isinstance(action.data, dict) else {}
    od = ls.docs.get(data.get("uri", ""))
    if od is None:
        return _no_edit(ls, action, "the document is no longer open", quiet)
    version = od.version
    model = await ls.synced_model(od)
    kernel = od.kernel_named(str(data.get("kernel", "")), model)
    if kernel is None:
        return _no_edit(ls, action, f"kernel {data.get('kernel')!r} is no longer in the file", quiet)
    if data.get("type") in ("harness", "save-harness"):
        return await _resolve_harness(ls, action, od, kernel, quiet, save=data["type"] == "save-harness")
    await ls.ensure_ready()
    s = ls.session
    view = s.profile_view(od.path or od.uri, kernel)
    progress = None
    if s.engine == "llm":
        progress = WorkProgress(ls, f"HTAM: writing “{action.title}” with the LLM")
        await progress.begin("waiting for the model…")
    try:
        res = await asyncio.to_thread(s.proposal, model, kernel, str(data.get("step")), view.profile,
                                      str(data.get("evidence", "")))
    finally:
        if progress is not None:
            progress.end()
    if not res.ok:
        return _no_edit(ls, action, f"cannot make “{action.title}”: {res.reason}", quiet)
    if od.text != model.text or od.version != version:
        return _no_edit(ls, action, "the document changed while the edit was computed; ask for the actions "
                                    "again", quiet)
    action.edit = workspace_edit(ls, od, res.edits)
    if action.command is not None and action.command.arguments:
        rec = dict(action.command.arguments[0])
        rec.update(beforeHash=content_hash(kernel), description=res.description)
        action.command.arguments = [rec]
    return action


async def _resolve_harness(ls, action: types.CodeAction, od, kernel, quiet: bool, save: bool) -> types.CodeAction:
    st = await asyncio.to_thread(harness_status, od.path, kernel.name, await ls.synced_model(od))
    text = (st.save_text if save else st.snippet) if st is not None else None
    if st is None or not text or not st.spec_path:
        why = "the harness finder did not answer; try again" if st is None else (
            f"{kernel.name} already has a harness ({st.line})" if not save else
            f"the inferred harness of {kernel.name} cannot be saved now ({st.line})")
        return _no_edit(ls, action, why, quiet)
    action.edit = _append_edit(ls, st.spec_path, text)
    if not quiet:
        ls.show(f"HTAM: the inferred harness of {kernel.name} goes into {st.spec_path} as a new [kernel.{kernel.name}] "
                "table: adjust it there; it now wins over inference" if save else
                f"HTAM: the harness template for {kernel.name} goes into {st.spec_path}: check the guessed shapes, "
                "write the reference, then profile again", types.MessageType.Info)
    return action


def _append_edit(ls, target: str, text: str) -> types.WorkspaceEdit:
    """A workspace edit that appends ``text`` to ``target`` (created when missing); existing text is kept."""
    from pygls.uris import from_fs_path

    uri = from_fs_path(target)
    if not os.path.exists(target):
        pos = types.Position(line=0, character=0)
        return types.WorkspaceEdit(document_changes=[
            types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)),
            types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                                   edits=[types.TextEdit(range=types.Range(start=pos, end=pos), new_text=text)])])
    with open(target, encoding="utf-8", errors="replace") as fh:
        existing = fh.read()
    from htam_core.source.positions import LineIndex

    line, col = LineIndex(existing.encode("utf-8")).to_position(len(existing.encode("utf-8")), ls.encoding())
    prefix = "" if existing.endswith("\n") or not existing else "\n"
    pos = types.Position(line=line, character=col)
    edit = types.TextEdit(range=types.Range(start=pos, end=pos), new_text=prefix + "\n" + text)
    if not _supports_create(ls):
        return types.WorkspaceEdit(changes={uri: [edit]})
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None), edits=[edit])])
