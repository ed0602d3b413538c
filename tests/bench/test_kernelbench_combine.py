"""combine_runs: KernelBench results split over device calls pool into one summary; and
bench/combine_kernelbench.py, the command around it: bad input is one line on stderr, exit 2, nothing written."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from htam_core.bench.kernelbench import KernelBenchError, combine_runs


def _rec(pid: int, status: str = "ok", speedup: float | None = 1.5, held: bool = False) -> dict:
    return {"level": 2, "problem_id": pid, "name": f"p{pid}", "held_out": held, "status": status,
            "correct": None if status == "skipped" else True, "speedup": None if status == "skipped" else speedup,
            "anchors": {} if status == "skipped" else {"compile-default": {"correct": True, "speedup": 2.0}}}


def _doc(recs: list[dict], date: str = "2026-12-01", **cfg: object) -> dict:
    return {"problems": recs, "measured": True, "environment": {"date": date}, "wall_s": 10.0,
            "config": {"engine": "rules", "steps": 3, "timing_trials": 100, "anchors": ["compile-default"], **cfg}}


def test_the_later_run_fills_the_skipped_problems_and_the_summary_is_recomputed() -> None:
    first = _doc([_rec(1, speedup=2.0), _rec(2, "skipped"), _rec(3, "skipped", held=True)])
    second = _doc([_rec(2, speedup=0.5), _rec(3, speedup=8.0, held=True)])
    doc = combine_runs([first, second])
    assert [r["problem_id"] for r in doc["problems"]] == [1, 2, 3]
    assert all(r["status"] == "ok" for r in doc["problems"])
    s = doc["summary"]
    assert s["level2"]["problems"] == 2 and s["level2"]["fast_p"]["1"] == pytest.approx(0.5)
    assert s["level2"]["geomean_speedup"] == pytest.approx(1.0)  # sqrt(2.0 * 0.5)
    assert s["level2-heldout"]["geomean_speedup"] == pytest.approx(8.0)
    assert s["level2"]["anchors"]["compile-default"]["measured"] == 2
    assert "problems 2, 3" in doc["resumed"]["line"] and doc["wall_s"] == pytest.approx(20.0)
    json.dumps(doc)


def test_a_skipped_record_never_replaces_one_that_ran() -> None:
    doc = combine_runs([_doc([_rec(1, speedup=3.0)]), _doc([_rec(1, "skipped")])])
    assert doc["problems"][0]["speedup"] == pytest.approx(3.0)


def test_runs_that_cannot_be_pooled_are_refused() -> None:
    with pytest.raises(KernelBenchError, match="steps"):
        combine_runs([_doc([_rec(1)]), _doc([_rec(2)], steps=5)])
    with pytest.raises(KernelBenchError, match="static"):
        combine_runs([_doc([_rec(1)]), {**_doc([_rec(2)]), "measured": False}])
    with pytest.raises(KernelBenchError, match="at least one"):
        combine_runs([])


# --- bench/combine_kernelbench.py, the command: every bad input is one line on stderr, exit 2, nothing written ---

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "combine_kernelbench.py"


def _cli():
    spec = importlib.util.spec_from_file_location("combine_kernelbench_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(path: Path, doc: object) -> str:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def _full_rec(pid: int, status: str = "ok", speedup: float | None = 1.5) -> dict:
    """A record with what the Markdown report reads too (the times, an anchor's ``ms``)."""
    r = {**_rec(pid, status, speedup), "eager_ms": None if speedup is None else 1.0,
         "new_ms": None if status == "skipped" or not speedup else 1.0 / speedup}
    for a in r["anchors"].values():
        a["ms"] = 1.0
    return r


def _two_runs(tmp_path: Path) -> list[str]:
    first = _write(tmp_path / "a-kernelbench.json", _doc([_full_rec(1, speedup=2.0), _full_rec(2, "skipped")]))
    second = _write(tmp_path / "b-kernelbench.json", _doc([_full_rec(2, speedup=0.5)], date="2026-12-02"))
    return [first, second]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], *needles: str) -> str:
    """Run the command in process; assert exit 2, one stderr line holding every needle, no traceback."""
    rc = _cli().main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert out == "" and err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("combine_kernelbench: ") and "Traceback" not in err, err
    for n in needles:
        assert n in err, (n, err)
    return err


