"""The editor's auto-optimize run of one kernel: its task, its progress lines, and how it ends.

The server starts :func:`run` off the event loop with a cancel event (:mod:`htam_core.editor.jobs`), shows
:func:`progress_line` of each loop event, and then follows :func:`conclude`: the reply, the message and, only for
a kernel verified on the GPU and measured faster (:meth:`htam_core.optimize.OptimizeResult.apply_refusal`), the
one edit that turns the start text into the best one. A cancelled run applies nothing (the report still lists what
was found); a document edited during the run is never overwritten.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from htam_core.generate.edits import minimal_edit
from htam_core.transforms.base import TextEdit

__all__ = ["Ending", "after_apply", "conclude", "make_task", "out_dir", "progress_line", "run"]


def out_dir(path: str, kernel_name: str) -> str:
    """The run's output folder: ``htam-out/<file stem>-<kernel>`` beside the file."""
    stem = os.path.splitext(os.path.basename(path))[0]
    from htam_core.optimize.task import folder_name  # deferred: the optimize stack is heavy to import

    return os.path.join(os.path.dirname(path), "htam-out", f"{stem}-{folder_name(kernel_name)}")


def make_task(session: Any, path: str, kernel_name: str, budget: int, text: str, *, static: bool,
              gpu_index: int) -> Any:
    """The :class:`htam_core.optimize.OptimizeTask` of one run on ``text`` (the editor's text of the file at
    ``path``), with the session's engine, LLM endpoint and memory; ``budget`` candidates."""
    from htam_core.optimize import OptimizeTask  # deferred: the optimize stack is heavy to import

    llm = session.llm.to_json() if session.engine == "llm" and session.llm is not None else None
    return OptimizeTask(path=path, kernel=kernel_name, engine=session.engine, budget=budget,
                        out_dir=out_dir(path, kernel_name), memory_path=session.memory_path,
                        static=True if static else None, gpu_index=gpu_index, llm=llm, source_text=text)


def run(task: Any, on_progress: Callable[[Any], None], cancel: Any) -> Any:
    """:func:`htam_core.optimize.run_optimize` (blocking; call it off the event loop)."""
    from htam_core.optimize import run_optimize  # deferred: the optimize stack is heavy to import

    return run_optimize(task, on_progress=on_progress, cancel=cancel)


def progress_line(ev: Any) -> tuple[str, int | None]:
    """``("step i/N · direction → strategy · best 1.23× · message", percent)`` of one loop progress event."""
    best = "none yet" if ev.best_speedup is None else f"{ev.best_speedup:.2f}×"
    what = " → ".join(x for x in (ev.direction, ev.strategy) if x)
    msg = f"step {ev.step}/{ev.total}" + (f" · {what}" if what else "") + f" · best {best}"
    if ev.message:
        msg += f" · {ev.message}"
    return msg, (int(100 * ev.step / ev.total) if ev.total else None)


@dataclass
class Ending:
    """How a run ends in the editor.

    Attributes:
        reply: the command's answer (``kernel``, ``bestSpeedup``, ``measured``, ``steps``, ``report``, ``summary``,
            ``cancelled``, ``applied``).
        progress: the progress bar's last message.
        message: the message shown to the user; ``warning``: shown as a warning (else information).
        edit: the edit of the start text to apply (then :func:`after_apply` gives the ending), else ``None``.
    """

    reply: dict[str, Any]
    progress: str
    message: str
    warning: bool = False
    edit: TextEdit | None = field(default=None, repr=False)


def _best(result: Any) -> str:
    return "none" if result.best_speedup is None else f"{result.best_speedup:.2f}×"


def conclude(result: Any, kernel: str, text0: str, *, cancelled: bool, doc_changed: bool) -> Ending:
    """The :class:`Ending` of a finished run (``result``: the :class:`~htam_core.optimize.OptimizeResult`) on the
    start text ``text0``; ``cancelled``: the user cancelled it; ``doc_changed``: the document was edited during
    the run."""
    best, report = _best(result), str(result.report_md or result.report_dir or "")
    reply = {"kernel": kernel, "bestSpeedup": result.best_speedup, "measured": result.measured,
             "steps": len(result.steps), "report": report, "summary": result.summary,
             "cancelled": bool(result.cancelled or cancelled), "applied": False}
    if reply["cancelled"]:
        return Ending(reply, "cancelled", f"HTAM: auto-optimize of {kernel} cancelled after {len(result.steps)} step(s); "
                                          f"nothing was applied. Best so far {best}. Report: {report}")
    refusal = result.apply_refusal() if result.changed else None
    if refusal:  # only a kernel verified on the GPU and measured faster is offered as an edit
        return Ending(reply, f"best {best}", f"HTAM: auto-optimize of {kernel}: the best candidate was not applied: "
                      f"{refusal}. Your file is unchanged; the candidate is in {result.best_path}. Report: {report}")
    if result.changed and result.best_text and result.best_text != text0:
        if doc_changed:
            return Ending(reply, f"best {best}", f"HTAM: {kernel} changed during auto-optimize; the best candidate "
                                                 f"was not applied. Report: {report}", warning=True)
        return Ending(reply, f"best {best}", "", edit=minimal_edit(text0, result.best_text))
    return after_apply(Ending(reply, f"best {best}", ""), result, applied=False, failure=None)


def after_apply(ending: Ending, result: Any, *, applied: bool, failure: str | None) -> Ending:
    """The ending after the editor answered the edit of ``ending`` (``applied``; ``failure``: its reason when
    refused), or of a run with nothing to apply (``failure`` ``None``)."""
    reply = {**ending.reply, "applied": applied}
    report, kernel = reply["report"], reply["kernel"]
    if ending.edit is not None and not applied:
        return replace(ending, reply=reply, edit=None, warning=True, message=(
            f"HTAM: the editor refused the edit ({failure or 'no reason given'}). Report: {report}"))
    measured = "measured" if result.measured else "not measured (static)"
    return replace(ending, reply=reply, edit=None, message=(
        f"HTAM: auto-optimize of {kernel}: best {_best(result)} ({measured}); "
        + ("applied as one edit (undo reverts it). " if applied else "no better candidate; file unchanged. ")
        + f"{result.summary} Report: {report}"))
