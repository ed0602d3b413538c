"""The HTAM language server: one :class:`HtamLanguageServer` with thin handlers (pygls 2.x).

Handlers convert LSP types and delegate: document sync to :mod:`htam_server.documents`, hover to
:mod:`htam_server.hover`, code actions to :mod:`htam_server.actions`, commands to
:mod:`htam_server.commands`, diagnostics to :mod:`htam_server.diagnostics`; the engine state lives in
:class:`htam_core.session.Session`. Start it with ``htam serve`` (stdio) or ``htam serve --tcp HOST:PORT``.

Custom notifications sent to the client:

* ``htam/status`` ``{server: "ready"|"busy", gpu: str|null, lastProfile: str|null}`` after start-up and
  whenever background work starts or ends (the VS Code extension shows it in the status bar);
* ``htam/recorded`` ``{uri, kernel, step, outcome: {status, speedup, measured, correct, note}}`` when an
  applied step's outcome was stored in memory.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from htam_core import __version__
from htam_core.session import ProfileEntry, Session
from htam_server import actions, commands, diagnostics, hover
from htam_server.config import Settings, parse_settings
from htam_server.convert import encoding_of
from htam_server.documents import Documents, OpenDocument

log = logging.getLogger("htam_server")

#: Code-action kind of the ranked steps (a sub-kind of ``refactor.rewrite``, see docs/LSP.md).
KIND_STEP = "refactor.rewrite.htam"
#: Code-action kind of "Create a profiling harness for this kernel".
KIND_HARNESS = "refactor.rewrite.htam.harness"
COMMANDS = ("htam.profile", "htam.autoOptimize", "htam.showMemory", "htam.recordApplied")


class HtamProtocol(LanguageServerProtocol):
    """pygls' protocol, plus a hook so that ``$/cancelRequest`` reaches long-running commands (pygls only
    cancels the request's future, which does not stop work running in a thread)."""

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        hook = getattr(self._server, "on_cancel_request", None)
        if hook is not None:
            hook(msg_id)
        super()._handle_cancel_notification(msg_id)

    def structure_message(self, data: Any) -> Any:
        """pygls drops a request whose params do not match the LSP schema (a negative line, say) without a
        reply, so the client waits forever; answer it with the JSON-RPC error instead (issue 9 §3)."""
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and isinstance(data.get("method"), str):
                self._send_response(data["id"], error=types.ResponseError(
                    code=exc.code, message=f"{exc.message}: the params of {data['method']} do not match the LSP "
                                           "specification"))
            raise


