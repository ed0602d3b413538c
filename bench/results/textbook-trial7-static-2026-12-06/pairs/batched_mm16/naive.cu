#include <cuda_runtime.h>
#include <cstdio>
#define CUDA_CHECK(x) if ((x) != cudaSuccess) { printf("cuda error line %d\n", __LINE__); return 1; }
#define N 64

// C[b] = A[b] * B[b], each N x N row-major.
__global__ void batched_mm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int batch) {
    int b = blockIdx.z;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch || row >= N || col >= N) return;
    const float* a = A + (size_t)b * N * N;
    const float* bm = B + (size_t)b * N * N;
    float acc = 0.0f;
    for (int k = 0; k < N; ++k) acc += a[row * N + k] * bm[k * N + col];
    C[(size_t)b * N * N + row * N + col] = acc;
}

int main() {
    int batch = 4096;
    size_t bytes = (size_t)batch * N * N * sizeof(float);
    float *A, *B, *C;
    CUDA_CHECK(cudaMalloc(&A, bytes));
    CUDA_CHECK(cudaMalloc(&B, bytes));
    CUDA_CHECK(cudaMalloc(&C, bytes));
    CUDA_CHECK(cudaMemset(A, 0, bytes));
    CUDA_CHECK(cudaMemset(B, 0, bytes));
    dim3 block(16, 16);
    dim3 grid(N / 16, N / 16, batch);
    batched_mm<<<grid, block>>>(A, B, C, batch);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(A)); CUDA_CHECK(cudaFree(B)); CUDA_CHECK(cudaFree(C));
    return 0;
}
