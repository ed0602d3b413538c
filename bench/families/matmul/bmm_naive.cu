// bmm_naive.cu -- batched C[b] = A[b] @ B[b] in fp32, the batch on blockIdx.z, one thread per output.
#include <cuda_runtime.h>

__global__ void bmm_naive(float *C, const float *A, const float *B, int batch, int M, int N, int K)
{
    int b = blockIdx.z;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        const float *a = A + (long)b * M * K;
        const float *bb = B + (long)b * K * N;
        float acc = 0.0f;
        for (int k = 0; k < K; k++)
            acc += a[row * K + k] * bb[k * N + col];
        C[(long)b * M * N + row * N + col] = acc;
    }
}

extern "C" void launch_bmm(float *C, const float *A, const float *B, int batch, int M, int N, int K)
{
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16, batch);
    bmm_naive<<<grid, block>>>(C, A, B, batch, M, N, K);
}
