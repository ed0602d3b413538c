#include <cuda_runtime.h>
#include <vector>

// threadIdx.x runs over j (coalesced stores), four columns per thread through one float4 store (N % 4 == 0).
__global__ void outer_prod(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ A,
                           int M, int N) {
    int j4 = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || 4 * j4 >= N) return;
    float xi = x[i];
    float4 yv = reinterpret_cast<const float4*>(y)[j4];
    float4 r = make_float4(xi * yv.x, xi * yv.y, xi * yv.z, xi * yv.w);
    reinterpret_cast<float4*>(A + (size_t)i * N)[j4] = r;
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
    dim3 block(64, 4);
    dim3 grid((N / 4 + 63) / 64, (M + 3) / 4);
    outer_prod<<<grid, block>>>(x, y, A, M, N);
    cudaMemcpy(hA.data(), A, hA.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(x);
    cudaFree(y);
    cudaFree(A);
    return 0;
}
