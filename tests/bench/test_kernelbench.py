"""The KernelBench runner: problems file, scoring, start solutions, a static CPU run, and the LLM path."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from htam_core.bench import kernelbench as kb
from htam_core.cli.main import main
from tests.support.openai_server import OpenAIServer, Scripted

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / ".." / "shared" / "data" / "kernelbench" / "problems.jsonl"
SOLUTIONS = REPO / "bench" / "kernelbench_solutions"
SMALL = REPO / "bench" / "kernelbench_small_sizes.json"  # shipped for users' CPU smoke runs
needs_problems = pytest.mark.skipif(not PROBLEMS.is_file(), reason="../shared/data/kernelbench is not present")


def test_score_follows_kernelbench_definitions() -> None:
    recs = [{"correct": True, "speedup": 2.0}, {"correct": True, "speedup": 0.5}, {"correct": False, "speedup": None},
            {"correct": True, "speedup": 1.2}]
    s = kb.score(recs)
    assert s["problems"] == 4 and s["correct"] == pytest.approx(0.75)
    assert s["fast_p"]["0"] == pytest.approx(0.75)
    assert s["fast_p"]["1"] == pytest.approx(0.5)
    assert s["fast_p"]["1.5"] == pytest.approx(0.25)
    assert s["fast_p"]["2"] == 0.0  # 2.0 is not > 2
    assert s["geomean_speedup"] == pytest.approx((2.0 * 0.5 * 1.2) ** (1 / 3))
    assert kb.score([{"correct": None, "speedup": None}])["correct"] is None


def test_load_problems_filters_and_rejects_bad_lines(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    rows = [{"level": 2, "problem_id": 3, "name": "3_x", "code": "c"}, {"level": 1, "problem_id": 9, "name": "9_y",
                                                                      "code": "c"}]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert [x.name for x in kb.load_problems(p)] == ["9_y", "3_x"]
    assert [x.name for x in kb.load_problems(p, [2])] == ["3_x"]
    assert kb.load_problems(p, None, [9])[0].level == 1
    p.write_text('{"level": 1}\n')
    with pytest.raises(kb.KernelBenchError, match=r"p.jsonl:1"):
        kb.load_problems(p)


_PYTHON_TEXT = ("list indices", "'problem_id'", "KeyError", "TypeError", "Expecting value", "Traceback",
                "not subscriptable", "invalid literal")


@pytest.mark.parametrize("line, why", [
    ('[1, 2]', "the line is an array, not an object"),
    ('{"level": 1}', "missing problem_id, name, code"),
    ('{"level": 1, "problem_id": 2, "name": "x"', "the line is not JSON (column 42)"),
    ('{"level": true, "problem_id": "x", "name": 3, "code": null}',
     "level is true, not an integer; problem_id is a string, not an integer; name is a number, not a string; "
     "code is null, not a string"),
    ('"just a string"', "the line is a string, not an object"),
])
def test_a_malformed_problem_line_is_named_without_python_text(line: str, why: str, tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text(json.dumps({"level": 1, "problem_id": 1, "name": "1_ok", "code": "c"}) + "\n\n" + line + "\n")
    with pytest.raises(kb.KernelBenchError) as exc:
        kb.load_problems(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}:3: not a KernelBench problem (needs a JSON object with level and problem_id "
                          "(integers), name and code (strings)): ")
    assert msg.endswith(why) and "\n" not in msg
    assert not any(t in msg for t in _PYTHON_TEXT), msg


def test_several_bad_lines_are_one_line_naming_the_first_and_counting_the_rest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text("[1, 2]\n" + '{"level": 1}\n' * 8)
    assert main(["bench", "kernelbench", "--problems", str(p), "--static", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"htam: error: {p}:1: not a KernelBench problem (")
    assert "the line is an array, not an object; 8 more bad lines (2, 3, 4, 5, 6, ...)" in err
    assert not any(t in err for t in _PYTHON_TEXT), err
    assert not (tmp_path / "o").exists()  # a refused run writes nothing


def test_a_named_problems_file_that_does_not_exist_is_an_error(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "kernelbench", "--problems", str(tmp_path / "none.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"htam: error: {tmp_path / 'none.jsonl'} does not exist: pass the path of an existing "
                          "KernelBench problems file")
    assert err.count("\n") == 1 and "skipped" not in err


@pytest.mark.parametrize("named", [False, True])
def test_the_default_problems_file_absent_is_a_clean_skip(named: bool, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """No --problems (or --problems naming the default path, as bench/run_gpu_bench.sh does) on a machine
    without the third-party data: one warning line and exit 0."""
    default = tmp_path / "shared" / "data" / "kernelbench" / "problems.jsonl"
    monkeypatch.setattr(kb, "DEFAULT_PROBLEMS", default)
    monkeypatch.chdir(tmp_path)
    argv = ["bench", "kernelbench", "--static", "--out", str(tmp_path / "o")]
    if named:  # spelled another way than the default, still the same file
        argv += ["--problems", "shared/data/../data/kernelbench/problems.jsonl"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"htam: warning: KernelBench skipped: no problems file at the default location {default} ")
    assert "pass --problems PATH" in err
    assert not (tmp_path / "o").exists()


def test_the_default_problems_path_is_the_one_of_bench_data_paths() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("data_paths", REPO / "bench" / "data_paths.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert kb.DEFAULT_PROBLEMS == mod.KERNELBENCH_PROBLEMS


def _one_start(tmp_path: Path) -> tuple[Path, Path]:
    """A tiny problems file (ids 19, 4 and 6 of level 1, 7 of level 2) and a start-solutions folder with 19 only."""
    problems = tmp_path / "problems.jsonl"
    rows = [{"level": 1, "problem_id": i, "name": f"{i}_P", "code": _PROBLEM} for i in (19, 4, 6)]
    rows.append({"level": 2, "problem_id": 7, "name": "7_Q", "code": _PROBLEM})
    problems.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    starts = tmp_path / "starts"
    (starts / "level1").mkdir(parents=True)
    shutil.copyfile(SOLUTIONS / "level1" / "19_ReLU.py", starts / "level1" / "19_ReLU.py")
    return problems, starts


def test_asked_ids_without_a_start_solution_are_named_on_the_console(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    problems, starts = _one_start(tmp_path)
    out = tmp_path / "o"
    rc = main(["bench", "kernelbench", "--problems", str(problems), "--levels", "1,2", "--ids", "19,4,6,7",
               "--static", "--start-solutions", str(starts), "--out", str(out)])
    assert rc == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "left out" in ln]
    assert lines == [f"[kernelbench] left out ids 4, 6 of level 1 and 7 of level 2: no starting solution under "
                     f"{starts / 'level<N>'} (a <id>_<name>.py file; engine rules needs one); add one or run them "
                     "with --engine llm"]
    doc = json.loads(next(out.glob("*-kernelbench.json")).read_text())
    assert [p["problem_id"] for p in doc["problems"]] == [19]
    assert {(r["level"], r["problem_id"]) for r in doc["not_run_without_start"]} == {(1, 4), (1, 6), (2, 7)}
    assert kb.left_out_line([{"level": 1, "problem_id": 4, "name": "4_P"}], starts) == (
        f"[kernelbench] left out id 4 of level 1: no starting solution under {starts / 'level1'} (a "
        "<id>_<name>.py file; engine rules needs one); add one or run them with --engine llm")


def test_a_refused_run_leaves_no_temporary_work_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problems, starts = _one_start(tmp_path)
    monkeypatch.setattr(kb.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with pytest.raises(kb.KernelBenchError, match="none of the asked ids"):
        kb.run_kernelbench(kb.KBConfig(problems=str(problems), levels=[1], ids=[4], start_solutions=str(starts),
                                       out_dir=str(tmp_path / "o"), static=True), log=lambda m: None)
    assert not list((tmp_path / "tmp").iterdir())


@pytest.mark.parametrize("level", [1, 2])
def test_at_least_15_start_solutions_per_level_define_modelnew_and_a_kernel(level: int) -> None:
    from htam_core.source import load

    files = sorted((SOLUTIONS / f"level{level}").glob("*.py"))
    assert len(files) >= 15
    for f in files:
        text = f.read_text()
        assert "class ModelNew" in text and "class Model(" not in text, f.name  # never the problem code
        assert "def get_inputs" not in text, f.name
        kernels = [k for k in load(f).kernels if k.language == "triton"]
        assert kernels, f.name
        assert kb._first_kernel(f) == kernels[0].name, f.name  # the runner finds the kernel to optimize


@needs_problems
def test_start_solutions_match_their_references_under_the_interpreter() -> None:
    """Every start solution against its KernelBench reference, with small sizes, under TRITON_INTERPRET=1."""
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("check_kb_solutions.py")), str(PROBLEMS),
                           str(SOLUTIONS), str(SMALL)], capture_output=True, text=True, timeout=600,
                          cwd=str(REPO))
    recs = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert len(recs) >= 31, proc.stderr[-2000:]  # 17 level-1 and 16 level-2 start solutions
    bad = [r for r in recs if not r["ok"]]
    assert not bad, bad


@needs_problems
def test_static_run_on_two_problems(tmp_path: Path) -> None:
    out = tmp_path / "out"
    rc = main(["bench", "kernelbench", "--problems", str(PROBLEMS), "--levels", "1", "--ids", "19,23", "--steps", "1",
               "--static", "--size-overrides", str(SMALL), "--start-solutions", str(SOLUTIONS), "--out", str(out)])
    assert rc == 0
    doc = json.loads(next(out.glob("*-kernelbench.json")).read_text())
    assert [p["problem_id"] for p in doc["problems"]] == [19, 23]
    for p in doc["problems"]:
        assert p["status"] == "ok" and p["mode"] == "static"
        assert p["correct"] is None and p["speedup"] is None and p["eager_ms"] is None
        assert len(p["steps"]) == 1 and p["steps"][0]["correct"] is True  # verified under the interpreter
    assert doc["summary"]["level1"]["fast_p"]["1"] is None
    md = next(out.glob("*-kernelbench.md")).read_text()
    assert "not KernelBench results" in md and "not measured" in md
    assert "def get_inputs" not in json.dumps(doc)  # the problem code is never written into the results


@needs_problems
def test_full_sizes_are_not_run_without_a_gpu(tmp_path: Path) -> None:
    rc = main(["bench", "kernelbench", "--problems", str(PROBLEMS), "--ids", "19", "--static", "--out",
               str(tmp_path)])
    assert rc == 0
    doc = json.loads(next(tmp_path.glob("*-kernelbench.json")).read_text())
    assert doc["problems"][0]["status"] == "skipped"


_PROBLEM = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0 + 1.0

n = 4096

def get_inputs():
    return [torch.randn(n)]

def get_init_inputs():
    return []
'''

_REPLY = '''Here is the kernel.

```python
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 2.0 + 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = BLOCK
        affine_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, y, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
```
'''


def test_llm_engine_with_the_loopback_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """engine llm: the model writes the first ModelNew from the problem, then HTAM steps ask it for improvements."""
    monkeypatch.setenv("HTAM_TEST_LLM_KEY", "sk-loopback-bench-0123456789")
    problems = tmp_path / "problems.jsonl"
    problems.write_text(json.dumps({"level": 1, "problem_id": 1, "name": "1_Affine", "code": _PROBLEM}) + "\n")
    sizes = tmp_path / "sizes.json"
    sizes.write_text(json.dumps({"1/1": {"n": 1000}}))
    out = tmp_path / "out"
    script = [Scripted.content(_REPLY.replace("BLOCK_SIZE = BLOCK", "BLOCK_SIZE = 64")),
              Scripted.content(_REPLY.replace("BLOCK_SIZE = BLOCK", "BLOCK_SIZE = 256"))]
    with OpenAIServer(script) as srv:
        rc = main(["bench", "kernelbench", "--problems", str(problems), "--engine", "llm", "--steps", "2",
                   "--static", "--size-overrides", str(sizes), "--start-solutions", str(tmp_path / "none"),
                   "--out", str(out), "--llm-base-url", srv.base_url, "--llm-model", "loopback-model",
                   "--llm-api-key-env", "HTAM_TEST_LLM_KEY", "--llm-max-repairs", "0"])
        requests = list(srv.requests)
    assert rc == 0
    assert len(requests) >= 2
    assert "class Model" in json.dumps(requests[0].body)  # the first prompt carries the problem
    doc = json.loads(next(out.glob("*-kernelbench.json")).read_text())
    p = doc["problems"][0]
    assert p["status"] == "ok" and p["kernel"] == "affine_kernel" and p["start"] is None
    assert len(p["steps"]) == 1 and p["steps"][0]["correct"] is True
    assert "sk-loopback-bench" not in json.dumps(doc)


def test_a_binary_problems_file_is_one_clear_error(tmp_path):
    blob = tmp_path / "problems.jsonl"
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(kb.KernelBenchError, match="not UTF-8 text"):
        kb.load_problems(blob)


def test_docs_count_the_shipped_small_sizes_as_the_file_holds_them() -> None:
    """Regression: docs/BENCH.md said the small-sizes file had the 17 level-1 start solutions; it has 33."""
    sizes = json.loads(SMALL.read_text())
    per = {lv: sum(1 for k in sizes if k.startswith(f"{lv}/")) for lv in (1, 2)}
    assert sum(per.values()) == len(sizes)
    for lv in (1, 2):  # one entry per start solution, no more
        ids = {f"{lv}/{f.name.split('_', 1)[0]}" for f in (SOLUTIONS / f"level{lv}").glob("*.py")}
        assert ids == {k for k in sizes if k.startswith(f"{lv}/")}, lv
    doc = " ".join((REPO / "docs" / "BENCH.md").read_text().split())
    assert f"has them for all {len(sizes)} start solutions ({per[1]} of level 1, {per[2]} of level 2)" in doc
    assert "for the 17 level-1 start solutions" not in doc
