"""``htam suggest`` points at the first listed step the rules engine makes when the top-ranked one is not made
(refused on this kernel, or a strategy only a model or a hand can write): the ranking keeps every strategy in
score order, and the pointer line says where ``htam optimize --engine rules`` starts."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

import htam_core.cli.suggest as suggest
import htam_core.profile.api as profile_api
from htam_core.cli.main import main
from htam_core.types.profile import Bottleneck, Profile

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


@pytest.fixture(autouse=True)
def fake_profiler(monkeypatch):
    """A constructed profile keeps the test independent of compilers."""
    monkeypatch.setattr(profile_api, "profile_kernel",
                        lambda path, name, static=None, **kw: Profile(name, bottleneck=Bottleneck("memory-bound")))


def _step(rank: int) -> SimpleNamespace:
    return SimpleNamespace(rank=rank, title=f"step {rank}", strategy=f"s{rank}")


@pytest.mark.parametrize(("made", "want"), [((True, False), None), ((False, False, True), "3. step 3 (s3)"),
                                            ((False, True), "2. step 2 (s2)"), ((False, False), "none of these 2")])
def test_pointer_line(made, want):
    line = suggest.first_makeable_line([_step(i + 1) for i in range(len(made))],
                                       [SimpleNamespace(makeable=m) for m in made])
    assert (line is None) if want is None else (want in line)


def test_suggest_prints_the_pointer_above_the_list(tmp_path: Path, capsys, monkeypatch):
    real = suggest._verdict

    calls: list[str] = []

    def first_refused(kb, strategy, model, kernel):  # the listed steps are checked in rank order
        calls.append(strategy)
        v = real(kb, strategy, model, kernel)
        return dataclasses.replace(v, makeable=False, reason="refused for the test") if len(calls) == 1 else v

    monkeypatch.setattr(suggest, "_verdict", first_refused)
    assert main(["suggest", str(CORPUS / "sgemm_naive.cu"), "--kernel", "sgemm_naive", "--top", "5",
                 "--memory", str(tmp_path / "m.sqlite3")]) == 0
    out = capsys.readouterr().out
    ranks = [ln.split(".", 1)[0] for ln in out.splitlines() if ln[:1].isdigit()]
    blocks = out.split("\n1. [", 1)
    assert "first step the rules engine makes: " in blocks[0]
    n = blocks[0].split("first step the rules engine makes: ", 1)[1].split(".", 1)[0]
    assert n in ranks and n != "1"
    # the step it names is the first one below marked makeable
    after = out.split(f"\n{n}. [", 1)[1].split("\n", 5)
    assert any(ln.strip().startswith("makeable:") for ln in after[:5])
