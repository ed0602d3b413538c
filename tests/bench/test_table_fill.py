"""Completing a measured-space table where the policies went: a replay's misses become a fill list,
``build_space(fill=...)`` measures exactly those candidates as children of their parents, and the next replay
finds them. Static mode (no GPU): the same code path as on a GPU, with times "not measured"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.bench.replay import ReplayConfig, run_replay
from htam_core.bench.space import SpaceConfig, build_space, kernels_of_suite
from htam_core.bench.table_fill import FillError, Miss, collect_misses, read_misses, write_misses
from htam_core.optimize.replay import NOT_IN_TABLE, Table, load_table, text_key

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def at_repo(monkeypatch):
    """The table's kernel paths are relative to the repository root."""
    monkeypatch.chdir(REPO)


def _kernels() -> list:
    return [k for k in kernels_of_suite(REPO / "bench" / "suite") if k.name == "transpose_naive"]


def _replay(table: Path, work: Path) -> dict:
    return run_replay(ReplayConfig(table=str(table), work=str(work), policies=["htam-cold"], budget=3, seeds=1,
                                   fresh=True), log=lambda m: None)


def _misses_of(doc: dict) -> int:
    return sum(1 for r in doc["results"] for s in r["steps"] if s["status"] == NOT_IN_TABLE)



def test_a_replays_misses_are_filled_and_found_by_the_next_replay(tmp_path, at_repo):
    table = tmp_path / "t.jsonl"
    build_space(SpaceConfig(kernels=_kernels(), out=str(table), depth=1, max_candidates=1, static=True),
                log=lambda m: None)
    doc = _replay(table, tmp_path / "w1")
    assert _misses_of(doc) > 0  # one candidate per kernel: the policy asks for more than the table holds

    t = load_table(table)
    misses = collect_misses(tmp_path / "w1", t)
    assert misses and all(m.asked_by == ["htam-cold"] and m.runs >= 1 for m in misses)
    for m in misses:
        assert m.key == text_key(m.text) and (m.kernel, m.key) not in t.rows
        assert (m.kernel, m.parent) in t.rows and m.depth == t.rows[(m.kernel, m.parent)]["depth"] + 1
    fill = write_misses(tmp_path / "fill.jsonl", misses)

    lines: list[str] = []
    res = build_space(SpaceConfig(kernels=_kernels(), out=str(table), static=True, fill=str(fill)), log=lines.append)
    assert res["measured"] == len(misses) and res["stopped"] is None
    grown = Table(table)
    for m in misses:
        row = grown.rows[(m.kernel, m.key)]
        assert row["parent"] == m.parent and row["depth"] == m.depth and row["strategy"] == m.strategy
        assert row["filled_for"] == ["htam-cold"]
        assert row in grown.kernel_rows(m.kernel)  # reachable from the start: the replay's ground truth sees it
    assert any(ln.startswith("[space] fill:") for ln in lines)

    after = _replay(table, tmp_path / "w2")
    first, again_first = doc["results"][0]["steps"][0], after["results"][0]["steps"][0]
    assert first["status"] == NOT_IN_TABLE and again_first["strategy"] == first["strategy"]
    assert again_first["status"] != NOT_IN_TABLE  # the same first step is read from the table now
    # the candidates asked for the first time are all found now: any miss left is a new step further on
    again = {m.key for m in collect_misses(tmp_path / "w2", Table(table))}
    assert not again & {m.key for m in misses}

    # a second fill of the same list measures nothing
    res2 = build_space(SpaceConfig(kernels=_kernels(), out=str(table), static=True, fill=str(fill)),
                       log=lambda m: None)
    assert res2["measured"] == 0


def test_fill_list_errors_are_one_line(tmp_path):
    with pytest.raises(FillError, match="holds no replay runs"):
        collect_misses(tmp_path, None)  # type: ignore[arg-type]
    m = Miss("a.cu::k", "p" * 64, text_key("x"), "x", 1, "s", "d", "t", ["htam"], 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**m.__dict__, "text": "edited"}) + "\n")
    with pytest.raises(FillError, match="does not match its key"):
        read_misses(bad)
    bad.write_text("{\"kernel\": 1}\n")
    with pytest.raises(FillError, match=r"bad.jsonl:1: not a fill-list line"):
        read_misses(bad)


def test_fill_order_puts_the_headline_policies_first(tmp_path):
    abl = Miss("a.cu::k", "p", text_key("a"), "a", 1, "s", None, None, ["no-local"], 5)
    deep = Miss("a.cu::k", "p", text_key("b"), "b", 2, "s", None, None, ["flat"], 1)
    shallow = Miss("a.cu::k", "p", text_key("c"), "c", 1, "s", None, None, ["random"], 1)
    many = Miss("a.cu::k", "p", text_key("d"), "d", 2, "s", None, None, ["htam", "flat"], 3)
    p = write_misses(tmp_path / "f.jsonl", [abl, deep, shallow, many])
    assert [m.text for m in read_misses(p)] == ["d", "c", "b", "a"]


