"""Configuration of the LLM generator, and secret handling.

The API key itself is never stored: :class:`LLMConfig` holds only the *name* of the environment
variable that contains it, and :meth:`LLMConfig.api_key` reads it at call time. :func:`redact`
removes the key from any text before it is logged, written to a report or put in an error, and
:func:`scrub_env` removes it from an environment before a worker process is started.

"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from htam_core.generate.errors import LLMConfigError
from htam_core.runtime.children import forget_variable

#: Base URL used when neither ``--llm-base-url`` nor ``OPENAI_BASE_URL`` is given (the openai client's own default).
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Placeholder written wherever a secret was found.
REDACTED = "[REDACTED]"
#: Environment variables that hold OpenAI-style credentials and never reach a GPU worker.
SECRET_ENV_VARS: tuple[str, ...] = ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call an OpenAI-compatible chat-completions endpoint.

    Attributes:
        base_url: endpoint base URL (``http://host:port/v1``); default ``$OPENAI_BASE_URL`` or the OpenAI URL.
        model: model name sent in each request; required before the first call.
        api_key_env: name of the environment variable holding the API key (the key is read at call time).
        timeout_s: total deadline of one request in seconds: connecting, reading the whole reply and the
            retries of that request together (an endpoint that drips bytes cannot stretch it).
        max_tokens: reply length limit in tokens.
        temperature: sampling temperature.
        max_repairs: how many times a failing candidate's error is sent back for a repair.
        max_retries: retries after a timeout, a connection error, HTTP 429 or HTTP 5xx.
        backoff_s: first retry delay in seconds; doubled per retry, capped at 30 s, and raised to the
            server's ``Retry-After`` when it sends one (capped at 60 s), and never past the deadline.
        max_faults: the optimize loop gives the LLM up after this many consecutive endpoint faults
            (deadline passed, HTTP errors, refused connection, malformed reply, reply without code).
        progress_s: seconds between "waiting for <model> at <url>: 12 s of 60 s" progress reports (a quarter
            of ``timeout_s`` when that is shorter, but at least 1 s).
    """

    base_url: str = ""
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    max_tokens: int = 4096
    temperature: float = 0.2
    max_repairs: int = 2
    max_retries: int = 2
    backoff_s: float = 1.0
    max_faults: int = 2
    progress_s: float = 5.0

    def __post_init__(self) -> None:
        forget_variable(self.api_key_env)  # the key's variable never reaches a child, whatever its name
        if not self.base_url:
            object.__setattr__(self, "base_url", os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        if self.timeout_s <= 0:
            raise LLMConfigError(f"LLM timeout must be positive, got {self.timeout_s} s")
        if self.max_tokens <= 0:
            raise LLMConfigError(f"LLM max_tokens must be positive, got {self.max_tokens}")
        if self.max_repairs < 0 or self.max_retries < 0:
            raise LLMConfigError("LLM max_repairs and max_retries must be >= 0")
        if self.max_faults < 1:
            raise LLMConfigError(f"--llm-max-faults must be at least 1, got {self.max_faults}")
        if self.progress_s <= 0:
            raise LLMConfigError(f"LLM progress interval must be positive, got {self.progress_s} s")

    def api_key(self) -> str:
        """Read the API key from ``os.environ[self.api_key_env]`` now.

        Raises:
            LLMConfigError: the variable is unset or empty (message names the variable and the flag).
        """
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise LLMConfigError(
                f"the environment variable {self.api_key_env} that should hold the LLM API key is not set; "
                f"export it, or name another variable with --llm-api-key-env VAR "
                f"(a local server without authentication accepts any non-empty value)")
        return key

    def require_model(self) -> str:
        """The model name.

        Raises:
            LLMConfigError: no model was configured.
        """
        if not self.model:
            raise LLMConfigError("no LLM model configured: pass --llm-model NAME (for example the model your "
                                 f"endpoint at {self.base_url} serves)")
        return self.model

    def to_json(self) -> dict[str, Any]:
        """JSON form for reports: the variable *name* only, never the key."""
        return asdict(self)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LLMConfig:
        """Build from parsed CLI arguments (see :func:`add_llm_arguments`); absent attributes keep defaults."""
        defaults = cls.__dataclass_fields__
        kw: dict[str, Any] = {}
        for name in defaults:
            v = getattr(args, f"llm_{name}", None)
            if v is not None:
                kw[name] = v
        return cls(**kw)


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``--llm-*`` options read by :meth:`LLMConfig.from_args` to a subcommand parser."""
    g = parser.add_argument_group("LLM generator (any OpenAI-compatible endpoint)")
    g.add_argument("--llm-base-url", metavar="URL", help="endpoint base URL (default: $OPENAI_BASE_URL)")
    g.add_argument("--llm-model", metavar="NAME", help="model name")
    g.add_argument("--llm-api-key-env", metavar="VAR",
                   help="environment variable that holds the API key (default: OPENAI_API_KEY)")
    g.add_argument("--llm-timeout", dest="llm_timeout_s", type=float, metavar="S",
                   help="total deadline of one LLM request in seconds: connecting, reading the whole reply and "
                        "its retries together (default: 120)")
    g.add_argument("--llm-max-tokens", type=int, metavar="N", help="reply token limit (default: 4096)")
    g.add_argument("--llm-temperature", type=float, metavar="T", help="sampling temperature (default: 0.2)")
    g.add_argument("--llm-max-repairs", type=int, metavar="N",
                   help="repair rounds after a compile error or wrong result (default: 2)")
    g.add_argument("--llm-max-faults", type=int, metavar="N",
                   help="stop asking the LLM after N consecutive endpoint faults (deadline passed, HTTP error, "
                        "refused connection, malformed reply, reply without code); default: 2")


def llm_task_config(args: argparse.Namespace) -> dict[str, Any] | None:
    """The JSON LLM settings of a CLI task (``OptimizeTask.llm``), or ``None`` unless ``--engine llm``.

    Raises:
        LLMConfigError: ``--engine llm`` without ``--llm-model``.
    """
    if getattr(args, "engine", None) != "llm":
        return None
    cfg = LLMConfig.from_args(args)
    if not cfg.model:
        raise LLMConfigError("--engine llm needs --llm-model NAME (and --llm-base-url or OPENAI_BASE_URL)")
    return cfg.to_json()


def redact(value: Any, secrets: Iterable[str]) -> Any:
    """Return ``value`` with every occurrence of each non-trivial secret replaced by ``[REDACTED]``.

    Works recursively through strings, dicts, lists and tuples (JSON-shaped data). Secrets shorter
    than 4 characters are ignored (replacing them would shred ordinary text).
    """
    secs = [s for s in secrets if s and len(s) >= 4]
    if not secs:
        return value
    if isinstance(value, str):
        for s in secs:
            value = value.replace(s, REDACTED)
        return value
    if isinstance(value, dict):
        return {redact(k, secs): redact(v, secs) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact(v, secs) for v in value)
    return value


def scrub_env(env: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """Copy of ``env`` without the credential variables (:data:`SECRET_ENV_VARS` plus ``extra`` names).

    Use it to build the environment of a GPU or verify worker: the API key must never reach one.
    """
    drop = set(SECRET_ENV_VARS) | set(extra)
    return {k: v for k, v in env.items() if k not in drop}
