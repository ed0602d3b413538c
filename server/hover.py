"""``textDocument/hover`` over a kernel: what is known now, never waiting for a profile or a ranking.

The hover reads the kernel's current analysis (:meth:`HtamLanguageServer.analysis`): the same ranking, of the same
profile, that the code-action list reads, and one line saying where the kernel's harness came from (``htam.toml``,
inferred from ``__main__``, from a test or from ``main()``, or none: the template), as the helper process found it.
Its recommendation is the first code action (a step that can be made on the kernel as it is); strategies with no
mechanical transform follow as advice, with how to apply them. The first hover of a kernel version without a
profile shows its source-only stage at once (published in that request from the analysis layer, before the ranking;
on a GPU machine for a saved file, the measured stage instead is queued) while the compile is queued in the
background; the next hover shows the later stage. A hover before the HTAM memory is loaded shows the profile without
waiting for the ranking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from htam_core.editor import Kernel, content_hash, render
from htam_server import actions
from htam_server.convert import current_name_range
from htam_server.documents import OpenDocument

if TYPE_CHECKING:
    from htam_server.server import HtamLanguageServer


def refused(ls: HtamLanguageServer, uri: str) -> types.Hover | None:
    """One plain line for a document the server does not read (over the size limit: it says so), else ``None``."""
    reason = ls.docs.refused(uri)
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.PlainText, value=reason)) if reason else None


async def hover(ls: HtamLanguageServer, params: types.HoverParams) -> types.Hover | None:
    """The hover of the kernel at ``params.position``; ``None`` outside kernels, :func:`refused` in an unread file."""
    od = ls.docs.get(params.text_document.uri)
    if od is None:
        return refused(ls, params.text_document.uri)
    where = await ls.locate(od, params.position)
    if (kernel := where.kernel if where is not None else None) is None:
        return None
    md = await _markdown(ls, od, kernel, where.stale)
    rng = None if where.stale else current_name_range(od.buf, kernel, ls.encoding(), where.seq)
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=md), range=rng)


async def _markdown(ls: HtamLanguageServer, od: OpenDocument, kernel: Kernel, stale: bool) -> str:
    """The hover's Markdown (:func:`htam_core.editor.render.hover_markdown`); starts the background work."""
    analysis = await ls.analysis(od, kernel, hover=True)  # publishes the source-only stage of a new kernel
    s, path = ls.session, od.path or od.uri
    plan = await ls.plan(od, kernel, analysis, need=1)  # the recommendation is the first code action
    live = s.profile_view(path, kernel)
    view = render.analysis_view(live, analysis, content_hash(kernel))
    # the background work starts after this hover's own (one GIL): the compile, then the harness check
    if live.unfinished and not kernel.incomplete and not stale:  # no profile, or only its source-only stage
        view.running = ls.profile_in_background(od, kernel)
    if not stale:
        actions.harness_check(ls, od, kernel)  # warm the code-action list in the background
    st = actions.cached_status(ls, od, kernel)
    harness = st.line if st is not None else (None if od.path else "not checked: the file is not saved")
    return render.hover_markdown(kernel, view, plan.actions[:1], s.history(path, kernel.key), ready=s.ready,
                                 engine=s.engine, stale_model=stale, memory_error=s.memory_error,
                                 advice=plan.advice, harness=harness, tried=s.tried(path, kernel.key))
