#include <cuda_runtime.h>
#include <vector>

#define IDX(r, c, ld) ((c) * (ld) + (r))

constexpr int TILE = 32;   // C tile is TILE x TILE
constexpr int RY = 4;      // columns of C per thread (register blocking)

// Shared-memory tiles of A and B (TILE x TILE each), block (32, 8): each thread keeps RY accumulators in registers
// for the columns threadIdx.y, threadIdx.y + 8, ... of the tile. Loads are column-major-coalesced (threadIdx.x = row).
__global__ void gemm_cm(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                        float beta, float* __restrict__ C) {
    __shared__ float As[TILE][TILE + 1];  // As[k][r]
    __shared__ float Bs[TILE][TILE + 1];  // Bs[c][k]
    int tx = threadIdx.x, ty = threadIdx.y;
    int r = blockIdx.x * TILE + tx;
    int c0 = blockIdx.y * TILE;
    float acc[RY] = {0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < K; k0 += TILE) {
        for (int j = ty; j < TILE; j += blockDim.y) {
            int k = k0 + j;
            As[j][tx] = (r < M && k < K) ? A[IDX(r, k, M)] : 0.f;
            int c = c0 + j;
            Bs[j][tx] = (c < N && k0 + tx < K) ? B[IDX(k0 + tx, c, K)] : 0.f;
        }
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            float a = As[kk][tx];
            for (int q = 0; q < RY; ++q) acc[q] += a * Bs[ty + q * 8][kk];
        }
        __syncthreads();
    }
    for (int q = 0; q < RY; ++q) {
        int c = c0 + ty + q * 8;
        if (r < M && c < N) C[IDX(r, c, M)] = alpha * acc[q] + beta * C[IDX(r, c, M)];
    }
}

int main() {
    const int M = 2048, N = 2048, K = 2048;
    std::vector<float> hA((size_t)M * K), hB((size_t)K * N), hC((size_t)M * N);
    for (size_t i = 0; i < hA.size(); ++i) hA[i] = (float)(i % 17) * 0.125f - 1.0f;
    for (size_t i = 0; i < hB.size(); ++i) hB[i] = (float)(i % 23) * 0.0625f - 0.5f;
    for (size_t i = 0; i < hC.size(); ++i) hC[i] = (float)(i % 5);
    float *A, *B, *C;
    cudaMalloc(&A, hA.size() * sizeof(float));
    cudaMalloc(&B, hB.size() * sizeof(float));
    cudaMalloc(&C, hC.size() * sizeof(float));
    cudaMemcpy(A, hA.data(), hA.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(B, hB.data(), hB.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(C, hC.data(), hC.size() * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(TILE, 8);
    dim3 grid((M + TILE - 1) / TILE, (N + TILE - 1) / TILE);
    gemm_cm<<<grid, block>>>(M, N, K, 1.5f, A, B, 0.5f, C);
    cudaMemcpy(hC.data(), C, hC.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(A);
    cudaFree(B);
    cudaFree(C);
    return 0;
}
