#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include <vector>

// One warp per query row: lanes stride the row (coalesced); one pass keeps a running max and a rescaled sum
// (online softmax), the 32 partial (max, sum) pairs are merged with shuffles, then the row is written.
__global__ void causal_softmax(const float* __restrict__ S, float* __restrict__ P, int T, float scale) {
    int lane = threadIdx.x & 31;
    int q = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (q >= T) return;
    const float* s = S + (int64_t)q * T;
    float* p = P + (int64_t)q * T;
    float m = -INFINITY, sum = 0.0f;
    for (int k = lane; k <= q; k += 32) {
        float v = scale * s[k];
        float nm = fmaxf(m, v);
        sum = sum * expf(m - nm) + expf(v - nm);
        m = nm;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float om = __shfl_xor_sync(0xffffffffu, m, o);
        float os = __shfl_xor_sync(0xffffffffu, sum, o);
        float nm = fmaxf(m, om);
        sum = (nm == -INFINITY) ? 0.0f : sum * expf(m - nm) + os * expf(om - nm);
        m = nm;
    }
    float inv = 1.0f / sum;
    for (int k = lane; k < T; k += 32) p[k] = (k <= q) ? expf(scale * s[k] - m) * inv : 0.0f;
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
    constexpr int threads = 256;
    causal_softmax<<<(T + threads / 32 - 1) / (threads / 32), threads>>>(S, P, T, 0.125f);
    cudaMemcpy(hp.data(), P, total * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(S);
    cudaFree(P);
    return 0;
}
