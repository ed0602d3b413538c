#include <cuda_runtime.h>
#include <cstdint>
// B = diag(d) * A; x on columns (coalesced), one d[i] per row of the block.
__global__ void row_scale(const float* __restrict__ A, const float* __restrict__ d, float* __restrict__ B, int64_t M, int64_t N)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;   // column
    int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;   // row
    if (i < M && j < N)
        B[i * N + j] = __ldg(&d[i]) * A[i * N + j];
}

int main()
{
    const int64_t M = 4096, N = 8192;
    float *A, *d, *B;
    cudaMalloc(&A, M * N * sizeof(float));
    cudaMalloc(&B, M * N * sizeof(float));
    cudaMalloc(&d, M * sizeof(float));
    cudaMemset(A, 0, M * N * sizeof(float));
    cudaMemset(d, 0, M * sizeof(float));
    dim3 threads(64, 4);
    dim3 blocks((unsigned)((N + 63) / 64), (unsigned)((M + 3) / 4));
    row_scale<<<blocks, threads>>>(A, d, B, M, N);
    cudaDeviceSynchronize();
    return 0;
}
