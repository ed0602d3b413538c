// axpy_tiny_block.cu -- out = alpha * x + y (naive-kernel suite, elementwise).
// Written for the suite as a user's first version: one element per thread and 32-thread blocks, so the
// SMs run out of resident blocks long before they run out of bandwidth.
#include <cuda_runtime.h>

__global__ void axpy_tiny_block(float *out, const float *x, const float *y, float alpha, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = alpha * x[i] + y[i];
}

extern "C" void launch_axpy(float *out, const float *x, const float *y, float alpha, int n)
{
    axpy_tiny_block<<<(n + 31) / 32, 32>>>(out, x, y, alpha, n);
}
