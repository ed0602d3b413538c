"""The LLM engine end to end against the loopback OpenAI-compatible server (never a real service).

The scripted replies are edits of the bundled example (examples/vector_add.py): a correct one (BLOCK_SIZE
256), a broken one (syntax error, renamed kernel), a wrong one (x - y), garbage and HTTP errors.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest

from htam_core.generate.config import LLMConfig
from htam_core.memory import load_knowledge, open_store
from htam_core.optimize import OptimizeResult, OptimizeTask, ProgressEvent, run_optimize
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
    assert sorted(p.name for p in (out / "candidates").iterdir() if p.is_dir()) == ["00-start", f"01-{step.strategy}-try1"]

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
    # generated code that failed its check is the strategy's failure (unlike an endpoint fault)
    assert [(r.step, r.outcome.status) for r in _records(tmp_path)] == [(step.strategy, "incorrect")]


def test_failed_candidate_then_endpoint_fault_stays_the_strategys_failure(vadd: Path, tmp_path: Path) -> None:
    """The repair request fails at the endpoint: the candidate the model did write is still judged and recorded."""
    wrong = _good(vadd).replace("x + y, mask=mask", "x - y, mask=mask")
    with OpenAIServer([_fenced(wrong), Scripted.error(500, "model crashed")]) as srv:
        res = _run(vadd, tmp_path, srv)
        assert len(srv.requests) == 2
    (step,) = res.steps
    assert step.status == "incorrect" and "x - y" in step.edit and "HTTP 500" in step.params["repair_fault"]
    assert [r.outcome.status for r in _records(tmp_path)] == ["incorrect"]


def test_failed_candidate_then_no_code_stays_the_strategys_failure(vadd: Path, tmp_path: Path) -> None:
    wrong = _good(vadd).replace("x + y, mask=mask", "x - y, mask=mask")
    with OpenAIServer([_fenced(wrong), Scripted.content("I cannot fix it.")]) as srv:
        res = _run(vadd, tmp_path, srv)
        assert len(srv.requests) == 2
    (step,) = res.steps
    assert step.status == "incorrect" and "x - y" in step.edit
    assert [r.outcome.status for r in _records(tmp_path)] == ["incorrect"]


def _records(tmp_path: Path) -> list:
    with open_store(tmp_path / "mem.sqlite3") as st:
        return list(st.records())


def _stop_line(data: dict) -> str:
    (stopped,) = [w for w in data["warnings"] if w.startswith("the LLM engine stopped")]
    assert "\n" not in stopped and "Traceback" not in stopped
    return stopped


def test_reply_without_code_is_an_endpoint_fault(vadd: Path, tmp_path: Path) -> None:
    """A model that never answers with code is an endpoint fault: no strategy is blamed in the memory, the
    run gives up after --llm-max-faults consecutive faults, and never spends requests beyond the budget."""
    prose = Scripted.content("I would suggest using larger blocks, but I cannot show code.")
    with OpenAIServer([prose, prose, prose, prose]) as srv:
        res = _run(vadd, tmp_path, srv, budget=3, max_repairs=0, max_faults=2)
        assert len(srv.requests) == 2
    assert [s.status for s in res.steps] == ["endpoint_fault", "endpoint_fault"]
    assert res.steps[0].strategy != res.steps[1].strategy  # a reply without code moves on to the next strategy
    assert all(s.verified_on == "none" and s.correct is None and s.params == {"fault": "no_code"}
               for s in res.steps)
    assert "contains no code" in res.steps[0].messages[0]
    data = check_report(tmp_path / "out", vadd.read_text())
    assert data["changed"] is False
    stopped = _stop_line(data)
    assert "after 2 consecutive endpoint faults (--llm-max-faults 2)" in stopped and "contains no code" in stopped
    assert len(data["warnings"]) == 1
    md = (tmp_path / "out" / "report.md").read_text()
    assert md.count("endpoint fault (no candidate)") == 2 and "2 of the 2 steps were LLM endpoint faults" in md
    assert _records(tmp_path) == []  # nothing for the ranker to learn from


@pytest.mark.parametrize(("reply", "needle", "kind"), [
    (Scripted.raw("<html>502 bad gateway</html>", content_type="text/html"), "not a chat completion",
     "malformed_reply"),
    (Scripted.raw('{"unexpected": true}'), "answered a completion with no choices", "malformed_reply"),
    (Scripted.error(500, "model crashed"), "answered HTTP 500 (server error)", "http"),
    (Scripted.error(429, "slow down"), "answered HTTP 429", "rate_limit"),
    (Scripted.delay(5.0), "no reply from", "timeout"),
])
def test_endpoint_faults_are_kept_out_of_the_memory(vadd: Path, tmp_path: Path, reply: Scripted, needle: str,
                                                     kind: str) -> None:
    start = vadd.read_text()
    with OpenAIServer([reply, reply, reply]) as srv:
        # a short client timeout only where the fault is the timeout: on a loaded machine a 1 s limit would turn
        # the other replies into timeouts too
        res = _run(vadd, tmp_path, srv, budget=3, timeout_s=1.0 if kind == "timeout" else 30, max_faults=2)
        assert len(srv.requests) == 2  # gave up after 2 consecutive faults, within the budget of 3
    assert [s.status for s in res.steps] == ["endpoint_fault"] * 2
    assert all(s.params == {"fault": kind} and needle in s.messages[0] for s in res.steps)
    assert res.best_text == start and not res.cancelled
    data = check_report(tmp_path / "out", start)
    stopped = _stop_line(data)
    assert "after 2 consecutive endpoint faults" in stopped and needle in stopped, data["warnings"]
    assert len(data["warnings"]) == 1  # said once
    assert stopped in (tmp_path / "out" / "report.md").read_text()
    assert _records(tmp_path) == []
    _no_secret_written(tmp_path / "out")


def test_persistent_fault_stops_at_once(vadd: Path, tmp_path: Path) -> None:
    """HTTP 401 would repeat the same way: one request, one endpoint-fault step, one line, no memory record."""
    with OpenAIServer([Scripted.error(401, "bad key")] * 2) as srv:
        res = _run(vadd, tmp_path, srv, budget=3, max_faults=3)
        assert len(srv.requests) == 1
    (step,) = res.steps
    assert step.status == "endpoint_fault" and step.params == {"fault": "http"}
    data = check_report(tmp_path / "out", vadd.read_text())
    stopped = _stop_line(data)
    assert stopped.startswith("the LLM engine stopped: ") and "HTTP 401, authentication failed" in stopped
    assert KEY_ENV in stopped and len(data["warnings"]) == 1
    assert _records(tmp_path) == []


def test_connection_refused_is_an_endpoint_fault(vadd: Path, tmp_path: Path) -> None:
    with OpenAIServer([]) as srv:
        pass  # stopped: its port now refuses connections
    res = _run(vadd, tmp_path, srv, budget=2)
    assert [s.params["fault"] for s in res.steps] == ["connection", "connection"]
    assert "cannot connect to" in _stop_line(check_report(tmp_path / "out", vadd.read_text()))
    assert _records(tmp_path) == []


def test_hung_endpoint_is_cut_at_the_deadline_with_progress(vadd: Path, tmp_path: Path) -> None:
    """An endpoint dripping one byte a second: each request ends at the 3 s total deadline with waiting lines
    on the progress callback (the LSP's work-done progress), and the run stops calling it after 2 faults."""
    events: list[tuple[float, ProgressEvent]] = []
    drip = Scripted.drip(1.0, _fenced(_good(vadd)))
    with OpenAIServer([drip, drip, drip]) as srv:
        cfg = LLMConfig(base_url=srv.base_url, model="loopback-model", api_key_env=KEY_ENV, timeout_s=3.0,
                        max_retries=1, max_faults=2)
        res = run_optimize(OptimizeTask(path=str(vadd), kernel="add_kernel", engine="llm", llm=cfg.to_json(),
                                        budget=3, static=True, out_dir=str(tmp_path / "out"),
                                        memory_path=str(tmp_path / "mem.sqlite3")),
                           on_progress=lambda e: events.append((time.monotonic(), e)))
        assert len(srv.requests) == 2  # the deadline left no time for a retry; no third request
    assert [s.status for s in res.steps] == ["endpoint_fault"] * 2
    assert all(s.params == {"fault": "timeout"} for s in res.steps)
    waiting = [e.message for _, e in events if e.message.startswith("waiting for ")]
    assert waiting == [f"waiting for loopback-model at {srv.base_url}: {i} s of 3 s" for i in (1, 2)] * 2, waiting
    log = [json.loads(line) for line in (tmp_path / "out" / "llm.jsonl").read_text().splitlines()]
    ts = [dt.datetime.fromisoformat(r["ts"]) for r in log if r["event"] in ("request", "error")]
    assert [r["event"] for r in log] == ["request", "error"] * 2
    for t_req, t_err in zip(ts[::2], ts[1::2], strict=True):
        assert (t_err - t_req).total_seconds() <= 3.0 + 1.0
    data = check_report(tmp_path / "out", vadd.read_text())
    stopped = _stop_line(data)
    assert "after 2 consecutive endpoint faults" in stopped and srv.base_url in stopped and "within 3 s" in stopped
    assert _records(tmp_path) == []


def test_fault_then_candidate_keeps_the_strategy(vadd: Path, tmp_path: Path) -> None:
    """After an endpoint fault the same strategy is asked again; only the real candidate enters the memory."""
    good = _good(vadd)
    with OpenAIServer([Scripted.error(503, "overloaded"), _fenced(good)]) as srv:
        res = _run(vadd, tmp_path, srv, budget=2)
        assert len(srv.requests) == 2
    fault, step = res.steps
    assert fault.status == "endpoint_fault" and step.status == "neutral" and step.correct is True
    assert step.strategy == fault.strategy
    data = check_report(tmp_path / "out", vadd.read_text())
    (note,) = data["warnings"]
    assert note.startswith("1 LLM endpoint fault(s) gave no candidate (steps 1)") and "HTTP 503" in note
    assert [(r.step, r.outcome.status) for r in _records(tmp_path)] == [(step.strategy, "neutral")]


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


def test_cancel_while_waiting_for_the_llm_ends_the_run_at_once(vadd: Path, tmp_path: Path) -> None:
    """The LSP's cancel (the loop's cancel event) abandons a waiting request instead of sitting out the deadline."""
    import threading

    cancel = threading.Event()
    asked: list[float] = []

    def on_progress(e: ProgressEvent) -> None:
        if e.message.startswith("asking the LLM") and not asked:
            asked.append(time.monotonic())
            threading.Timer(0.5, cancel.set).start()

    with OpenAIServer([Scripted.delay(20, _fenced(_good(vadd)))]) as srv:
        cfg = LLMConfig(base_url=srv.base_url, model="loopback-model", api_key_env=KEY_ENV, timeout_s=30.0)
        res = run_optimize(OptimizeTask(path=str(vadd), kernel="add_kernel", engine="llm", llm=cfg.to_json(),
                                        budget=2, static=True, out_dir=str(tmp_path / "out"),
                                        memory_path=str(tmp_path / "mem.sqlite3")),
                           on_progress=on_progress, cancel=cancel)
        assert len(srv.requests) == 1
    assert asked and time.monotonic() - asked[0] < 5.0  # the deadline was 30 s; writing the report takes ~2 s
    assert res.cancelled and res.steps == [] and _records(tmp_path) == []
    check_report(tmp_path / "out", vadd.read_text())


def test_a_model_that_repeats_itself_spends_the_budget_not_dozens_of_requests(vadd: Path, tmp_path: Path) -> None:
    """A deterministic model writes the same kernel whatever strategy is asked: each repeat is one step of the
    budget (fault kind ``repeat``, never learned), so a budget of 3 costs 3 requests, not one per ranked
    strategy."""
    good = _fenced(_good(vadd))
    with OpenAIServer([good] * 30) as srv:
        res = _run(vadd, tmp_path, srv, budget=3, max_repairs=0, max_faults=5)
        assert len(srv.requests) == 3
    assert [s.status != "endpoint_fault" for s in res.steps] == [True, False, False]
    assert all(s.params == {"fault": "repeat"} and "repeats a kernel already evaluated" in s.messages[0]
               for s in res.steps[1:])
    assert [r.step for r in _records(tmp_path)] == [res.steps[0].strategy]
