"""The HTAM language server: one :class:`HtamLanguageServer` with thin handlers (pygls 2.x).

Handlers convert LSP types and delegate: document sync to :mod:`htam_server.documents`, hover to
:mod:`htam_server.hover`, code actions to :mod:`htam_server.actions`, commands to
:mod:`htam_server.commands`, diagnostics to :mod:`htam_server.diagnostics`; the engine state lives in
:class:`htam_core.editor.Session`. Start it with ``htam serve`` (stdio) or ``htam serve --tcp HOST:PORT``.

Custom notifications sent to the client:

* ``htam/status`` ``{server: "ready"|"busy", gpu: str|null, lastProfile: str|null}`` after start-up and
  whenever background work starts or ends (the VS Code extension shows it in the status bar);
* ``htam/recorded`` ``{uri, kernel, step, outcome: {status, speedup, measured, correct, note}}`` when an
  applied step's outcome was stored in memory.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from htam_core.editor import (
    Analysis,
    Jobs,
    Kernel,
    Located,
    Plan,
    ProfileEntry,
    Session,
    Settings,
    SourceModel,
    __version__,
    apply_to_session,
    content_hash,
    hide_own_environ,
    parse_settings,
)
from htam_server import diagnostics, handlers, logs, stdio
from htam_server.convert import encoding_of
from htam_server.documents import Documents, OpenDocument
from htam_server.protocol import HtamProtocol
from htam_server.requests import Status, unstructure

log = logging.getLogger("htam_server")

#: Quiet time after the last edit before the file is re-parsed and its kernels re-ranked (s).
DEBOUNCE_S = 0.15
#: Longest a burst of edits postpones that work (s): under continuous typing it runs at least this often.
MAX_WAIT_S = 1.0
#: Quiet time after a save before its re-profiles start (s): a newer save within it replaces them.
SAVE_DEBOUNCE_S = 0.3
#: How long the memory's warm-up waits after ``initialized`` (s), and then at most for the source-only stages and
#: parses under way (1 s more): a file opened together with the server gets its first profile before torch is
#: imported (that import holds the interpreter lock for long stretches: the first parse took 0.5 s beside it).
FIRST_LOOK_S = 0.25


class HtamLanguageServer(LanguageServer):
    """Server state: settings, open documents, the engine session, cancel hooks of running commands."""

    def __init__(self) -> None:
        super().__init__("htam", __version__, protocol_cls=HtamProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.settings = Settings()
        self.docs = Documents()
        self.session = Session()
        self.jobs = Jobs()  #: running auto-optimize runs, cancelled by ``$/cancelRequest`` or a newer run
        self.init_problems: list[str] = []  #: invalid settings of ``initialize``, shown after ``initialized``
        self._memory_reported = False
        self._ready: asyncio.Future | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._first_change: dict[str, float] = {}
        self._running: dict[str, asyncio.Future] = {}
        self._again: set[str] = set()
        #: parses and rankings: one thread, so that a burst's work is done once and in order
        self.analysis_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="htam-analysis")
        self._off_loop = 0  # tasks queued or running on the analysis thread
        self._first_looks = 0  # source-only stages being made (Session.source_stage)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.session.profiles.subscribe(self._profile_published)

    # ---- lifecycle ---------------------------------------------------------------------------------
    def apply_settings(self, raw: Any, source: str) -> list[str]:
        """Validate ``raw`` (camelCase ``htam`` section) over the current settings and push them to the
        session. Returns the problems (each names the setting and the default used)."""
        self.settings, problems = parse_settings(raw, self.settings)
        apply_to_session(self.settings, self.session)
        return [f"{p} (from {source})" for p in problems]

    def start_warm_up(self) -> None:
        """Look for the GPU, then load memory and ranker, off the event loop (:meth:`_warm_up`);
        :meth:`ensure_ready` awaits it."""
        self.loop = asyncio.get_running_loop()
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._warm_up())
            self._ready.add_done_callback(lambda _f: self.send_status())

    async def _warm_up(self) -> None:
        """:meth:`Session.look_up_gpu` at once, then :meth:`Session.warm_up` after :data:`FIRST_LOOK_S` and the
        source-only stages and parses under way (1 s at most)."""
        loop = asyncio.get_running_loop()
        await asyncio.to_thread(self.session.look_up_gpu)
        await asyncio.sleep(FIRST_LOOK_S)
        until = loop.time() + 1.0
        while (self._first_looks or self._off_loop) and loop.time() < until:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(self.session.warm_up)

    async def ensure_ready(self) -> None:
        """Wait (without blocking the loop) until the memory is loaded."""
        if self._ready is None:
            self.start_warm_up()
        assert self._ready is not None
        await asyncio.shield(self._ready)
        if self.session.memory_error and not self._memory_reported:
            self._memory_reported = True
            self.show(f"HTAM memory unavailable, ranking from priors only: {self.session.memory_error}",
                      types.MessageType.Warning)

    # ---- messages ----------------------------------------------------------------------------------
    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """``window/showMessage``."""
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log_info(self, message: str) -> None:
        """``window/logMessage`` (info)."""
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))

    def send_status(self) -> None:
        """Send ``htam/status`` (call on the event loop)."""
        s = self.session
        state = "busy" if (not s.ready or s.busy or self.jobs.running) else "ready"
        self.protocol.notify("htam/status", unstructure(Status(state, s.gpu, s.last_profile)))

    def threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the event loop from any thread."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(fn, *args)

    # ---- background profiles -----------------------------------------------------------------------
    def profile_in_background(self, od: OpenDocument, kernel: Kernel, *, force: bool = False,
                              on_done: Callable[[ProfileEntry], None] | None = None,
                              on_first: Callable[[ProfileEntry], None] | None = None, delay: float = 0.0) -> bool:
        """Queue a profile of ``kernel`` (stale work for it is cancelled); the kernel's analysis, the diagnostics
        and the status are refreshed after each stage. ``on_first``/``on_done``: called with the first/last
        stage's entry; ``delay``: debounce (seconds). Returns whether one was queued."""
        if od.path is None:
            return False
        started = self.session.start_profile(od.path, kernel, od.text, od.language, force=force, on_done=on_done,
                                             on_first=on_first, delay=delay)
        if started:
            self.send_status()
        return started

    def reprofile_saved(self, od: OpenDocument, kernels: list[Kernel]) -> int:
        """The file was saved: re-profile, debounced by :data:`SAVE_DEBOUNCE_S`, each kernel whose profile is
        stale or was made from unsaved text (with a GPU the saved file is measured). A queued or running profile
        of an older version is cancelled. Returns how many were queued."""
        n = 0
        for k in kernels:
            e = self.session.profile_view(od.path, k)
            if e.entry is not None and (e.stale or e.entry.source == "buffer"):
                force = e.entry.source == "buffer" and self.session.gpu is not None and not e.stale
                n += self.profile_in_background(od, k, force=force, delay=SAVE_DEBOUNCE_S)
        return n

    def _profile_published(self, entry: ProfileEntry) -> None:
        """A profile entry was published (any stage, any thread): re-rank and re-publish its documents. After a
        source-only stage this is debounced like an edit (:data:`DEBOUNCE_S`): the request that published it ranks
        it itself, and the refresh (every ranked step's verdict, diagnostics) must not compete with that request
        for the interpreter."""
        delay = DEBOUNCE_S if entry.stage == "source" else 0.0

        def refresh() -> None:
            for od in self.docs.all():
                if od.path == entry.path:
                    od.note_interest(entry.kernel)
                    self.schedule_analysis(od.uri, delay=delay)
            self.send_status()

        self.threadsafe(refresh)

    # ---- analysis after edits ------------------------------------------------------------------------
    def schedule_analysis(self, uri: str, delay: float = DEBOUNCE_S) -> None:
        """Re-parse the document and re-rank the kernels asked about once the edits settle (``delay`` after the
        last one, at most :data:`MAX_WAIT_S` after the first of a burst), off the event loop; then publish its
        diagnostics."""
        if self.loop is None:
            return
        now = time.monotonic()
        first = self._first_change.setdefault(uri, now)
        delay = max(0.0, min(delay, first + MAX_WAIT_S - now))
        old = self._timers.pop(uri, None)
        if old is not None:
            old.cancel()
        self._timers[uri] = self.loop.call_later(delay, self._start_analysis, uri)

    def _start_analysis(self, uri: str) -> None:
        self._timers.pop(uri, None)
        self._first_change.pop(uri, None)
        if uri in self._running:  # one at a time per document: run again when it ends
            self._again.add(uri)
            return
        od = self.docs.get(uri)
        if od is None:
            return
        fut = asyncio.ensure_future(self._analyze(od))
        self._running[uri] = fut

        def done(_f: asyncio.Future) -> None:
            self._running.pop(uri, None)
            if uri in self._again:
                self._again.discard(uri)
                self._start_analysis(uri)

        fut.add_done_callback(done)

    async def _analyze(self, od: OpenDocument) -> None:
        await self.run_off_loop(self._analyze_blocking, od)
        if self.docs.get(od.uri) is od:
            diagnostics.publish(self, od.uri)

    def _analyze_blocking(self, od: OpenDocument) -> None:
        model = od.buf.sync().model
        if od.path is not None:  # profiles of kernel versions the edits replaced are cancelled
            self.session.kernels_changed(od.path, model.kernels)
        if not self.session.ready:
            return
        for name in list(od.interest):
            k = od.kernel_named(name, model)
            if k is not None:
                self.session.analyze(od.path or od.uri, k, self.settings.top_n, model)

    async def run_off_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on the analysis thread (parses and rankings, in order)."""
        self._off_loop += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self.analysis_pool, fn, *args)
        finally:
            self._off_loop -= 1

    async def synced_model(self, od: OpenDocument) -> SourceModel:
        """The model of the document's current text (parsed off the event loop when edits are pending)."""
        if not od.buf.pending and od.buf.snapshot is not None:
            return od.buf.snapshot.model
        return (await self.run_off_loop(od.buf.sync)).model

    async def locate(self, od: OpenDocument, position: types.Position) -> Located:
        """The kernel at ``position``: from the latest parse (the position moved back over the pending edits) when
        no edit is pending or the analysis thread is busy (a burst of typing: the latest completed parse answers at
        once), else located in the current text off the event loop with an incremental re-parse of the pending
        edits (never a full model on the loop). The first request on a file waits for its first parse."""
        if not od.served():
            return Located(None, od.buf.seq)
        if od.buf.snapshot is None:
            await self.synced_model(od)
        snap = od.buf.snapshot
        if not od.buf.pending or self._off_loop:
            return Located(od.kernel_at(position, self.encoding()), snap.seq, od.stale)
        try:
            byte = od.buf.index.to_byte(position.line, position.character, self.encoding())
        except ValueError:
            return Located(None, od.buf.seq)
        return await self.run_off_loop(od.buf.kernel_at_now, byte, od.buf.seq)

    async def analysis(self, od: OpenDocument, kernel: Kernel, *, hover: bool) -> Analysis | None:
        """The kernel's current analysis (its ranking and the profile it used), never ranking on the event loop:
        the latest completed one, refreshed in the background when it is not fresh; the first request of a
        kernel waits for its ranking (:meth:`_current`). The first request of a kernel version without a profile
        publishes its source-only stage first (:meth:`source_stage`), so the ranking and the hover have a profile
        at once. A hover before the memory is loaded does not wait for it: it gets ``None`` (the hover shows the
        profile and says the ranking is loading)."""
        od.note_interest(kernel.key)
        if self._ready is None:
            self.start_warm_up()
        published = await self.source_stage(od, kernel)
        if hover and not self.session.ready:
            return None
        await self.ensure_ready()
        return await self._current(od, kernel, hover, published)

    async def _current(self, od: OpenDocument, kernel: Kernel, hover: bool, published: bool) -> Analysis | None:
        """The latest analysis, or one ranked now (in a thread of its own, not queued behind a parse) for the first
        request of this kernel, or when its source-only stage just landed (a ranking made before it, by the analysis
        after the file opened, must not hide it)."""
        path, top = od.path or od.uri, self.settings.top_n
        a, fresh = self.session.analysis(path, kernel, top, hover=hover)
        if a is None or (published and not fresh):
            return await self._rank_now(path, kernel, top, hover)
        if not fresh and od.uri not in self._timers and od.uri not in self._running:
            self.schedule_analysis(od.uri)  # debounced like an edit: a burst of requests is one pass
        return a

    async def _rank_now(self, path: str, kernel: Kernel, top: int, hover: bool) -> Analysis | None:
        """Rank ``kernel`` in a thread of its own and return its analysis."""
        await asyncio.to_thread(self.session.analyze, path, kernel, top)
        return self.session.analysis(path, kernel, top, hover=hover)[0]

    async def source_stage(self, od: OpenDocument, kernel: Kernel) -> bool:
        """Publish the kernel's source-only profile stage now (:meth:`Session.source_stage`, in a thread: the
        analysis layer only, milliseconds) when the kernel has no profile of this version; the compile follows
        in the background (:meth:`profile_in_background`). Returns whether it was published."""
        if od.path is None or self.session.profile_view(od.path, kernel).entry is not None:
            return False
        model = await self.synced_model(od)
        k = od.kernel_named(kernel.key, model)
        if k is None or content_hash(k) != content_hash(kernel):  # the kernel of this parse, not a newer one
            return False
        self._first_looks += 1
        try:
            return await asyncio.to_thread(self.session.source_stage, od.path, k, model) is not None
        finally:
            self._first_looks -= 1

    async def plan(self, od: OpenDocument, kernel: Kernel, analysis: Analysis | None,
                   need: int | None = None) -> Plan:
        """``analysis`` split into code actions, advice and skipped steps (:meth:`Session.plan`; ``need=1``: only
        the first action, for the hover): from the cached verdicts at once, else checked off the event loop
        (once per kernel version)."""
        s, top, model = self.session, self.settings.top_n, await self.synced_model(od)
        k = od.kernel_named(kernel.key, model) or kernel
        known = s.known_plan(model, k, analysis, top, need)
        return known if known is not None else await asyncio.to_thread(s.plan, model, k, analysis, top, need)

    # ---- cancellation ------------------------------------------------------------------------------
    def on_cancel_request(self, msg_id: Any) -> None:
        """``$/cancelRequest``: stop the command running under ``msg_id``, if any."""
        self.jobs.cancel_request(msg_id)

    def encoding(self) -> str:
        """The negotiated position encoding."""
        return encoding_of(self)


