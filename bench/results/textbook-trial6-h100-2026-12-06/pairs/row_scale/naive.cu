#include <cuda_runtime.h>
#include <cstdint>
// B = diag(d) * A, A row-major M x N.
__global__ void row_scale(const float* A, const float* d, float* B, int64_t M, int64_t N)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;   // row
    int64_t j = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;   // column
    if (i < M && j < N)
        B[i * N + j] = d[i] * A[i * N + j];
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
    dim3 threads(16, 16);
    dim3 blocks((unsigned)((M + 15) / 16), (unsigned)((N + 15) / 16));
    row_scale<<<blocks, threads>>>(A, d, B, M, N);
    cudaDeviceSynchronize();
    return 0;
}
