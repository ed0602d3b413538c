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
    p = _bench("--static", "--llmc", str(folder), "--out", str(out), "--tag", "t")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "[llmc] 1/1 scale:" in p.stdout
    (md,) = out.glob("llmc-static-*-t.md")
    doc = json.loads(md.with_suffix(".json").read_text())
    (row,) = doc["rows"]
    assert row["naive"] == "scale_kernel1" and row["harness"] == "launcher scale1"
    assert any(s["makeable"] for s in row["steps"])
    assert "| scale | scale_kernel1 | launcher scale1 |" in md.read_text()
    again = _bench("--static", "--llmc", str(folder), "--out", str(out), "--tag", "t")
    assert again.returncode == 0 and "scale: done earlier" in again.stdout
    assert len(md.with_suffix(".jsonl").read_text().splitlines()) == 1  # resumed, not appended again


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
    ok = [b for b in built if b.harness is not None]
    assert len(ok) >= 10, [(b.entry, b.reason) for b in built if b.harness is None]
