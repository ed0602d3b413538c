// sgemm_rowmajor_x.cu -- C = A @ B in fp32, one thread per output element, with the row taken from the x
// dimension (a common first attempt): a warp walks down a column of C and of A.
#include <cuda_runtime.h>

__global__ void sgemm_rowx(float *C, const float *A, const float *B, int M, int N, int K)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; k++)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

extern "C" void launch_sgemm_rowx(float *C, const float *A, const float *B, int M, int N, int K)
{
    dim3 block(16, 16);
    dim3 grid((M + 15) / 16, (N + 15) / 16);
    sgemm_rowx<<<grid, block>>>(C, A, B, M, N, K);
}
