"""bench/bench_llmc_transform.py: one transform on an llm.c-layout file's naive start, in static mode (no GPU):
the candidates are made, written beside the naive work copy, built with nvcc on the naive harness (checked against
the naive version), streamed to a JSONL file, and a spent time budget stops the run cleanly. The folder is written
by the test in llm.c's layout (a ``common.h``, a ``kernel_num`` dispatch through a template launcher, a main())."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from htam_core.harness.cu_main import find_nvcc

REPO = Path(__file__).resolve().parents[2]
HELPERS = (REPO / "tests" / "fixtures" / "panel" / "template_callee.cu").read_text(encoding="utf-8")
COMMON = "#include <cuda_runtime.h>\n#include <stdlib.h>\n"
MAIN = r"""
void trimul_gpu(int kernel_num, float* out, const float* inp, int B, int T, int C, int NH) {
    switch (kernel_num) {
        case 1: launch_with<naive_dot>(out, inp, B, T, C, NH); break;
        case 2: launch_with<row_dot>(out, inp, B, T, C, NH); break;
    }
}

int main(int argc, char** argv) {
    int B = 2;
    int T = 256;
    int C = 128;
    int NH = 2;
    float *d_out, *d_inp;
    cudaMalloc(&d_out, B * NH * T * T * sizeof(float));
    cudaMalloc(&d_inp, B * T * 3 * C * sizeof(float));
    int kernel_num = 1;
    if (argc > 1) { kernel_num = atoi(argv[1]); }
    trimul_gpu(kernel_num, d_out, d_inp, B, T, C, NH);
    return 0;
}
"""


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "llmc"
    d.mkdir()
    (d / "common.h").write_text(COMMON, encoding="utf-8")
    body = HELPERS.split("using dot_fn", 1)[1].split("void run(", 1)[0]
    (d / "tri.cu").write_text('#include "common.h"\n#include <math.h>\nusing dot_fn' + body + MAIN, encoding="utf-8")
    return d


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "bench" / "bench_llmc_transform.py"), "--static", *args],
                          capture_output=True, text=True, timeout=600, cwd=str(REPO))


def _records(out: Path) -> list[dict]:
    (path,) = out.glob("llmc-transform-static-*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_candidates_are_made_and_built(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    p = _run("--llmc", str(folder), "--file", "tri", "--out", str(out), "--work", str(tmp_path / "w"))
    assert p.returncode == 0, p.stderr[-3000:]
    assert "[llmc-transform] tri: 2 candidate(s) of cuda.smem_panel_tiling" in p.stdout
    recs = _records(out)
    assert recs[0]["what"] == "transform" and recs[0]["refusal"] is None
    cands = [r for r in recs if r["what"] == "candidate"]
    assert [c["params"]["bk"] for c in cands] == [32, 16]
    assert all(c["params"]["callee"] == "naive_dot" for c in cands)
    assert (tmp_path / "w" / "tri" / "cuda.smem_panel_tiling-0" / "tri.cu").is_file()
    if find_nvcc() is not None:
        assert all(c["build"]["ok"] and c["build"]["oracle_checked"] for c in cands), [c["build"] for c in cands]


def test_a_spent_budget_stops_cleanly(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    p = _run("--llmc", str(folder), "--file", "tri", "--out", str(out), "--work", str(tmp_path / "w"),
             "--max-seconds", "0")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "time budget spent; stopping" in p.stdout
    assert [r["what"] for r in _records(out)] == ["transform"]


def test_absent_folder_is_a_clean_skip(tmp_path: Path) -> None:
    p = _run("--llmc", str(tmp_path / "none"), "--out", str(tmp_path))
    assert p.returncode == 0 and "skipped: no llm.c folder" in p.stdout
