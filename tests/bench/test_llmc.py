"""External kernels in the llm.c layout (htam_core.bench.llmc, bench/bench_llmc.py): discovery of versions,
work copies, zero-config harnesses through the version dispatch, the engine's reach, and the static benchmark's
streamed, resumable output. The folder used here is written by the test in llm.c's layout (a ``common.h``, a
``kernel_num`` dispatch, a main() that benchmarks); the real llm.c files are read only when present."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from htam_core.bench import llmc
from htam_core.harness.cu_main import find_nvcc

REPO = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("HTAM_LLMC") or REPO.parent / "shared" / "corpus" / "llmc")

COMMON = r"""
#include <cuda_runtime.h>
#include <cublas_v2.h>
template<class T> __host__ __device__ T ceil_div(T a, T b) { return (a + b - 1) / b; }
#if defined(ENABLE_BF16)
typedef __nv_bfloat16 floatX;
#else
typedef float floatX;
#endif
"""

SCALE = r"""
#define ENABLE_BF16
#include "common.h"

__global__ void scale_kernel1(floatX* out, const floatX* inp, float s, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) { out[i] = s * inp[i]; }
}

__global__ void scale_kernel2(floatX* out, const floatX* inp, float s, int N) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < N) {
        float4 v = reinterpret_cast<const float4*>(inp)[i / 4];
        v.x *= s; v.y *= s; v.z *= s; v.w *= s;
        reinterpret_cast<float4*>(out)[i / 4] = v;
    }
}

void scale1(floatX* out, const floatX* inp, float s, int N, const int block_size) {
    scale_kernel1<<<ceil_div(N, block_size), block_size>>>(out, inp, s, N);
}

void scale2(floatX* out, const floatX* inp, float s, int N, const int block_size) {
    scale_kernel2<<<ceil_div(N, block_size * 4), block_size>>>(out, inp, s, N);
}

void scale(int kernel_num, floatX* out, const floatX* inp, float s, int B, int C, int block_size) {
    switch (kernel_num) {
        case 1: scale1(out, inp, s, B * C, block_size); break;
        case 2: scale2(out, inp, s, B * C, block_size); break;
    }
}

