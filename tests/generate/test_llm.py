"""The LLM generator end to end against the loopback OpenAI-compatible server (never a real service)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from htam_core.generate.config import LLMConfig
from htam_core.generate.errors import (
    GenerationError,
    LLMCancelledError,
    LLMConfigError,
    LLMEndpointError,
    LLMHTTPError,
    LLMRateLimitError,
    LLMReplyError,
    LLMTimeoutError,
    ParseError,
)
from htam_core.generate.llm import LOG_NAME, CheckResult, LLMGenerator
from htam_core.generate.prompt import build_messages
from tests.support.openai_server import OpenAIServer, Scripted

KERNEL = textwrap.dedent("""\
    import triton
    import triton.language as tl


    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
    """)
GOOD = KERNEL.replace("BLOCK: tl.constexpr", "BLOCK: tl.constexpr = 1024")
SYNTAX_BROKEN = KERNEL.replace("pid = tl.program_id(0)", "pid = tl.program_id(0")
WRONG_RESULT = KERNEL.replace("mask=m) + tl.load", "mask=m) - tl.load")
DIRECTION = {"name": "Launch Configuration", "description": "Retune block sizes and warps for the launch."}
STRATS = [{"id": "triton.retune_block", "name": "retune BLOCK constexprs", "guidance": "Try BLOCK in 256..4096.",
           "example_before": "add_kernel[grid](..., BLOCK=64)", "example_after": "add_kernel[grid](..., BLOCK=1024)",
           "risk": "none"}]
HINTS = ["after Memory Access, Launch Configuration paid off 7 of 9 times; Data Reuse failed twice"]


def _cfg(srv: OpenAIServer, **kw: object) -> LLMConfig:
    base = {"base_url": srv.base_url, "model": "loopback-model", "api_key_env": "HTAM_TEST_LLM_KEY",
            "timeout_s": 30.0, "backoff_s": 0.01, "max_retries": 2}  # tests of the deadline pass their own
    base.update(kw)
    return LLMConfig(**base)  # type: ignore[arg-type]


def _messages() -> list[dict[str, str]]:
    return build_messages(KERNEL, "triton", None, DIRECTION, STRATS, HINTS, None, None, kernel_name="add_kernel")


def _fence(code: str) -> str:
    return f"Here is the faster version.\n\n```python\n{code}```\n\nBLOCK is now 1024."


def _log_lines(tmp_path: Path) -> list[dict]:
    return [json.loads(ln) for ln in (tmp_path / LOG_NAME).read_text().splitlines()]


# A real check: run the candidate in a separate process under the Triton interpreter (CPU).
_RUNNER = textwrap.dedent("""\
    import importlib.util, sys, torch
    spec = importlib.util.spec_from_file_location("cand", sys.argv[1])
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    for n in (1000, 4099):
        x, y = torch.randn(n), torch.randn(n)
        out = torch.full((n,), float("nan"))
        mod.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        if not torch.allclose(out, x + y, atol=1e-4, rtol=1e-4):
            sys.exit(f"wrong result for n={n}: max abs error {(out - (x + y)).abs().max().item():.3g}")
    """)


def interpreter_check(tmp_path: Path):
    def check(code: str) -> CheckResult:
        try:
            compile(code, "candidate.py", "exec")
        except SyntaxError as exc:
            return CheckResult(False, f"candidate.py:{exc.lineno}: SyntaxError: {exc.msg}")
        f = tmp_path / f"cand_{time.monotonic_ns()}.py"
        f.write_text(code)
        env = {k: v for k, v in os.environ.items() if k != "HTAM_TEST_LLM_KEY"} | {"TRITON_INTERPRET": "1"}
        r = subprocess.run([sys.executable, "-c", "import triton\n" + _RUNNER, str(f)], env=env,
                           capture_output=True, text=True, timeout=120)
        return CheckResult(r.returncode == 0, (r.stderr or r.stdout)[-2000:])
    return check


def test_request_carries_direction_strategies_and_hints(api_key: str, tmp_path: Path) -> None:
    with OpenAIServer([Scripted.content(_fence(GOOD))]) as srv:
        res = LLMGenerator(_cfg(srv), tmp_path).generate(_messages(), language="triton", kernel_name="add_kernel")
        assert len(srv.requests) == 1
        req = srv.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {api_key}"
    assert req.body["model"] == "loopback-model" and req.body["max_tokens"] == 4096
    user = req.body["messages"][-1]["content"]
    for needle in ("Launch Configuration", "Retune block sizes", "retune BLOCK constexprs", "Try BLOCK in 256..4096.",
                   "add_kernel[grid](..., BLOCK=1024)", HINTS[0], "def add_kernel"):
        assert needle in user, needle
    assert res.code == GOOD and res.attempts == 1 and res.usage == {"prompt_tokens": 11, "completion_tokens": 7,
                                                                      "total_tokens": 18}
    assert res.finish_reason == "stop" and not res.truncated


def test_good_reply_becomes_verified_code(api_key: str, tmp_path: Path) -> None:
    with OpenAIServer([Scripted.content(_fence(GOOD))]) as srv:
        res = LLMGenerator(_cfg(srv), tmp_path).generate_with_repair(
            _messages(), interpreter_check(tmp_path), language="triton", kernel_name="add_kernel")
    assert res.ok and res.repairs == 0 and res.check is not None and res.check.ok and res.code == GOOD


def test_broken_replies_trigger_repairs_carrying_the_error(api_key: str, tmp_path: Path) -> None:
    script = [Scripted.content(_fence(SYNTAX_BROKEN)), Scripted.content(_fence(WRONG_RESULT)),
              Scripted.content(_fence(GOOD))]
    with OpenAIServer(script) as srv:
        res = LLMGenerator(_cfg(srv), tmp_path).generate_with_repair(
            _messages(), interpreter_check(tmp_path), language="triton", kernel_name="add_kernel")
        bodies = [r.body for r in srv.requests]
    assert res.ok and res.repairs == 2 and res.attempts == 3 and res.code == GOOD
    assert res.usage is not None and res.usage["total_tokens"] == 54
    second = bodies[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": _fence(SYNTAX_BROKEN)}
    assert "repair 1 of 2" in second[-1]["content"] and "SyntaxError" in second[-1]["content"]
    third = bodies[2]["messages"][-1]["content"]
    assert "repair 2 of 2" in third and "wrong result for n=1000" in third
    checks = [r for r in _log_lines(tmp_path) if r["event"] == "check"]
    assert [c["ok"] for c in checks] == [False, False, True]


def test_repairs_are_bounded(api_key: str, tmp_path: Path) -> None:
    bad = lambda code: CheckResult(False, "nvcc: error: identifier 'tid' is undefined")  # noqa: E731
    with OpenAIServer([Scripted.content(_fence(GOOD))] * 3 + [Scripted.content(_fence(GOOD))]) as srv:
        res = LLMGenerator(_cfg(srv, max_repairs=2), tmp_path).generate_with_repair(_messages(), bad,
                                                                                    language="triton")
        assert len(srv.requests) == 3 and srv.remaining == 1
    assert not res.ok and res.repairs == 2 and res.check is not None and "tid" in res.check.error_text


def test_checked_candidate_survives_a_later_reply_without_code(api_key: str, tmp_path: Path) -> None:
    """Generated code that failed its check stays the result (the strategy's failure) even when the repair
    round's reply has no code: only a call where no round produced code is an endpoint fault."""
    bad = lambda code: CheckResult(False, "wrong result for n=1000")  # noqa: E731
    script = [Scripted.content(_fence(WRONG_RESULT)), Scripted.content("I cannot fix it.")]
    with OpenAIServer(script) as srv:
        res = LLMGenerator(_cfg(srv, max_repairs=1), tmp_path).generate_with_repair(_messages(), bad,
                                                                                    language="triton")
        assert len(srv.requests) == 2
    assert res.code == WRONG_RESULT and not res.ok and res.check is not None
    assert res.check.error_text == "wrong result for n=1000" and res.repairs == 1


def test_fault_in_a_repair_round_keeps_the_checked_candidate(api_key: str, tmp_path: Path) -> None:
    bad = lambda code: CheckResult(False, "wrong result for n=1000")  # noqa: E731
    script = [Scripted.content(_fence(WRONG_RESULT)), Scripted.error(500, "upstream exploded")]
    with OpenAIServer(script) as srv:
        res = LLMGenerator(_cfg(srv, max_repairs=1, max_retries=0), tmp_path).generate_with_repair(
            _messages(), bad, language="triton")
        assert len(srv.requests) == 2
    assert res.code == WRONG_RESULT and not res.ok and res.check is not None
    assert res.check.error_text == "wrong result for n=1000" and "HTTP 500" in res.fault and res.repairs == 0


def test_reply_without_code_is_sent_back_as_repair(api_key: str, tmp_path: Path) -> None:
    script = [Scripted.content("I would increase the block size."), Scripted.content(_fence(GOOD))]
    with OpenAIServer(script) as srv:
        res = LLMGenerator(_cfg(srv), tmp_path).generate_with_repair(_messages(), lambda c: CheckResult(True),
                                                                     language="triton")
        assert "contains no code" in srv.requests[1].body["messages"][-1]["content"]
    assert res.ok and res.repairs == 1


def test_partial_reply_is_flagged_and_repair_says_so(api_key: str, tmp_path: Path) -> None:
    cut = "```python\n" + GOOD[:120]
    script = [Scripted.content(cut, finish_reason="length"), Scripted.content(_fence(GOOD))]
    with OpenAIServer(script) as srv:
        check = lambda code: CheckResult(code == GOOD, "SyntaxError: unexpected EOF")  # noqa: E731
        res = LLMGenerator(_cfg(srv), tmp_path).generate_with_repair(_messages(), check, language="triton")
        assert "cut off at the token limit" in srv.requests[1].body["messages"][-1]["content"]
    assert res.ok


@pytest.mark.parametrize(("reply", "exc", "needle"), [
    (Scripted.raw("<html>502 Bad Gateway</html>", content_type="text/html"), LLMReplyError, "not a chat completion"),
    (Scripted.raw("{not json"), LLMReplyError, "not a chat completion"),
    (Scripted.raw('{"foo": 1}'), LLMReplyError, "no choices"),
    (Scripted.raw('{"choices": [{"index": 0, "message": {"role": "assistant", "content": null}}]}'),
     LLMReplyError, "no text content"),
    (Scripted.content("Sorry, I can't do that."), ParseError, "contains no code"),
])
def test_garbage_ends_in_clear_message(api_key: str, tmp_path: Path, reply: Scripted, exc: type,
                                       needle: str) -> None:
    with OpenAIServer([reply]) as srv, pytest.raises(exc) as ei:
        LLMGenerator(_cfg(srv), tmp_path).generate(_messages(), language="triton")
    assert needle in str(ei.value) and isinstance(ei.value, GenerationError)


def test_timeout_is_bounded_and_clear(api_key: str, tmp_path: Path) -> None:
    with OpenAIServer([Scripted.delay(20, Scripted.content(_fence(GOOD)))]) as srv:
        t0 = time.monotonic()
        with pytest.raises(LLMTimeoutError) as ei:
            LLMGenerator(_cfg(srv, timeout_s=0.5, max_retries=0), tmp_path).generate(_messages(), language="triton")
        assert time.monotonic() - t0 < 5
    msg = str(ei.value)
    assert "no reply from" in msg and "0.5 s" in msg and "--llm-timeout" in msg and srv.base_url in msg


def _request_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("htam-llm-request")]


