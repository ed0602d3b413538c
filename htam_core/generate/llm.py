"""The LLM generator: one OpenAI-compatible chat-completions endpoint, with retries and repair rounds.

Uses the official ``openai`` client (``OpenAI(base_url=..., api_key=..., timeout=openai.Timeout(...),
max_retries=0)``); the retries are done here instead of inside the client so that every attempt is logged
and counted, and the backoff stays bounded (:class:`~htam_core.generate.config.LLMConfig`). Every request
and reply is appended as one JSON object per line to ``<log_dir>/llm.jsonl``; the API key is read from its
environment variable at call time and redacted from everything written or raised. The client libraries are
imported when an :class:`LLMGenerator` is created (:func:`_client_modules`), so importing this module (the
registry, the optimize loop, the rules engine) does not load them.

``--llm-timeout`` is a *total* deadline per request: connecting, reading the whole reply and the retries
of that request together. The client's own timeouts are per network operation (an endpoint that sends
one byte every few seconds never trips them), so each attempt runs in a request thread that streams the
body and stops at the deadline, while the calling thread waits for it with the deadline, reports
"waiting for <model> at <url>: 12 s of 60 s" every few seconds, and abandons it when the
deadline passes or the user cancels (the abandoned thread ends at its next byte or its read timeout).

The repair loop follows the usual generate-check-feedback scheme of LLM kernel generation
(KernelBench's multi-turn setting; the HTAM paper's "verify" step feeding back into "generate").
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when an LLMGenerator is created (:func:`_client_modules`): start-up speed
    import openai

from htam_core.generate.config import LLMConfig, redact
from htam_core.generate.errors import (
    LLMCancelledError,
    LLMEndpointError,
    LLMHTTPError,
    LLMRateLimitError,
    LLMReplyError,
    LLMTimeoutError,
    ParseError,
)
from htam_core.generate.parse import extract_code
from htam_core.generate.prompt import repair_message

#: Name of the request/reply log inside the run directory.
LOG_NAME = "llm.jsonl"
#: Longest raw reply body kept in the log, in characters.
MAX_LOGGED_BODY = 200_000
#: Longest wait for the TCP connection of one attempt, in seconds (less when the deadline is nearer).
CONNECT_TIMEOUT_S = 10.0
_MAX_BACKOFF_S = 30.0
_MAX_RETRY_AFTER_S = 60.0
#: How often a waiting request looks at the cancel event, in seconds.
_CANCEL_POLL_S = 0.2
#: A retry is not started with less than this left before the deadline, in seconds.
_MIN_ATTEMPT_S = 0.05


@dataclass
class CheckResult:
    """Outcome of checking one candidate (compile, correctness, guards).

    Attributes:
        ok: the candidate passed.
        error_text: what failed (compiler output, mismatch report, refused guard); sent back for repair.
    """

    ok: bool
    error_text: str = ""


@dataclass
class GenerationResult:
    """A generated candidate.

    Attributes:
        code: the extracted source (``""`` when no round produced code).
        raw_reply: the last assistant message content.
        usage: summed token usage ``{"prompt_tokens", "completion_tokens", "total_tokens"}``, or ``None``
            when the endpoint reported none.
        attempts: HTTP requests made, retries included.
        repairs: repair rounds used (0 when the first candidate passed or no check was run).
        finish_reason: of the last reply (``"stop"``, ``"length"`` ...).
        truncated: the last reply's code fence was never closed.
        check: the last check result (``None`` for :meth:`LLMGenerator.generate`).
        messages: the whole conversation, replies included.
        fault: the endpoint fault that ended the repair rounds early after a candidate had been checked
            (``""`` when none): the checked candidate is kept, since its failure is the strategy's.
    """

    code: str
    raw_reply: str
    usage: dict[str, int] | None
    attempts: int
    repairs: int = 0
    finish_reason: str | None = None
    truncated: bool = False
    check: CheckResult | None = None
    messages: list[dict[str, str]] = field(default_factory=list)
    fault: str = ""

    @property
    def ok(self) -> bool:
        """True when there is code and the last check (if any) passed."""
        return bool(self.code) and (self.check is None or self.check.ok)


@dataclass
class _Reply:
    content: str
    finish_reason: str | None
    usage: dict[str, int] | None
    attempts: int


def reply_tokens(body_text: str) -> dict[str, int | None]:
    """Tokens in and out of one reply, from its body's ``usage`` object (OpenAI chat-completions shape).

    Args:
        body_text: the reply body as received (JSON text; anything else gives ``None`` counts).

    Returns:
        ``{"prompt_tokens": int | None, "completion_tokens": int | None}``: ``None`` where the endpoint sent no
        usage (some servers leave it out), so a missing count is never read as zero.
    """
    try:
        usage = json.loads(body_text).get("usage") or {}
    except (ValueError, AttributeError):
        usage = {}
    if not isinstance(usage, dict):
        usage = {}
    out: dict[str, int | None] = {}
    for key in ("prompt_tokens", "completion_tokens"):
        v = usage.get(key)
        out[key] = v if isinstance(v, int) and not isinstance(v, bool) else None
    return out


def _add_usage(a: dict[str, int] | None, b: dict[str, int] | None) -> dict[str, int] | None:
    if b is None:
        return a
    out = dict(a or {})
    for k, v in b.items():
        if isinstance(v, int):
            out[k] = out.get(k, 0) + v
    return out


class _DeadlinePassed(Exception):
    """Raised inside the request thread when the deadline passes while the reply is still arriving."""


@dataclass
class _Wire:
    """What one HTTP attempt produced, handed from the request thread to the waiting thread."""

    status: int = 0
    body: bytes = b""
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)
    client: openai.OpenAI | None = None

    def abandon(self) -> None:
        """Close the attempt's connections from the waiting thread, so that a request thread blocked on a
        slow endpoint fails at its next byte instead of reading on; never raises."""
        try:
            if self.client is not None and not self.done.is_set():
                self.client.close()
        except Exception:  # noqa: BLE001 - best effort: the thread also stops at its own deadline check
            pass


@dataclass(frozen=True)
class _ClientModules:
    """The client libraries, imported by :func:`_client_modules`."""

    openai: ModuleType
    http: ModuleType  # httpx2, the HTTP library under the openai 3.x client
    completion: type  # openai.types.chat.ChatCompletion


@cache
def _client_modules() -> _ClientModules:
    """Import the ``openai`` client and its HTTP library (once; function-level for start-up speed: the rules
    engine, the editor and every ``htam`` command that does not call a model never pay for them).

    Raises:
        ImportError: the ``openai`` package (or its HTTP library) is not installed.
    """
    import httpx2
    import openai
    from openai.types.chat import ChatCompletion

    return _ClientModules(openai, httpx2, ChatCompletion)


class LLMGenerator:
    """Generate kernel candidates with an OpenAI-compatible endpoint.

    Args:
        config: endpoint, model, key variable, limits (``config.timeout_s`` is the total deadline per request).
        log_dir: run directory; requests and replies go to ``<log_dir>/llm.jsonl``. ``None`` disables the log.
        sleep: the function used to wait between retries (tests pass a recorder).
        on_wait: called with one line ("waiting for <model> at <url>: 12 s of 60 s") every few seconds
            (``config.progress_s``, see :meth:`_await`) while a request waits, and before a retry's backoff;
            ``None``: silent.
        cancel: when set, a waiting request is abandoned and :class:`LLMCancelledError` is raised.
    """

    name = "llm"

    def __init__(self, config: LLMConfig, log_dir: str | Path | None,
                 sleep: Callable[[float], None] = time.sleep, on_wait: Callable[[str], None] | None = None,
                 cancel: threading.Event | None = None) -> None:
        self._mods = _client_modules()  # the client libraries, imported when the llm engine is created
        self.config = config
        self.log_path = Path(log_dir) / LOG_NAME if log_dir is not None else None
        self._sleep = sleep
        self.on_wait = on_wait
        self.cancel = cancel
        self._log_lock = threading.Lock()

    # -- logging ------------------------------------------------------------------------------
    def _log(self, record: dict[str, Any], secrets: list[str]) -> None:
        if self.log_path is None:
            return
        rec = {"ts": _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds"), **record}
        line = json.dumps(redact(rec, secrets), ensure_ascii=False, default=str)
        with self._log_lock:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")

    def _secrets(self) -> list[str]:
        """The current API key (if set), for redaction; never raises."""
        key = os.environ.get(self.config.api_key_env, "")
        return [key] if key else []

    def _tell(self, line: str) -> None:
        if self.on_wait is not None:
            self.on_wait(line)

    # -- one chat call with retries, under one deadline ----------------------------------------
    def _delay(self, retry: int, exc: openai.APIStatusError | None) -> float:
        delay = min(self.config.backoff_s * (2 ** retry), _MAX_BACKOFF_S)
        if exc is not None:
            ra = exc.response.headers.get("retry-after")
            try:
                delay = max(delay, min(float(ra), _MAX_RETRY_AFTER_S)) if ra is not None else delay
            except ValueError:
                pass
        return delay

    def _attempt(self, key: str, model: str, messages: list[dict[str, str]], deadline: float,
                 wire: _Wire) -> None:
        """Body of the request thread: one HTTP attempt, streaming the reply body until ``deadline``."""
        cfg, openai = self.config, self._mods.openai
        left = max(deadline - time.monotonic(), 0.001)
        client = wire.client = openai.OpenAI(base_url=cfg.base_url, api_key=key, max_retries=0,
                                             timeout=openai.Timeout(left, connect=min(left, CONNECT_TIMEOUT_S)))
        try:
            with client.chat.completions.with_streaming_response.create(
                    model=model, messages=messages, max_tokens=cfg.max_tokens,  # type: ignore[arg-type]
                    temperature=cfg.temperature) as resp:
                wire.status = resp.status_code
                chunks: list[bytes] = []
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() >= deadline:
                        raise _DeadlinePassed
                wire.body = b"".join(chunks)
        except BaseException as exc:  # handed to the waiting thread, which turns it into one clear error
            wire.error = exc
        finally:
            client.close()
            wire.done.set()

    def _await(self, wire: _Wire, started: float, deadline: float, model: str) -> None:
        """Wait for the request thread until ``deadline``, reporting progress every ``progress_s`` seconds, or
        every quarter of the deadline when that is shorter (but at least every second).

        Raises:
            _DeadlinePassed: the deadline passed first (the request thread is abandoned).
            LLMCancelledError: :attr:`cancel` was set while waiting.
        """
        cfg = self.config
        every = min(cfg.progress_s, max(1.0, cfg.timeout_s / 4))
        next_tick = started + every
        while True:
            now = time.monotonic()
            while next_tick <= now:
                next_tick += every
            until = min(deadline, next_tick, now + _CANCEL_POLL_S) if self.cancel is not None else min(deadline, next_tick)
            if wire.done.wait(max(until - now, 0.0)):
                return
            now = time.monotonic()
            if self.cancel is not None and self.cancel.is_set():
                raise LLMCancelledError(f"cancelled while waiting for {model} at {cfg.base_url}")
            if now >= deadline:
                raise _DeadlinePassed
            if now >= next_tick:
                self._tell(f"waiting for {model} at {cfg.base_url}: {now - started:.0f} s of {cfg.timeout_s:g} s")

    def _chat(self, messages: list[dict[str, str]]) -> _Reply:
        cfg, openai, _http = self.config, self._mods.openai, self._mods.http
        model = cfg.require_model()
        key = cfg.api_key()
        secrets = [key]
        where = f"{cfg.base_url} (model {model})"
        hint = (f"check --llm-base-url / OPENAI_BASE_URL ({cfg.base_url}), --llm-model ({model}) "
                f"and the key variable {cfg.api_key_env}")
        started = time.monotonic()
        deadline = started + cfg.timeout_s
        tries = cfg.max_retries + 1
        last: LLMEndpointError | None = None
        for attempt in range(1, tries + 1):
            self._log({"event": "request", "attempt": attempt, "base_url": cfg.base_url, "model": model,
                       "max_tokens": cfg.max_tokens, "temperature": cfg.temperature,
                       "messages": messages, "deadline_s": round(deadline - time.monotonic(), 3)}, secrets)
            wire = _Wire()
            threading.Thread(target=self._attempt, args=(key, model, messages, deadline, wire),
                             name=f"htam-llm-request-{attempt}", daemon=True).start()
            status_exc: openai.APIStatusError | None = None
            status: int | None = None
            timed_out = (f"no reply from {where} within {cfg.timeout_s:g} s (--llm-timeout: the total per "
                         f"request, retries included) after {attempt} attempt(s); check that the server is up "
                         f"and serves the model, or raise --llm-timeout")
            try:
                try:
                    self._await(wire, started, deadline, model)
                except BaseException:  # deadline, cancel, Ctrl-C: the request thread is abandoned
                    wire.abandon()
                    raise
                if wire.error is not None:
                    raise wire.error
            except LLMCancelledError:
                raise
            except (_DeadlinePassed, openai.APITimeoutError, _http.TimeoutException):
                last = LLMTimeoutError(timed_out)
            except openai.APIConnectionError as exc:
                last = LLMHTTPError(f"cannot connect to {where}: {exc}; {hint}", None)
            except _http.HTTPError as exc:  # raised while streaming the body (the client wraps only the headers)
                last = LLMHTTPError(f"the connection to {where} broke while reading the reply "
                                    f"({type(exc).__name__}: {redact(str(exc), secrets)}); {hint}", None)
            except openai.APIStatusError as exc:
                status_exc, status = exc, exc.status_code
                msg = redact(str(exc.message), secrets)
                if exc.status_code == 429:
                    last = LLMRateLimitError(
                        f"{where} answered HTTP 429 (rate limit or quota) {attempt} time(s): {msg}; "
                        f"wait and retry, lower the request rate, or check the account's quota")
                elif exc.status_code >= 500:
                    last = LLMHTTPError(f"{where} answered HTTP {exc.status_code} (server error) "
                                        f"{attempt} time(s): {msg}; the endpoint is failing, retry later",
                                        exc.status_code)
                else:
                    what = {401: "authentication failed", 403: "permission denied",
                            404: "not found (the URL should end in /v1, and the model must exist)",
                            400: "bad request"}.get(exc.status_code, "request refused")
                    err = LLMHTTPError(f"{where} answered HTTP {exc.status_code}, {what}: {msg}; {hint}",
                                       exc.status_code)
                    self._log({"event": "error", "attempt": attempt, "status": exc.status_code,
                               "error": str(err), "body": exc.body}, secrets)
                    raise err from None
            except Exception as exc:  # noqa: BLE001 - anything else the request raised: still the endpoint's fault
                last = LLMHTTPError(f"the request to {where} failed ({type(exc).__name__}: "
                                    f"{redact(str(exc), secrets)}); {hint}", None)
            else:
                body_text = wire.body.decode("utf-8", errors="replace")
                self._log({"event": "reply", "attempt": attempt, "status": wire.status,
                           "elapsed_s": round(time.monotonic() - started, 3), **reply_tokens(body_text),
                           "body": body_text[:MAX_LOGGED_BODY]}, secrets)
                return self._parse_completion(wire.status, body_text, attempt, where, secrets)
            self._log({"event": "error", "attempt": attempt, "status": status, "error": str(last)}, secrets)
            left = deadline - time.monotonic()
            if attempt == tries or isinstance(last, LLMTimeoutError) or left <= _MIN_ATTEMPT_S:
                break
            delay = min(self._delay(attempt - 1, status_exc), left - _MIN_ATTEMPT_S)
            what = last.kind.replace("_", " ") + (f" (HTTP {status})" if status else "")
            self._tell(f"{model} at {cfg.base_url}: {what}, retry {attempt} of {tries - 1} in {delay:.1f} s "
                       f"({time.monotonic() - started:.0f} s of {cfg.timeout_s:g} s)")
            if self.cancel is not None and self._sleep is time.sleep:
                if self.cancel.wait(delay):
                    raise LLMCancelledError(f"cancelled while waiting to retry {model} at {cfg.base_url}")
            else:
                self._sleep(delay)
        assert last is not None
        raise last

    def _parse_completion(self, status: int, body_text: str, attempt: int, where: str,
                          secrets: list[str]) -> _Reply:
        """The content of a chat-completion body (parsed leniently with the client's own model types).

        Raises:
            LLMReplyError: not JSON, not an object, no choices, or a choice without text content.
        """
        excerpt = redact(body_text.strip()[:200], secrets)
        try:
            data = json.loads(body_text)
            if not isinstance(data, dict):
                raise ValueError("the JSON body is not an object")
            completion = self._mods.completion.construct(**data)
        except Exception as exc:  # JSONDecodeError, or a body of the wrong shape
            err = LLMReplyError(f"{where} answered HTTP {status} with a body that is not a chat "
                                f"completion ({type(exc).__name__}: {exc}); body starts with {excerpt!r}; check "
                                f"that the URL is an OpenAI-compatible /v1 endpoint")
            self._log({"event": "error", "attempt": attempt, "error": str(err)}, secrets)
            raise err from None
        choices = getattr(completion, "choices", None)
        if not choices or not isinstance(choices, list):
            err = LLMReplyError(f"{where} answered a completion with no choices; body starts with {excerpt!r}; "
                                f"check that the URL is an OpenAI-compatible /v1 endpoint")
            self._log({"event": "error", "attempt": attempt, "error": str(err)}, secrets)
            raise err
        msg = getattr(choices[0], "message", None)
        content = getattr(msg, "content", None)
        if not isinstance(content, str):
            refusal = getattr(msg, "refusal", None)
            err = LLMReplyError(f"{where} answered a choice with no text content"
                                + (f" (refusal: {refusal})" if refusal else "")
                                + f"; body starts with {excerpt!r}")
            self._log({"event": "error", "attempt": attempt, "error": str(err)}, secrets)
            raise err
        usage_obj = getattr(completion, "usage", None)
        usage = None
        if usage_obj is not None and hasattr(usage_obj, "model_dump"):
            usage = {k: v for k, v in usage_obj.model_dump().items() if isinstance(v, int)}
        return _Reply(content, getattr(choices[0], "finish_reason", None), usage, attempt)

    # -- public API -----------------------------------------------------------------------------
    def generate(self, messages: list[dict[str, str]], *, language: str = "python",
                 kernel_name: str | None = None) -> GenerationResult:
        """Send ``messages`` once (with bounded retries) and extract the code of the reply.

        Args:
            messages: chat messages, e.g. from :func:`htam_core.generate.prompt.build_messages`.
            language: ``"cuda"``, ``"triton"``, ``"cuda-in-python"`` or ``"python"``: which code to extract.
            kernel_name: preferred when the reply holds several blocks.

        Raises:
            LLMConfigError: no model or no key variable.
            LLMTimeoutError: no complete reply within ``config.timeout_s`` (the total, retries included).
            LLMRateLimitError, LLMHTTPError: the endpoint failed after the retries.
            LLMReplyError: the body is not a chat completion.
            ParseError: the reply holds no code.
            LLMCancelledError: :attr:`cancel` was set while waiting.
            (Every one but the first and the last is an :class:`~htam_core.generate.errors.LLMEndpointError`.)
        """
        reply = self._chat(list(messages))
        conv = [*messages, {"role": "assistant", "content": reply.content}]
        try:
            ex = extract_code(reply.content, language, kernel_name)
        except ParseError as exc:
            self._log({"event": "parse_error", "error": str(exc)}, self._secrets())
            raise
        sec = self._secrets()
        return GenerationResult(redact(ex.code, sec), redact(reply.content, sec), reply.usage, reply.attempts, 0,
                                reply.finish_reason, ex.truncated, None, redact(conv, sec))

    def generate_with_repair(self, messages: list[dict[str, str]], check: Callable[[str], CheckResult], *,
                             language: str = "python", kernel_name: str | None = None) -> GenerationResult:
        """Generate, check, and send failures back for at most ``config.max_repairs`` repair rounds.

        A reply with no code counts as a failed round (its parse error is sent back); transport errors
        (deadline passed, HTTP, garbage body) end the loop by raising, except in a repair round after a
        candidate was checked: that candidate is returned with ``fault`` set. When every round fails, the result
        has ``ok == False``: when some round produced code, ``code`` and ``check`` are the last *checked*
        candidate and its failure (the strategy's failure, even if a later reply had no code); when no
        round produced code, ``code`` is ``""`` and ``check`` holds the parse error (an endpoint fault).

        Args:
            messages: the initial chat messages.
            check: ``code -> CheckResult``; runs compile/correctness/guards (in a worker, never here).
            language, kernel_name: as for :meth:`generate`.

        Raises:
            The transport and configuration errors of :meth:`generate`.
        """
        conv = list(messages)
        usage: dict[str, int] | None = None
        attempts = 0
        code, content, finish, truncated = "", "", None, False
        result = CheckResult(False, "no attempt made")
        checked: tuple[str, bool, CheckResult] | None = None  # the last round that produced code
        max_repairs = self.config.max_repairs
        fault = ""
        for rnd in range(max_repairs + 1):
            try:
                reply = self._chat(conv)
            except LLMEndpointError as exc:
                if checked is None:
                    raise
                fault = str(exc)  # the generated candidate stays the result: its failure is the strategy's
                conv.pop()  # the repair request that got no answer
                break
            attempts += reply.attempts
            usage = _add_usage(usage, reply.usage)
            content, finish = reply.content, reply.finish_reason
            conv.append({"role": "assistant", "content": content})
            try:
                ex = extract_code(content, language, kernel_name)
            except ParseError as exc:
                result = CheckResult(False, str(exc))
            else:
                result = check(ex.code)
                if not result.ok and (ex.truncated or finish == "length"):
                    result = CheckResult(False, result.error_text + "\n(Your reply was cut off at the token "
                                         "limit: return a shorter, complete file.)")
                checked = (ex.code, ex.truncated, result)
            self._log({"event": "check", "round": rnd, "ok": result.ok, "error_text": result.error_text},
                      self._secrets())
            if result.ok or rnd == max_repairs:
                break
            conv.append(repair_message(result.error_text, rnd + 1, max_repairs, language))
        if checked is not None:
            code, truncated, result = checked
        repairs = sum(1 for m in conv[len(messages):] if m["role"] == "user")
        sec = self._secrets()
        return GenerationResult(redact(code, sec), redact(content, sec), usage, attempts, repairs, finish, truncated,
                                CheckResult(result.ok, redact(result.error_text, sec)), redact(conv, sec),
                                redact(fault, sec))
