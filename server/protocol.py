"""The JSON-RPC side of the server: pygls' :class:`LanguageServerProtocol` plus what LSP 3.17 asks for and pygls
2.1 does not do.

What pygls already does (kept): ``exit`` chooses exit code 0 after ``shutdown`` and 1 without it; ``shutdown``
cancels the requests still running. What is added here:

* a request before ``initialize`` gets the error ``ServerNotInitialized`` (-32002); notifications then are
  dropped (``exit`` excepted), as the specification says;
* a second ``initialize`` gets ``InvalidRequest`` (-32600);
* a request after ``shutdown`` gets ``InvalidRequest`` (pygls drops it without a reply, so the client waits
  forever); notifications other than ``exit`` are dropped;
* the exit code survives pygls' ``start_io``, which swallows ``SystemExit``: :attr:`HtamProtocol.exit_code`,
  returned by :func:`htam_server.server.serve`;
* a request whose params do not match the schema gets the JSON-RPC error (pygls drops it without a reply);
* ``$/cancelRequest`` reaches long-running commands (pygls only cancels the request's future, which does not
  stop work running in a thread);
* ``didChange`` does not also update pygls' own copy of the document (an O(file) string rebuild per keystroke
  nobody reads: the server keeps its own buffer, :mod:`htam_server.documents`).
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcServerNotInitialized
from pygls.protocol import LanguageServerProtocol, lsp_method


class HtamProtocol(LanguageServerProtocol):
    """pygls' protocol with the LSP lifecycle rules and the hooks above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_seen = False
        #: the process exit code the ``exit`` notification asked for (0 after ``shutdown``, else 1); ``None``
        #: until ``exit`` arrives
        self.exit_code: int | None = None

    def handle_message(self, message: Any) -> None:
        """Apply the lifecycle rules (:meth:`_refused`), then let pygls dispatch the message."""
        method = getattr(message, "method", None)
        if method == types.EXIT:
            self.exit_code = 0 if self._shutdown else 1
        elif method is not None and self._refused(message, method, hasattr(message, "id")):
            return
        super().handle_message(message)

    def _refused(self, message: Any, method: str, is_request: bool) -> bool:
        """Whether the lifecycle rules drop ``message`` (a request among them gets its error here)."""
        error: JsonRpcException | None = None
        if self._shutdown:
            error = JsonRpcInvalidRequest(f"the server is shutting down: {method} refused")
        elif method == types.INITIALIZE and is_request:
            if self._initialize_seen:
                error = JsonRpcInvalidRequest("initialize may only be sent once")
            self._initialize_seen = True
        elif not self._initialize_seen:
            error = JsonRpcServerNotInitialized(f"{method} before initialize: send initialize first")
        if error is not None and is_request:
            self._refuse(message.id, error)
        return error is not None

    def _refuse(self, msg_id: Any, exc: JsonRpcException) -> None:
        self._send_response(msg_id, error=exc.to_response_error())

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        hook = getattr(self._server, "on_cancel_request", None)
        if hook is not None:
            hook(msg_id)
        super()._handle_cancel_notification(msg_id)

    def structure_message(self, data: Any) -> Any:
        """pygls drops a request whose params do not match the LSP schema (a negative line, say) without a
        reply, so the client waits forever; answer it with the JSON-RPC error instead ."""
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and isinstance(data.get("method"), str):
                self._send_response(data["id"], error=types.ResponseError(
                    code=exc.code, message=f"{exc.message}: the params of {data['method']} do not match the LSP "
                                           "specification"))
            raise

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        """Only the server's handler: pygls' workspace copy of the text is not kept up to date."""
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None
