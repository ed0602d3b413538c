"""Resolving a ranked step into one minimal edit through the generator registry."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from htam_core.editor.resolve import minimal_edit, resolve_step
from htam_core.memory import load_knowledge
from htam_core.source import parse_text

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
    res = resolve_step(model, kernel, strat, direction, None)
    assert res.ok, res.reason
    assert len(res.edits) == 1 and res.params["transform_id"] == "cuda.transpose_smem_tile"
    new = _apply(text, res.edits[0])
    assert new == res.new_text and "__shared__" in new
    assert any(k.name == "transpose_naive" and not k.incomplete for k in parse_text(new, "cuda").kernels)


def test_steps_that_cannot_be_made_give_a_reason():
    kb = load_knowledge()
    text = (CORPUS / "transpose_naive.cu").read_text()
    model = parse_text(text, "cuda", "transpose_naive.cu")
    kernel = next(k for k in model.kernels if k.name == "transpose_naive")
    manual = next(s for s in kb.strategies if not s.transform and "cuda" in s.languages)
    res = resolve_step(model, kernel, manual, kb.direction(manual.direction), None)
    assert not res.ok and "no mechanical transform" in res.reason
    other = next(s for s in kb.strategies if s.transform and s.transform.startswith("triton."))
    res = resolve_step(model, kernel, other, kb.direction(other.direction), None)
    assert not res.ok and "does not apply" in res.reason
    half = dataclasses.replace(kernel, incomplete=True)  # still being typed
    res = resolve_step(model, half, *_step(kb, "transpose_smem_tile"), None)
    assert not res.ok and "incomplete" in res.reason
