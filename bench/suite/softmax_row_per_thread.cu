// softmax_row_per_thread.cu -- numerically stable softmax over the last dimension of [rows, cols]
// (naive-kernel suite, softmax). Kernel copied from the dev corpus
// (tests/fixtures/corpus/softmax_row_per_thread.cu): every thread owns a whole row and makes three passes.
#include <cfloat>
#include <cuda_runtime.h>

__global__ void softmax_row_per_thread(const float *__restrict__ x,
                                       float *__restrict__ y,
                                       int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;

    const float *xr = x + (size_t)row * cols;
    float *yr = y + (size_t)row * cols;

    float m = -FLT_MAX;
    for (int j = 0; j < cols; ++j)
        m = fmaxf(m, xr[j]);

    float denom = 0.0f;
    for (int j = 0; j < cols; ++j)
        denom += expf(xr[j] - m);

    const float inv = 1.0f / denom;
    for (int j = 0; j < cols; ++j)
        yr[j] = expf(xr[j] - m) * inv;
}

extern "C" void launch_softmax(const float *d_x, float *d_y, int rows, int cols)
{
    const int threads = 128;
    const int blocks = (rows + threads - 1) / threads;
    softmax_row_per_thread<<<blocks, threads>>>(d_x, d_y, rows, cols);
}