def create_server() -> HtamLanguageServer:
    """Build a server with every feature and command of :mod:`htam_server.handlers` registered."""
    ls = HtamLanguageServer()
    for method, options, fn in handlers.FEATURES:
        ls.feature(method, options)(fn)
    for name, fn in handlers.COMMANDS:
        ls.command(name)(fn)
    return ls


def main(argv: list[str] | None = None) -> int:
    """Run the server on stdio, or on TCP with ``--tcp HOST:PORT``."""
    import argparse

    parser = argparse.ArgumentParser(prog="htam-server", description="HTAM language server")
    parser.add_argument("--tcp", metavar="HOST:PORT", default=None, help="listen on TCP instead of stdio")
    args = parser.parse_args(argv)
    return serve(args.tcp)


def serve(tcp: str | None = None) -> int:
    """Start the server (blocks until the client disconnects). ``tcp`` is ``HOST:PORT`` or ``None`` (stdio).
    Returns the exit code: 0 after ``shutdown`` then ``exit``, 1 for ``exit`` (or a lost client) without
    ``shutdown``. Raises ``ValueError`` when ``tcp`` is not ``HOST:PORT`` with a port number."""
    logs.configure()  # one line per record on stderr, no tracebacks, no flood
    hide_own_environ()  # an API key in the server's environment stays out of reach of its children
    # the analysis thread parses and ranks while requests wait on the event loop: hand the GIL over every 1 ms
    # (default 5 ms) so that a request is not held behind a parse
    sys.setswitchinterval(0.001)
    ls = create_server()
    if tcp:
        ls.start_tcp(*_host_port(tcp))
    else:
        stdio.start_stdio(ls)  # stdin read on the event loop, no thread hop per message
    code = ls.protocol.exit_code
    return code if code is not None else (0 if ls.protocol._shutdown else 1)


def _host_port(tcp: str) -> tuple[str, int]:
    """``("HOST", PORT)`` of ``HOST:PORT``.

    Raises:
        ValueError: not ``HOST:PORT`` with a port number.
    """
    host, _, port = tcp.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--tcp must be HOST:PORT (for example 127.0.0.1:2087), got {tcp!r}")
    return host, int(port)
