"""Errors of the generators.

Every error says what happened and what to do. Messages never contain the API key (the LLM
generator redacts it before raising).
"""

from __future__ import annotations


class GenerationError(Exception):
    """A generator could not produce a candidate (base class of every generator error)."""


class LLMConfigError(GenerationError):
    """The LLM endpoint is not configured (missing model, base URL or API-key variable)."""


class LLMTimeoutError(GenerationError):
    """The endpoint did not answer within the configured timeout, after the bounded retries."""


class LLMRateLimitError(GenerationError):
    """The endpoint kept answering HTTP 429 (rate limit or quota) after the bounded retries."""


class LLMHTTPError(GenerationError):
    """The endpoint answered an HTTP error (4xx other than 429, or 5xx after the retries).

    Attributes:
        status: the HTTP status code, or ``None`` for a connection failure.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMReplyError(GenerationError):
    """The endpoint answered 200 but the body is not a chat completion (garbage, non-JSON, no choices)."""


class ParseError(GenerationError):
    """The reply holds no usable code block.

    Attributes:
        reply_excerpt: the start of the reply, for the message and the log.
    """

    def __init__(self, message: str, reply_excerpt: str = "") -> None:
        super().__init__(message)
        self.reply_excerpt = reply_excerpt
