#include <cuda_runtime.h>
#include <vector>
#define K 64
#define NC 64
#define ROWS 16

// C = A * Bm for M x 64 by 64 x 64: Bm and a 16-row tile of A in shared memory, 4 outputs per thread.
__global__ void tsmm64(const float* A, const float* Bm, float* C, int M) {
    __shared__ float sb[K][NC];
    __shared__ float sa[ROWS][K + 1];
    int t = threadIdx.x;
    int row0 = blockIdx.x * ROWS;
    for (int i = t; i < K * NC; i += blockDim.x) sb[i / NC][i % NC] = Bm[i];
    for (int i = t; i < ROWS * K; i += blockDim.x) {
        int r = row0 + i / K;
        sa[i / K][i % K] = r < M ? A[(size_t)r * K + i % K] : 0.f;
    }
    __syncthreads();
    int col = t % NC, rb = t / NC;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k = 0; k < K; ++k) {
        float b = sb[k][col];
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[j] += sa[rb + 4 * j][k] * b;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        int r = row0 + rb + 4 * j;
        if (r < M) C[(size_t)r * NC + col] = acc[j];
    }
}

int main() {
    const int M = 1 << 20;
    std::vector<float> ha((size_t)M * K), hb(K * NC);
    for (size_t i = 0; i < ha.size(); ++i) ha[i] = (float)(i % 9) * 0.1f;
    for (int i = 0; i < K * NC; ++i) hb[i] = (float)(i % 5) * 0.2f;
    float *A, *Bm, *C;
    cudaMalloc(&A, ha.size() * sizeof(float));
    cudaMalloc(&Bm, hb.size() * sizeof(float));
    cudaMalloc(&C, (size_t)M * NC * sizeof(float));
    cudaMemcpy(A, ha.data(), ha.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(Bm, hb.data(), hb.size() * sizeof(float), cudaMemcpyHostToDevice);
    tsmm64<<<(M + ROWS - 1) / ROWS, 256>>>(A, Bm, C, M);
    cudaDeviceSynchronize();
    cudaFree(A);
    cudaFree(Bm);
    cudaFree(C);
    return 0;
}
