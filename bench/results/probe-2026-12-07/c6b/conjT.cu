#include <cuda_runtime.h>

// Hermitian transpose of an M x N complex matrix (float2 = re, im)
__global__ void conj_transpose(const float2* __restrict__ A, float2* __restrict__ AH, int M, int N) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < M && j < N) {
        const float2 v = A[i * N + j];
        AH[j * M + i] = make_float2(v.x, -v.y);
    }
}

int main() {
    const int M = 1024, N = 768;
    float2 *A, *B;
    cudaMalloc(&A, sizeof(float2) * M * N);
    cudaMalloc(&B, sizeof(float2) * M * N);
    conj_transpose<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(A, B, M, N);
    cudaDeviceSynchronize();
    return 0;
}
