"""The shipped knowledge base: size, coverage, references, and validation errors."""

from __future__ import annotations

import pytest

from htam_core.memory.knowledge import KnowledgeError, load_knowledge, parse_knowledge
from htam_core.types.profile import BOTTLENECK_CLASSES


def test_shipped_kb_shape() -> None:
    kb = load_knowledge()
    names = {d.name for d in kb.directions}
    assert {"Memory Access", "Data Reuse", "Parallel Mapping", "Instruction Throughput", "Boundary Handling",
            "Launch Configuration", "Synchronization", "Fusion"} <= names
    assert len(kb.strategies) >= 30
    langs = [lang for s in kb.strategies for lang in s.languages]
    assert langs.count("cuda") >= 10 and langs.count("triton") >= 10
    for s in kb.strategies:
        assert s.guidance and s.before and s.after and s.title
        assert kb.strategies_of(s.direction)
    assert set(kb.priors) == set(BOTTLENECK_CLASSES)
    assert any(t.level == "direction" for t in kb.transitions.values())


def test_every_agreed_transform_is_referenced_and_nothing_else() -> None:
    kb = load_knowledge()
    used = {s.transform for s in kb.strategies if s.transform}
    from htam_core.transforms import all_transforms

    own = {t.id for t in all_transforms() if not t.part_of}
    assert used == own  # every registered transform has a strategy, and only those, but the parts of another one
    assert {t.part_of for t in all_transforms() if t.part_of} <= used  # whose parent has a strategy


def test_strategies_name_ncu_rules() -> None:
    kb = load_knowledge()
    rules = {r for s in kb.strategies for r in s.ncu_rules}
    assert {"UncoalescedGlobalAccess", "SharedMemoryConflicts", "RegisterSpilling", "AchievedOccupancy",
            "SOLBottleneck"} <= rules


def _minimal() -> dict:
    return {
        "meta": {"version": 1},
        "priors": {"unknown": {"d": 0.1}},
        "direction": [{"id": "d", "name": "D", "description": "x"}],
        "strategy": [{"id": "s", "title": "t", "direction": "d", "languages": ["cuda"], "applies": "loads > 0",
                      "prior": 0.5, "guidance": "g", "before": "b", "after": "a"}],
    }


def test_minimal_kb_parses() -> None:
    kb = parse_knowledge(_minimal())
    assert kb.strategy("s").direction == "d"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["strategy"][0].update(direction="nope"), "unknown direction"),
        (lambda d: d["strategy"][0].update(applies="loads >"), "predicate"),
        (lambda d: d["strategy"][0].update(applies="secret_fact"), "unknown fact"),
        (lambda d: d["strategy"][0].update(languages=["opencl"]), "languages"),
        (lambda d: d["strategy"].append(dict(d["strategy"][0])), "duplicate strategy"),
        (lambda d: d["priors"].update({"slow": {"d": 1}}), "not a bottleneck class"),
        (lambda d: d.update(transition=[{"level": "direction", "from": "d", "to": "zz", "gain": 0, "when": "",
                                         "why": "", "risk": ""}]), "unknown direction 'zz'"),
        (lambda d: d["strategy"][0].pop("guidance"), "missing field 'guidance'"),
    ],
)
def test_invalid_kb_is_refused_with_the_entry(mutate, message: str) -> None:
    data = _minimal()
    mutate(data)
    with pytest.raises(KnowledgeError, match=message):
        parse_knowledge(data)


def test_a_binary_knowledge_file_is_one_clear_error(tmp_path):
    blob = tmp_path / "kb.toml"
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(KnowledgeError, match="not UTF-8 text"):
        load_knowledge(blob)
