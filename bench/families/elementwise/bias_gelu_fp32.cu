// bias_gelu_fp32.cu -- y = gelu_tanh(x + bias[col]) over a rows x cols fp32 matrix, one thread per element.
// Written the plain way: a 1-D grid of 128-thread blocks, an if-guard, tanhf and a division in the math.
#include <cuda_runtime.h>

__global__ void bias_gelu_fp32(float *y, const float *x, const float *bias, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n = rows * cols;
    if (i < n) {
        float v = x[i] + bias[i % cols];
        float inner = 0.7978845608f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}

extern "C" void launch_bias_gelu_fp32(float *y, const float *x, const float *bias, int rows, int cols)
{
    int n = rows * cols;
    int threads = 128;
    int blocks = (n + threads - 1) / threads;
    bias_gelu_fp32<<<blocks, threads>>>(y, x, bias, rows, cols);
}
