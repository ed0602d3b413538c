#include <cuda_runtime.h>
#include <vector>

// A[i][j] = x[i] * y[j] (M x N, row-major). threadIdx.x runs over i: neighbouring threads write a column.
__global__ void outer_prod(const float* x, const float* y, float* A, int M, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < M && j < N) A[(size_t)i * N + j] = x[i] * y[j];
}

int main() {
    const int M = 4096, N = 4096;
    std::vector<float> hx(M), hy(N), hA((size_t)M * N);
    for (int i = 0; i < M; ++i) hx[i] = (float)(i % 13) * 0.5f;
    for (int j = 0; j < N; ++j) hy[j] = (float)(j % 29) - 14.f;
    float *x, *y, *A;
    cudaMalloc(&x, M * sizeof(float));
    cudaMalloc(&y, N * sizeof(float));
    cudaMalloc(&A, (size_t)M * N * sizeof(float));
    cudaMemcpy(x, hx.data(), M * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(y, hy.data(), N * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(16, 16);
    dim3 grid((M + 15) / 16, (N + 15) / 16);
    outer_prod<<<grid, block>>>(x, y, A, M, N);
    cudaMemcpy(hA.data(), A, hA.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(x);
    cudaFree(y);
    cudaFree(A);
    return 0;
}
