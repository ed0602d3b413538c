"""Block per row against warp per row: the launch sizes the analysis layer reads from the host code
(:func:`htam_core.source.analysis.row_launch.few_long_rows`) put a block per row first for few, long rows (the
per-channel statistics of an NCHW tensor: 32 channels of 12544 elements) and a warp per row first for many short
rows (2^20 rows of 64) or sizes known only at run time."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.memory import Ranker, load_knowledge
from htam_core.memory.facts import compute_facts
from htam_core.source.analysis import analyze
from htam_core.source.analysis.row_launch import few_long_rows, row_launches
from htam_core.source.api import parse_text

FILE = Path(__file__).resolve().parents[1] / "fixtures" / "transforms" / "block_row.cu"


def _model(text: str | None = None):
    return parse_text(text if text is not None else FILE.read_text(encoding="utf-8"), "cuda", str(FILE))


def _order(kernel: str, text: str | None = None) -> list[str]:
    model = _model(text)
    k = model.kernel(kernel)
    ranked = Ranker(load_knowledge()).rank({}, [], k.features, k.language, None, top=64, kernel=k, model=model)
    return [r.strategy for r in ranked if r.strategy in ("block_per_row", "warp_per_row")]


def test_the_launch_sizes_are_read_from_the_host_constants() -> None:
    model = _model()
    k = model.kernel("channel_moments")
    (r,) = row_launches(analyze(model, k), [p.name for p in k.params])
    assert (r.rows, r.length) == (32, 16 * 28 * 28)
    short = model.kernel("short_rows")
    (s,) = row_launches(analyze(model, short), [p.name for p in short.params])
    assert (s.rows, s.length) == (1 << 20, 64)


@pytest.mark.parametrize(("kernel", "expected"), [("channel_moments", True), ("short_rows", False),
                                                  ("row_total", None)])
def test_few_long_rows(kernel: str, expected: bool | None) -> None:
    model = _model()
    k = model.kernel(kernel)
    assert few_long_rows(analyze(model, k), [p.name for p in k.params]) is expected
    assert compute_facts(k.features, k.language, None, k, model)["few_long_rows"] is expected
    assert compute_facts(k.features, k.language, None, k)["few_long_rows"] is None  # no file, no launch


def test_few_long_rows_rank_a_block_per_row_first() -> None:
    assert _order("channel_moments") == ["block_per_row", "warp_per_row"]


@pytest.mark.parametrize("kernel", ["short_rows", "row_total"])
def test_many_short_rows_or_unknown_sizes_rank_a_warp_per_row_first(kernel: str) -> None:
    assert _order(kernel) == ["warp_per_row", "block_per_row"]


def test_many_channels_rank_a_warp_per_row_first() -> None:
    text = FILE.read_text(encoding="utf-8").replace("const int N = 16, C = 32", "const int N = 16, C = 4096")
    assert _order("channel_moments", text) == ["warp_per_row", "block_per_row"]


def test_macro_sizes_and_a_ceiling_division_at_the_launch_are_read() -> None:
    path = FILE.parents[1] / "spellings" / "block_per_row" / "macro.cu"
    model = parse_text(path.read_text(encoding="utf-8"), "cuda", str(path))
    k = model.kernel("row_mean_macro")
    (r,) = row_launches(analyze(model, k), [p.name for p in k.params])
    assert (r.rows, r.length) == (32 * 2, 4096)  # CEIL_DIV(ROWS, ROW_THREADS) blocks of ROW_THREADS



STATS = """
__global__ void chan_stats(const float* x, float* mean, int N, int C, int HW) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < C) {
    float s = 0.0f;
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < HW; ++i) s += x[((size_t)n * C + c) * HW + i];
    mean[c] = s / (float)(N * HW);
  }
}
int main() {
  const int N = 32, C = CHANNELS, HW = 3136;
  float *x, *mean;
  cudaMalloc(&x, (size_t)N * C * HW * sizeof(float));
  cudaMalloc(&mean, C * sizeof(float));
  chan_stats<<<(C + 63) / 64, 64>>>(x, mean, N, C, HW);
  return 0;
}
"""


@pytest.mark.parametrize(("channels", "block_size_first"), [("64", False), ("1 << 20", True)])
def test_few_long_rows_rank_the_row_mapping_before_a_bigger_block(channels: str, block_size_first: bool,
                                                                 tmp_path: Path, monkeypatch, capsys) -> None:
    """Regression (a new user's per-channel statistics, 64 channels in one block of 64 threads): "fewer than 4
    warps per block" ranked the block size first, but a bigger block keeps the same 64 threads busy; spreading
    each channel over a block is the step. With many rows the block size keeps its place before it."""
    import json

    from htam_core.cli.main import main

    monkeypatch.setenv("HTAM_MEMORY", str(tmp_path / "memory.sqlite3"))
    src = tmp_path / "stats.cu"
    src.write_text(STATS.replace("CHANNELS", channels), encoding="utf-8")
    assert main(["suggest", str(src), "--kernel", "chan_stats", "--static", "--json", "--top", "30"]) == 0
    ranked = [r["strategy"] for r in json.loads(capsys.readouterr().out)]
    assert (ranked.index("cuda_block_size") < ranked.index("block_per_row")) is block_size_first, ranked
