"""The LLM engine end to end against the loopback OpenAI-compatible server (never a real service).

The scripted replies are edits of the bundled example (examples/vector_add.py): a correct one (BLOCK_SIZE
256), a broken one (syntax error, renamed kernel), a wrong one (x - y), garbage and HTTP errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.generate.config import LLMConfig
from htam_core.memory import load_knowledge, open_store
from htam_core.optimize import OptimizeResult, OptimizeTask, run_optimize
from tests.optimize.report_checks import check_report
from tests.support.openai_server import OpenAIServer, Scripted

KEY_ENV = "HTAM_TEST_OPT_LLM_KEY"
FAKE_KEY = "sk-loopback-OPTIMIZE-0123456789abcdef"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)


def _fenced(code: str) -> Scripted:
    return Scripted.content(f"Here is the faster kernel:\n\n```python\n{code}```\n\nIt uses wider tiles.")


def _good(src: Path) -> str:
    text = src.read_text()
    assert "BLOCK_SIZE = 64" in text
    return text.replace("BLOCK_SIZE = 64", "BLOCK_SIZE = 256")


def _run(src: Path, tmp_path: Path, srv: OpenAIServer, *, budget: int = 1, **cfg_kw) -> OptimizeResult:
    cfg_kw = {"max_retries": 0, "backoff_s": 0.01, "max_repairs": 1, "timeout_s": 30, **cfg_kw}
    cfg = LLMConfig(base_url=srv.base_url, model="loopback-model", api_key_env=KEY_ENV, **cfg_kw)
    return run_optimize(OptimizeTask(path=str(src), kernel="add_kernel", engine="llm", llm=cfg.to_json(),
                                     budget=budget, static=True, out_dir=str(tmp_path / "out"),
                                     memory_path=str(tmp_path / "mem.sqlite3")))


def _user_prompt(req) -> str:
    msgs = req.body["messages"]
    assert msgs[0]["role"] == "system" and msgs[1]["role"] == "user"
    return msgs[1]["content"]


def _no_secret_written(out: Path) -> None:
    for p in out.rglob("*"):
        if p.is_file() and p.suffix in (".json", ".jsonl", ".md", ".py"):
            assert FAKE_KEY not in p.read_text(errors="replace"), p


def test_good_reply_becomes_a_verified_candidate(vadd: Path, tmp_path: Path) -> None:
    start, good = vadd.read_text(), _good(vadd)
    with OpenAIServer([_fenced(good)]) as srv:
        res = _run(vadd, tmp_path, srv)
        reqs = list(srv.requests)
    assert len(reqs) == 1
    (step,) = res.steps
    assert step.correct is True and step.verified_on == "interpreter" and step.accepted and step.status == "neutral"
    assert "BLOCK_SIZE = 256" in step.edit and step.params["repairs"] == 0 and step.transform is None
    assert res.best_text == good and res.changed and vadd.read_text() == start
    out = tmp_path / "out"
    check_report(out, start)
    # the verdict of the repair check is reused: the candidate is evaluated once
    assert sorted(p.name for p in (out / "candidates").iterdir()) == ["00-start", f"01-{step.strategy}-try1"]

    # the request carries the chosen direction, the retrieved strategies and the transition hints
    kb = load_knowledge()
    prompt = _user_prompt(reqs[0])
    direction = kb.direction(step.direction)
    assert f"**{direction.name}**: {direction.description}" in prompt
    chosen = kb.strategy(step.strategy)
    assert f"### 1. {chosen.title} (`{chosen.id}`)" in prompt
    section = prompt.split("## Strategies to apply", 1)[1].split("## What the memory says", 1)[0]
    listed = [line.rsplit("(`", 1)[1].rstrip("`)") for line in section.splitlines() if line.startswith("### ")]
    assert listed[0] == step.strategy
    for sid in listed:  # companions: same direction, Triton strategies only
        s = kb.strategy(sid)
        assert s.direction == step.direction and "triton" in s.languages, sid
    hints = prompt.split("## What the memory says about the order of steps", 1)[1]
    assert f"- {step.evidence}" in hints
    assert "add_kernel" in prompt and "BLOCK_SIZE = 64" in prompt  # the current kernel itself
    assert reqs[0].body["model"] == "loopback-model"
    assert reqs[0].headers["authorization"] == f"Bearer {FAKE_KEY}"

    log = [json.loads(line) for line in (out / "llm.jsonl").read_text().splitlines()]
    assert [r["event"] for r in log if r["event"] in ("request", "reply")] == ["request", "reply"]
    _no_secret_written(out)
    with open_store(tmp_path / "mem.sqlite3") as st:
        (rec,) = list(st.records())
    assert rec.step == step.strategy and rec.outcome.status == "neutral"


def test_memory_hints_reach_the_prompt(vadd: Path, tmp_path: Path) -> None:
    """A second step's prompt carries the transition evidence recorded by the first."""
    good = _good(vadd)
    better = good.replace("num_warps=4", "num_warps=8")
    with OpenAIServer([_fenced(good), _fenced(better)]) as srv:
        res = _run(vadd, tmp_path, srv, budget=2)
        reqs = list(srv.requests)
    assert len(res.steps) == 2 and all(s.correct is True for s in res.steps)
    second = _user_prompt(reqs[1])
    assert "BLOCK_SIZE = 256" in second  # continues from the accepted candidate
    hints = second.split("## What the memory says about the order of steps", 1)[1]
    assert f"- {res.steps[1].evidence}" in hints
    assert "No transitions recorded yet" not in hints
    assert res.best_text == better


