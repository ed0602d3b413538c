"""The LSP handlers: each converts the request and delegates (document sync to :mod:`htam_server.documents`, hover to
:mod:`htam_server.hover`, code actions to :mod:`htam_server.actions`, commands to :mod:`htam_server.commands`);
:func:`htam_server.server.create_server` registers :data:`FEATURES` and :data:`COMMANDS`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from htam_core.editor import kill_all
from htam_server import actions, commands, hover

if TYPE_CHECKING:
    from htam_server.server import HtamLanguageServer

log = logging.getLogger("htam_server")

#: Code-action kind of the ranked steps (a sub-kind of ``refactor.rewrite``, see docs/LSP.md).
KIND_STEP = actions.KIND_STEP
#: Code-action kind of "Create a profiling harness for this kernel".
KIND_HARNESS = actions.KIND_HARNESS


def initialize(ls: HtamLanguageServer, params: types.InitializeParams) -> None:
    """Apply ``initializationOptions`` (their problems are shown after ``initialized``)."""
    ls.init_problems = ls.apply_settings(params.initialization_options, "initializationOptions")


async def initialized(ls: HtamLanguageServer, params: types.InitializedParams) -> None:
    """Start the warm-up, show the settings' problems, pull ``workspace/configuration``."""
    ls.start_warm_up()
    for p in ls.init_problems:
        ls.show(f"HTAM: invalid setting {p}", types.MessageType.Warning)
    await pull_configuration(ls)
    ls.send_status()


async def pull_configuration(ls: HtamLanguageServer) -> None:
    """Ask the client for the ``htam`` section (when it supports ``workspace/configuration``) and apply it."""
    ws = ls.client_capabilities.workspace
    if ws is None or not ws.configuration:
        return
    try:
        res = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="htam")]))
    except Exception as exc:  # noqa: BLE001 - a client error leaves the current settings
        log.warning("workspace/configuration failed: %s", exc)
        return
    if res and res[0] is not None:
        await ls.ensure_ready()  # a new memory path then reopens the store through Session.configure
        await _apply(ls, res[0], "workspace/configuration")


async def _apply(ls: HtamLanguageServer, raw: Any, source: str) -> None:
    for p in await asyncio.to_thread(ls.apply_settings, raw, source):
        ls.show(f"HTAM: invalid setting {p}", types.MessageType.Warning)


async def did_change_configuration(ls: HtamLanguageServer, params: types.DidChangeConfigurationParams) -> None:
    """Pull the configuration again (or read the pushed settings of a client without pull)."""
    ws = ls.client_capabilities.workspace
    if ws is not None and ws.configuration:
        await pull_configuration(ls)
    elif isinstance(params.settings, dict):
        await _apply(ls, params.settings, "didChangeConfiguration")
    ls.send_status()


def _refused(ls: HtamLanguageServer, uri: str) -> None:
    reason = ls.docs.refused(uri)
    if reason:
        ls.show(f"HTAM: {reason}", types.MessageType.Warning)


