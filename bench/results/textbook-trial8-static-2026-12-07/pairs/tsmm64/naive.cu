#include <cuda_runtime.h>
#include <vector>
#define K 64
#define NC 64

// C[M x 64] = A[M x 64] * Bm[64 x 64], all row-major; one thread per output element, operands from global memory.
__global__ void tsmm64(const float* A, const float* Bm, float* C, int M) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int row = idx / NC, col = idx % NC;
    if (row >= M) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * Bm[k * NC + col];
    C[row * NC + col] = acc;
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
    tsmm64<<<(M * NC + 255) / 256, 256>>>(A, Bm, C, M);
    cudaDeviceSynchronize();
    cudaFree(A);
    cudaFree(Bm);
    cudaFree(C);
    return 0;
}
