#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <vector>

namespace cg = cooperative_groups;

// Four int8 products per __dp4a (char4 loads, n % 4 == 0), a grid-stride loop, cg::reduce within each warp,
// warp sums in shared memory, one atomic per block.
__global__ void dot_i8(const signed char* __restrict__ a, const signed char* __restrict__ b, int* result, int n) {
    __shared__ int warp_sums[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int* a4 = reinterpret_cast<const int*>(a);
    const int* b4 = reinterpret_cast<const int*>(b);
    int acc = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n / 4; i += blockDim.x * gridDim.x)
        acc = __dp4a(__ldg(a4 + i), __ldg(b4 + i), acc);
    acc = cg::reduce(warp, acc, cg::plus<int>());
    if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = acc;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        int v = warp.thread_rank() < warp.meta_group_size() ? warp_sums[warp.thread_rank()] : 0;
        v = cg::reduce(warp, v, cg::plus<int>());
        if (warp.thread_rank() == 0) atomicAdd(result, v);
    }
}

int main() {
    const int n = 1 << 24;
    std::vector<signed char> ha(n), hb(n);
    for (int i = 0; i < n; ++i) {
        ha[i] = (signed char)((i * 7) % 255 - 127);
        hb[i] = (signed char)((i * 13) % 17 - 8);
    }
    signed char *a, *b;
    int* result;
    int out = 0;
    cudaMalloc(&a, n);
    cudaMalloc(&b, n);
    cudaMalloc(&result, sizeof(int));
    cudaMemcpy(a, ha.data(), n, cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), n, cudaMemcpyHostToDevice);
    cudaMemset(result, 0, sizeof(int));
    dot_i8<<<264, 256>>>(a, b, result, n);
    cudaMemcpy(&out, result, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(a);
    cudaFree(b);
    cudaFree(result);
    return 0;
}