@pytest.mark.parametrize(("slug", "policy"), [
    ("bench_x.cu-k-htam-s0", "htam"), ("bench_x.cu-k-htam-cold-s0", "htam-cold"),
    ("bench_x.cu-k-random-memory-s2", "random-memory"), ("bench_x.cu-k-no-local-s0", "no-local"),
    ("bench_x.cu-k-random-s1", "random"), ("bench_x.cu-k-flat-s0", "flat"), ("odd", None)])
def test_run_folders_name_their_policy(slug, policy):
    from htam_core.bench.replay import policy_of_run_folder, run_folder

    assert policy_of_run_folder(slug) == policy
    if policy is not None:
        assert policy_of_run_folder(run_folder("bench/x.cu::k", policy, 3)) == policy


def test_cli_misses_on_a_folder_without_runs_is_one_line(tmp_path, at_repo, capsys):
    from htam_core.cli.main import main

    fixture = Path(__file__).parent / "fixtures" / "synthetic_space_static.jsonl"
    rc = main(["bench", "misses", "--table", str(fixture), "--work", str(tmp_path), "--out", str(tmp_path / "f")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and "holds no replay runs" in err[0]
    assert not (tmp_path / "f").exists()


# --- bad inputs a user gives (found by a new-user trial, 2026-12-02): one line each, nothing measured

def _static_table(tmp_path: Path) -> Path:
    table = tmp_path / "t.jsonl"
    build_space(SpaceConfig(kernels=_kernels(), out=str(table), depth=1, max_candidates=1, static=True),
                log=lambda m: None)
    return table


@pytest.mark.parametrize("line", [
    "[1, 2]", "{\"foo\": 1}", json.dumps({"kernel": "a", "parent": "p", "key": "k", "text": 3, "depth": 1}),
    json.dumps({"kernel": "a", "parent": "p", "key": "k", "text": "x", "depth": 1, "extra": 1}),
    json.dumps({"kernel": "a", "parent": "p", "key": "k", "text": "x", "depth": 1, "asked_by": "htam"})])
def test_a_malformed_fill_line_names_the_line_not_python(tmp_path, line):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line + "\n")
    with pytest.raises(FillError) as exc:
        read_misses(bad)
    msg = str(exc.value)
    assert "bad.jsonl:1: not a fill-list line" in msg and "__init__" not in msg and "mapping" not in msg


def test_binary_files_are_one_line(tmp_path, at_repo, capsys):
    from htam_core.cli.main import main

    blob = tmp_path / "bin.jsonl"
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(FillError, match="not UTF-8 text"):
        read_misses(blob)
    rc = main(["bench", "misses", "--table", str(blob), "--work", str(tmp_path), "--out", str(tmp_path / "f")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "not UTF-8 text" in err[0]


def test_fill_into_a_missing_table_is_refused(tmp_path, at_repo):
    from htam_core.bench.space import SpaceError

    fill = write_misses(tmp_path / "f.jsonl", [])
    with pytest.raises(SpaceError, match="does not exist"):
        build_space(SpaceConfig(kernels=_kernels(), out=str(tmp_path / "typo.jsonl"), static=True, fill=str(fill)),
                    log=lambda m: None)
    assert not (tmp_path / "typo.jsonl").exists()


def test_a_fill_list_of_another_table_is_refused(tmp_path, at_repo):
    from htam_core.bench.space import SpaceError

    table = _static_table(tmp_path)
    kid = load_table(table).starts[_kernels()[0].id]["kernel"]
    foreign = Miss(kid, "f" * 64, text_key("y"), "y", 1, "s", None, None, ["htam"], 1)
    fill = write_misses(tmp_path / "f.jsonl", [foreign])
    before = table.read_text()
    with pytest.raises(SpaceError, match="made against another table"):
        build_space(SpaceConfig(kernels=_kernels(), out=str(table), static=True, fill=str(fill)), log=lambda m: None)
    assert table.read_text() == before


def test_misses_refuses_the_runs_of_another_table(tmp_path, at_repo):
    table = _static_table(tmp_path)
    _replay(table, tmp_path / "w")
    other = tmp_path / "other.jsonl"
    lines = table.read_text().splitlines()
    head = json.loads(lines[0])
    head["environment"] = {**head.get("environment", {}), "date": "1999-01-01"}  # another run's header
    other.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    with pytest.raises(FillError, match="another table"):
        collect_misses(tmp_path / "w", load_table(other))
    copy = tmp_path / "copy.jsonl"
    copy.write_text(table.read_text())  # a copy (same header) is the same table
    assert collect_misses(tmp_path / "w", load_table(copy)) == collect_misses(tmp_path / "w", load_table(table))


def test_a_gpu_table_on_a_static_run_says_so(tmp_path, at_repo):
    from htam_core.bench.space import SpaceError

    table = _static_table(tmp_path)
    lines = table.read_text().splitlines()
    head = json.loads(lines[0])
    head["measured"] = True
    table.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    with pytest.raises(SpaceError, match="holds GPU measurements and this run is static"):
        build_space(SpaceConfig(kernels=_kernels(), out=str(table), static=True), log=lambda m: None)


def test_the_fill_cli_counts_what_it_filled_not_the_manifest(tmp_path, at_repo, capsys):
    from htam_core.cli.main import main

    table = _static_table(tmp_path)
    _replay(table, tmp_path / "w")
    fill = write_misses(tmp_path / "f.jsonl", collect_misses(tmp_path / "w", load_table(table)))
    n = len(read_misses(fill))
    assert n > 0
    rc = main(["bench", "space", "--suite", str(REPO / "bench" / "suite"), "--kernels", "transpose_naive",
               "--static", "--out", str(table), "--fill", str(fill)])
    cap = capsys.readouterr()
    assert rc == 0
    assert f"({n} new evaluations from the fill list {fill})" in cap.out and "kernels done" not in cap.out
    assert f"[space] filling {table} from {fill}; static mode" in cap.err and "already done" not in cap.err


# --- found by the second new-user trial (2026-12-02): a torn or edited table line, --out on the table, runs of
# another kernel set

def test_a_torn_or_edited_table_line_is_named_and_a_resume_does_not_glue_to_it(tmp_path, at_repo):
    from htam_core.optimize.replay import read_table, skipped_note

    table = tmp_path / "t.jsonl"
    build_space(SpaceConfig(kernels=_kernels(), out=str(table), depth=1, max_candidates=2, static=True),
                log=lambda m: None)
    lines = table.read_text().splitlines()
    header, rows, skipped = read_table(table)
    assert skipped == [] and skipped_note(table, skipped) is None
    kept = [ln for ln in lines if json.loads(ln)["type"] != "kernel_done"]  # the kernel is not finished yet
    kept[1] = json.dumps({**json.loads(kept[1]), "key": 7})  # an edit: a node whose key is not a string
    table.write_text("\n".join(kept) + "\n" + kept[-1][: len(kept[-1]) // 2])  # a crash tears the last line
    _, rows2, skipped2 = read_table(table)
    assert skipped2 == [2, len(kept) + 1]
    note = skipped_note(table, skipped2)
    assert note is not None and "line 2, " + str(len(kept) + 1) in note and "\n" not in note

    logged: list[str] = []
    build_space(SpaceConfig(kernels=_kernels(), out=str(table), depth=1, max_candidates=2, static=True),
                log=logged.append)
    assert any(ln.startswith("warning: ") and "2 line(s)" in ln for ln in logged)
    after = table.read_text().splitlines()
    assert after[len(kept)] == kept[-1][: len(kept[-1]) // 2]  # the torn line stays a line of its own
    _, rows3, skipped3 = read_table(table)
    assert skipped3 == [2, len(kept) + 1]  # nothing new is unreadable
    assert any(r["type"] == "kernel_done" for r in rows3)  # the unfinished kernel was measured again

    doc = run_replay(ReplayConfig(table=str(table), work=str(tmp_path / "w"), policies=["htam-cold"], budget=2,
                                  seeds=1, fresh=True), log=logged.append)
    assert doc["table"]["lines_skipped"] == skipped3
    assert sum(ln.startswith("warning: ") for ln in logged) == 2


def test_misses_out_refuses_the_table_and_other_files(tmp_path, at_repo, capsys):
    from htam_core.cli.main import main

    table = _static_table(tmp_path)
    _replay(table, tmp_path / "w")
    before = table.read_text()
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for out, words in [(table, "is the table itself"), (notes, "exists and is not a fill list"),
                       (tmp_path, "is a folder")]:
        rc = main(["bench", "misses", "--table", str(table), "--work", str(tmp_path / "w"), "--out", str(out)])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and words in err[0], (out, err)
    assert table.read_text() == before and notes.read_text() == "my notes\n"
    fill = tmp_path / "fill.jsonl"
    for _ in range(2):  # a fill list is replaced by the next one
        rc = main(["bench", "misses", "--table", str(table), "--work", str(tmp_path / "w"), "--out", str(fill)])
        assert rc == 0 and read_misses(fill)
    capsys.readouterr()


def test_misses_refuses_runs_whose_start_is_not_in_the_table(tmp_path, at_repo):
    table = _static_table(tmp_path)
    _replay(table, tmp_path / "w")
    kid = _kernels()[0].id
    lines = table.read_text().splitlines()
    other = tmp_path / "other.jsonl"  # the same header line, without this kernel: another kernel set
    other.write_text("\n".join(ln for ln in lines if json.loads(ln).get("kernel") != kid) + "\n")
    with pytest.raises(FillError, match=r"1 run\(s\) under .* not a node of .*other.jsonl \(first: " + kid):
        collect_misses(tmp_path / "w", load_table(other))
