#include <cuda_runtime.h>
#include <cstdio>
#define CUDA_CHECK(x) if ((x) != cudaSuccess) { printf("cuda error line %d\n", __LINE__); return 1; }
#define N 64
#define TS 16

// C[b] = A[b] * B[b], each N x N row-major; shared-memory tiles of TS x TS.
__global__ void batched_mm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int batch) {
    __shared__ float As[TS][TS];
    __shared__ float Bs[TS][TS + 1];
    int b = blockIdx.z;
    int row = blockIdx.y * TS + threadIdx.y;
    int col = blockIdx.x * TS + threadIdx.x;
    if (b >= batch) return;
    const float* a = A + (size_t)b * N * N;
    const float* bm = B + (size_t)b * N * N;
    float acc = 0.0f;
    for (int t = 0; t < N; t += TS) {
        As[threadIdx.y][threadIdx.x] = a[row * N + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = bm[(t + threadIdx.y) * N + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TS; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
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
    dim3 block(TS, TS);
    dim3 grid(N / TS, N / TS, batch);
    batched_mm<<<grid, block>>>(A, B, C, batch);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(A)); CUDA_CHECK(cudaFree(B)); CUDA_CHECK(cudaFree(C));
    return 0;
}
