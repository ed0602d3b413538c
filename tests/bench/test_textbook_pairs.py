"""The project's own textbook pairs (tests/fixtures/textbook_pairs): each naive kernel has a textbook step that is
a makeable code action whose edit compiles (nvcc sm_90), as bench/bench_textbook.py counts it; the faster version
holds the same kernel; a malformed pair folder is one clear error. The GPU half (engine beside the expert) runs in
``bench/bench_textbook.py --gpu``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_corpus_steps import tb

from htam_core.source import load

PAIRS = tb.own_pairs()
#: pair -> why its textbook step is not made yet (strict: a fix fails here until it is taken off)
KNOWN_GAPS: dict[str, str] = {}


def test_there_are_pairs_for_the_ladder() -> None:
    assert {name for name, _, _ in PAIRS} >= {"vector_add", "reduction", "transpose", "sgemm", "histogram",
                                               "softmax_rows"}


@pytest.mark.parametrize("name,folder,pair", [
    pytest.param(*p, id=p[0], marks=[pytest.mark.xfail(reason=KNOWN_GAPS[p[0]], strict=True)]
                 if p[0] in KNOWN_GAPS else []) for p in PAIRS])
def test_a_textbook_step_is_makeable_on_the_naive_kernel(name: str, folder: Path, pair, tmp_path: Path) -> None:
    compile_edits = shutil.which("nvcc") is not None
    (tmp_path / "cache").mkdir()
    row = tb.static_facts(folder / "naive.cu", pair.naive, pair.steps, tmp_path, tmp_path / "cache", compile_edits)
    assert row["error"] is None, row["error"]
    assert row["textbook_makeable"], (row["textbook_refused"], row["compile_errors"])
    assert not row["contract_ruled_out"], row["contract_ruled_out"]


@pytest.mark.parametrize("name,folder,pair", PAIRS, ids=[p[0] for p in PAIRS])
def test_the_faster_version_holds_the_same_kernel(name: str, folder: Path, pair) -> None:
    assert pair.naive in {k.name for k in load(folder / "expert.cu").kernels}


def test_a_pair_without_its_files_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "pair.json").write_text(json.dumps({"kernel": "k", "steps": ["grid_stride_loop"]}))
    (tmp_path / "p" / "naive.cu").write_text("__global__ void k() {}\n")
    with pytest.raises(ValueError, match="expert.cu is missing"):
        tb.own_pairs(tmp_path)


@pytest.mark.parametrize("status,published", [("reproduced", 0.5), ("not reproduced", 2.0), ("not measured", 2.0)])
def test_the_engines_best_counts_only_when_reproduced(status: str, published: float) -> None:
    from types import SimpleNamespace

    res = SimpleNamespace(start_ms=2.0, best_ms=0.5, reproduction=SimpleNamespace(status=status))
    row = tb.published_best(res)
    assert row == {"best_ms": published, "search_best_ms": 0.5, "reproduction": status}


def test_each_candidate_keeps_its_verdict_in_order() -> None:
    from types import SimpleNamespace

    steps = [SimpleNamespace(strategy="restrict_pointers", status="neutral", correct=True, time_ms=1.0, speedup=1.0,
                             parent="start", reason=None, messages=["within the noise"]),
             SimpleNamespace(strategy="warp_per_row", status="incorrect", correct=False, time_ms=None, speedup=None,
                             parent="start", reason="outputs differ", messages=[])]
    steps.append(SimpleNamespace(strategy="privatize_uniform_atomic", status="neutral", correct=True, time_ms=None,
                                 speedup=None, parent="start", reason=None,
                                 messages=["matched the starting kernel", "not measured: timer and CUPTI disagree"]))
    got = tb.tried(steps)
    assert [(t["strategy"], t["status"], t["why"]) for t in got] == [
        ("restrict_pointers", "neutral", "within the noise"), ("warp_per_row", "incorrect", "outputs differ"),
        ("privatize_uniform_atomic", "neutral", "not measured: timer and CUPTI disagree")]


def test_pairs_from_an_outside_folder_are_run_in_place_of_the_projects(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[1] / "fixtures" / "textbook_pairs" / "vector_add"
    shutil.copytree(src, tmp_path / "pairs" / "mine")
    out = tmp_path / "out"
    rc = tb.main(["--own-pairs", str(tmp_path / "pairs"), "--pairs", "mine", "--no-compile", "--corpus",
                  str(tmp_path / "no-corpus"), "--cache", str(tmp_path / "cache"), "--out", str(out)])
    assert rc == 0
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert [r["pair"] for r in rows] == ["own mine"]
    assert rows[0]["textbook_makeable"] and rows[0]["unseen"]
    assert "makeable on 1 of 1 of them" in (out / "table.md").read_text()