int main(int argc, char** argv) {
    int B = 4;
    int C = 1024;
    int kernel_num = 1;
    if (argc > 1) { kernel_num = atoi(argv[1]); }
    floatX *d_out, *d_inp;
    cudaMalloc(&d_out, B * C * sizeof(floatX));
    cudaMalloc(&d_inp, B * C * sizeof(floatX));
    int block_sizes[] = {32, 256, 1024};
    for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
        int block_size = block_sizes[j];
        scale(kernel_num, d_out, d_inp, 2.0f, B, C, block_size);
    }
    return 0;
}
"""


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "llmc"
    d.mkdir()
    (d / "common.h").write_text(COMMON, encoding="utf-8")
    (d / "scale.cu").write_text(SCALE, encoding="utf-8")
    return d


def test_discover_finds_the_versions_of_the_dispatch(folder: Path) -> None:
    (entry,) = llmc.discover(folder)
    assert entry.name == "scale" and entry.dispatch == "scale"
    assert [(v.number, v.launcher, v.kernels) for v in entry.versions] == [
        (1, "scale1", ["scale_kernel1"]), (2, "scale2", ["scale_kernel2"])]
    assert entry.naive.number == 1 and [v.number for v in entry.experts] == [2]


def test_work_copy_selects_the_version_inlines_common_h_and_builds_fp32(folder: Path) -> None:
    (entry,) = llmc.discover(folder)
    text = llmc.work_copy_text(entry, 2, block_size=256)
    assert "int kernel_num = 2;" in text and "int kernel_num = 1;" not in text
    assert "typedef float floatX;" in text and '#include "common.h"' not in text
    assert "#define ENABLE_BF16" not in text
    assert "int block_sizes[] = {256};" in text
    assert (folder / "scale.cu").read_text(encoding="utf-8") == SCALE  # the source is never changed


def test_build_harness_infers_the_launcher_and_reuses_it_for_an_expert(folder: Path, tmp_path: Path) -> None:
    (entry,) = llmc.discover(folder)
    work = tmp_path / "work"
    naive = llmc.build_harness(entry, entry.naive, work, block_size=256)
    assert naive.reason is None, naive.reason
    h = naive.harness
    assert h.launcher == "scale1" and h.outputs == ["out"] and h.uses_oracle
    ins = {i.name: i for i in h.inputs}
    assert ins["inp"].dtype == "float32" and ins["inp"].shape == [4096]  # floatX is float in the fp32 build
    assert h.sizes == [{"N": 4096, "block_size": 256}]
    assert naive.work_file.parent.parent.parent == work and naive.work_file.is_file()
    # the expert writes through reinterpret_cast<float4*>: without `like` its own inference may fail; with the
    # naive harness it gets the same buffers and its own launcher
    expert = llmc.build_harness(entry, entry.experts[0], work, like=h)
    assert expert.harness is not None and expert.harness.launcher == "scale2"
    assert [i.name for i in expert.harness.inputs] == [i.name for i in h.inputs]
    # its outputs are checked against the naive version: the naive work copy through the naive launcher
    assert expert.unchecked is None and expert.harness.uses_oracle
    assert expert.harness.oracle_path == h.path and expert.harness.oracle_launcher == "scale1"


def test_an_expert_with_other_buffers_is_not_checked(folder: Path, tmp_path: Path) -> None:
    """A version whose launcher takes a scratch buffer the naive one does not cannot be compared on the same
    inputs: ``unchecked`` says why (the bench then publishes no time for it)."""
    text = SCALE.replace("void scale2(floatX* out, const floatX* inp, float s, int N, const int block_size) {",
                         "void scale2(floatX* out, float* scratch, const floatX* inp, float s, int N, "
                         "const int block_size) {").replace("case 2: scale2(out, inp,", "case 2: scale2(out, out, inp,")
    (folder / "scale.cu").write_text(text, encoding="utf-8")
    (entry,) = llmc.discover(folder)
    naive = llmc.build_harness(entry, entry.naive, tmp_path / "w", block_size=256)
    expert = llmc.build_harness(entry, entry.experts[0], tmp_path / "w", like=naive.harness)
    assert expert.unchecked and "takes other parameters than scale1" in expert.unchecked


def test_signatures_match_through_template_parameters_and_a_missing_block_size() -> None:
    assert llmc.same_buffers(["?*", "float*", "int"], ["float*", "float*", "int"])
    assert llmc.same_buffers(["float*", "int"], ["float*", "int", "int"])  # no block-size knob
    assert not llmc.same_buffers(["float*", "float*", "int"], ["float*", "int", "int"])
    assert not llmc.same_buffers(["float*"], ["float*", "float*"])  # a buffer left out is not the same
    text = ("template <typename T> void run2(float* out, const T* x, int n) {}\n"
            "__global__ void run1(float* out, const float* x, int n) {}\n"
            "void run1(float* out, const float* x, int n, int block_size) {}\n")
    assert llmc.launcher_signature(text, "run2") == ["float*", "?*", "int"]
    assert llmc.launcher_signature(text, "run1") == ["float*", "float*", "int", "int"]  # not the kernel


def test_discovery_keeps_library_versions_and_cases_opened_by_a_directive(folder: Path) -> None:
    text = SCALE.replace("        case 2: scale2(out, inp, s, B * C, block_size); break;",
                         "        case 2:\n#ifndef ENABLE_BF16\n            scale2(out, inp, s, B * C, block_size);\n"
                         "#endif\n            break;\n        case 3: scale_lib(out, inp, s, B * C); break;")
    text = text.replace("void scale(int kernel_num,", "void scale_lib(floatX* out, const floatX* inp, float s, int N) "
                        "{ /* a library call */ }\n\nvoid scale(int kernel_num,")
    (folder / "scale.cu").write_text(text, encoding="utf-8")
    (entry,) = llmc.discover(folder)
    assert [(v.number, v.launcher, v.kernels) for v in entry.versions] == [
        (1, "scale1", ["scale_kernel1"]), (2, "scale2", ["scale_kernel2"]), (3, "scale_lib", [])]
    assert entry.naive.number == 1 and [v.number for v in entry.experts] == [2, 3]


def test_reach_lists_makeable_and_refused_steps(folder: Path) -> None:
    steps = llmc.reach(folder / "scale.cu", "scale_kernel1")
    by = {s.strategy: s for s in steps}
    assert "cuda_block_size" in by and not by["cuda_block_size"].structural
    assert by["smem_tiling"].refusal and not by["smem_tiling"].makeable  # not a matmul
    assert any(s.makeable and s.structural for s in steps), [(s.strategy, s.refusal) for s in steps]
    assert all(s.makeable == (s.refusal is None) for s in steps)


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "bench" / "bench_llmc.py"), *args], capture_output=True,
                          text=True, timeout=600, cwd=str(REPO))


def test_static_bench_streams_rows_and_resumes(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    p = _bench("--static", "--llmc", str(folder), "--out", str(out), "--tag", "t", "--work", str(tmp_path / "w"))
    assert p.returncode == 0, p.stderr[-2000:]
    assert "[llmc] 1/1 scale:" in p.stdout
    (md,) = out.glob("llmc-static-*-t.md")
    doc = json.loads(md.with_suffix(".json").read_text())
    (row,) = doc["rows"]
    assert row["naive"] == "scale_kernel1" and row["harness"] == "launcher scale1"
    assert any(s["makeable"] for s in row["steps"])
    assert "| scale | scale_kernel1 | launcher scale1 |" in md.read_text()
    if find_nvcc() is not None:  # compile-only: the naive shim, and the expert's with the naive one as oracle
        assert row["naive_build"]["ok"], row["naive_build"]
        (ex,) = row["expert_builds"]
        assert ex["version"] == 2 and ex["ok"] and ex["oracle_checked"], ex
        assert "| launcher scale1 | yes | 1 of 1 (1 checked) |" in md.read_text()
        assert "Builds: compile-only with" in md.read_text()
    again = _bench("--static", "--llmc", str(folder), "--out", str(out), "--tag", "t")
    assert again.returncode == 0 and "scale: done earlier" in again.stdout
    assert len(md.with_suffix(".jsonl").read_text().splitlines()) == 1  # resumed, not appended again


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found")
def test_static_bench_reports_a_build_that_fails(folder: Path, tmp_path: Path) -> None:
    """A file that parses (the harness is inferred) but does not compile: the naive start and the expert are a
    "no" with which build failed and nvcc's first error line (every work copy holds every version)."""
    (folder / "scale.cu").write_text(SCALE.replace("v.x *= s; v.y *= s;", "v.x *= s; v.q *= s;"), encoding="utf-8")
    out = tmp_path / "results"
    p = _bench("--static", "--llmc", str(folder), "--out", str(out), "--tag", "f", "--date", "2000-01-02",
               "--work", str(tmp_path / "w"))
    assert p.returncode == 0, p.stderr[-2000:]
    (md,) = out.glob("llmc-static-2000-01-02-f.md")
    (row,) = json.loads(md.with_suffix(".json").read_text())["rows"]
    assert row["harness"] == "launcher scale1" and not row["naive_build"]["ok"]
    assert row["naive_build"]["reason"].startswith("the build of scale1 failed: scale.cu(")
    assert "error" in row["naive_build"]["reason"] and "/" not in row["naive_build"]["reason"].split(":")[1]
    (ex,) = row["expert_builds"]
    assert not ex["ok"] and ex["reason"].startswith("the build of scale2 failed"), ex
    text = md.read_text()
    assert "| launcher scale1 | no: the build of scale1 failed: scale.cu(" in text
    assert "0 of 1 (0 checked); not: v2 |" in text and "- scale / v2: the build of scale2 failed" in text


