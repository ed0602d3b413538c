// C = A^T * B. A is K x M and B is K x N, both row-major; C is M x N row-major. Sizes and index macros.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define M_DIM 1024
#define N_DIM 1024
#define K_DIM 2048
#define IDX2R(i, j, ld) (((i) * (ld)) + (j))
#define BLK 16
#define SAFE(call) do { if ((call) != cudaSuccess) { printf("cuda error at %d\n", __LINE__); exit(1); } } while (0)

__global__ void atb_gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;   // row of C = column of A
    int col = blockIdx.x * blockDim.x + threadIdx.x;   // column of C = column of B
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[IDX2R(k, row, M)] * B[IDX2R(k, col, N)];
        C[IDX2R(row, col, N)] = acc;
    }
}

int main() {
    size_t sa = (size_t)K_DIM * M_DIM, sb = (size_t)K_DIM * N_DIM, sc = (size_t)M_DIM * N_DIM;
    float* hA = (float*)malloc(sa * sizeof(float));
    float* hB = (float*)malloc(sb * sizeof(float));
    float* hC = (float*)malloc(sc * sizeof(float));
    for (size_t i = 0; i < sa; i++) hA[i] = (float)(i % 13) * 0.125f - 0.75f;
    for (size_t i = 0; i < sb; i++) hB[i] = (float)(i % 7) * 0.25f - 0.5f;
    float *dA, *dB, *dC;
    SAFE(cudaMalloc(&dA, sa * sizeof(float)));
    SAFE(cudaMalloc(&dB, sb * sizeof(float)));
    SAFE(cudaMalloc(&dC, sc * sizeof(float)));
    SAFE(cudaMemcpy(dA, hA, sa * sizeof(float), cudaMemcpyHostToDevice));
    SAFE(cudaMemcpy(dB, hB, sb * sizeof(float), cudaMemcpyHostToDevice));
    dim3 block(BLK, BLK);
    dim3 grid((N_DIM + BLK - 1) / BLK, (M_DIM + BLK - 1) / BLK);
    atb_gemm<<<grid, block>>>(dA, dB, dC, M_DIM, N_DIM, K_DIM);
    SAFE(cudaGetLastError());
    SAFE(cudaMemcpy(hC, dC, sc * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (size_t i = 0; i < sc; i++) sum += hC[i] * (double)((i % 3) + 1);
    printf("checksum = %.4f\n", sum);
    SAFE(cudaFree(dA)); SAFE(cudaFree(dB)); SAFE(cudaFree(dC));
    free(hA); free(hB); free(hC);
    return 0;
}
