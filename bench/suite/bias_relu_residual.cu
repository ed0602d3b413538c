// bias_relu_residual.cu -- out = relu(x + bias[col]) * scale + residual over [rows, cols]
// (naive-kernel suite, fused chain). Written for the suite as a user's first version: the chain is fused in
// one kernel, but blocks have 64 threads and nothing is vectorized.
#include <cuda_runtime.h>

__global__ void bias_relu_residual(float *out, const float *x, const float *bias, const float *residual,
                                   float scale, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        float v = x[i] + bias[i % cols];
        out[i] = fmaxf(v, 0.0f) * scale + residual[i];
    }
}

extern "C" void launch_bias_relu_residual(float *out, const float *x, const float *bias, const float *residual,
                                          float scale, int rows, int cols)
{
    int n = rows * cols;
    bias_relu_residual<<<(n + 63) / 64, 64>>>(out, x, bias, residual, scale, rows, cols);
}