@pytest.mark.parametrize("broken", ["syntax", "renamed", "wrong"])
def test_broken_reply_triggers_a_repair_round(vadd: Path, tmp_path: Path, broken: str) -> None:
    good = _good(vadd)
    bad = {"syntax": good.replace("def add(x: torch.Tensor, y: torch.Tensor)", "def add(x: torch.Tensor, y"),
           "renamed": good.replace("add_kernel", "add_kernel_v2"),
           "wrong": good.replace("x + y, mask=mask", "x - y, mask=mask")}[broken]
    assert bad != good
    with OpenAIServer([_fenced(bad), _fenced(good)]) as srv:
        res = _run(vadd, tmp_path, srv)
        reqs = list(srv.requests)
    assert len(reqs) == 2
    convo = reqs[1].body["messages"]
    assert [m["role"] for m in convo] == ["system", "user", "assistant", "user"]
    assert "did not pass the check (repair 1 of 1)" in convo[3]["content"]
    expect = {"syntax": "does not parse", "renamed": "must keep the kernel 'add_kernel'",
              "wrong": "wrong: it does not match the reference"}[broken]
    assert expect in convo[3]["content"]
    (step,) = res.steps
    assert step.correct is True and step.verified_on == "interpreter" and step.params["repairs"] == 1
    assert res.best_text == good


def test_repairs_exhausted_record_a_failed_step(vadd: Path, tmp_path: Path) -> None:
    wrong = _good(vadd).replace("x + y, mask=mask", "x - y, mask=mask")
    with OpenAIServer([_fenced(wrong), _fenced(wrong)]) as srv:
        res = _run(vadd, tmp_path, srv)
        assert len(srv.requests) == 2
    (step,) = res.steps
    assert step.correct is False and step.status == "incorrect" and not step.accepted
    assert res.best_text == vadd.read_text() and not res.changed
    check_report(tmp_path / "out", vadd.read_text())


def test_reply_without_code_is_a_failed_step(vadd: Path, tmp_path: Path) -> None:
    """A model that never answers with code spends the budget, not requests beyond it."""
    prose = Scripted.content("I would suggest using larger blocks, but I cannot show code.")
    with OpenAIServer([prose, prose, prose, prose]) as srv:
        res = _run(vadd, tmp_path, srv, budget=2, max_repairs=0)
        assert len(srv.requests) == 2
    assert [s.status for s in res.steps] == ["failed", "failed"]
    assert all(s.verified_on == "none" and s.correct is False for s in res.steps)
    assert "contains no code" in res.steps[0].messages[0]
    data = check_report(tmp_path / "out", vadd.read_text())
    assert data["changed"] is False
    with open_store(tmp_path / "mem.sqlite3") as st:
        assert [r.outcome.status for r in st.records()] == ["failed", "failed"]


@pytest.mark.parametrize(("reply", "needle"), [
    (Scripted.raw("<html>502 bad gateway</html>", content_type="text/html"), "not a chat completion"),
    (Scripted.raw('{"unexpected": true}'), "answered a completion with no choices"),
    (Scripted.error(500, "model crashed"), "answered HTTP 500 (server error)"),
    (Scripted.error(429, "slow down"), "answered HTTP 429"),
    (Scripted.error(401, "bad key"), "HTTP 401, authentication failed"),
    (Scripted.delay(5.0), "no reply from"),
])
def test_transport_errors_end_cleanly_with_a_message(vadd: Path, tmp_path: Path, reply: Scripted,
                                                     needle: str) -> None:
    start = vadd.read_text()
    with OpenAIServer([reply]) as srv:
        res = _run(vadd, tmp_path, srv, budget=2, timeout_s=0.5)
        assert len(srv.requests) == 1
    assert res.steps == [] and res.best_text == start and not res.cancelled
    data = check_report(tmp_path / "out", start)
    stopped = [w for w in data["warnings"] if w.startswith("the LLM engine stopped: ")]
    assert len(stopped) == 1 and needle in stopped[0], data["warnings"]
    assert len(data["warnings"]) == 1  # said once
    assert "\n" not in stopped[0] and "Traceback" not in stopped[0]
    assert stopped[0] in (tmp_path / "out" / "report.md").read_text()
    _no_secret_written(tmp_path / "out")


def test_http_500_is_retried(vadd: Path, tmp_path: Path) -> None:
    good = _good(vadd)
    with OpenAIServer([Scripted.error(500), _fenced(good)]) as srv:
        res = _run(vadd, tmp_path, srv, max_retries=1)
        assert len(srv.requests) == 2
    (step,) = res.steps
    assert step.correct is True and step.params["attempts"] == 2


def test_missing_api_key_is_a_clear_message(vadd: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with OpenAIServer([]) as srv:
        res = _run(vadd, tmp_path, srv)
        assert srv.requests == []
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert any(KEY_ENV in w and "--llm-api-key-env" in w for w in data["warnings"]), data["warnings"]
    assert res.steps == []
