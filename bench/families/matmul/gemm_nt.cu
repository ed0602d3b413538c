// gemm_nt.cu -- C = A @ B^T in fp32 with B stored N x K (the "NT" layout of attention scores and of
// nn.Linear weights), one thread per output, 16 x 16 blocks.
#include <cuda_runtime.h>

__global__ void gemm_nt(float *C, const float *A, const float *B, int M, int N, int K)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M && j < N) {
        float s = 0.0f;
        for (int k = 0; k < K; k++)
            s += A[i * K + k] * B[j * K + k];
        C[i * N + j] = s;
    }
}

extern "C" void launch_gemm_nt(float *C, const float *A, const float *B, int M, int N, int K)
{
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    gemm_nt<<<grid, block>>>(C, A, B, M, N, K);
}