class HtamLanguageServer(LanguageServer):
    """Server state: settings, open documents, the engine session, cancel hooks of running commands."""

    def __init__(self) -> None:
        super().__init__("htam", __version__, protocol_cls=HtamProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.settings = Settings()
        self.docs = Documents()
        self.session = Session()
        self._ready: asyncio.Future | None = None
        self._cancel_hooks: dict[Any, Any] = {}
        self._diag_timers: dict[str, asyncio.TimerHandle] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

    # ---- lifecycle ---------------------------------------------------------------------------------
    def apply_settings(self, raw: Any, source: str) -> list[str]:
        """Validate ``raw`` (camelCase ``htam`` section) over the current settings and push them to the
        session. Returns the problems (each names the setting and the default used)."""
        new, problems = parse_settings(raw, self.settings)
        self.settings = new
        llm = None
        if new.engine == "llm" or new.llm.model or new.llm.base_url:
            from htam_core.generate.config import LLMConfig

            llm = LLMConfig(base_url=new.llm.base_url or "", model=new.llm.model, api_key_env=new.llm.api_key_env)
        s = self.session
        if s.ready:
            s.configure(memory_path=new.memory_path, engine=new.engine, llm=llm, gpu_index=new.gpu_index,
                        static=new.static)
        else:
            s.memory_path, s.engine, s.llm = new.memory_path, new.engine, llm
            s.gpu_index, s.static = new.gpu_index, new.static
        return [f"{p} (from {source})" for p in problems]

    def start_warm_up(self) -> None:
        """Load memory and ranker off the event loop; :meth:`ensure_ready` awaits it."""
        self.loop = asyncio.get_running_loop()
        if self._ready is None:
            self._ready = asyncio.ensure_future(asyncio.to_thread(self.session.warm_up))
            self._ready.add_done_callback(lambda _f: self.send_status())

    async def ensure_ready(self) -> None:
        """Wait (without blocking the loop) until the memory is loaded."""
        if self._ready is None:
            self.start_warm_up()
        assert self._ready is not None
        await asyncio.shield(self._ready)
        if self.session.memory_error and not getattr(self, "_memory_reported", False):
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
        state = "busy" if (not s.ready or s.busy or self._cancel_hooks) else "ready"
        self.protocol.notify("htam/status", {"server": state, "gpu": s.gpu, "lastProfile": s.last_profile})

    def threadsafe(self, fn, *args) -> None:
        """Run ``fn(*args)`` on the event loop from any thread."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(fn, *args)

    # ---- background profiles -----------------------------------------------------------------------
    def profile_in_background(self, od: OpenDocument, kernel, *, force: bool = False,
                              on_done=None) -> bool:
        """Queue a profile of ``kernel`` (stale work for it is cancelled); diagnostics and status are
        refreshed when it finishes. Returns whether one was queued."""
        if od.path is None:
            return False
        uri = od.uri

        def done(entry: ProfileEntry) -> None:
            self.threadsafe(self._profile_finished, uri, entry)
            if on_done is not None:
                on_done(entry)

        started = self.session.start_profile(od.path, kernel, od.text, od.language, force=force, on_done=done)
        if started:
            self.send_status()
        return started

    def _profile_finished(self, uri: str, entry: ProfileEntry) -> None:
        diagnostics.publish(self, uri)
        self.send_status()

    def schedule_diagnostics(self, uri: str, delay: float = 0.4) -> None:
        """Re-publish diagnostics after the edits settle (kernel lines move while typing)."""
        if self.loop is None:
            return
        old = self._diag_timers.pop(uri, None)
        if old is not None:
            old.cancel()
        self._diag_timers[uri] = self.loop.call_later(delay, diagnostics.publish, self, uri)

    # ---- cancellation ------------------------------------------------------------------------------
    def on_cancel_request(self, msg_id: Any) -> None:
        """``$/cancelRequest``: stop the command running under ``msg_id``, if any."""
        hook = self._cancel_hooks.get(msg_id)
        if hook is not None:
            hook()

    def encoding(self) -> str:
        """The negotiated position encoding."""
        return encoding_of(self)


def create_server() -> HtamLanguageServer:
    """Build a server with every feature registered."""
    ls = HtamLanguageServer()

    @ls.feature(types.INITIALIZE)
    def initialize(ls: HtamLanguageServer, params: types.InitializeParams) -> None:
        ls._init_problems = ls.apply_settings(params.initialization_options, "initializationOptions")

    @ls.feature(types.INITIALIZED)
    async def initialized(ls: HtamLanguageServer, params: types.InitializedParams) -> None:
        ls.start_warm_up()
        for p in getattr(ls, "_init_problems", []):
            ls.show(f"HTAM: invalid setting {p}", types.MessageType.Warning)
        await pull_configuration(ls)
        ls.send_status()

    async def pull_configuration(ls: HtamLanguageServer) -> None:
        ws = ls.client_capabilities.workspace
        if ws is None or not ws.configuration:
            return
        try:
            res = await ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="htam")]))
        except Exception as exc:  # noqa: BLE001 - a client error leaves the current settings
            log.warning("workspace/configuration failed: %s", exc)
            return
        raw = res[0] if res else None
        if raw is None:
            return
        await ls.ensure_ready()  # a new memory path then reopens the store through Session.configure
        for p in await asyncio.to_thread(ls.apply_settings, raw, "workspace/configuration"):
            ls.show(f"HTAM: invalid setting {p}", types.MessageType.Warning)

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: HtamLanguageServer, params: types.DidChangeConfigurationParams):
        ws = ls.client_capabilities.workspace
        if ws is not None and ws.configuration:
            await pull_configuration(ls)
        elif isinstance(params.settings, dict):
            for p in await asyncio.to_thread(ls.apply_settings, params.settings, "didChangeConfiguration"):
                ls.show(f"HTAM: invalid setting {p}", types.MessageType.Warning)
        ls.send_status()

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: HtamLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.docs.open(params.text_document)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: HtamLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        od = ls.docs.change(params, ls.encoding())
        if od is not None:
            ls.schedule_diagnostics(od.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: HtamLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        od = ls.docs.get(params.text_document.uri)
        if od is None or od.path is None:
            return
        ls.session.saved(od.path)
        if od.served():
            model = od.model
            for k in model.kernels:  # refresh profiles that went stale
                view = ls.session.profile_view(od.path, k)
                if view.entry is not None and view.stale and not view.running:
                    ls.profile_in_background(od, k)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: HtamLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.docs.close(params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: HtamLanguageServer, params: types.HoverParams) -> types.Hover | None:
        return await hover.hover(ls, params)

    @ls.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[KIND_STEP, KIND_HARNESS], resolve_provider=True))
    async def on_code_action(ls: HtamLanguageServer, params: types.CodeActionParams):
        return await actions.code_actions(ls, params)

    @ls.feature(types.CODE_ACTION_RESOLVE)
    async def on_resolve(ls: HtamLanguageServer, action: types.CodeAction) -> types.CodeAction:
        return await actions.resolve(ls, action)

    @ls.command("htam.profile")
    async def cmd_profile(ls: HtamLanguageServer, *args: Any) -> Any:
        return await commands.profile(ls, args)

    @ls.command("htam.autoOptimize")
    async def cmd_optimize(ls: HtamLanguageServer, *args: Any) -> Any:
        return await commands.auto_optimize(ls, args)

    @ls.command("htam.showMemory")
    async def cmd_memory(ls: HtamLanguageServer, *args: Any) -> Any:
        return await commands.show_memory(ls, args)

    @ls.command("htam.recordApplied")
    async def cmd_record(ls: HtamLanguageServer, *args: Any) -> Any:
        return await commands.record_applied(ls, args)

    @ls.feature(types.SHUTDOWN)
    def shutdown(ls: HtamLanguageServer, *args: Any) -> None:
        from htam_server import harness_probe

        ls.session.close()
        harness_probe.shutdown()

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

    Raises:
        ValueError: ``tcp`` is not ``HOST:PORT`` with a port number.
    """
    logging.basicConfig(level=logging.WARNING, format="htam-server %(levelname)s %(message)s")
    ls = create_server()
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"--tcp must be HOST:PORT (for example 127.0.0.1:2087), got {tcp!r}")
        ls.start_tcp(host, int(port))
    else:
        ls.start_io()
    return 0
