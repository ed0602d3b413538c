"""The loopback OpenAI-compatible server itself (tests/support/openai_server.py)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

from tests.support.openai_server import OpenAIServer, Scripted


def _post(url: str, body: dict, timeout: float = 5) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_replays_script_records_bodies_and_reports_exhaustion() -> None:
    with OpenAIServer([Scripted.content("hello"), Scripted.error(429, "slow down")]) as srv:
        assert srv.base_url.startswith("http://127.0.0.1:")
        s1, b1 = _post(srv.base_url + "/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "q"}]})
        s2, b2 = _post(srv.base_url + "/chat/completions", {"model": "m", "messages": []})
        s3, b3 = _post(srv.base_url + "/chat/completions", {"model": "m", "messages": []})
        s4, b4 = _post(srv.base_url + "/embeddings", {})
    assert (s1, b1["choices"][0]["message"]["content"], b1["object"]) == (200, "hello", "chat.completion")
    assert (s2, b2["error"]["message"], b2["error"]["type"]) == (429, "slow down", "rate_limit_exceeded")
    assert (s3, b3["error"]["message"]) == (500, "loopback script exhausted")
    assert s4 == 404
    assert srv.requests[0].body["messages"][0]["content"] == "q" and len(srv.requests) == 3


def test_stop_does_not_wait_for_a_pending_delay() -> None:
    srv = OpenAIServer([Scripted.delay(25)]).start()
    t = threading.Thread(target=lambda: _post_quiet(srv.base_url + "/chat/completions"), daemon=True)
    t.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    srv.stop()
    assert time.monotonic() - t0 < 5


def _post_quiet(url: str) -> None:
    try:
        _post(url, {"model": "m", "messages": []}, timeout=30)
    except Exception:  # the server went away: expected
        return