def _nothing_written(out: Path) -> None:
    assert not out.with_suffix(".json").exists() and not out.with_suffix(".md").exists()


def test_the_command_writes_the_combined_json_and_markdown(tmp_path: Path, capsys) -> None:
    runs = _two_runs(tmp_path)
    assert _cli().main([*runs, "--out", str(tmp_path / "out" / "combined")]) == 0
    doc = json.loads((tmp_path / "out" / "combined.json").read_text())
    assert [r["status"] for r in doc["problems"]] == ["ok", "ok"] and len(doc["combined_from"]) == 2
    assert (tmp_path / "out" / "combined.md").read_text().startswith("## KernelBench runner")
    assert "combined 2 problems" in capsys.readouterr().out
    assert _cli().main([*runs, "--out", str(tmp_path / "out" / "combined")]) == 0
    assert capsys.readouterr().out.rstrip().endswith("(replaced the earlier ones)")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["combined.json", "combined.md"]  # no temp left


@pytest.mark.parametrize(("content", "why"), [
    ([1, 2], "it holds an array"),
    ("text", "it holds a string"),
    ({"a": 1}, "no 'problems' array"),
    ({"problems": {}, "config": {}}, "'problems' is an object"),
    ({"problems": [], "config": []}, "'config' is an array"),
    ({"problems": ["x"], "config": {}}, "problems[0] is a string"),
    ({"problems": [{"level": 2}], "config": {}}, "problems[0] has no integer 'problem_id'"),
    ({"problems": [], "config": {}, "environment": "h200"}, "'environment' is a string"),
    ({"problems": [], "config": {}, "wall_s": "10"}, "'wall_s' is a string"),
])
def test_json_that_is_not_a_result_file_is_named_as_such(tmp_path: Path, capsys, content, why) -> None:
    runs = _two_runs(tmp_path)
    bad = _write(tmp_path / "other.json", content)
    _refused(capsys, [runs[0], bad, "--out", str(tmp_path / "c")], bad, "is not a KernelBench result file", why)
    _nothing_written(tmp_path / "c")


