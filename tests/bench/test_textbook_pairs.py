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


PLANE_HEADER = """#pragma once
__global__ void blur(const float *in, float *out, int C, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.z;
    if (x < 1 || y < 1 || x >= W - 1 || y >= H - 1) return;
    const float *src = in + (size_t)c * H * W;
    out[((size_t)c * H + y) * W + x] = src[y * W + x - 1] + src[y * W + x + 1] + src[(y - 1) * W + x];
}
"""

PLANE_MAIN = """#include <cuda_runtime.h>
#include "INCLUDE"
int main() {
    const int C = 4, H = 64, W = 64;
    float *in, *out;
    cudaMalloc(&in, C * H * W * sizeof(float));
    cudaMalloc(&out, C * H * W * sizeof(float));
    blur<<<dim3(W / 32, H / 8, C), dim3(32, 8)>>>(in, out, C, H, W);
    cudaDeviceSynchronize();
    return 0;
}
"""


@pytest.mark.parametrize("include", ["blur.cuh", "kernels/blur.cuh"])
def test_a_naive_kernel_in_an_included_header_is_counted(include: str, tmp_path: Path) -> None:
    """A pair whose ``naive.cu`` holds only ``main()`` and includes the kernel's header is read from that header
    (its launch from ``naive.cu``), not listed as not counted."""
    (tmp_path / include).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / ".git").mkdir()  # a repository: the header's launch is searched in its parent folder too
    (tmp_path / include).write_text(PLANE_HEADER)
    (tmp_path / "naive.cu").write_text(PLANE_MAIN.replace("INCLUDE", include))
    (tmp_path / "cache").mkdir()
    row = tb.static_facts(tmp_path / "naive.cu", "blur", ("stencil_smem_tile",), tmp_path, tmp_path / "cache",
                          shutil.which("nvcc") is not None)
    assert row["error"] is None and row["kernel_file"] == "blur.cuh"
    assert row["textbook_makeable"] == ["stencil_smem_tile"], (row["textbook_refused"], row["compile_errors"])
    assert tb._kernel_file(tmp_path / "naive.cu", "blur") == tmp_path / include


def test_a_kernel_no_included_header_defines_is_not_found(tmp_path: Path) -> None:
    (tmp_path / "other.cuh").write_text(PLANE_HEADER.replace("blur", "sharpen"))
    (tmp_path / "naive.cu").write_text(PLANE_MAIN.replace("INCLUDE", "other.cuh"))
    row = tb.static_facts(tmp_path / "naive.cu", "blur", ("stencil_smem_tile",), tmp_path, tmp_path / "cache", False)
    assert row["error"] == "kernel blur not found"


def test_the_expert_of_a_header_pair_is_verified_against_the_headers_kernel(tmp_path: Path, monkeypatch) -> None:
    """The bench's expert check (``htam verify expert.cu --against naive.cu``) on a pair whose ``naive.cu`` only
    launches the header's kernel resolves to the kernel-launch harness the search runs on the header (oracle: the
    header), so the expert is verified and then timed, not refused as a ``main()`` program."""
    from htam_core.verify.check import resolve_harness

    folder = tmp_path / "pairs" / "blur"
    folder.mkdir(parents=True)
    (folder / "blur.cuh").write_text(PLANE_HEADER)
    (folder / "naive.cu").write_text(PLANE_MAIN.replace("INCLUDE", "blur.cuh"))
    (folder / "expert.cu").write_text(PLANE_MAIN.replace('#include "INCLUDE"', PLANE_HEADER.replace("#pragma once", "")))
    searched: list[Path] = []
    monkeypatch.setattr(tb, "engine_row", lambda path, *a: searched.append(path) or {"naive_ms": 1.0, "best_ms": 1.0})
    harnesses = []

    def cli(args: list[str], timeout_s: float = 900.0):
        if args[0] == "profile":
            return {"time_ms": {"median": 0.5}}, ""
        h = resolve_harness(args[1], against=args[args.index("--against") + 1], kernel=args[args.index("--kernel") + 1])
        harnesses.append(h)
        return {"correct": True}, ""

    monkeypatch.setattr(tb, "_cli_json", cli)
    pair = tb.Pair("blur", "", "blur", ("expert.cu",), ("stencil_smem_tile",))
    row = tb.own_gpu(pair, folder, tmp_path / "work", 3, 5, str(tmp_path / "mem.json"))
    assert [p.name for p in searched] == ["blur.cuh"]
    [h] = harnesses
    assert h.traits.launches and Path(h.oracle_path) == searched[0].resolve() and Path(h.path).name == "expert.cu"
    assert row["expert_ms"] == 0.5 and "expert_note" not in row