def test_absent_folder_is_a_clean_skip(tmp_path: Path) -> None:
    p = _bench("--static", "--llmc", str(tmp_path / "none"), "--out", str(tmp_path))
    assert p.returncode == 0 and "skipped: no llm.c folder" in p.stdout
    assert not list(tmp_path.glob("llmc-*"))


@pytest.mark.skipif(not LLMC.is_dir(), reason="the llm.c folder (shared corpus) is not present")
def test_real_llmc_files_get_zero_config_harnesses() -> None:
    entries = llmc.discover(LLMC)
    assert len(entries) >= 10
    import tempfile

    with tempfile.TemporaryDirectory() as work:
        built = [llmc.build_harness(e, e.naive, work) for e in entries if e.naive is not None]
    # every naive start, trimat_forward's too (its stores are in a device function chosen by a template argument)
    assert [(b.entry, b.reason) for b in built if b.harness is None] == []


def _load_bench():  # noqa: ANN202 - the script module
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_llmc", REPO / "bench" / "bench_llmc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gpu_row_assembles_engine_and_expert_times(folder: Path, tmp_path: Path, monkeypatch) -> None:
    """The GPU path's bookkeeping with the optimizer and the timing worker replaced (no GPU here): the naive
    start at block 256, the engine's best, the fastest expert over the file's block sizes, engine/expert."""
    import htam_core.optimize as opt
    import htam_core.runtime.worker as worker
    from htam_core.optimize.reproduce import REPRODUCED, Reproduction
    from htam_core.optimize.task import OptimizeResult, StepRecord

    bench = _load_bench()
    seen: dict = {}

    def fake_optimize(task, cancel=None):  # noqa: ANN001, ANN202
        seen["task"] = task
        text = Path(task.path).read_text()
        seen["text"] = text
        step = StepRecord(index=1, direction="parallel_mapping", strategy="grid_stride_loop", transform="t",
                          description="", params={}, edit="", status="win", correct=True, verified_on="gpu",
                          time_ms=0.5, speedup=2.0, speedup_vs_start=2.0, accepted=True, evidence=[])
        return OptimizeResult(best_text=text, best_speedup=2.0, measured=True, steps=[step], report_dir=tmp_path,
                              report_md=tmp_path / "r.md", summary="", cancelled=False, changed=True, start_ms=1.0,
                              best_ms=0.5, mode="gpu",
                              reproduction=Reproduction(status=REPRODUCED, reported=2.0, fresh=1.98))

    def fake_worker(target, kwargs, **kw):  # noqa: ANN001, ANN202
        seen["timed"] = kwargs
        sets = [{"set": i, "sizes": s, "time": {"median": 0.1 * (3 - i)}}
                for i, s in enumerate(kwargs["harness"]["sizes"])]
        verdict = {"correct": seen.get("expert_correct", True), "messages": ["output 0: 7 of 4096 values differ"]}
        return worker.WorkerResult(ok=True, value={"device": "fake", "correctness": verdict, "sets": sets})

    monkeypatch.setattr(opt, "run_optimize", fake_optimize)
    monkeypatch.setattr(worker, "run_in_worker", fake_worker)
    (entry,) = llmc.discover(folder)
    row = bench.gpu_row(entry, tmp_path / "work", budget=2, trials=5, memory=str(tmp_path / "m.sqlite3"),
                        deadline=None)
    assert row["error"] is None, row["error"]
    assert "int block_sizes[] = {256};" in seen["text"] and seen["task"].engine == "rules"
    assert seen["timed"]["verify"] is True  # the expert is checked against the naive version
    assert seen["timed"]["harness"]["oracle_launcher"] == "scale1"
    assert [s["block_size"] for s in seen["timed"]["harness"]["sizes"]] == [32, 256, 1024]
    assert row["naive_ms"] == 1.0 and row["best_ms"] == 0.5 and row["speedup"] == 2.0
    assert row["expert_ms"] == pytest.approx(0.1) and row["expert"] == "v2 (block 1024)"
    assert row["engine_over_expert"] == pytest.approx(0.2) and row["made"] == ["grid_stride_loop"]
    md = bench.markdown([row], "gpu", {"date": "d", "device": "fake", "command": "c", "llmc": "x"})
    assert "| scale / scale_kernel1 | 1.0000 | 0.5000 | reproduced (1.98x) | 0.1000 v2 (block 1024) | 0.20 | " \
        "grid_stride_loop |" in md
    assert "2.00x over 1 kernels" in md
    # an expert whose outputs do not match the naive version's publishes no time, and the row says why
    seen["expert_correct"] = False
    row = bench.gpu_row(entry, tmp_path / "work2", budget=2, trials=5, memory=str(tmp_path / "m.sqlite3"),
                        deadline=None)
    assert row["expert_ms"] is None and row["engine_over_expert"] is None
    (rec,) = row["experts"]
    assert rec["unverified_ms"] == pytest.approx(0.1) and not rec["verified"]
    assert row["expert_note"].startswith("expert not verified: its outputs do not match the naive version's")
    md = bench.markdown([row], "gpu", {"date": "d", "device": "fake", "command": "c", "llmc": "x"})
    assert "| reproduced (1.98x) | expert not verified: its outputs do not match" in md


