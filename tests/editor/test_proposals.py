"""A ranked step made into edits through the generator registry, once per (kernel version, strategy)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from htam_core.editor import minimal_edit
from htam_core.editor.proposals import propose_step
from htam_core.editor.session import Session
from htam_core.memory import load_knowledge
from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import apply_edits

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


def _apply(old: str, edit) -> str:
    b = old.encode()
    return (b[:edit.start_byte] + edit.new_text.encode() + b[edit.end_byte:]).decode()


def test_minimal_edit_reproduces_the_new_text_and_stays_small():
    rng = random.Random(5)
    alphabet = "ab\né€😀"
    for _ in range(400):
        old = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        new = list(old)
        for _ in range(rng.randint(0, 3)):
            i = rng.randint(0, len(new))
            new[i:i + rng.randint(0, 2)] = rng.choice(alphabet) * rng.randint(0, 2)
        new_s = "".join(new)
        e = minimal_edit(old, new_s)
        assert _apply(old, e) == new_s
        if old == new_s:
            assert e.start_byte == e.end_byte and e.new_text == ""
    e = minimal_edit("x" * 1000 + "A" + "y" * 1000, "x" * 1000 + "BB" + "y" * 1000)
    assert (e.start_byte, e.end_byte, e.new_text) == (1000, 1001, "BB")


def _step(kb, sid):
    s = kb.strategy(sid)
    return s, kb.direction(s.direction)


def test_rules_engine_goes_through_the_generator_registry():
    kb = load_knowledge()
    text = (CORPUS / "transpose_naive.cu").read_text()
    model = parse_text(text, "cuda", "transpose_naive.cu")
    kernel = next(k for k in model.kernels if k.name == "transpose_naive")
    strat, direction = _step(kb, "transpose_smem_tile")
    res = propose_step(model, kernel, strat, direction, None)
    assert res.ok, res.reason
    assert res.params["transform_id"] == "cuda.transpose_smem_tile"
    # the transform's own edits, as it made them (nothing re-diffed: a diff of the whole text would be one edit)
    direct = registry.propose("cuda.transpose_smem_tile", model, kernel)
    assert isinstance(direct, list)
    assert [f.path for f in res.edits] == [None] and list(res.edits[0].edits) == direct[0].edits
    new = apply_edits(text, res.kernel_edits())
    assert new == direct[0].new_text and "__shared__" in new
    assert any(k.name == "transpose_naive" and not k.incomplete for k in parse_text(new, "cuda").kernels)


def test_steps_that_cannot_be_made_give_a_reason():
    kb = load_knowledge()
    text = (CORPUS / "transpose_naive.cu").read_text()
    model = parse_text(text, "cuda", "transpose_naive.cu")
    kernel = next(k for k in model.kernels if k.name == "transpose_naive")
    manual = next(s for s in kb.strategies if not s.transform and "cuda" in s.languages)
    res = propose_step(model, kernel, manual, kb.direction(manual.direction), None)
    assert not res.ok and "no mechanical transform" in res.reason
    other = next(s for s in kb.strategies if s.transform and s.transform.startswith("triton."))
    res = propose_step(model, kernel, other, kb.direction(other.direction), None)
    assert not res.ok and "does not apply" in res.reason
    half = dataclasses.replace(kernel, incomplete=True)  # still being typed
    res = propose_step(model, half, *_step(kb, "transpose_smem_tile"), None)
    assert not res.ok and "incomplete" in res.reason


@pytest.fixture
def session(tmp_path):
    s = Session(memory_path=str(tmp_path / "m.sqlite3"), static=True)
    s.warm_up()
    yield s
    s.close()


def _counting(monkeypatch) -> list[str]:
    """Count every transform run (``registry.propose``, which both the list and a resolve would call)."""
    calls: list[str] = []
    real = registry.propose

    def propose(tid, *args, **kwargs):
        calls.append(tid)
        return real(tid, *args, **kwargs)

    monkeypatch.setattr(registry, "propose", propose)
    return calls


def test_a_transform_runs_once_per_version_and_strategy_across_list_and_resolve(session, monkeypatch):
    text = (CORPUS / "transpose_naive.cu").read_text()
    model = parse_text(text, "cuda", str(CORPUS / "transpose_naive.cu"))
    kernel = model.kernel("transpose_naive")
    calls = _counting(monkeypatch)
    a = session.analyze(model.path, kernel, 5)
    listed = session.plan(model, kernel, a, 5)  # listing the code actions checks (and makes) each step
    assert listed.actions, "nothing listed"
    checked = list(calls)
    assert len(checked) == len(set(checked)), checked  # each strategy's transform ran once
    for _ in range(2):  # resolving every listed action, twice: no transform runs again
        for s in listed.actions:
            p = session.proposal(model, kernel, s.strategy, None, s.evidence)
            assert p.ok, p.reason
            # resolve returns the proposal made when the list was made: the same edits
            assert p is listed.verdicts[s.strategy].proposal
    assert calls == checked


def test_a_changed_document_gets_new_proposals(session, monkeypatch):
    text = (CORPUS / "transpose_naive.cu").read_text()
    model = parse_text(text, "cuda", str(CORPUS / "transpose_naive.cu"))
    kernel = model.kernel("transpose_naive")
    step = "transpose_smem_tile"
    first = session.proposal(model, kernel, step, None)
    assert first.ok, first.reason
    calls = _counting(monkeypatch)
    assert session.proposal(model, kernel, step, None) is first and not calls
    # an edit outside the kernel moves every offset: the cached proposal would be wrong, so it is made again
    edited = parse_text("// a comment above\n" + text, "cuda", model.path)
    k2 = edited.kernel("transpose_naive")
    second = session.proposal(edited, k2, step, None)
    assert calls and second.ok and second is not first
    shift = len("// a comment above\n")
    assert [e.start_byte - shift for e in second.kernel_edits()] == [e.start_byte for e in first.kernel_edits()]
    assert apply_edits(edited.text, second.kernel_edits()) == "// a comment above\n" + apply_edits(
        text, first.kernel_edits())


def test_unknown_and_unmakeable_steps_are_proposals_with_a_reason(session):
    text = (CORPUS / "transpose_naive.cu").read_text()
    model = parse_text(text, "cuda", "transpose_naive.cu")
    kernel = model.kernel("transpose_naive")
    p = session.proposal(model, kernel, "no_such_strategy", None)
    assert not p.ok and p.reason and not p.edits


def test_the_llm_writes_a_step_once_per_version(tmp_path, monkeypatch):
    """With the LLM engine, the first resolve asks the model; a second resolve of the same kernel version returns
    the same proposal without asking again; an edited file asks again."""
    from htam_core.generate.config import LLMConfig
    from tests.support.openai_server import OpenAIServer, Scripted

    monkeypatch.setenv("HTAM_TEST_LLM_KEY", "sk-loopback-test")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    text = (CORPUS / "transpose_naive.cu").read_text()
    model = parse_text(text, "cuda", str(CORPUS / "transpose_naive.cu"))
    kernel = model.kernel("transpose_naive")
    new = text.replace("transpose_naive(", "transpose_naive( /* by the model */", 1)
    reply = Scripted.content(f"```cuda\n{new}```")
    s = Session(memory_path=str(tmp_path / "m.sqlite3"), static=True, engine="llm")
    s.warm_up()
    try:
        with OpenAIServer([reply, reply]) as srv:
            s.llm = LLMConfig(base_url=srv.base_url, model="m", api_key_env="HTAM_TEST_LLM_KEY")
            first = s.proposal(model, kernel, "transpose_smem_tile", None, "after A, B paid off")
            assert first.ok, first.reason
            assert s.proposal(model, kernel, "transpose_smem_tile", None) is first and len(srv.requests) == 1
            assert apply_edits(text, first.kernel_edits()) == new
            edited = parse_text(text + "\n", "cuda", model.path)
            s.proposal(edited, edited.kernel("transpose_naive"), "transpose_smem_tile", None)
            assert len(srv.requests) == 2
    finally:
        s.close()
