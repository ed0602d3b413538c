"""Editor settings: one validated model, fed by ``initializationOptions`` and ``workspace/configuration``.

Following jedi-language-server's habit, every setting has a default; an invalid
value is reported back to the user and replaced by its default, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

ENGINES = ("rules", "llm")


@dataclass(frozen=True)
class LLMSettings:
    """The OpenAI-compatible endpoint. ``None`` means: use ``OPENAI_BASE_URL`` / the client default."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"


@dataclass(frozen=True)
class Settings:
    """All settings of the server.

    Attributes:
        engine: ``"rules"`` (mechanical transforms, default) or ``"llm"``.
        llm: endpoint settings for the LLM engine.
        gpu_index: CUDA device index used for profiling (0-based).
        budget: candidates per auto-optimize run (1..64).
        memory_path: HTAM memory store path, or ``None`` for the default (``HTAM_MEMORY`` or the user data dir).
        top_n: code actions offered per kernel (1..20).
        static: force static profiling even when a GPU is present.
    """

    engine: str = "rules"
    llm: LLMSettings = field(default_factory=LLMSettings)
    gpu_index: int = 0
    budget: int = 8
    memory_path: str | None = None
    top_n: int = 5
    static: bool = False


# camelCase key (client side) -> (attribute, validator returning the value or raising ValueError)
def _int_in(lo: int, hi: int):
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int | float) or int(v) != v or not lo <= int(v) <= hi:
            raise ValueError(f"must be an integer from {lo} to {hi}")
        return int(v)

    return check


def _engine(v: Any) -> str:
    if v not in ENGINES:
        raise ValueError(f"must be one of {', '.join(ENGINES)}")
    return str(v)


def _opt_str(v: Any) -> str | None:
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise ValueError("must be a string")
    return v


def _env_name(v: Any) -> str:
    if not isinstance(v, str) or not v or not (v.replace("_", "a").isalnum()) or v[0].isdigit():
        raise ValueError("must be an environment variable name such as OPENAI_API_KEY")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("must be true or false")
    return v


_TOP = {
    "engine": ("engine", _engine),
    "gpuIndex": ("gpu_index", _int_in(0, 63)),
    "budget": ("budget", _int_in(1, 64)),
    "memoryPath": ("memory_path", _opt_str),
    "topN": ("top_n", _int_in(1, 20)),
    "static": ("static", _bool),
}
_LLM = {
    "baseUrl": ("base_url", _opt_str),
    "model": ("model", _opt_str),
    "apiKeyEnv": ("api_key_env", _env_name),
}


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Validate client settings.

    Args:
        raw: the ``htam`` section as sent by the client (camelCase keys, see :data:`_TOP`), or ``None``.
            A nested ``{"htam": {...}}`` is accepted too.
        base: settings to update (defaults when ``None``).

    Returns:
        ``(settings, problems)``: each problem is a sentence naming the setting, the bad value and the
        default used instead. Unknown keys are ignored.
    """
    settings = base or Settings()
    problems: list[str] = []
    if raw is None:
        return settings, problems
    if not isinstance(raw, dict):
        return settings, [f"HTAM settings must be an object, got {type(raw).__name__}; using defaults"]
    if isinstance(raw.get("htam"), dict):
        raw = raw["htam"]
    defaults = Settings()
    updates: dict[str, Any] = {}
    for key, (attr, check) in _TOP.items():
        if key in raw:
            try:
                updates[attr] = check(raw[key])
            except ValueError as exc:
                updates[attr] = getattr(defaults, attr)
                problems.append(f"htam.{key} = {raw[key]!r} {exc}; using {getattr(defaults, attr)!r}")
    llm_raw = raw.get("llm")
    if llm_raw is not None:
        llm_updates: dict[str, Any] = {}
        if not isinstance(llm_raw, dict):
            problems.append("htam.llm must be an object; using defaults")
        else:
            for key, (attr, check) in _LLM.items():
                if key in llm_raw:
                    try:
                        llm_updates[attr] = check(llm_raw[key])
                    except ValueError as exc:
                        d = getattr(LLMSettings(), attr)
                        llm_updates[attr] = d
                        problems.append(f"htam.llm.{key} = {llm_raw[key]!r} {exc}; using {d!r}")
        updates["llm"] = replace(settings.llm, **llm_updates)
    return replace(settings, **updates), problems


def settings_to_json(s: Settings) -> dict[str, Any]:
    """camelCase form of ``s`` (what a client would send)."""
    out: dict[str, Any] = {k: getattr(s, attr) for k, (attr, _) in _TOP.items()}
    out["llm"] = {k: getattr(s.llm, attr) for k, (attr, _) in _LLM.items()}
    return out


def apply_to_session(settings: Settings, session: Any) -> None:
    """Push ``settings`` to the :class:`~htam_core.editor.session.Session` (blocking when a new memory path
    reopens a loaded store). The LLM endpoint is configured when the LLM engine is chosen or an endpoint is set."""
    llm = None
    if settings.engine == "llm" or settings.llm.model or settings.llm.base_url:
        from htam_core.generate.config import LLMConfig  # deferred: only for the LLM engine

        llm = LLMConfig(base_url=settings.llm.base_url or "", model=settings.llm.model,
                        api_key_env=settings.llm.api_key_env)
    if session.ready:
        session.configure(memory_path=settings.memory_path, engine=settings.engine, llm=llm,
                          gpu_index=settings.gpu_index, static=settings.static)
    else:
        session.memory_path, session.engine, session.llm = settings.memory_path, settings.engine, llm
        session.gpu_index, session.static = settings.gpu_index, settings.static


__all__ = ["ENGINES", "LLMSettings", "Settings", "apply_to_session", "parse_settings", "settings_to_json"]