def test_an_unreproduced_speedup_is_published_as_the_start() -> None:
    """A search win that the fresh-process re-timing did not reproduce counts as 1.0x (the rule of the suite)."""
    from htam_core.optimize.reproduce import NOT_REPRODUCED, Reproduction

    bench = _load_bench()
    row = {"naive_ms": 1.0, "best_ms": 0.5}
    bench._publish(row, Reproduction(status=NOT_REPRODUCED, reported=2.0, fresh=1.1, reason="fresh 1.1x"))
    assert row["speedup"] == 1.0 and row["best_ms"] == 1.0
    assert row["search_speedup"] == 2.0 and row["reproduction"]["status"] == NOT_REPRODUCED
    bench._publish(row := {"naive_ms": 1.0, "best_ms": 0.5}, None)
    assert row["speedup"] == 1.0, "a win never re-timed is not published"


def test_rows_timed_before_experts_were_verified_get_their_experts_checked(folder: Path, tmp_path: Path,
                                                                           monkeypatch) -> None:
    """A resumed GPU row from before the rule (expert records without ``verified``) keeps its engine figures;
    only its experts are verified and timed again, and the unchecked figures are kept aside."""
    import htam_core.runtime.worker as worker

    bench = _load_bench()
    old = {"file": "scale", "mode": "gpu", "complete": True, "error": None, "naive_ms": 1.0, "best_ms": 0.5,
           "speedup": 2.0, "versions": [1, 2], "expert_ms": 0.0008, "expert": "v2 (block None)",
           "experts": [{"version": 2, "kernel": "scale_kernel2", "ms": 0.0008, "block_size": None, "note": None}]}
    assert bench.needs_expert_check(old)
    assert not bench.needs_expert_check({**old, "experts": [{**old["experts"][0], "verified": True}]})
    assert not bench.needs_expert_check({**old, "error": "the naive start failed"})

    def fake_worker(target, kwargs, **kw):  # noqa: ANN001, ANN202
        sets = [{"set": i, "sizes": s, "time": {"median": 0.25}} for i, s in enumerate(kwargs["harness"]["sizes"])]
        return worker.WorkerResult(ok=True, value={"device": "fake", "sets": sets,
                                                   "correctness": {"correct": True, "messages": ["matched"]}})

    monkeypatch.setattr(worker, "run_in_worker", fake_worker)
    (entry,) = llmc.discover(folder)
    row = bench.recheck_experts(old, entry, tmp_path / "work", trials=5, deadline=None)
    assert row["naive_ms"] == 1.0 and row["best_ms"] == 0.5  # the engine part is kept
    assert row["expert_ms"] == pytest.approx(0.25) and row["experts"][0]["verified"]
    assert row["engine_over_expert"] == pytest.approx(0.5) and row["experts_unchecked"][0]["ms"] == 0.0008
    assert not bench.needs_expert_check(row)
    assert bench._expert_cell({"versions": [1]}) == "no expert version in the file"


