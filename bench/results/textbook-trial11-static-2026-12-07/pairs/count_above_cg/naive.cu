#include <cooperative_groups.h>
#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

#define TPB 256

// partial[b] = number of x[i] > thr in block b's TPB elements; interleaved tree through a cg::thread_block.
__global__ void count_above(const float* x, unsigned int* partial, float thr, int n) {
    cg::thread_block block = cg::this_thread_block();
    __shared__ unsigned int s[TPB];
    unsigned int t = block.thread_rank();
    unsigned int i = blockIdx.x * TPB + t;
    s[t] = (i < n && x[i] > thr) ? 1u : 0u;
    block.sync();
    for (unsigned int stride = 1; stride < TPB; stride *= 2) {
        if (t % (2 * stride) == 0) s[t] += s[t + stride];
        block.sync();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}

int main() {
    const int n = 1 << 24;
    const int blocks = (n + TPB - 1) / TPB;
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
