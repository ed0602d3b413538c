"""``workspace/executeCommand`` handlers: ``htam.profile``, ``htam.autoOptimize``, ``htam.showMemory``,
``htam.recordApplied``.

Arguments: one object ``{"uri": ..., "kernel": NAME}`` or ``{"uri": ..., "position": {"line", "character"}}``
(``htam.profile`` without kernel or position profiles every kernel of the file; ``htam.autoOptimize`` then
needs the file to hold exactly one kernel). ``htam.autoOptimize`` also takes ``"budget"``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

from lsprotocol import types

from htam_core.editor import minimal_edit
from htam_server.convert import document_edit, text_edits
from htam_server.progress import WorkProgress


class CommandError(Exception):
    """Bad command arguments; the message is shown to the user."""


def _arg(args: tuple) -> dict[str, Any]:
    if not args:
        raise CommandError("the command needs an argument {\"uri\": ..., \"kernel\": ...}")
    a = args[0]
    if isinstance(a, str):
        a = {"uri": a, **(args[1] if len(args) > 1 and isinstance(args[1], dict) else {})}
    if not isinstance(a, dict) or not isinstance(a.get("uri"), str):
        raise CommandError("the command's argument must be an object with a \"uri\"")
    return a


async def _target(ls, a: dict[str, Any], single: bool) -> tuple[Any, list[Any]]:
    od = ls.docs.get(a["uri"])
    if od is None or not od.served():
        raise CommandError(f"{a['uri']} is not an open CUDA or Triton file")
    kernels = list((await ls.synced_model(od)).kernels)
    if isinstance(a.get("kernel"), str):
        kernels = [k for k in kernels if k.name == a["kernel"]]
        if not kernels:
            raise CommandError(f"no kernel named {a['kernel']!r} in {od.uri}")
    elif isinstance(a.get("position"), dict):
        pos = types.Position(line=int(a["position"].get("line", 0)), character=int(a["position"].get("character", 0)))
        k = od.kernel_at(pos, ls.encoding())
        if k is None:
            raise CommandError("the cursor is not inside a kernel")
        kernels = [k]
    if not kernels:
        raise CommandError(f"no kernel in {od.uri}")
    if single and len(kernels) > 1:
        raise CommandError(f"{len(kernels)} kernels in the file: put the cursor in one, or pass \"kernel\"")
    return od, kernels


def _fail(ls, exc: Exception) -> dict[str, Any]:
    ls.show(f"HTAM: {exc}", types.MessageType.Error)
    return {"error": str(exc)}


def _entry_json(e) -> dict[str, Any]:
    p = e.profile
    return {"kernel": e.kernel, "mode": p.mode if p else None, "device": p.device if p else None,
            "timeMs": p.time_ms.median if p and p.time_ms else None,
            "bottleneck": p.bottleneck.cls if p else None, "error": e.error, "stage": e.stage,
            "pending": e.pending}


async def profile(ls, args: tuple) -> dict[str, Any]:
    """Profile the kernel(s) now (GPU when present, else static), with progress; refreshes hover and
    diagnostics. Answers with each kernel's first stage; the later stages (``pending``) follow in the background
    and refresh the hover and diagnostics again. Returns ``{"profiles": [{"kernel", "mode", "device", "timeMs",
    "bottleneck", "error", "stage", "pending"}]}``."""
    try:
        od, kernels = await _target(ls, _arg(args), single=False)
        if od.path is None:
            raise CommandError("save the file first: profiles run on files on disk")
    except CommandError as exc:
        return _fail(ls, exc)
    await ls.ensure_ready()
    loop = asyncio.get_running_loop()
    progress = WorkProgress(ls, "HTAM: profiling")
    await progress.begin(f"{kernels[0].name} (1/{len(kernels)})", 0)
    out = []
    try:
        for i, k in enumerate(kernels):
            progress.report(f"{k.name} ({i + 1}/{len(kernels)})", int(100 * i / len(kernels)))
            fut: asyncio.Future = loop.create_future()

            def done(entry, fut=fut) -> None:
                loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(entry))

            ls.profile_in_background(od, k, force=True, on_first=done)
            out.append(_entry_json(await fut))
    finally:
        progress.end()
        ls.send_status()
    return {"profiles": out}


async def show_memory(ls, args: tuple) -> dict[str, Any]:
    """``{"markdown": ...}``: the HTG summary with the strongest transitions."""
    await ls.ensure_ready()
    return {"markdown": await asyncio.to_thread(ls.session.memory_markdown)}


async def record_applied(ls, args: tuple) -> dict[str, Any]:
    """Record that a code action's step was applied (sent by the client right after applying the edit).

    The kernel is re-profiled in the background and the outcome stored in memory; ``htam/recorded`` is sent
    then. Returns ``{"step", "pending"}``.
    """
    try:
        a = _arg(args)
        od, kernels = await _target(ls, {"uri": a["uri"], "kernel": a.get("kernel")}, single=True)
        step = a.get("step")
        if not isinstance(step, str):
            raise CommandError("htam.recordApplied needs \"step\" (a strategy id)")
    except CommandError as exc:
        return _fail(ls, exc)
    await ls.ensure_ready()
    kernel = kernels[0]
    uri = od.uri

    def done(applied, entry) -> None:
        ls.threadsafe(_recorded, ls, uri, kernel.name, applied)

    try:
        applied = ls.session.record_applied(od.path or od.uri, kernel, step, od.text, od.language,
                                            before_hash=a.get("beforeHash"), saved=od.on_disk(), on_done=done)
    except KeyError as exc:
        return _fail(ls, CommandError(str(exc.args[0])))
    ls.send_status()
    return {"step": step, "pending": applied.pending}


def _recorded(ls, uri: str, kernel: str, applied) -> None:
    o = applied.outcome
    ls.protocol.notify("htam/recorded", {
        "uri": uri, "kernel": kernel, "step": applied.step,
        "outcome": {"status": o.status, "speedup": o.speedup, "measured": o.measured, "correct": o.correct,
                    "note": o.note}})
    ls.log_info(f"HTAM: recorded {applied.title} on {kernel}: {o.status}"
                + (f", {o.speedup:.2f}× measured" if o.measured and o.speedup else " (not measured)"))
    if ls.session.memory_error:
        ls.show(f"HTAM: {ls.session.memory_error}", types.MessageType.Warning)
    from htam_server import diagnostics

    diagnostics.publish(ls, uri)
    ls.send_status()


_running: dict[tuple[str, str], threading.Event] = {}


async def auto_optimize(ls, args: tuple) -> dict[str, Any]:
    """Run :func:`htam_core.optimize.run_optimize` on one kernel with progress and cancel; end with one
    ``workspace/applyEdit`` of the best correct candidate, a summary message and the report path.

    A cancelled run applies nothing (the report still lists what was found). A new run on the same kernel
    cancels the running one.
    """
    try:
        a = _arg(args)
        od, kernels = await _target(ls, a, single=True)
        if od.path is None:
            raise CommandError("save the file first: auto-optimize works on files on disk")
        budget = a.get("budget", ls.settings.budget)
        if isinstance(budget, bool) or not isinstance(budget, int) or not 1 <= budget <= 64:
            raise CommandError(f"budget must be an integer from 1 to 64, got {budget!r}")
    except CommandError as exc:
        return _fail(ls, exc)
    from htam_core.optimize import (  # deferred: the optimize stack is heavy to import
        OptimizeTask,
        run_optimize,
    )

    await ls.ensure_ready()
    kernel = kernels[0]
    key = (od.uri, kernel.name)
    old = _running.get(key)
    if old is not None:
        old.set()
    cancel = threading.Event()
    _running[key] = cancel
    msg_id = ls.protocol.msg_id
    if msg_id is not None:
        ls._cancel_hooks[msg_id] = cancel.set
    progress = WorkProgress(ls, f"HTAM: auto-optimizing {kernel.name}", cancellable=True)
    progress.cancel = cancel
    ls.send_status()
    await progress.begin(f"0/{budget}", 0)
    text0, version0 = od.text, od.version
    s, st = ls.session, ls.settings
    out_dir = os.path.join(os.path.dirname(od.path), "htam-out",
                           f"{os.path.splitext(os.path.basename(od.path))[0]}-{kernel.name}")
    task = OptimizeTask(path=od.path, kernel=kernel.name, engine=s.engine, budget=budget, out_dir=out_dir,
                        memory_path=s.memory_path, static=True if st.static else None, gpu_index=st.gpu_index,
                        llm=s.llm.to_json() if s.engine == "llm" and s.llm is not None else None,
                        source_text=text0)

    def on_progress(ev) -> None:
        best = "none yet" if ev.best_speedup is None else f"{ev.best_speedup:.2f}×"
        what = " → ".join(x for x in (ev.direction, ev.strategy) if x)
        msg = f"step {ev.step}/{ev.total}" + (f" · {what}" if what else "") + f" · best {best}"
        if ev.message:
            msg += f" · {ev.message}"
        pct = int(100 * ev.step / ev.total) if ev.total else None
        ls.threadsafe(progress.report, msg, pct)

    try:
        result = await asyncio.to_thread(run_optimize, task, on_progress=on_progress, cancel=cancel)
    except Exception as exc:  # noqa: BLE001 - the loop's failure is reported, never raised into the client
        progress.end("failed")
        return _fail(ls, CommandError(f"auto-optimize of {kernel.name} failed: {exc}"))
    finally:
        ls._cancel_hooks.pop(msg_id, None)
        if _running.get(key) is cancel:
            del _running[key]
        ls.send_status()
    best = "none" if result.best_speedup is None else f"{result.best_speedup:.2f}×"
    report = str(result.report_md or result.report_dir or "")
    out: dict[str, Any] = {"kernel": kernel.name, "bestSpeedup": result.best_speedup, "measured": result.measured,
                           "steps": len(result.steps), "report": report, "summary": result.summary,
                           "cancelled": bool(result.cancelled or cancel.is_set()), "applied": False}
    if out["cancelled"]:
        progress.end("cancelled")
        ls.show(f"HTAM: auto-optimize of {kernel.name} cancelled after {result.steps} step(s); nothing was "
                f"applied. Best so far {best}. Report: {report}", types.MessageType.Info)
        return out
    progress.end(f"best {best}")
    refusal = result.apply_refusal() if result.changed else None
    if refusal:  # only a kernel verified on the GPU and measured faster is offered as an edit
        ls.show(f"HTAM: auto-optimize of {kernel.name}: the best candidate was not applied: {refusal}. Your file "
                f"is unchanged; the candidate is in {result.best_path}. Report: {report}", types.MessageType.Info)
        return out
    if result.changed and result.best_text and result.best_text != text0:
        if od.text != text0 or od.version != version0:
            ls.show(f"HTAM: {kernel.name} changed during auto-optimize; the best candidate was not applied. "
                    f"Report: {report}", types.MessageType.Warning)
            return out
        from htam_core.source.positions import LineIndex

        edit = minimal_edit(text0, result.best_text)
        idx = LineIndex(text0.encode("utf-8", errors="surrogatepass"))
        we = document_edit(ls, od.uri, version0, text_edits(idx, [edit], ls.encoding()))
        res = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
            edit=we, label=f"HTAM auto-optimize {kernel.name}"))
        out["applied"] = bool(res.applied)
        if not res.applied:
            ls.show(f"HTAM: the editor refused the edit ({res.failure_reason or 'no reason given'}). "
                    f"Report: {report}", types.MessageType.Warning)
            return out
    measured = "measured" if result.measured else "not measured (static)"
    ls.show(f"HTAM: auto-optimize of {kernel.name}: best {best} ({measured}); "
            + ("applied as one edit (undo reverts it). " if out["applied"] else "no better candidate; file unchanged. ")
            + f"{result.summary} Report: {report}", types.MessageType.Info)
    return out