def test_a_row_without_a_start_time_says_why() -> None:
    """A GPU row that ran but whose start time the loop did not publish names the cause (its first warning),
    and an older row without recorded warnings says that the cause was not recorded: never a bare blank."""
    bench = _load_bench()
    meta = {"date": "d", "device": "fake", "command": "c", "llmc": "x"}
    row = {"file": "f", "naive": "k1", "naive_ms": None, "best_ms": None, "versions": [1],
           "warnings": ["the start's time is not published: the timer and CUPTI differ by 14%"]}
    md = bench.markdown([row], "gpu", meta)
    assert "(start time not published: the start's time is not published: the timer and CUPTI differ by 14%)" in md
    del row["warnings"]
    assert "the cause was not recorded by this version of the bench (rerun)" in bench.markdown([row], "gpu", meta)
    row.update(naive_ms=1.0, best_ms=1.0)
    assert "start time not published" not in bench.markdown([row], "gpu", meta)


def test_the_recorded_command_names_no_local_corpus_path() -> None:
    """A results file gives the llm.c folder as LLMC_DIR, never this machine's path to the third-party corpus."""
    bench = _load_bench()
    assert bench.command_line(["--static", "--llmc", "/somewhere/corpus/llmc", "--fresh"]) == \
        "python bench/bench_llmc.py --static --llmc LLMC_DIR --fresh"
    assert bench.command_line(["--llmc=/x/llmc", "--budget", "3"]) == \
        "python bench/bench_llmc.py --llmc=LLMC_DIR --budget 3"
