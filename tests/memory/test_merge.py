"""Pooled memory: merge is idempotent and, without conflicts, order-free across calls (property test); with
conflicts only the sources of one call are order-free; conflicts are reported, provenance is
kept, schema-2 stores stay readable, and the ranker weighs records of the same GPU model higher."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htam_core.cli.main import main
from htam_core.memory import Outcome, Ranker, RankerConfig, Record, load_knowledge, open_store
from htam_core.memory.merge import merge_files
from htam_core.memory.store import MIGRATIONS, SCHEMA_VERSION, read_records

KB = load_knowledge()
STEPS = [s.id for s in KB.strategies[:4]]


def _rec(i: int, step: int, speedup: float, gpu: str | None = None, fp: str = "fp", note: str = "") -> Record:
    s = KB.strategy(STEPS[step])
    return Record((), {"dram_util": 0.5}, s.id, s.direction, Outcome(speedup, True, True, "win", note), fp,
                  gpu or "sm_90 (static)", 100.0 + i, f"uid-{i}", host="h", gpu=gpu, tag="t")


def _store(path: Path, recs: list[Record]) -> Path:
    with open_store(path, kb=KB) as s:
        s.import_records(recs)
    return path


def _export(path: Path) -> dict:
    with open_store(path, kb=KB) as s:
        return s.export()


records = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 3), st.sampled_from([0.8, 1.0, 1.5, 2.0])),
                   max_size=12)


@settings(max_examples=25, deadline=None)
@given(a=records, b=records)
def test_merge_is_idempotent_and_order_free_without_conflicts(tmp_path_factory: pytest.TempPathFactory, a: list,
                                                              b: list) -> None:
    """``merge A B`` in one call equals B then A in two calls, when no uid has two contents."""
    d = tmp_path_factory.mktemp("m")
    # the same uid always means the same record here (no conflicts): the uid decides the content
    ra = {i: _rec(i, i % 4, 1.0 + i / 10) for i, _, _ in a}
    rb = {i: _rec(i, i % 4, 1.0 + i / 10) for i, _, _ in b}
    pa, pb = _store(d / "a.sqlite3", list(ra.values())), _store(d / "b.sqlite3", list(rb.values()))
    merge_files([pa, pb], d / "ab.sqlite3")
    merge_files([pb], d / "ba.sqlite3")
    merge_files([pa], d / "ba.sqlite3")
    once = _export(d / "ab.sqlite3")
    again = merge_files([pa, pb], d / "ab.sqlite3")
    assert again.added == 0 and again.conflicts == []
    assert _export(d / "ab.sqlite3") == once
    other = _export(d / "ba.sqlite3")
    key = lambda r: r["uid"]  # noqa: E731 - storage order follows the merge order; the content does not
    assert sorted(once["records"], key=key) == sorted(other["records"], key=key)
    assert once["nodes"] == other["nodes"] and once["edges"] == other["edges"]
    assert len(once["records"]) == len(set(ra) | set(rb))


def test_conflicting_duplicates_are_reported_and_not_applied(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    a = _store(tmp_path / "a.sqlite3", [_rec(1, 0, 1.5), _rec(2, 1, 1.2)])
    b = _store(tmp_path / "b.sqlite3", [_rec(1, 0, 1.5, note="edited"), _rec(3, 2, 1.1)])
    team = tmp_path / "team.sqlite3"
    assert main(["memory", "merge", str(a), str(b), "--into", str(team)]) == 0
    out, err = capsys.readouterr()
    assert "3 new" in out and "1 conflicting record(s)" in err and "uid-1" in err
    recs = {r.uid: r for r in read_records(team)}
    assert set(recs) == {"uid-1", "uid-2", "uid-3"} and recs["uid-1"].outcome.note == ""
    assert (recs["uid-2"].host, recs["uid-2"].tag) == ("h", "t")  # provenance travels
    assert main(["memory", "merge", str(a), str(b), "--into", str(team)]) == 0
    assert "0 new" in capsys.readouterr().out


def test_the_summary_adds_up_when_sources_overlap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: records shared by A and B were in no count (6 read: 4 added, 0 present, 1 conflict)."""
    a = _store(tmp_path / "a.sqlite3", [_rec(1, 0, 1.5), _rec(2, 1, 1.2), _rec(4, 1, 1.3)])
    b = _store(tmp_path / "b.sqlite3", [_rec(1, 0, 1.5), _rec(2, 1, 1.2, note="edited"), _rec(3, 2, 1.1)])
    team = tmp_path / "team.sqlite3"
    first = merge_files([a, b], team, kb=KB)
    assert (first.read, first.added, first.identical, len(first.conflicts)) == (6, 4, 1, 1)
    assert main(["memory", "merge", str(a), str(b), "--into", str(team)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("read 6 records from 2 sources into ") and ": 0 new, 5 identical duplicates (4 already in "
    assert "1 in more than one source), 1 conflicting duplicate (not merged)" in out


def test_a_source_given_twice_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (new-user trial): `merge A A` read 8 records but counted 8 new and 8 duplicates."""
    a = _store(tmp_path / "a.sqlite3", [_rec(1, 0, 1.5), _rec(2, 1, 1.2)])
    monkeypatch.chdir(tmp_path)
    rep = merge_files([a, a, "./a.sqlite3"], tmp_path / "team.sqlite3", kb=KB)
    assert (rep.read, rep.added, rep.identical, len(rep.per_source)) == (2, 2, 0, 1)


@settings(max_examples=25, deadline=None)
@given(a=records, b=records, c=records)
def test_merge_counts_always_add_up(tmp_path_factory: pytest.TempPathFactory, a: list, b: list, c: list) -> None:
    d = tmp_path_factory.mktemp("sum")
    stores = [_store(d / f"{n}.sqlite3", [_rec(i, s, x) for i, s, x in recs]) for n, recs in zip("abc", (a, b, c),
                                                                                                      strict=True)]
    for _ in range(2):  # into an empty target, then into the same (now full) one
        rep = merge_files(stores, d / "team.sqlite3", kb=KB)
        assert rep.added + rep.identical + len(rep.conflicts) == rep.read == sum(len(read_records(s)) for s in stores)


def test_exports_merge_too_and_bad_sources_merge_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _store(tmp_path / "a.sqlite3", [_rec(1, 0, 1.5)])
    exp = tmp_path / "a.json"
    exp.write_text(json.dumps(_export(a)))
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    team = tmp_path / "team.sqlite3"
    assert main(["memory", "merge", str(bad), str(exp), "--into", str(team)]) == 2
    assert "not valid JSON" in capsys.readouterr().err and not team.exists()
    assert main(["memory", "merge", str(exp), "--into", str(team)]) == 0
    assert [r.uid for r in read_records(team)] == ["uid-1"]


def test_a_schema_2_store_is_read_unchanged_and_migrated_on_open(tmp_path: Path) -> None:
    p = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(p)
    conn.executescript(MIGRATIONS[0] + MIGRATIONS[1])
    conn.execute("PRAGMA application_id = 1213481293")
    conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO records (uid, time, prefix, state, step, direction, speedup, correct, measured, "
                 "status, note, fingerprint, device, spread) VALUES ('old', 1.0, '[]', '{}', ?, ?, 1.3, 1, 1, "
                 "'win', '', 'fp', 'NVIDIA H200', 0.01)", (STEPS[0], KB.strategy(STEPS[0]).direction))
    conn.commit()
    conn.close()
    (old,) = read_records(p)
    assert (old.uid, old.host, old.gpu, old.tag, old.outcome.spread) == ("old", None, None, None, 0.01)
    assert sqlite3.connect(p).execute("PRAGMA user_version").fetchone()[0] == 2  # reading never migrates
    with open_store(p, kb=KB) as s:
        assert [r.uid for r in s.records()] == ["old"]
    assert sqlite3.connect(p).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4


def test_record_keeps_host_gpu_and_tag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTAM_MEMORY_TAG", "alice")
    with open_store(tmp_path / "s.sqlite3", kb=KB) as s:
        g = s.record([], {"dram_util": 0.5}, STEPS[0], Outcome(1.2, True, True, "win"), "fp", "NVIDIA H200")
        st_ = s.record([], {"dram_util": 0.5}, STEPS[0], Outcome(None, True, False, "neutral"), "fp",
                       "sm_90 (static)")
    assert (g.gpu, g.tag, bool(g.host)) == ("NVIDIA H200", "alice", True)
    assert st_.gpu is None
    assert [r.gpu for r in read_records(tmp_path / "s.sqlite3")] == ["NVIDIA H200", None]


def test_ranker_weighs_records_of_the_same_gpu_model_higher(tmp_path: Path) -> None:
    from htam_core.source import load

    kernel = load("examples/vector_add.py").kernel("add_kernel")
    lang = kernel.language
    applicable = [s.strategy for s in Ranker(KB, None).rank({"dram_util": 0.5}, [], kernel.features, lang, None,
                                                      top=50, kernel=kernel)]
    step = applicable[0]
    s = KB.strategy(step)

    def rec(i: int, speedup: float, gpu: str) -> Record:
        return Record((), {"dram_util": 0.5}, step, s.direction, Outcome(speedup, True, True, "win"), f"fp{i}",
                      gpu, 100.0 + i, f"u{i}", gpu=gpu)

    path = _store(tmp_path / "m.sqlite3", [rec(0, 2.0, "NVIDIA H200"), rec(1, 1.1, "NVIDIA A100")])

    def gain(gpu: str | None, w: float) -> float:
        with open_store(path, kb=KB) as store:
            r = Ranker(KB, store, gpu=gpu, config=RankerConfig(same_gpu_weight=w))
            steps = r.rank({"dram_util": 0.5}, [], kernel.features, lang, None, top=50, kernel=kernel)
        return next(x.expected_gain for x in steps if x.strategy == step)

    assert gain("NVIDIA H200", 1.5) > gain(None, 1.5) > gain("NVIDIA A100", 1.5)
    assert gain("NVIDIA H200", 1.0) == pytest.approx(gain(None, 1.0))
    with pytest.raises(ValueError, match="same_gpu_weight"):
        RankerConfig(same_gpu_weight=0.0)


@pytest.mark.parametrize(("content", "says"), [
    (b"\xc4\x01 not a database" * 20, "is neither an SQLite memory store (no SQLite header) nor an export"),
    (b"", "is empty: it is neither an SQLite memory store nor an export"),
])
@pytest.mark.parametrize("name", ["src.sqlite3", "src.json"])
def test_a_source_that_is_neither_a_store_nor_an_export_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                content: bytes, says: str, name: str) -> None:
    """Regression: a garbage ``.sqlite3`` was "not UTF-8 text", an empty file "not valid JSON"."""
    src = tmp_path / name
    src.write_bytes(content)
    team = tmp_path / "team.sqlite3"
    assert main(["memory", "merge", str(src), "--into", str(team)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"htam: error: {src} {says}"), err
    assert not team.exists() and src.read_bytes() == content


def test_a_missing_source_is_the_one_missing_path_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "merge", str(tmp_path / "nope.sqlite3"), "--into", str(tmp_path / "t.sqlite3")]) == 2
    assert capsys.readouterr().err == (f"htam: error: {tmp_path / 'nope.sqlite3'} does not exist: pass the path of "
                                       "an existing memory store (.sqlite3) or export (.json)\n")


@pytest.mark.parametrize("target", ["junk.sqlite3", "no/such/t.sqlite3", "folder"])
def test_errors_about_the_target_name_into(tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str) -> None:
    """Regression: they said "point --memory/HTAM_MEMORY at ...", options merge does not take."""
    a = _store(tmp_path / "a.sqlite3", [_rec(1, 0, 1.5)])
    (tmp_path / "junk.sqlite3").write_bytes(b"junk" * 100)
    (tmp_path / "folder").mkdir()
    assert main(["memory", "merge", str(a), "--into", str(tmp_path / target)]) == 3  # the store is unusable
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--into" in err and "--memory" not in err and "HTAM_MEMORY" not in err, err


def test_with_conflicts_one_call_is_order_free_and_separate_calls_are_not(tmp_path: Path) -> None:
    """The documented limit of commutativity (docs/MEMORY.md): the stored record wins a conflict."""
    a = _store(tmp_path / "a.sqlite3", [_rec(1, 0, 1.5, note="from a"), _rec(2, 1, 1.2)])
    b = _store(tmp_path / "b.sqlite3", [_rec(1, 0, 1.5, note="from b"), _rec(3, 2, 1.1)])

    def notes(path: Path) -> dict[str, str]:
        return {r.uid: r.outcome.note for r in read_records(path)}

    merge_files([a, b], tmp_path / "ab.sqlite3", kb=KB)
    merge_files([b, a], tmp_path / "ba.sqlite3", kb=KB)
    assert notes(tmp_path / "ab.sqlite3") == notes(tmp_path / "ba.sqlite3")
    for first, second, name in ((a, b, "a-then-b"), (b, a, "b-then-a")):
        merge_files([first], tmp_path / f"{name}.sqlite3", kb=KB)
        rep = merge_files([second], tmp_path / f"{name}.sqlite3", kb=KB)
        assert [uid for _, uid in rep.conflicts] == ["uid-1"]
    assert notes(tmp_path / "a-then-b.sqlite3")["uid-1"] == "from a"
    assert notes(tmp_path / "b-then-a.sqlite3")["uid-1"] == "from b"


def test_a_merge_with_conflicts_exits_0_with_one_warning_line(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    a = _store(tmp_path / "a.sqlite3", [_rec(1, 0, 1.5)])
    b = _store(tmp_path / "b.sqlite3", [_rec(1, 0, 1.5, note="edited")])
    assert main(["memory", "merge", str(a), str(b), "--into", str(tmp_path / "t.sqlite3")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("htam: warning: 1 conflicting record(s)")
