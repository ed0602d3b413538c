"""Errors of the generators.

Every error says what happened and what to do. Messages never contain the API key (the LLM
generator redacts it before raising).

The errors of the endpoint itself (no reply within the deadline, HTTP errors, a refused connection, a
body that is not a chat completion, a reply without code) derive from :class:`LLMEndpointError`: the
optimize loop records them as *endpoint faults*, never as a failure of the strategy it asked for, so
they never reach the memory the ranker learns from.
"""

from __future__ import annotations


class GenerationError(Exception):
    """A generator could not produce a candidate (base class of every generator error)."""


class LLMConfigError(GenerationError):
    """The LLM endpoint is not configured (missing model, base URL or API-key variable)."""


class LLMCancelledError(GenerationError):
    """The user cancelled while a request was waiting for the endpoint (the request was abandoned)."""


class LLMEndpointError(GenerationError):
    """The endpoint failed to deliver a usable reply: an endpoint fault, not an outcome of the strategy.

    Attributes:
        kind: short machine-readable fault kind (``"timeout"``, ``"rate_limit"``, ``"http"``,
            ``"connection"``, ``"malformed_reply"``, ``"no_code"``), written into the step's params.
        persistent: the same request would fail the same way again (authentication, a wrong URL or
            model, a refused request): the optimize loop stops asking at once instead of retrying.
    """

    kind = "endpoint"
    persistent = False


class LLMTimeoutError(LLMEndpointError):
    """The endpoint did not deliver a complete reply within the total per-request deadline (``--llm-timeout``)."""

    kind = "timeout"


class LLMRateLimitError(LLMEndpointError):
    """The endpoint kept answering HTTP 429 (rate limit or quota) after the bounded retries."""

    kind = "rate_limit"


class LLMHTTPError(LLMEndpointError):
    """The endpoint answered an HTTP error (4xx other than 429, or 5xx after the retries), or refused the connection.

    Attributes:
        status: the HTTP status code, or ``None`` for a connection failure.
        kind: ``"connection"`` when ``status`` is ``None``, else ``"http"``.
        persistent: a 4xx other than 408 and 429 (authentication, permission, not found, bad request).
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = "connection" if status is None else "http"
        self.persistent = status is not None and 400 <= status < 500 and status not in (408, 429)


class LLMReplyError(LLMEndpointError):
    """The endpoint answered 200 but the body is not a chat completion (garbage, non-JSON, no choices)."""

    kind = "malformed_reply"


class LLMRepeatError(LLMEndpointError):
    """Every code block of the reply repeats a kernel already evaluated in this run (a deterministic model asked
    again with a near-identical prompt writes the same code): no new candidate. It spends one step of the budget,
    like a reply without code, so a model that keeps repeating cannot turn a budget of 3 into dozens of requests;
    consecutive repeats count toward ``--llm-max-faults``. Never recorded in the memory."""

    kind = "repeat"


class ParseError(LLMEndpointError):
    """The reply holds no usable code block.

    Attributes:
        reply_excerpt: the start of the reply, for the message and the log.
    """

    kind = "no_code"

    def __init__(self, message: str, reply_excerpt: str = "") -> None:
        super().__init__(message)
        self.reply_excerpt = reply_excerpt
