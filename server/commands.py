"""``workspace/executeCommand`` handlers: ``htam.profile``, ``htam.autoOptimize``, ``htam.showMemory``,
``htam.recordApplied``.

Arguments (typed in :mod:`htam_server.requests`): one object ``{"uri": ..., "kernel": NAME}`` or ``{"uri": ...,
"position": {"line", "character"}}`` (``htam.profile`` without kernel or position profiles every kernel of the file;
``htam.autoOptimize`` then needs the file to hold exactly one kernel). ``htam.autoOptimize`` also takes
``"budget"``; ``htam.recordApplied`` takes ``"step"`` and ``"beforeHash"``. An auto-optimize run's task, progress
lines and ending are :mod:`htam_core.editor.autooptimize`'s; its cancellation, :mod:`htam_core.editor.jobs`'.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from htam_core.editor import AppliedStep, Kernel, LineIndex, ProfileEntry, autooptimize
from htam_server import diagnostics
from htam_server.convert import document_edit, text_edits
from htam_server.documents import OpenDocument
from htam_server.progress import WorkProgress
from htam_server.requests import (
    CommandError,
    KernelTarget,
    OptimizeArgs,
    RecordArgs,
    Recorded,
    RecordedOutcome,
    command_args,
    unstructure,
)

if TYPE_CHECKING:
    from htam_server.server import HtamLanguageServer


async def _target(ls: HtamLanguageServer, a: KernelTarget, single: bool) -> tuple[OpenDocument, list[Kernel]]:
    od = ls.docs.get(a.uri)
    if od is None or not od.served():
        raise CommandError(f"{a.uri} is not an open CUDA or Triton file")
    kernels = _select(ls, od, list((await ls.synced_model(od)).kernels), a)
    if not kernels:
        raise CommandError(f"no kernel in {od.uri}")
    if single and len(kernels) > 1:
        raise CommandError(f"{len(kernels)} kernels in the file: put the cursor in one, or pass \"kernel\"")
    return od, kernels


def _select(ls: HtamLanguageServer, od: OpenDocument, kernels: list[Kernel], a: KernelTarget) -> list[Kernel]:
    """The kernels ``a`` names: by key (or every kernel answering to a shared name), else at its position, else
    all."""
    if a.kernel is not None:
        named = [k for k in kernels if k.key == a.kernel] or [k for k in kernels if k.answers_to(a.kernel)]
        if not named:
            raise CommandError(f"no kernel named {a.kernel!r} in {od.uri}")
        return named
    if a.position is not None:
        k = od.kernel_at(a.position, ls.encoding())
        if k is None:
            raise CommandError("the cursor is not inside a kernel")
        return [k]
    return kernels


def _fail(ls: HtamLanguageServer, exc: Exception) -> dict[str, Any]:
    ls.show(f"HTAM: {exc}", types.MessageType.Error)
    return {"error": str(exc)}


def _entry_json(e: ProfileEntry) -> dict[str, Any]:
    p = e.profile
    return {"kernel": e.kernel, "mode": p.mode if p else None, "device": p.device if p else None,
            "timeMs": p.time_ms.median if p and p.time_ms else None,
            "bottleneck": p.bottleneck.cls if p else None, "error": e.error, "stage": e.stage,
            "pending": e.pending}


async def profile(ls: HtamLanguageServer, args: Sequence[Any]) -> dict[str, Any]:
    """Profile the kernel(s) now (GPU when present, else static), with progress; refreshes hover and
    diagnostics. Answers with each kernel's first stage; the later stages (``pending``) follow in the background
    and refresh the hover and diagnostics again. Returns ``{"profiles": [{"kernel", "mode", "device", "timeMs",
    "bottleneck", "error", "stage", "pending"}]}``."""
    try:
        od, kernels = await _target(ls, command_args(args, KernelTarget), single=False)
        if od.path is None:
            raise CommandError("save the file first: profiles run on files on disk")
    except CommandError as exc:
        return _fail(ls, exc)
    await ls.ensure_ready()
    progress = WorkProgress(ls, "HTAM: profiling")
    await progress.begin(f"{kernels[0].key} (1/{len(kernels)})", 0)
    try:
        out = [_entry_json(await _first_stage(ls, od, k, progress, i, len(kernels))) for i, k in enumerate(kernels)]
    finally:
        progress.end()
        ls.send_status()
    return {"profiles": out}


async def _first_stage(ls: HtamLanguageServer, od: OpenDocument, k: Kernel, progress: WorkProgress, i: int,
                       n: int) -> ProfileEntry:
    """Queue a forced profile of ``k`` and wait for its first stage."""
    progress.report(f"{k.key} ({i + 1}/{n})", int(100 * i / n))
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[ProfileEntry] = loop.create_future()

    def done(entry: ProfileEntry) -> None:
        loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(entry))

    ls.profile_in_background(od, k, force=True, on_first=done)
    return await fut


async def show_memory(ls: HtamLanguageServer, args: Sequence[Any]) -> dict[str, Any]:
    """``{"markdown": ...}``: the HTG summary with the strongest transitions."""
    await ls.ensure_ready()
    return {"markdown": await asyncio.to_thread(ls.session.memory_markdown)}


async def record_applied(ls: HtamLanguageServer, args: Sequence[Any]) -> dict[str, Any]:
    """Record that a code action's step was applied (sent by the client right after applying the edit): the kernel
    is re-profiled in the background, the outcome stored in memory, and then ``htam/recorded`` sent. Returns
    ``{"step", "pending"}``."""
    try:
        a = command_args(args, RecordArgs)
        od, (kernel,) = await _target(ls, KernelTarget(a.uri, a.kernel), single=True)
    except CommandError as exc:
        return _fail(ls, exc)
    await ls.ensure_ready()
    done = _when_recorded(ls, od.uri, kernel.key)
    try:
        applied = ls.session.record_applied(od.path or od.uri, kernel, a.step, od.text, od.language,
                                            before_hash=a.before_hash, saved=od.on_disk(), on_done=done)
    except KeyError as exc:
        return _fail(ls, CommandError(str(exc.args[0])))
    ls.send_status()
    return {"step": a.step, "pending": applied.pending}


def _when_recorded(ls: HtamLanguageServer, uri: str, kernel: str) -> Callable[[AppliedStep, Any], None]:
    """The callback (from any thread) that reports a recorded outcome on the event loop (:func:`_recorded`)."""
    return lambda applied, _entry: ls.threadsafe(_recorded, ls, uri, kernel, applied)


def _recorded(ls: HtamLanguageServer, uri: str, kernel: str, applied: AppliedStep) -> None:
    o = applied.outcome
    ls.protocol.notify("htam/recorded", unstructure(Recorded(uri, kernel, applied.step, RecordedOutcome(
        o.status, o.speedup, o.measured, o.correct, o.note))))
    ls.log_info(f"HTAM: recorded {applied.title} on {kernel}: {o.status}"
                + (f", {o.speedup:.2f}× measured" if o.measured and o.speedup else " (not measured)"))
    if ls.session.memory_error:
        ls.show(f"HTAM: {ls.session.memory_error}", types.MessageType.Warning)
    diagnostics.publish(ls, uri)
    ls.send_status()


async def auto_optimize(ls: HtamLanguageServer, args: Sequence[Any]) -> dict[str, Any]:
    """Run the optimize loop on one kernel with progress and cancel, ending with one ``workspace/applyEdit`` of
    the best candidate, a summary and the report path (:mod:`htam_core.editor.autooptimize`). A cancelled run
    applies nothing; a new run on the same kernel cancels the running one."""
    try:
        a = command_args(args, OptimizeArgs)
        od, (kernel,) = await _target(ls, a, single=True)
        if od.path is None:
            raise CommandError("save the file first: auto-optimize works on files on disk")
    except CommandError as exc:
        return _fail(ls, exc)
    await ls.ensure_ready()
    key, msg_id = (od.uri, kernel.key), ls.protocol.msg_id
    cancel = ls.jobs.start(key, msg_id)
    try:
        return await _optimize(ls, od, kernel, a.budget or ls.settings.budget, cancel)
    finally:
        ls.jobs.finish(key, cancel, msg_id)
        ls.send_status()


async def _optimize(ls: HtamLanguageServer, od: OpenDocument, kernel: Kernel, budget: int,
                    cancel: threading.Event) -> dict[str, Any]:
    """One run with its progress bar, then its ending (:func:`_end`)."""
    progress = WorkProgress(ls, f"HTAM: auto-optimizing {kernel.key}", cancellable=True)
    progress.cancel = cancel
    ls.send_status()
    await progress.begin(f"0/{budget}", 0)
    text0, version0, st = od.text, od.version, ls.settings
    task = autooptimize.make_task(ls.session, od.path or "", kernel.key, budget, text0, static=st.static,
                                  gpu_index=st.gpu_index)
    try:
        result = await asyncio.to_thread(autooptimize.run, task, lambda ev: ls.threadsafe(
            progress.report, *autooptimize.progress_line(ev)), cancel)
    except Exception as exc:  # noqa: BLE001 - the loop's failure is reported, never raised into the client
        progress.end("failed")
        return _fail(ls, CommandError(f"auto-optimize of {kernel.key} failed: {exc}"))
    ending = autooptimize.conclude(result, kernel.key, text0, cancelled=cancel.is_set(),
                                   doc_changed=od.text != text0 or od.version != version0)
    progress.end(ending.progress)
    return await _end(ls, od, version0, text0, result, ending)


async def _end(ls: HtamLanguageServer, od: OpenDocument, version0: int, text0: str, result: Any,
               ending: autooptimize.Ending) -> dict[str, Any]:
    """Apply the ending's edit (one ``workspace/applyEdit`` at the start version), then show its message."""
    if ending.edit is not None:
        idx = LineIndex(text0.encode("utf-8", errors="surrogatepass"))
        we = document_edit(ls, od.uri, version0, text_edits(idx, [ending.edit], ls.encoding()))
        res = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
            edit=we, label=f"HTAM auto-optimize {ending.reply['kernel']}"))
        ending = autooptimize.after_apply(ending, result, applied=bool(res.applied), failure=res.failure_reason)
        if res.applied:  # the steps that made it are now the file's (its history and ranking prefix)
            await asyncio.to_thread(ls.session.adopt_optimized, result)
    ls.show(ending.message, types.MessageType.Warning if ending.warning else types.MessageType.Info)
    return ending.reply
