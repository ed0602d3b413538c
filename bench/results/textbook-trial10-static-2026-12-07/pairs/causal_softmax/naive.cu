#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include <vector>

// Attention probabilities of one head: P[q][k] = softmax_k(scale * S[q][k]) over k <= q (causal), 0 for k > q.
// S and P are T x T row-major. One thread per query row: three passes (max, sum, write).
__global__ void causal_softmax(const float* S, float* P, int T, float scale) {
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q < T) {
        const float* s = S + (int64_t)q * T;
        float* p = P + (int64_t)q * T;
        float m = -INFINITY;
        for (int k = 0; k <= q; ++k) m = fmaxf(m, scale * s[k]);
        float sum = 0.0f;
        for (int k = 0; k <= q; ++k) sum += expf(scale * s[k] - m);
        float inv = 1.0f / sum;
        for (int k = 0; k < T; ++k) p[k] = (k <= q) ? expf(scale * s[k] - m) * inv : 0.0f;
    }
}

int main() {
    constexpr int T = 4096;
    constexpr int64_t total = (int64_t)T * T;
    std::vector<float> hs(total), hp(total);
    for (int64_t i = 0; i < total; ++i) hs[i] = (float)((i * 37) % 211) * 0.05f - 5.0f;
    float *S, *P;
    cudaMalloc(&S, total * sizeof(float));
    cudaMalloc(&P, total * sizeof(float));
    cudaMemcpy(S, hs.data(), total * sizeof(float), cudaMemcpyHostToDevice);
    constexpr int threads = 128;
    causal_softmax<<<(T + threads - 1) / threads, threads>>>(S, P, T, 0.125f);
    cudaMemcpy(hp.data(), P, total * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(S);
    cudaFree(P);
    return 0;
}
