"""bench/corpus_steps.py and bench/bench_textbook.py on a small corpus written here: offers counted per step, edits
compiled, the output contract checked, and a clean skip without a corpus."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses read their module
    spec.loader.exec_module(mod)
    return mod


cs = _load("corpus_steps")
tb = _load("bench_textbook")

ADD = """__global__ void add_arrays(const float *x, const float *y, float *z, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) z[i] = x[i] + y[i];
}
void run_add(const float *x, const float *y, float *z, int count) {
  add_arrays<<<(count + 255) / 256, 256>>>(x, y, z, count);
}
"""

PARTIAL = """__global__ void partial_sums(const float *in, float *partial, int count) {
  __shared__ float buf[256];
  unsigned int t = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[t] = (i < count) ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = buf[0];
}
void run_partial(const float *in, float *partial, int count) {
  int blocks = (count + 255) / 256;
  partial_sums<<<blocks, 256>>>(in, partial, count);
}
"""


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "public" / "mine"
    root.mkdir(parents=True)
    (root / "add.cu").write_text(ADD)
    (root / "partial.cu").write_text(PARTIAL)
    return tmp_path / "public"


def test_skips_cleanly_without_a_corpus(tmp_path: Path, capsys) -> None:
    assert cs.main(["--corpus", str(tmp_path / "absent"), "--out", str(tmp_path / "out")]) == 0
    assert "no corpus" in capsys.readouterr().out and not (tmp_path / "out").exists()
    # the textbook bench still runs the project's own pairs
    out = tmp_path / "tb-out"
    assert tb.main(["--corpus", str(tmp_path / "absent"), "--out", str(out), "--no-compile",
                    "--pairs", "vector_add"]) == 0
    assert "only the project's own pairs run" in capsys.readouterr().out
    rows = json.loads((out / "table.json").read_text())["rows"]
    assert [r["pair"] for r in rows] == ["own vector_add"] and rows[0]["textbook_makeable"]


def test_offers_per_step_without_compiling(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cs.main(["--corpus", str(_corpus(tmp_path)), "--out", str(out), "--no-compile", "--sample", "3",
                    "--sample-dir", str(tmp_path / "sample")]) == 0
    data = json.loads((out / "table.json").read_text())
    assert data["meta"]["kernels"] == 2
    offered = {(r["kernel"], r["step"]) for r in data["rows"] if r["offered"]}
    assert ("add_arrays", "vectorize_loads") in offered
    # the reduction writes one partial sum per block: a block-size change would change the output's length
    assert ("partial_sums", "cuda_block_size") not in offered
    steps = {s["step"]: s for s in data["steps"]}
    assert steps["vectorize_loads"]["offered"] >= 1 and steps["vectorize_loads"]["made"] == 0
    assert all("_text" not in r for r in data["rows"])
    assert len(list((tmp_path / "sample").glob("*.diff"))) == 3 and not (out / "sample").exists()
    assert "| vectorize_loads | cuda |" in (out / "table.md").read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_made_means_the_edit_compiles(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    good, err = cs.nvcc_ok(ADD, src, tmp_path, tmp_path)
    assert good and not err
    bad, err = cs.nvcc_ok(ADD.replace("z[i] = x[i] + y[i];", "z[i] = x[i] + w[i];"), src, tmp_path, tmp_path)
    assert not bad and "w" in err


def test_textbook_row_reads_the_output_contract(tmp_path: Path) -> None:
    f = tmp_path / "partial.cu"
    f.write_text(PARTIAL)
    row = tb.static_facts(f, "partial_sums", ("sequential_addressing", "cuda_block_size"), tmp_path, tmp_path,
                          compile_edits=False)
    assert row["per_block_outputs"] and row["per_block_outputs"][0].startswith("partial[")
    assert row["contract_ruled_out"] == []
    assert "cuda_block_size" in row["textbook_refused"]
    g = tmp_path / "add.cu"
    g.write_text(ADD)
    row = tb.static_facts(g, "add_arrays", ("vectorize_loads",), tmp_path, tmp_path, compile_edits=False)
    assert row["textbook_makeable"] == ["vectorize_loads"] and not row["per_block_outputs"]


def test_ratios_and_targets_in_the_table() -> None:
    assert tb.ratio(2.0, 1.0) == 2.0 and tb.ratio(None, 1.0) is None
    rows = [{"pair": "a", "naive": "k", "offered": ["vectorize_loads"], "textbook_makeable": ["vectorize_loads"],
             "textbook_unchecked": [], "textbook_refused": {}, "compile_errors": {}, "contract_ruled_out": [],
             "engine_over_expert": 0.9, "engine_over_naive": 2.0, "expert_over_naive": 2.2},
            {"pair": "b", "naive": "r", "offered": ["cuda_block_size"], "textbook_makeable": [],
             "textbook_unchecked": [], "textbook_refused": {"sequential_addressing": "no"}, "compile_errors": {},
             "contract_ruled_out": ["cuda_block_size"], "engine_over_expert": None}]
    md = tb.markdown({"date": "d", "device": "x", "command": "c", "mode": "gpu"}, rows)
    assert "1 of 2 pairs (50 %" in md and "1 of 1 measured pairs (100 %" in md
    assert "output contract rules out: 1 (target 0)" in md


SAMPLE = """#include <cuda_runtime.h>
#include <mini_check.h>

