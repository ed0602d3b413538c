"""The hover's "Last steps" are the steps applied to the file: the candidates an ``htam optimize`` run tried on
copies of the kernel (recorded under its tried id) are shown apart, and the ranking is not conditioned on them."""

from __future__ import annotations

from htam_core.memory import Outcome, open_store
from htam_core.memory.fingerprint import kernel_fingerprint, tried_fingerprint
from tests.lsp.support import hover_until, open_file, pos_of, start
from tests.memory.test_memory_ranker import STATE

SCALE = """__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
int main() {
    const int n = 1 << 20; float *x, *y;
    cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4);
    scale<<<(n + 255) / 256, 256>>>(x, y, n);
    return 0;
}
"""


async def test_optimize_candidates_are_not_the_files_last_steps(client, tmp_path):
    path = tmp_path / "scale.cu"
    path.write_text(SCALE)
    tried = tried_fingerprint(kernel_fingerprint(path, "scale"))
    with open_store(tmp_path / "memory.sqlite3") as store:  # what `htam optimize` (no --apply) left behind
        store.record([], STATE, "cuda_block_size", Outcome(None, True, False, "neutral"), tried, "static")
        store.record(["cuda_block_size"], STATE, "vectorize_loads", Outcome(None, True, False, "neutral"), tried,
                     "static")
    await start(client, tmp_path)
    uri = open_file(client, path)
    md = await hover_until(client, uri, pos_of(SCALE, "scale(", offset=2), "**Tried by htam optimize, not applied**")
    assert "**Last steps**" not in md, md
    assert "retune the block size" in md.partition("**Tried by htam optimize")[2]
    assert "after retune" not in md  # the ranking's evidence is not conditioned on a step the file does not have