def _wait_for(cond, limit_s: float = 5.0) -> bool:
    end = time.monotonic() + limit_s
    while not cond() and time.monotonic() < end:
        time.sleep(0.05)
    return cond()


@pytest.mark.parametrize("drip_headers", [False, True], ids=["body", "headers-and-body"])
def test_dripping_endpoint_is_cut_at_the_total_deadline(api_key: str, tmp_path: Path, drip_headers: bool) -> None:
    """One byte a second never trips a per-read timeout; the 3 s total deadline still ends the request."""
    lines: list[str] = []
    with OpenAIServer([Scripted.drip(1.0, Scripted.content(_fence(GOOD)), headers=drip_headers)]) as srv:
        gen = LLMGenerator(_cfg(srv, timeout_s=3.0, max_retries=0, progress_s=1.0), tmp_path, on_wait=lines.append)
        t0 = time.monotonic()
        with pytest.raises(LLMTimeoutError) as ei:
            gen.generate(_messages(), language="triton")
        elapsed = time.monotonic() - t0
        # the abandoned attempt hangs up: the server sees it, and no request thread is left reading
        assert _wait_for(lambda: srv.drips_abandoned == 1), "the client kept reading the dripped reply"
        assert srv.drips_finished == 0
    assert 2.9 <= elapsed <= 3.0 + 1.0, elapsed
    assert _wait_for(lambda: not _request_threads()), _request_threads()
    msg = str(ei.value)
    assert "\n" not in msg and srv.base_url in msg and "within 3 s" in msg and "--llm-timeout" in msg
    assert lines[:2] == [f"waiting for loopback-model at {srv.base_url}: 1 s of 3 s",
                         f"waiting for loopback-model at {srv.base_url}: 2 s of 3 s"], lines
    assert [r["event"] for r in _log_lines(tmp_path)] == ["request", "error"]


