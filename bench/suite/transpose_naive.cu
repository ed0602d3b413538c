// transpose_naive.cu -- out-of-place fp32 matrix transpose (naive-kernel suite, transpose).
// Kernel copied from the dev corpus (tests/fixtures/corpus/transpose_naive.cu); the timing main() is
// replaced by an extern "C" launcher that the harness calls (bench/suite/htam.toml).
//   in  : rows x cols (row-major)
//   out : cols x rows (row-major)
// Reads are coalesced; writes have a stride of `rows` floats.
#include <cuda_runtime.h>

constexpr int TILE = 32;

__global__ void transpose_naive(float *out, const float *in, int rows, int cols)
{
    int x = blockIdx.x * TILE + threadIdx.x;   // column in `in`
    int y = blockIdx.y * TILE + threadIdx.y;   // row in `in`
    if (x < cols && y < rows)
        out[x * rows + y] = in[y * cols + x];
}

extern "C" void launch_transpose(float *out, const float *in, int rows, int cols)
{
    dim3 threads(TILE, TILE);
    dim3 blocks((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_naive<<<blocks, threads>>>(out, in, rows, cols);
}
