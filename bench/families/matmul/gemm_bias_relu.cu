// gemm_bias_relu.cu -- Y = relu(X @ W + b) in fp32 (a linear layer with its epilogue fused), one thread per
// output, threadIdx.x along the output columns, 32 x 8 blocks.
#include <cuda_runtime.h>

__global__ void gemm_bias_relu(float *Y, const float *X, const float *W, const float *b, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) {
            sum += X[row * K + k] * W[k * N + col];
        }
        Y[row * N + col] = fmaxf(sum + b[col], 0.0f);
    }
}

extern "C" void launch_gemm_bias_relu(float *Y, const float *X, const float *W, const float *b, int M, int N,
                                      int K)
{
    dim3 threads(32, 8);
    dim3 blocks((N + 31) / 32, (M + 7) / 8);
    gemm_bias_relu<<<blocks, threads>>>(Y, X, W, b, M, N, K);
}