def test_a_json_list_gives_one_line_from_the_real_command_not_a_traceback(tmp_path: Path) -> None:
    bad = _write(tmp_path / "list.json", [{"problems": []}])
    p = subprocess.run([sys.executable, str(SCRIPT), bad, "--out", str(tmp_path / "c")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == "", p
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert bad in p.stderr and "not a KernelBench result file" in p.stderr
    _nothing_written(tmp_path / "c")


def test_invalid_json_names_the_file_and_the_place(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "cut-kernelbench.json"
    bad.write_text('{"problems": [', encoding="utf-8")
    _refused(capsys, [str(bad), "--out", str(tmp_path / "c")], str(bad), "is not valid JSON", "line 1 column 15")
    bad.write_bytes(b"\xff\xfe{}")
    _refused(capsys, [str(bad), "--out", str(tmp_path / "c")], str(bad), "not UTF-8")
    _nothing_written(tmp_path / "c")


def test_a_missing_file_or_a_directory_as_input_is_one_line(tmp_path: Path, capsys) -> None:
    runs = _two_runs(tmp_path)
    missing = str(tmp_path / "nope-kernelbench.json")
    _refused(capsys, [runs[0], missing, "--out", str(tmp_path / "c")], missing, "does not exist")
    _refused(capsys, [runs[0], str(tmp_path), "--out", str(tmp_path / "c")], str(tmp_path), "is a directory")
    _nothing_written(tmp_path / "c")


def test_the_same_file_given_twice_is_refused(tmp_path: Path, capsys, monkeypatch) -> None:
    runs = _two_runs(tmp_path)
    _refused(capsys, [runs[0], runs[0], "--out", str(tmp_path / "c")], runs[0], "is given twice")
    monkeypatch.chdir(tmp_path)  # another spelling of the same path
    _refused(capsys, [runs[0], "./a-kernelbench.json", "--out", "c"], "./a-kernelbench.json",
             f"is the same file as {runs[0]}")
    _nothing_written(tmp_path / "c")


def test_a_copy_with_the_same_content_is_refused(tmp_path: Path, capsys) -> None:
    runs = _two_runs(tmp_path)
    copy = tmp_path / "copy-kernelbench.json"
    copy.write_bytes(Path(runs[1]).read_bytes())
    _refused(capsys, [*runs, str(copy), "--out", str(tmp_path / "c")], str(copy), f"same content as {runs[1]}")
    _nothing_written(tmp_path / "c")


def test_the_differ_message_names_only_the_settings_that_differ_and_the_files(tmp_path: Path, capsys) -> None:
    a = _write(tmp_path / "a.json", _doc([_rec(1)]))
    b = _write(tmp_path / "b.json", _doc([_rec(2)], steps=5))
    err = _refused(capsys, [a, b, "--out", str(tmp_path / "c")], "differ in steps (3 in", f"5 in {b}", a)
    for same in ("engine", "timing_trials", "anchors"):
        assert same not in err, err
    c = _write(tmp_path / "a3.json", _doc([_rec(3)], anchors=["compile-default", "compile-max-autotune"]))
    err = _refused(capsys, [a, c, "--out", str(tmp_path / "c")], "differ in anchors", c)
    assert "steps" not in err and "engine" not in err, err
    _nothing_written(tmp_path / "c")


def test_a_static_run_beside_a_measured_one_names_both_files(tmp_path: Path, capsys) -> None:
    a = _write(tmp_path / "a.json", _doc([_rec(1)]))
    b = _write(tmp_path / "b.json", {**_doc([_rec(2)]), "measured": False})
    _refused(capsys, [a, b, "--out", str(tmp_path / "c")], f"measured run ({a})", f"static one ({b})")
    _nothing_written(tmp_path / "c")


def test_an_out_that_is_a_directory_gives_one_line_from_the_real_command(tmp_path: Path) -> None:
    runs = _two_runs(tmp_path)
    (tmp_path / "d.json").mkdir()
    for out, needle in ((tmp_path, "is a directory; give a path inside it"), (tmp_path / "d", "it is a directory")):
        p = subprocess.run([sys.executable, str(SCRIPT), *runs, "--out", str(out)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and p.stdout == "", p
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr and needle in p.stderr, p.stderr
    assert not (tmp_path / "d.md").exists() and not list((tmp_path / "d.json").iterdir())


def test_an_out_with_no_name_or_under_a_file_is_one_line(tmp_path: Path, capsys) -> None:
    runs = _two_runs(tmp_path)
    _refused(capsys, [*runs, "--out", "."], "has no file name")
    _refused(capsys, [*runs, "--out", str(Path(runs[0]) / "c")], f"{runs[0]} is a file, not a directory")


def test_an_out_that_would_overwrite_an_input_is_refused(tmp_path: Path, capsys) -> None:
    runs = _two_runs(tmp_path)
    before = Path(runs[1]).read_bytes()
    _refused(capsys, [*runs, "--out", runs[1][: -len(".json")]], "would overwrite the input", runs[1])
    assert Path(runs[1]).read_bytes() == before


def test_an_unwritable_out_leaves_the_old_outputs_unchanged(tmp_path: Path, capsys, monkeypatch) -> None:
    runs = _two_runs(tmp_path)
    out = tmp_path / "ro" / "combined"
    out.parent.mkdir()
    out.with_suffix(".json").write_text("old json")
    out.with_suffix(".md").write_text("old md")
    cli = _cli()

    def denied(src: object, dst: object) -> None:
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(cli.os, "replace", denied)  # a read-only directory, even for root
    rc = cli.main([*runs, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"cannot write {out.with_suffix('.json')}: Permission denied" in err
    assert out.with_suffix(".json").read_text() == "old json" and out.with_suffix(".md").read_text() == "old md"
    assert sorted(p.name for p in out.parent.iterdir()) == ["combined.json", "combined.md"]  # temps removed


def test_a_usage_error_is_one_line(tmp_path: Path, capsys) -> None:
    runs = _two_runs(tmp_path)
    _refused(capsys, runs, "the following arguments are required: --out", "--help")
    _refused(capsys, ["--out", str(tmp_path / "c")], "required: runs")
    _nothing_written(tmp_path / "c")
