"""``htam suggest`` never leads with a step the rules engine refuses on this kernel when another applies: refused
steps move below the others, each with its one-line reason. It points at the first listed step the rules engine
makes when the top one is a strategy only a model or a hand can write, and says where ``htam optimize --engine
rules`` starts."""

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


def test_suggest_lists_a_refused_step_below_the_made_ones(tmp_path: Path, capsys, monkeypatch):
    """The best-scored step refused on this kernel is not listed first: it moves below the steps that are not
    refused and says why on one line."""
    real = suggest._verdict

    calls: list[str] = []

    def first_refused(kb, strategy, model, kernel):  # the steps are checked in score order
        calls.append(strategy)
        v = real(kb, strategy, model, kernel)
        return dataclasses.replace(v, makeable=False, advice=False, reason="refused for the test\nsecond line") \
            if len(calls) == 1 else v

    monkeypatch.setattr(suggest, "_verdict", first_refused)
    assert main(["suggest", str(CORPUS / "sgemm_naive.cu"), "--kernel", "sgemm_naive", "--top", "60",
                 "--memory", str(tmp_path / "m.sqlite3")]) == 0
    out = capsys.readouterr().out
    first = out.split("\n1. [", 1)[1].split("\n2. [", 1)[0]
    assert f"({calls[0]})" not in first.splitlines()[0]
    assert "refused here: refused for the test\n" in out and "second line" not in out
    # the refused one is listed after every step that is not refused
    blocks = out.split("\n")
    refused_at = next(i for i, ln in enumerate(blocks) if "refused here:" in ln)
    assert not any("makeable:" in ln for ln in blocks[refused_at:])


@pytest.mark.parametrize(("kinds", "top", "want"), [
    ("RMM", 3, ["s2", "s3", "s1"]), ("RRMAM", 2, ["s3", "s4"]), ("RRM", 3, ["s3", "s1", "s2"]),
    ("MMR", 2, ["s1", "s2"]), ("RR", 5, ["s1", "s2"])])
def test_made_first_order_and_laziness(kinds: str, top: int, want: list[str]):
    asked: list[str] = []

    def verdict(sid: str) -> SimpleNamespace:
        asked.append(sid)
        k = kinds[int(sid[1:]) - 1]
        return SimpleNamespace(makeable=k == "M", advice=k == "A", reason=None if k == "M" else "no")

    steps = [dataclasses.replace(suggest_step(i + 1)) for i in range(len(kinds))]
    got, verdicts = suggest.made_first(steps, verdict, top)
    assert [s.strategy for s in got] == want and [s.rank for s in got] == list(range(1, len(want) + 1))
    assert len(verdicts) == len(got)
    if kinds.count("M") + kinds.count("A") >= top:  # stops once enough steps that are not refused are found
        assert len(asked) < len(kinds) or kinds[-1] != "R"


@dataclasses.dataclass
class _Step:
    rank: int
    title: str
    strategy: str


def suggest_step(rank: int) -> _Step:
    return _Step(rank, f"step {rank}", f"s{rank}")
