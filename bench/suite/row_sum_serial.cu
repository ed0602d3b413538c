// row_sum_serial.cu -- sum of every row of a [rows, cols] matrix (naive-kernel suite, row reduction).
// Written for the suite as a user's first version: one thread walks a whole row, so neighbouring threads
// read addresses `cols` floats apart (uncoalesced) and only `rows` threads exist.
#include <cuda_runtime.h>

__global__ void row_sum_serial(const float *x, float *out, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float acc = 0.0f;
        for (int j = 0; j < cols; ++j)
            acc += x[(size_t)row * cols + j];
        out[row] = acc;
    }
}

extern "C" void launch_row_sum(const float *x, float *out, int rows, int cols)
{
    const int threads = 256;
    row_sum_serial<<<(rows + threads - 1) / threads, threads>>>(x, out, rows, cols);
}
