"""A loopback OpenAI-compatible chat-completions server that replays a script of replies.

Used by the LLM generator tests (and any other test that needs an LLM endpoint) so that no test
ever calls a real service. It is a real HTTP server (stdlib ``ThreadingHTTPServer``) bound to
``127.0.0.1`` on a free port, speaking ``POST /v1/chat/completions`` and ``POST /chat/completions``
in the OpenAI wire format (response object ``chat.completion``; errors as
``{"error": {"message", "type", "param", "code"}}``).

Each request consumes the next :class:`Scripted` reply. A request that arrives after the script is
used up gets HTTP 500 with the message ``"loopback script exhausted"``, so an unexpected extra call
makes the test fail loudly instead of hanging. Every request body is recorded in
:attr:`OpenAIServer.requests` so tests can assert on the prompt.

Example::

    with OpenAIServer([Scripted.content("```python\\nprint(1)\\n```"), Scripted.error(429)]) as srv:
        client = OpenAI(base_url=srv.base_url, api_key="k")
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: Longest delay a scripted reply may ask for, in seconds: keeps a broken test bounded.
MAX_DELAY_S = 30.0

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}


@dataclass
class Scripted:
    """One scripted reply.

    Attributes:
        status: HTTP status code.
        body: raw response body (bytes), sent as-is.
        content_type: the ``Content-Type`` header.
        delay_s: seconds to wait before answering (capped at :data:`MAX_DELAY_S`); a delay longer than
            the client's timeout simulates a hung endpoint.
        headers: extra response headers (``Retry-After`` ...).
        drip_s: when positive, send the reply one byte every ``drip_s`` seconds (an endpoint that is alive
            but never finishes: every single read succeeds, so only a total deadline stops the client).
        drip_headers: drip the status line and headers too (default: send them at once, drip the body).
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    drip_s: float = 0.0
    drip_headers: bool = False

    @classmethod
    def content(cls, text: str, *, finish_reason: str = "stop", model: str = "loopback-model",
                delay_s: float = 0.0, prompt_tokens: int = 11, completion_tokens: int = 7) -> Scripted:
        """A well-formed ``chat.completion`` whose single choice has ``text`` as its message content."""
        obj = {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
                "logprobs": None,
            }],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }
        return cls(body=json.dumps(obj).encode(), delay_s=delay_s)

    @classmethod
    def error(cls, status: int, message: str | None = None, *, retry_after_s: float | None = None) -> Scripted:
        """An HTTP error with the OpenAI error JSON (``{"error": {...}}``)."""
        obj = {"error": {"message": message or f"scripted HTTP {status}",
                         "type": _ERROR_TYPES.get(status, "api_error"), "param": None,
                         "code": _ERROR_TYPES.get(status)}}
        headers = {"Retry-After": f"{retry_after_s:g}"} if retry_after_s is not None else {}
        return cls(status=status, body=json.dumps(obj).encode(), headers=headers)

    @classmethod
    def raw(cls, body: bytes | str, *, status: int = 200, content_type: str = "application/json") -> Scripted:
        """A raw body (garbage, non-JSON, JSON of the wrong shape) with the given status."""
        return cls(status=status, body=body.encode() if isinstance(body, str) else body,
                   content_type=content_type)

    @classmethod
    def delay(cls, seconds: float, then: Scripted | None = None) -> Scripted:
        """``then`` (default: a reply with no code) sent after ``seconds``."""
        base = then or cls.content("delayed reply")
        return cls(status=base.status, body=base.body, content_type=base.content_type,
                   delay_s=seconds, headers=dict(base.headers))

    @classmethod
    def drip(cls, every_s: float, then: Scripted | None = None, *, headers: bool = False) -> Scripted:
        """``then`` (default: a reply with no code) sent one byte every ``every_s`` seconds; ``headers``: the
        status line and headers are dripped too."""
        base = then or cls.content("dripped reply")
        return cls(status=base.status, body=base.body, content_type=base.content_type, headers=dict(base.headers),
                   drip_s=every_s, drip_headers=headers)


@dataclass
class RecordedRequest:
    """A request the server received: path, headers (lower-cased names) and the parsed JSON body."""

    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silence the default stderr access log."""

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, 16 * 1024 * 1024)) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send(Scripted.error(404, f"unknown path {path}"))
            return
        owner = self.server.owner
        reply = owner._record_and_next(RecordedRequest(path, {k.lower(): v for k, v in self.headers.items()},
                                                       body, raw))
        if reply.delay_s > 0:
            # Wakes early when the server stops, so shutdown never waits for a long scripted delay.
            if owner._stopping.wait(min(reply.delay_s, MAX_DELAY_S)):
                return
        self._send(reply)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._send(Scripted.error(404, "only POST /v1/chat/completions is served"))

    def _send(self, reply: Scripted) -> None:
        if reply.drip_s > 0:
            self._drip(reply)
            return
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(reply.body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to answer

    def _drip(self, reply: Scripted) -> None:
        head = (f"HTTP/1.1 {reply.status} {self.responses.get(reply.status, ('',))[0]}\r\n"
                f"Content-Type: {reply.content_type}\r\nContent-Length: {len(reply.body)}\r\n"
                + "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items()) + "\r\n").encode()
        slow = head + reply.body if reply.drip_headers else reply.body
        owner = self.server.owner
        self.close_connection = True  # one dripped reply per connection: no keep-alive read after it
        try:
            if not reply.drip_headers:
                self.wfile.write(head)
                self.wfile.flush()
            for i in range(len(slow)):
                self.wfile.write(slow[i:i + 1])
                self.wfile.flush()
                if owner._stopping.wait(reply.drip_s):
                    return
            owner.drips_finished += 1
        except (BrokenPipeError, ConnectionResetError, OSError):
            owner.drips_abandoned += 1  # the client hung up: what a total deadline should make it do


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: OpenAIServer


class OpenAIServer:
    """Context manager running the scripted server on ``127.0.0.1`` and a free port.

    Args:
        script: replies, consumed one per request, in order.

    Attributes:
        base_url: ``http://127.0.0.1:PORT/v1``, to pass to ``OpenAI(base_url=...)``.
        requests: every request received, in order.
        drips_finished, drips_abandoned: dripped replies sent to the end, and those the client hung up on.
    """

    def __init__(self, script: list[Scripted] | None = None) -> None:
        self._script = list(script or [])
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        self.drips_finished = 0
        self.drips_abandoned = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    def push(self, *replies: Scripted) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(replies)

    @property
    def remaining(self) -> int:
        """Number of scripted replies not yet consumed."""
        with self._lock:
            return len(self._script)

    def _record_and_next(self, req: RecordedRequest) -> Scripted:
        with self._lock:
            self.requests.append(req)
            if self._script:
                return self._script.pop(0)
        return Scripted.error(500, "loopback script exhausted")

    @property
    def port(self) -> int:
        """The bound TCP port (still known after :meth:`stop`, e.g. to test a refused connection)."""
        assert self._port is not None, "server not started"
        return self._port

    @property
    def base_url(self) -> str:
        """The OpenAI base URL of this server (with the ``/v1`` prefix)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> OpenAIServer:
        """Bind and serve in a daemon thread."""
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="openai-loopback", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake delayed handlers and close the socket (bounded: a few seconds at most)."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
