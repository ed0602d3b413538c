#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;

#define CUDA_CHECK(call)                                                          \
    do {                                                                          \
        cudaError_t err_ = (call);                                                \
        if (err_ != cudaSuccess) {                                                \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

// One warp per row: lanes stride the row (coalesced), online max/sum, cg::reduce to combine.
__global__ void xent_fwd(const float* __restrict__ logits, const int* __restrict__ target, float* __restrict__ loss,
                         int B, int V) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int r = blockIdx.x * (blockDim.x / 32) + warp.meta_group_rank();
    if (r >= B) return;
    const float* row = logits + (size_t)r * V;
    float m = -INFINITY, s = 0.f;
    for (int c = warp.thread_rank(); c < V; c += 32) {
        float v = row[c];
        float nm = fmaxf(m, v);
        s = s * expf(m - nm) + expf(v - nm);
        m = nm;
    }
    float gm = cg::reduce(warp, m, cg::greater<float>());
    s *= expf(m - gm);
    float gs = cg::reduce(warp, s, cg::plus<float>());
    if (warp.thread_rank() == 0) loss[r] = logf(gs) + gm - row[target[r]];
}

int main() {
    const int B = 8192, V = 1024;
    std::vector<float> h((size_t)B * V), out(B);
    std::vector<int> t(B);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 31) % 997) * 0.01f;
    for (int r = 0; r < B; ++r) t[r] = (r * 13) % V;
    float *logits, *loss;
    int* target;
    CUDA_CHECK(cudaMalloc(&logits, h.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&target, B * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&loss, B * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(logits, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(target, t.data(), B * sizeof(int), cudaMemcpyHostToDevice));
    dim3 block(256);
    dim3 grid((B + 7) / 8);
    xent_fwd<<<grid, block>>>(logits, target, loss, B, V);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(out.data(), loss, B * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(logits));
    CUDA_CHECK(cudaFree(target));
    CUDA_CHECK(cudaFree(loss));
    return 0;
}
