"""``htam bench``: the messages a CPU-only user sees (no GPU, unknown ids, blank policies).

The problems file is synthetic (a small elementwise ``Model``), so these tests do not need
the KernelBench problems file; the start solutions are the shipped ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.bench import suite
from htam_core.bench.kernelbench import SMALL_SIZES_HINT
from htam_core.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "bench" / "kernelbench_solutions"
_RELU = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)

batch_size = 4096
dim = 4096

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
'''


def _problems(tmp_path: Path) -> Path:
    p = tmp_path / "problems.jsonl"
    rows = [{"level": 1, "problem_id": 19, "name": "19_ReLU", "code": _RELU},
            {"level": 1, "problem_id": 20, "name": "20_Other", "code": _RELU},
            {"level": 2, "problem_id": 5, "name": "5_L2", "code": _RELU}]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


def test_unknown_id_says_it_is_not_among_the_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "kernelbench", "--problems", str(_problems(tmp_path)), "--levels", "1", "--ids", "9999",
               "--steps", "1", "--static", "--start-solutions", str(SOLUTIONS), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "the asked ids [9999] are not among the problems of levels [1]" in err
    assert "which has 2 problems for those levels" in err
    assert "has a start solution" not in err  # the old, misleading reason


def test_without_a_gpu_the_skip_names_the_shipped_small_sizes(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    rc = main(["bench", "kernelbench", "--problems", str(_problems(tmp_path)), "--ids", "19", "--steps", "1",
               "--static", "--start-solutions", str(SOLUTIONS), "--out", str(out)])
    assert rc == 0
    err = capsys.readouterr().err
    assert "skipped" in err and SMALL_SIZES_HINT in err and "correct None" not in err
    assert (REPO / SMALL_SIZES_HINT).is_file()
    md = next(out.glob("*-kernelbench.md")).read_text()
    assert "timed here" not in md and "nothing was timed" in md
    assert "without --size-overrides no problem runs on the CPU" in md


def test_shipped_small_sizes_cover_every_start_solution() -> None:
    sizes = json.loads((REPO / SMALL_SIZES_HINT).read_text())
    for f in (SOLUTIONS / "level1").glob("*.py"):
        key = f"1/{f.name.split('_')[0]}"
        assert key in sizes and sizes[key], key


def test_docs_say_what_static_kernelbench_does() -> None:
    doc = (REPO / "docs" / "BENCH.md").read_text()
    assert "--size-overrides" in doc and SMALL_SIZES_HINT in doc and "**skipped**" in doc
    assert "gives the best reachable" not in doc
    assert "knowledge-base order" in doc and "reference for trials-to-90%" in doc


@pytest.mark.parametrize("blank", [" ", ",", " , "])
def test_blank_policies_is_a_usage_error(blank: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    rc = main(["bench", "suite", "--kernels", "vadd_kernel", "--policies", blank, "--budget", "1", "--static",
               "--suite", str(REPO / "bench" / "suite"), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "names no policy" in err
    assert all(p in err for p in suite.POLICY_SPECS)
    assert not out.exists() or not list(out.glob("*-suite.md"))  # no empty report


def test_no_policies_option_still_means_the_defaults() -> None:
    assert suite.parse_policies(None) == list(suite.DEFAULT_POLICIES)


@pytest.mark.parametrize("argv, said", [
    (["bench", "space", "--out", "t.jsonl"], "give --manifest FILE or --suite DIR"),
    (["bench", "space", "--suite", "nowhere", "--out", "t.jsonl"], "nowhere"),
    (["bench", "replay", "--table", "missing.jsonl"], "missing.jsonl does not exist"),
    (["bench", "replay", "--table", "t.jsonl", "--policies", "exhaustive"], "unknown policy exhaustive"),
])
def test_space_and_replay_bad_input_is_one_line(argv: list[str], said: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.jsonl").write_text('{"type": "header", "measured": false}\n')
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and said in err and "Traceback" not in err


def test_results_go_to_the_current_directory_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: the default --out was the repository's bench/results, so a user's run wrote into the checkout."""
    from htam_core.bench import DEFAULT_OUT
    from htam_core.bench.kernelbench import KBConfig
    from htam_core.cli.main import build_parser

    for cmd in (["bench", "suite"], ["bench", "kernelbench", "--problems", "p"], ["bench", "replay", "--table", "t"]):
        assert build_parser().parse_args(cmd).out == DEFAULT_OUT == "htam-bench-out"
    assert suite.SuiteConfig(suite_dir="s", policies=["htam"]).out_dir == DEFAULT_OUT
    assert KBConfig(problems="p", levels=[1]).out_dir == DEFAULT_OUT
    problems = _problems(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "kernelbench", "--problems", str(problems), "--ids", "19", "--steps", "1", "--static",
                 "--start-solutions", str(SOLUTIONS)]) == 0
    out = capsys.readouterr()
    md = next((tmp_path / DEFAULT_OUT).glob("*-kernelbench.md"))
    assert f"kernelbench results: {md.resolve()}" in out.out
    assert f"results go to {(tmp_path / DEFAULT_OUT).resolve()}" in out.err