__global__ void add_arrays(const float *x, const float *y, float *z, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) z[i] = x[i] + y[i];
}

int main() {
  int count = 1 << 18;
  float *x = NULL, *y = NULL, *z = NULL;
  MINI_CHECK(cudaMalloc((void **)&x, count * sizeof(float)));
  MINI_CHECK(cudaMalloc((void **)&y, count * sizeof(float)));
  MINI_CHECK(cudaMalloc((void **)&z, count * sizeof(float)));
  add_arrays<<<(count + 255) / 256, 256>>>(x, y, z, count);
  return 0;
}
"""


def _samples(tmp_path: Path) -> Path:
    """A samples-like tree: ``Samples/0_Intro/add/add.cu`` including ``<mini_check.h>`` from ``Common/``."""
    root = tmp_path / "samples"
    (root / "Common").mkdir(parents=True)
    (root / "Common" / "mini_check.h").write_text("#pragma once\n#define MINI_CHECK(x) (void)(x)\n")
    f = root / "Samples" / "0_Intro" / "add" / "add.cu"
    f.parent.mkdir(parents=True)
    f.write_text(SAMPLE)
    return f


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_harness_build_finds_the_common_header_without_flags(tmp_path: Path, monkeypatch) -> None:
    """The sample's harness builds with no -I given: the include-folder rule finds Common/ (named CORPUS/...)."""
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    f = _samples(tmp_path)
    row = tb.harness_build(f, "add_arrays", tmp_path / "samples")
    assert "harness_error" not in row, row
    assert row["harness_kind"] == "inferred" and row["harness_built"]
    assert any(n.startswith("include folder CORPUS/Common (holds mini_check.h") for n in row["harness_notes"])


def test_the_work_copy_keeps_the_samples_tree(tmp_path: Path) -> None:
    f = _samples(tmp_path)
    copy = tb.work_copy(f, tmp_path / "work", "add")
    assert copy == tmp_path / "work" / "add" / "Samples" / "0_Intro" / "add" / "add.cu" and copy.is_file()
    assert (tmp_path / "work" / "add" / "Common" / "mini_check.h").is_file()


COL_MEAN = """#define THREADS 256
__global__ void col_avg(const float* in, float* out, unsigned rows, unsigned cols) {
  __shared__ float buf[THREADS];
  unsigned col = blockIdx.x;
  float s = 0.0f;
  for (unsigned r = threadIdx.x; r < rows; r += blockDim.x) s += in[(size_t)r * cols + col];
  buf[threadIdx.x] = s;
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) buf[threadIdx.x] += buf[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[col] = buf[0] / (float)rows;
}
void run_col_avg(const float* in, float* out, unsigned rows, unsigned cols) {
  col_avg<<<cols, THREADS>>>(in, out, rows, cols);
}
"""


def test_block_size_that_keeps_the_grid_keeps_the_output_contract(tmp_path: Path) -> None:
    """One block per column: a new block size leaves ``cols`` blocks, one output each; the bench's rule is the
    step's own (an offered block size is not counted as ruled out), and the same rule still rules out an edit
    whose grid follows the block on a kernel with per-block outputs the host does not own."""
    f = tmp_path / "colavg.cu"
    f.write_text(COL_MEAN)
    row = tb.static_facts(f, "col_avg", ("cuda_block_size",), tmp_path, tmp_path, compile_edits=False)
    assert row["per_block_outputs"] and "cuda_block_size" in row["offered"]
    assert row["contract_ruled_out"] == []
    model = tb.load(f)
    kernel = model.kernel("col_avg")
    assert tb.contract_broken(model, kernel, COL_MEAN.replace("THREADS 256", "THREADS 128")) is None
    grid_follows = COL_MEAN.replace("<<<cols, THREADS>>>", "<<<(cols + THREADS - 1) / THREADS, THREADS>>>")
    (tmp_path / "follows.cu").write_text(grid_follows)
    model = tb.load(tmp_path / "follows.cu")
    why = tb.contract_broken(model, model.kernel("col_avg"), grid_follows.replace("THREADS 256", "THREADS 128"))
    assert why and "one output per block" in why
