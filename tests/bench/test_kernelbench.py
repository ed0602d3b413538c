"""The KernelBench runner: problems file, scoring, start solutions, a static CPU run, and the LLM path."""

from __future__ import annotations

import json
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


def test_missing_problems_file_is_a_clean_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "kernelbench", "--problems", str(tmp_path / "none.jsonl")]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"htam: warning: {tmp_path / 'none.jsonl'} does not exist: pass the path of an existing ")
    assert "KernelBench skipped" in err


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
