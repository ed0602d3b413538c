"""The shared-memory tiling runs k bodies other than ``acc += A[...] * B[...]``: pairwise distances (squared,
L1, Euclidean with 64-bit indices and an early return), a max-plus product and a sum of exponentials, whose only
global reads are A at (row, k) and B at (column, k). Each body runs as written on the tiles, its inner loop
bounded by K: a padded tile element is 0, neutral for a product but not for ``expf`` nor for a max of negative
sums. The plain product keeps its text (no bound).

Numerics: the original and the rewrite run on the CPU, one host thread per CUDA thread
(:func:`cpu_emulation.run_block_main`), with K = 29 (not a multiple of the tile) on integer-valued inputs, in
the same k order, so the outputs must be equal; the same rewrite without the K bound must differ for the bodies
a padded 0 changes.
"""

from __future__ import annotations

import re
import shutil

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, facts_of_text, fixture_path

FILE = "pair_distance_variants.cu"
SMEM, REG = "cuda.smem_tiling_matmul", "cuda.register_tile_matmul"
GENERAL = ("sqdist", "l1dist", "eucdist_sz", "maxplus", "expdot", "l1dist_f64")
#: The bodies a padded 0 changes (with the main's inputs): exp(0) = 1 is added, 0 beats negative sums.
PAD_SENSITIVE = ("maxplus", "expdot")


def _kernel_text(text: str, kernel: str) -> str:
    body = text[text.index(f"__global__ void {kernel}"):]
    return body[: body.index("\n}\n")]


@pytest.mark.parametrize("kernel", GENERAL)
def test_a_general_k_body_is_tiled_and_bounded_by_k(cand, kernel):
    (c,) = cand(SMEM, FILE, kernel)
    body = _kernel_text(c.new_text, kernel)
    assert "htam_As[16][16];" in body and body.count("__syncthreads();") == 2
    loop = re.search(r"for \(int (\w+) = 0; \1 < 16 && htam_k0 \+ \1 < (\w+); \+\+\1\)", body)
    assert loop is not None, body
    k = loop.group(1)
    assert f"htam_As[threadIdx.y][{k}]" in body and f"htam_Bs[{k}][threadIdx.x]" in body
    inner = body[loop.end():]
    inner = inner[: inner.index("__syncthreads();")]
    assert not re.search(r"\b[PQAB]\[", inner), inner  # the loads read the tiles, not global memory


def test_the_trial_pair_gets_both_tiles_and_the_column_on_x(cand):
    cs = cand(SMEM, "sqdist_pair.cu", "sqdist")
    assert [c.params["tile"] for c in cs] == [16, 32]
    for c in cs:
        body = _kernel_text(c.new_text, "sqdist")
        assert "int j = blockIdx.x * " in body and "+ threadIdx.x;" in body.split("int j =")[1].split("\n")[0]
        assert "float diff = htam_As[threadIdx.y][k] - htam_Bs[k][threadIdx.x];" in body


def test_a_body_written_b_first_keeps_its_output_column_on_x(cand):
    (c,) = cand(SMEM, FILE, "l1dist")
    body = _kernel_text(c.new_text, "l1dist")
    assert "int col = blockIdx.x * 16 + threadIdx.x;" in body  # the store D[row * n + col] stays coalesced
    assert "fabsf(htam_Bs[t][threadIdx.x] - htam_As[threadIdx.y][t])" in body


def test_the_tiles_take_the_operands_type_not_the_accumulators(cand):
    (c,) = cand(SMEM, FILE, "l1dist_f64")
    body = _kernel_text(c.new_text, "l1dist_f64")
    assert "__shared__ float htam_As[16][16];" in body and "__shared__ float htam_Bs[16][16 + 1];" in body
    assert "double acc = 0.0;" in body


def test_the_plain_product_keeps_its_unbounded_inner_loop(cand):
    c = cand(SMEM, "matmul_variants.cu", "matmul_rowy")[0]
    body = _kernel_text(c.new_text, "matmul_rowy")
    assert "htam_k0 + " in body and "&& htam_k0 +" not in body
    assert re.search(r"for \(int (\w+) = 0; \1 < 16; \+\+\1\)\n\s+\w+ \+= htam_As", body), body