def test_deadline_covers_the_retries(api_key: str, tmp_path: Path) -> None:
    script = [Scripted.error(500), Scripted.error(500), Scripted.drip(1.0)]
    with OpenAIServer(script) as srv:
        t0 = time.monotonic()
        with pytest.raises(LLMTimeoutError) as ei:
            LLMGenerator(_cfg(srv, timeout_s=3.0, max_retries=5), tmp_path).generate(_messages())
        elapsed = time.monotonic() - t0
        assert len(srv.requests) == 3  # no retry once the deadline has passed
    assert elapsed <= 3.0 + 1.0, elapsed
    assert "after 3 attempt(s)" in str(ei.value)


def test_late_reply_is_not_retried_past_the_deadline(api_key: str, tmp_path: Path) -> None:
    with OpenAIServer([Scripted.delay(20, Scripted.content("late")), Scripted.content(_fence(GOOD))]) as srv:
        with pytest.raises(LLMTimeoutError):
            LLMGenerator(_cfg(srv, timeout_s=0.5), tmp_path).generate(_messages(), language="triton")
        assert len(srv.requests) == 1 and srv.remaining == 1


def test_backoff_never_sleeps_past_the_deadline(api_key: str, tmp_path: Path) -> None:
    sleeps: list[float] = []
    lines: list[str] = []
    with OpenAIServer([Scripted.error(429, retry_after_s=60), Scripted.content(_fence(GOOD))]) as srv:
        res = LLMGenerator(_cfg(srv, timeout_s=2.0), tmp_path, sleep=sleeps.append,
                           on_wait=lines.append).generate(_messages(), language="triton")
    assert res.code == GOOD and res.attempts == 2
    assert len(sleeps) == 1 and 0 < sleeps[0] < 2.0, sleeps
    assert len(lines) == 1 and "rate limit (HTTP 429), retry 1 of 2 in" in lines[0] and srv.base_url in lines[0]


