"""LLM configuration and secret handling (htam_core.generate.config)."""

from __future__ import annotations

import argparse
import json

import pytest

from htam_core.generate.config import (
    DEFAULT_BASE_URL,
    LLMConfig,
    add_llm_arguments,
    redact,
    scrub_env,
)
from htam_core.generate.errors import LLMConfigError


def test_defaults_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert LLMConfig().base_url == "http://127.0.0.1:9/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    cfg = LLMConfig()
    assert cfg.base_url == DEFAULT_BASE_URL and cfg.api_key_env == "OPENAI_API_KEY" and cfg.max_repairs == 2


def test_from_args_reads_the_cli_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    p = argparse.ArgumentParser()
    add_llm_arguments(p)
    args = p.parse_args(["--llm-base-url", "http://h/v1", "--llm-model", "m", "--llm-api-key-env", "MY_KEY",
                         "--llm-timeout", "7.5", "--llm-max-tokens", "99", "--llm-max-repairs", "0",
                         "--llm-max-faults", "4"])
    cfg = LLMConfig.from_args(args)
    assert (cfg.base_url, cfg.model, cfg.api_key_env, cfg.timeout_s, cfg.max_tokens, cfg.max_repairs,
            cfg.max_faults) == ("http://h/v1", "m", "MY_KEY", 7.5, 99, 0, 4)
    monkeypatch.setenv("MY_KEY", "sk-abcdef")
    assert cfg.api_key() == "sk-abcdef"
    assert "sk-abcdef" not in json.dumps(cfg.to_json())


def test_key_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = LLMConfig(model="m", api_key_env="LATE_KEY")
    monkeypatch.delenv("LATE_KEY", raising=False)
    with pytest.raises(LLMConfigError, match="LATE_KEY"):
        cfg.api_key()
    monkeypatch.setenv("LATE_KEY", "sk-late-1234")
    assert cfg.api_key() == "sk-late-1234"


def test_help_says_the_timeout_is_a_total_deadline() -> None:
    p = argparse.ArgumentParser()
    add_llm_arguments(p)
    text = " ".join(p.format_help().split())
    assert "total deadline of one LLM request" in text and "its retries together" in text
    assert "--llm-max-faults N" in text and "consecutive endpoint faults" in text


@pytest.mark.parametrize("kw", [{"timeout_s": 0}, {"max_tokens": -1}, {"max_repairs": -1}, {"max_faults": 0},
                                {"progress_s": 0}])
def test_bad_values_are_refused(kw: dict) -> None:
    with pytest.raises(LLMConfigError):
        LLMConfig(**kw)


def test_redact_nested_and_scrub_env() -> None:
    key = "sk-secret-value"
    data = {"a": [f"x {key} y", ("t", key)], key: 3, "n": 5}
    out = redact(data, [key])
    assert key not in json.dumps(out) and out["n"] == 5
    assert redact("abc", ["ab"]) == "abc"  # too short to redact safely
    env = scrub_env({"OPENAI_API_KEY": key, "MY_KEY": key, "PATH": "/bin"}, extra=["MY_KEY"])
    assert env == {"PATH": "/bin"}
