#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

#define TPB 256

// Same result per block of 2*TPB elements: two elements counted during the load, sequential tree down to 32,
// then the last warp finishes with cg::reduce over a tiled_partition<32>.
__global__ void count_above(const float* __restrict__ x, unsigned int* partial, float thr, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    __shared__ unsigned int s[TPB];
    unsigned int t = block.thread_rank();
    unsigned int i = blockIdx.x * (2 * TPB) + t;
    unsigned int c = 0;
    if (i < n && x[i] > thr) ++c;
    if (i + TPB < n && x[i + TPB] > thr) ++c;
    s[t] = c;
    block.sync();
    for (unsigned int stride = TPB / 2; stride >= 32; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        block.sync();
    }
    if (t < 32) {
        unsigned int v = cg::reduce(warp, s[t] , cg::plus<unsigned int>());
        if (warp.thread_rank() == 0) partial[blockIdx.x] = v;
    }
}

int main() {
    const int n = 1 << 24;
    const int blocks = (n + 2 * TPB - 1) / (2 * TPB);
    std::vector<float> hx(n);
    for (int i = 0; i < n; ++i) hx[i] = (float)((i * 7919) % 1000) / 1000.0f;
    float* x;
    unsigned int* partial;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&partial, blocks * sizeof(unsigned int));
    cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    count_above<<<blocks, TPB>>>(x, partial, 0.75f, n);
    std::vector<unsigned int> hp(blocks);
    cudaMemcpy(hp.data(), partial, blocks * sizeof(unsigned int), cudaMemcpyDeviceToHost);
    unsigned long long total = 0;
    for (int b = 0; b < blocks; ++b) total += hp[b];
    printf("count = %llu\n", total);
    cudaFree(x);
    cudaFree(partial);
    return 0;
}