def did_open(ls: HtamLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    """Track the document and parse it off the event loop (or say why it is not read)."""
    od = ls.docs.open(params.text_document)
    if od is not None:
        ls.schedule_analysis(od.uri, delay=0.0)  # the first parse, off the event loop
    else:
        _refused(ls, params.text_document.uri)


def did_change(ls: HtamLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    """Apply the changes to the buffer (no parse) and schedule the analysis."""
    was_refused = ls.docs.refused(params.text_document.uri)
    od = ls.docs.change(params, ls.encoding())
    if od is not None:
        ls.schedule_analysis(od.uri)
    elif not was_refused:
        _refused(ls, params.text_document.uri)


async def did_save(ls: HtamLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    """Start the re-profiles that waited for the save."""
    od = ls.docs.get(params.text_document.uri)
    if od is None or od.path is None:
        return
    ls.session.saved(od.path)
    if od.served():
        ls.reprofile_saved(od, (await ls.synced_model(od)).kernels)


def did_close(ls: HtamLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    """Forget the document."""
    ls.docs.close(params.text_document.uri)


def internal_error(ls: HtamLanguageServer, request: str, exc: Exception) -> None:
    """Report a failure inside the engine while answering ``request`` (a bug in htam): the traceback to the log,
    one line to the user; the request then answers as if there were nothing to show, never with a JSON-RPC error
    carrying the traceback (pygls' default for a handler that raises)."""
    log.error("%s failed", request, exc_info=exc)
    detail = str(exc).splitlines()[0] if str(exc) else ""
    ls.show(f"HTAM: internal error in {request}: {type(exc).__name__}{': ' + detail if detail else ''}. This is a "
            "bug in htam; the traceback is in the server's log", types.MessageType.Error)


async def on_hover(ls: HtamLanguageServer, params: types.HoverParams) -> types.Hover | None:
    """``textDocument/hover``."""
    try:
        return await hover.hover(ls, params)
    except Exception as exc:  # noqa: BLE001 - an engine bug is one line, never a traceback in the client
        internal_error(ls, "textDocument/hover", exc)
        return None


async def on_code_action(ls: HtamLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    """``textDocument/codeAction``."""
    try:
        return await actions.code_actions(ls, params)
    except Exception as exc:  # noqa: BLE001 - an engine bug is one line, never a traceback in the client
        internal_error(ls, "textDocument/codeAction", exc)
        return None


async def on_resolve(ls: HtamLanguageServer, action: types.CodeAction) -> types.CodeAction:
    """``codeAction/resolve``."""
    try:
        return await actions.resolve(ls, action)
    except Exception as exc:  # noqa: BLE001 - an engine bug is one line, never a traceback in the client
        internal_error(ls, "codeAction/resolve", exc)
        action.edit, action.command = None, None
        return action


def shutdown(ls: HtamLanguageServer, *args: Any) -> None:
    """Stop the engine: profiles, the analysis thread, the harness helper and every worker process."""
    ls.session.close()
    ls.analysis_pool.shutdown(wait=False, cancel_futures=True)
    kill_all()  # a profile blocked in a worker call (ncu) must not keep the server and the GPU after exit


def _command(fn: Callable[[HtamLanguageServer, Sequence[Any]], Any]) -> Callable[..., Any]:
    """A ``workspace/executeCommand`` handler of ``fn`` (pygls passes the arguments spread out, and reads the
    handler's type hints at run time: hence pygls' own server class here, where the annotations must resolve)."""
    async def handler(ls: LanguageServer, *args: Any) -> Any:
        return await fn(ls, args)  # type: ignore[arg-type] - the server registered is an HtamLanguageServer
    handler.__name__ = handler.__qualname__ = f"cmd_{fn.__name__}"
    return handler


#: ``(method, options, handler)`` of every LSP feature.
FEATURES: tuple[tuple[str, Any, Callable[..., Any]], ...] = (
    (types.INITIALIZE, None, initialize),
    (types.INITIALIZED, None, initialized),
    (types.WORKSPACE_DID_CHANGE_CONFIGURATION, None, did_change_configuration),
    (types.TEXT_DOCUMENT_DID_OPEN, None, did_open),
    (types.TEXT_DOCUMENT_DID_CHANGE, None, did_change),
    (types.TEXT_DOCUMENT_DID_SAVE, None, did_save),
    (types.TEXT_DOCUMENT_DID_CLOSE, None, did_close),
    (types.TEXT_DOCUMENT_HOVER, None, on_hover),
    (types.TEXT_DOCUMENT_CODE_ACTION,
     types.CodeActionOptions(code_action_kinds=[KIND_STEP, KIND_HARNESS], resolve_provider=True), on_code_action),
    (types.CODE_ACTION_RESOLVE, None, on_resolve),
    (types.SHUTDOWN, None, shutdown),
)

#: ``(command, handler)`` of every ``workspace/executeCommand`` command.
COMMANDS: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("htam.profile", _command(commands.profile)),
    ("htam.autoOptimize", _command(commands.auto_optimize)),
    ("htam.showMemory", _command(commands.show_memory)),
    ("htam.recordApplied", _command(commands.record_applied)),
)
