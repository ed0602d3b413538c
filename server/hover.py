"""``textDocument/hover`` over a kernel: what is known now, never waiting for a profile.

When no profile of the kernel exists, one is queued in the background and the hover says so; the next hover
shows it. The recommended next step is the first ranked step of HTAM (:meth:`Session.rank`).
"""

from __future__ import annotations

from lsprotocol import types

from htam_server import actions, render
from htam_server.convert import name_range


async def hover(ls, params: types.HoverParams) -> types.Hover | None:
    """The hover of the kernel at ``params.position``, or ``None`` outside kernels and in other files."""
    od = ls.docs.get(params.text_document.uri)
    if od is None:
        return None
    enc = ls.encoding()
    kernel = od.kernel_at(params.position, enc)
    if kernel is None:
        return None
    await ls.ensure_ready()
    s = ls.session
    stale = od.stale
    view = s.profile_view(od.path or od.uri, kernel)
    if view.entry is None and not view.running and not kernel.incomplete and not stale:
        view.running = ls.profile_in_background(od, kernel)
    if not stale:
        actions.harness_check(od, kernel)  # warm the code-action list in the background
    steps = s.rank(od.path or od.uri, kernel, view.profile, top=ls.settings.top_n)[:1]  # shared with actions
    md = render.hover_markdown(kernel, view, steps, s.history(od.path or od.uri, kernel.name), ready=s.ready,
                               engine=s.engine, stale_model=stale, memory_error=s.memory_error)
    rng = None if stale else name_range(od.doc.index, kernel, enc)
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=md), range=rng)
