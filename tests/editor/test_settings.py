"""Settings validation: every bad value is reported and replaced by its default, never fatal."""

from __future__ import annotations

from htam_core.editor.settings import Settings, parse_settings, settings_to_json


def test_valid_settings_and_nested_section():
    s, problems = parse_settings({"htam": {"engine": "llm", "topN": 3, "llm": {"model": "m", "baseUrl": ""}}})
    assert problems == []
    assert (s.engine, s.top_n, s.llm.model, s.llm.base_url) == ("llm", 3, "m", None)


def test_bad_values_fall_back_to_defaults_with_one_sentence_each():
    s, problems = parse_settings({"engine": "gpt", "topN": 0, "budget": 1.5, "static": "yes",
                                  "llm": {"apiKeyEnv": "1BAD"}, "unknown": 1}, Settings(top_n=7))
    assert (s.engine, s.top_n, s.budget, s.static, s.llm.api_key_env) == ("rules", 5, 8, False, "OPENAI_API_KEY")
    assert len(problems) == 5
    assert any(p.startswith("htam.topN = 0 must be an integer from 1 to 20; using 5") for p in problems)
    assert parse_settings([1, 2])[1] == ["HTAM settings must be an object, got list; using defaults"]


def test_json_round_trip():
    s = Settings(engine="llm", top_n=9, memory_path="/tmp/m.sqlite3")
    again, problems = parse_settings(settings_to_json(s))
    assert again == s and problems == []
