"""The stencil tile (``cuda.stencil_smem_tile``) on 3-D stencils (:mod:`htam_core.transforms.cuda_stencil3d`): a
7-point Jacobi in the macro-heavy style of a user's kernel (sizes and the index as ``#define`` s), one with runtime
sizes, and a 27-point box in window loops are offered, made, accepted by ``nvcc -arch=sm_90 -c``, and run on the CPU
(:func:`cpu_emulation.run_block_main`, a host thread per CUDA thread of a 3-D block) under AddressSanitizer on grids
that are not multiples of the block along any axis: the outputs equal the original's bit for bit and no load of the
tile reads outside the input.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import only_candidate

from htam_core.memory.facts import compute_facts
from htam_core.source import parse_text
from htam_core.transforms import registry
from tests.support.nvcc_check import assert_compiles

ID = "cuda.stencil_smem_tile"

#: the macro-heavy 7-point heat step: sizes, block and the index as macros, interior points only
MACRO_7 = """#include <cstddef>
#define NX 21
#define NY 10
#define NZ 7
#define IDX(x, y, z) (((size_t)(z) * NY + (y)) * NX + (x))
#define BX 8
#define BY 4
#define BZ 2

__global__ void heat7(const float* in, float* out, float c0, float c1) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x > 0 && x < NX - 1 && y > 0 && y < NY - 1 && z > 0 && z < NZ - 1) {
    out[IDX(x, y, z)] = c0 * in[IDX(x, y, z)] +
                        c1 * (in[IDX(x - 1, y, z)] + in[IDX(x + 1, y, z)] +
                              in[IDX(x, y - 1, z)] + in[IDX(x, y + 1, z)] +
                              in[IDX(x, y, z - 1)] + in[IDX(x, y, z + 1)]);
  }
}
void launch(const float* in, float* out) {
  dim3 block(BX, BY, BZ);
  dim3 grid((NX + BX - 1) / BX, (NY + BY - 1) / BY, (NZ + BZ - 1) / BZ);
  heat7<<<grid, block>>>(in, out, 0.4f, 0.1f);
}
"""

#: runtime sizes, an early return, a plane-size local
RUNTIME_7 = """__global__ void jacobi3d(const float *u, float *v, int nx, int ny, int nz) {
    const int i = blockIdx.x * 16 + threadIdx.x, j = blockIdx.y * 4 + threadIdx.y, k = blockIdx.z * 2 + threadIdx.z;
    if (i < 1 || j < 1 || k < 1 || i >= nx - 1 || j >= ny - 1 || k >= nz - 1) return;
    const int c = (k * ny + j) * nx + i;
    v[c] = (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] + u[c - nx * ny] + u[c + nx * ny]) / 6.0f;
}
void launch(const float *u, float *v, int nx, int ny, int nz) {
    jacobi3d<<<dim3((nx + 15) / 16, (ny + 3) / 4, (nz + 1) / 2), dim3(16, 4, 2)>>>(u, v, nx, ny, nz);
}
"""

#: a 27-point box in three window loops, out-of-range taps skipped
BOX_27 = """__global__ void box27(const float *in, float *out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz) return;
    float s = 0.0f;
    for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                if (x + dx < 0 || y + dy < 0 || z + dz < 0 || x + dx >= nx || y + dy >= ny || z + dz >= nz) continue;
                s += in[((z + dz) * ny + y + dy) * nx + x + dx];
            }
    out[(z * ny + y) * nx + x] = s;
}
void launch(const float *in, float *out, int nx, int ny, int nz) {
    box27<<<dim3((nx + 7) / 8, (ny + 3) / 4, (nz + 3) / 4), dim3(8, 4, 4)>>>(in, out, nx, ny, nz);
}
"""

#: name -> (text, kernel, call, block, sizes)
KERNELS = {
    "macro_7": (MACRO_7, "heat7", "heat7(in, out.data(), 0.4f, 0.1f)", (8, 4, 2), (21, 10, 7)),
    "runtime_7": (RUNTIME_7, "jacobi3d", "jacobi3d(in, out.data(), NX_, NY_, NZ_)", (16, 4, 2), (37, 9, 5)),
    "box_27": (BOX_27, "box27", "box27(in, out.data(), NX_, NY_, NZ_)", (8, 4, 4), (19, 6, 7)),
}

MAIN = """
int main() {
    const int NX_ = SX, NY_ = SY, NZ_ = SZ, n = SX * SY * SZ;
    float *in = new float[n];  // exactly n elements: a read past either end aborts under AddressSanitizer
    std::vector<float> out(n, -1.0f);
    for (int i = 0; i < n; ++i) in[i] = (float)((i * 7) % 13) - 6.0f;
    htam_launch3((SX + BX - 1) / BX, (SY + BY - 1) / BY, (SZ + BZ - 1) / BZ, BX, BY, [&] { CALL; }, BZ);
    for (float v : out) std::printf("%.9g\\n", v);
    delete[] in;
    return 0;
}
"""


def _run(text: str, name: str, tmp) -> list[float]:
    _, kernel, call, block, size = KERNELS[name]
    main = MAIN
    for key, v in (("SX", size[0]), ("SY", size[1]), ("SZ", size[2]), ("BX", block[0]), ("BY", block[1]),
                   ("BZ", block[2]), ("CALL", call)):
        main = main.replace(key, str(v))
    prelude = "\n".join(ln for ln in text.splitlines() if ln.startswith("#")) + "\n"
    return run_block_main(text, kernel, main, tmp, prelude=prelude, flags=("-fsanitize=address",))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_3d_tile_is_offered_and_reads_every_neighbour_from_it(name):
    text, kernel, _, block, _ = KERNELS[name]
    model = parse_text(text, "cuda")
    k = model.kernel(kernel)
    assert compute_facts(k.features, "cuda", None, k, model)["stencil_window"] is True
    c = only_candidate(ID, text, kernel)
    assert "htam_tile[threadIdx.z" in c.new_text and "__syncthreads()" in c.new_text
    assert "in[IDX" not in c.new_text and "u[c" not in c.new_text and "in[((z" not in c.new_text


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_3d_tile_keeps_each_output_and_reads_nothing_out_of_range(name, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text, kernel, _, _, size = KERNELS[name]
    c = only_candidate(ID, text, kernel)
    want = _run(text, name, tmp_path)
    got = _run(c.new_text, name, tmp_path)
    assert len(got) == size[0] * size[1] * size[2] and got == want


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_3d_tile_compiles(name, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    text, kernel, _, _, _ = KERNELS[name]
    assert_compiles(only_candidate(ID, text, kernel).new_text, tmp=tmp_path, name="k.cu")


def test_an_unguarded_3d_halo_load_is_caught(tmp_path):
    """The check can fail: the tile loaded without its guard reads before the input's first element."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    text, kernel = KERNELS["runtime_7"][:2]
    c = only_candidate(ID, text, kernel)
    broken = c.new_text.replace("        if (", "        if (true || ", 1)
    assert broken != c.new_text
    with pytest.raises(subprocess.CalledProcessError):
        _run(broken, "runtime_7", tmp_path)


def test_a_3d_block_known_at_run_time_is_refused_in_one_line():
    text = RUNTIME_7.replace("dim3(16, 4, 2)>>>", "dim3(b, 4, 2)>>>").replace("int nz) {\n    jacobi3d",
                                                                             "int nz, int b = 16) {\n    jacobi3d")
    model = parse_text(text, "cuda")
    got = registry.propose(ID, model, model.kernel("jacobi3d"))
    assert not isinstance(got, list) and "one constant 3-D block" in got.reason and "\n" not in got.reason