def test_cancel_abandons_a_waiting_request(api_key: str, tmp_path: Path) -> None:
    cancel = threading.Event()
    with OpenAIServer([Scripted.delay(20, Scripted.content(_fence(GOOD)))]) as srv:
        timer = threading.Timer(0.5, cancel.set)
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(LLMCancelledError, match="cancelled while waiting for loopback-model"):
            LLMGenerator(_cfg(srv, timeout_s=10.0, progress_s=0.2), tmp_path, cancel=cancel).generate(_messages())
        assert time.monotonic() - t0 < 2.0
        timer.join()


def test_endpoint_errors_are_endpoint_faults() -> None:
    """Every fault of the endpoint is an LLMEndpointError (the loop keeps it out of the memory); only the
    faults that would repeat the same way are persistent."""
    for exc in (LLMTimeoutError("t"), LLMRateLimitError("r"), LLMReplyError("g"), ParseError("p"),
                LLMHTTPError("c", None), LLMHTTPError("s", 503), LLMHTTPError("a", 401)):
        assert isinstance(exc, LLMEndpointError), exc
    assert [e.kind for e in (LLMTimeoutError("t"), LLMHTTPError("c", None), ParseError("p"))] == \
        ["timeout", "connection", "no_code"]
    assert [LLMHTTPError("x", s).persistent for s in (None, 400, 401, 404, 408, 429, 500)] == \
        [False, True, True, True, False, False, False]
    assert not isinstance(LLMConfigError("k"), LLMEndpointError)


