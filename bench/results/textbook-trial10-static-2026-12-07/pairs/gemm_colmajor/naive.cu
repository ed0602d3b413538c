#include <cuda_runtime.h>
#include <vector>

// Column-major (BLAS) storage: element (r, c) of a matrix with leading dimension ld.
#define IDX(r, c, ld) ((c) * (ld) + (r))

// C = alpha * A * B + beta * C, A is M x K, B is K x N, C is M x N, all column-major.
// threadIdx.x runs down a column of C, so neighbouring threads touch neighbouring rows (contiguous here).
__global__ void gemm_cm(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < M && c < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[IDX(r, k, M)] * B[IDX(k, c, K)];
        C[IDX(r, c, M)] = alpha * acc + beta * C[IDX(r, c, M)];
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
    dim3 block(16, 16);
    dim3 grid((M + 15) / 16, (N + 15) / 16);
    gemm_cm<<<grid, block>>>(M, N, K, 1.5f, A, B, 0.5f, C);
    cudaMemcpy(hC.data(), C, hC.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(A);
    cudaFree(B);
    cudaFree(C);
    return 0;
}
