#include <cstdio>
#include <vector>

// Gram matrix G = A A^T: A is n x k row-major, G is n x n. One thread per G[i][j].
__global__ void gram(const float* A, float* G, int n, int k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        float acc = 0.f;
        for (int p = 0; p < k; ++p) acc += A[i * k + p] * A[j * k + p];
        G[i * n + j] = acc;
    }
}

// The code base launches every kernel through a small functor holding the configuration.
struct GramLauncher {
    dim3 block;
    void operator()(const float* A, float* G, int n, int k) const {
        dim3 grid((n + block.x - 1) / block.x, (n + block.y - 1) / block.y);
        gram<<<grid, block>>>(A, G, n, k);
    }
};

int main() {
    const int n = 2048, k = 512;
    std::vector<float> hA((size_t)n * k), hG((size_t)n * n);
    for (size_t i = 0; i < hA.size(); ++i) hA[i] = (float)((i * 31) % 17) / 17.f - 0.5f;
    float *A, *G;
    cudaMalloc(&A, hA.size() * sizeof(float));
    cudaMalloc(&G, hG.size() * sizeof(float));
    cudaMemcpy(A, hA.data(), hA.size() * sizeof(float), cudaMemcpyHostToDevice);
    GramLauncher launch{dim3(16, 16)};
    launch(A, G, n, k);
    cudaMemcpy(hG.data(), G, hG.size() * sizeof(float), cudaMemcpyDeviceToHost);
    double sum = 0;
    for (size_t i = 0; i < hG.size(); i += 3) sum += hG[i];
    printf("checksum = %.4f\n", sum);
    cudaFree(A);
    cudaFree(G);
    return 0;
}