def test_429_retries_with_bounded_backoff_then_fails(api_key: str, tmp_path: Path) -> None:
    sleeps: list[float] = []
    with OpenAIServer([Scripted.error(429, "Rate limit reached for requests")] * 3) as srv:
        with pytest.raises(LLMRateLimitError) as ei:
            LLMGenerator(_cfg(srv, backoff_s=0.5), tmp_path, sleep=sleeps.append).generate(_messages())
        assert len(srv.requests) == 3
    assert sleeps == [0.5, 1.0]
    assert "HTTP 429" in str(ei.value) and "Rate limit reached" in str(ei.value) and "3 time(s)" in str(ei.value)


def test_429_honours_retry_after_then_succeeds(api_key: str, tmp_path: Path) -> None:
    sleeps: list[float] = []
    with OpenAIServer([Scripted.error(429, retry_after_s=2.5), Scripted.content(_fence(GOOD))]) as srv:
        res = LLMGenerator(_cfg(srv), tmp_path, sleep=sleeps.append).generate(_messages(), language="triton")
    assert res.code == GOOD and res.attempts == 2 and sleeps == [2.5]


def test_500_ends_in_clear_message(api_key: str, tmp_path: Path) -> None:
    with OpenAIServer([Scripted.error(500, "upstream exploded")] * 3) as srv:
        with pytest.raises(LLMHTTPError) as ei:
            LLMGenerator(_cfg(srv), tmp_path, sleep=lambda s: None).generate(_messages())
    assert ei.value.status == 500 and "HTTP 500" in str(ei.value) and "upstream exploded" in str(ei.value)


def test_401_is_not_retried_and_names_the_key_variable(api_key: str, tmp_path: Path) -> None:
    with OpenAIServer([Scripted.error(401, f"Incorrect API key provided: {api_key}")]) as srv:
        with pytest.raises(LLMHTTPError) as ei:
            LLMGenerator(_cfg(srv), tmp_path).generate(_messages())
        assert len(srv.requests) == 1
    msg = str(ei.value)
    assert "authentication failed" in msg and "HTAM_TEST_LLM_KEY" in msg
    assert api_key not in msg and "[REDACTED]" in msg
    assert api_key not in (tmp_path / LOG_NAME).read_text()