@pytest.mark.parametrize(("kernel", "why"), [
    ("dist_writes", "the k loop writes `T[i * d + k]`, not a local or an accumulator"),
    ("dist_weighted", "the k loop body reads k outside its two loads"),
])
def test_bodies_the_tiles_cannot_run_are_refused_in_one_line(refuse, kernel, why):
    assert why in refuse(SMEM, FILE, kernel)


@pytest.mark.parametrize("kernel", GENERAL)
def test_the_register_tile_refuses_a_general_body(refuse, kernel):
    assert "the register tile only sums products" in refuse(REG, FILE, kernel)


def test_a_max_plus_product_is_matmul_like_and_a_row_max_is_not():
    text = fixture_path(FILE).read_text()
    assert facts_of_text(text, "maxplus").matmul_loops()
    row_max = """__global__ void rowmax(const float *x, float *y, int n, int m) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) { float b = -INFINITY; for (int k = 0; k < m; ++k) b = fmaxf(b, x[r * m + k]); y[r] = b; }
}
"""
    assert not facts_of_text(row_max, "rowmax").matmul_loops()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize(("file", "kernel"), [*((FILE, k) for k in GENERAL), ("sqdist_pair.cu", "sqdist")])
def test_the_rewrites_compile_with_nvcc(cand, file, kernel, tmp_path):
    for i, c in enumerate(cand(SMEM, file, kernel)):
        assert_nvcc_compiles(c.new_text, tmp_path, f"{kernel}{i}.cu")


_MAIN = """
int main() {
    const int m = 37, n = 45, d = 29;
    std::vector<float> P((size_t)m * d), Q((size_t)n * d), D((size_t)m * n, 1e30f);
    for (int i = 0; i < m * d; ++i) P[i] = ((float)((i * 7) % 13) - 6.0f) * SCALE + SHIFT;
    for (int i = 0; i < n * d; ++i) Q[i] = ((float)((i * 5) % 11) - 5.0f) * SCALE + SHIFT;
    htam_launch2((n + TILE - 1) / TILE, (m + TILE - 1) / TILE, TILE, TILE, [&] { KERNEL(P.data(), Q.data(), D.data(), m, n, d); });
    for (float v : D) std::printf("%.9g\\n", v);
    return 0;
}
"""


def _run(text: str, kernel: str, tile: int, tmp_path, tag: str) -> list[float]:
    """``kernel`` of ``text`` on the CPU over a ``tile x tile`` block grid covering the 37 x 45 outputs."""
    scale, shift = {"maxplus": ("1.0f", "-20.0f"), "expdot": ("0.25f", "0.0f")}.get(kernel, ("1.0f", "0.0f"))
    main = _MAIN.replace("KERNEL", kernel).replace("SCALE", scale).replace("SHIFT", shift).replace("TILE", str(tile))
    d = tmp_path / tag
    d.mkdir()
    return run_block_main(text, kernel, main, d, prelude="#include <cmath>\n")


@pytest.mark.skipif(compiler() is None, reason="needs a host C++ compiler")
@pytest.mark.parametrize(("file", "kernel"), [*((FILE, k) for k in GENERAL), ("sqdist_pair.cu", "sqdist")])
def test_the_rewrites_compute_the_original_outputs_on_the_cpu(cand, file, kernel, tmp_path):
    want = _run(fixture_path(file).read_text(), kernel, 16, tmp_path, "o")
    assert len(want) == 37 * 45 and 1e30 not in want
    for c in cand(SMEM, file, kernel):
        tile = c.params["tile"]
        assert _run(c.new_text, kernel, tile, tmp_path, f"n{tile}") == want
        if kernel in PAD_SENSITIVE:  # without the bound, the padded zeros of the last tile enter the body
            unbounded = re.sub(r" && htam_k0 \+ \w+ < \w+", "", c.new_text)
            assert unbounded != c.new_text
            assert _run(unbounded, kernel, tile, tmp_path, f"u{tile}") != want