def test_connection_refused_is_clear(api_key: str, tmp_path: Path) -> None:
    with OpenAIServer([]) as srv:
        url = srv.base_url
    with pytest.raises(LLMHTTPError, match="cannot connect to"):
        LLMGenerator(_cfg(srv, base_url=url, max_retries=0), tmp_path).generate(_messages())


def test_log_holds_requests_and_replies_without_the_key(api_key: str, tmp_path: Path) -> None:
    script = [Scripted.error(500), Scripted.content(_fence(GOOD) + f"\n(echo: {api_key})")]
    with OpenAIServer(script) as srv:
        LLMGenerator(_cfg(srv), tmp_path / "run").generate(_messages(), language="triton")
    text = (tmp_path / "run" / LOG_NAME).read_text()
    assert api_key not in text and "[REDACTED]" in text
    recs = _log_lines(tmp_path / "run")
    assert [r["event"] for r in recs] == ["request", "error", "request", "reply"]
    assert recs[0]["messages"] == _messages() and recs[0]["model"] == "loopback-model"
    assert "add_kernel" in recs[-1]["body"] and recs[-1]["status"] == 200
    assert all("ts" in r for r in recs)


def test_missing_key_variable_is_a_config_error_and_sends_nothing(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    monkeypatch.delenv("HTAM_TEST_LLM_KEY", raising=False)
    with OpenAIServer([Scripted.content(_fence(GOOD))]) as srv:
        with pytest.raises(LLMConfigError, match="HTAM_TEST_LLM_KEY.*--llm-api-key-env"):
            LLMGenerator(_cfg(srv), tmp_path).generate(_messages())
        assert srv.requests == []


def test_missing_model_is_a_config_error(api_key: str, tmp_path: Path) -> None:
    with OpenAIServer([]) as srv, pytest.raises(LLMConfigError, match="--llm-model"):
        LLMGenerator(_cfg(srv, model=None), tmp_path).generate(_messages())


def test_chat_completions_path_without_v1(api_key: str, tmp_path: Path) -> None:
    with OpenAIServer([Scripted.content(_fence(GOOD))]) as srv:
        cfg = _cfg(srv, base_url=srv.base_url.removesuffix("/v1"))
        assert LLMGenerator(cfg, None).generate(_messages(), language="triton").code == GOOD
        assert srv.requests[0].path == "/chat/completions"


def test_key_echoed_by_the_model_is_redacted_from_the_result(api_key: str, tmp_path: Path) -> None:
    with OpenAIServer([Scripted.content(_fence(GOOD.replace("import triton\n", f"import triton  # {api_key}\n")))]) \
            as srv:
        res = LLMGenerator(_cfg(srv), tmp_path).generate(_messages(), language="triton")
    assert api_key not in res.code and api_key not in res.raw_reply and api_key not in json.dumps(res.messages)
    assert "[REDACTED]" in res.code


def test_each_reply_logs_its_tokens_in_and_out(api_key: str, tmp_path: Path) -> None:
    script = [Scripted.content("no code here", prompt_tokens=1234, completion_tokens=56),
              Scripted.content(_fence(GOOD), prompt_tokens=1400, completion_tokens=300)]
    with OpenAIServer(script) as srv:
        LLMGenerator(_cfg(srv), tmp_path).generate_with_repair(_messages(), interpreter_check(tmp_path),
                                                               language="triton", kernel_name="add_kernel")
    replies = [r for r in _log_lines(tmp_path) if r["event"] == "reply"]
    assert [(r["prompt_tokens"], r["completion_tokens"]) for r in replies] == [(1234, 56), (1400, 300)]


@pytest.mark.parametrize("body", ['{"choices": []}', "{not json", '{"usage": null}', '{"usage": {"prompt_tokens": "9"}}'])
def test_reply_without_usage_counts_none_not_zero(body: str) -> None:
    from htam_core.generate.llm import reply_tokens

    assert reply_tokens(body) == {"prompt_tokens": None, "completion_tokens": None}
