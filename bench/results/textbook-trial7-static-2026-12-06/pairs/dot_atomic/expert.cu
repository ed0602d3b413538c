#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s\n", cudaGetErrorString(e_)); return 1; } } while (0)
namespace cg = cooperative_groups;

// *result += sum_i a[i] * b[i]; warp reductions, then one atomicAdd per block.
__global__ void dot_atomic(const float* __restrict__ a, const float* __restrict__ b, float* result, size_t n) {
    __shared__ float partial[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? a[i] * b[i] : 0.0f;
    v = cg::reduce(warp, v, cg::plus<float>());
    if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = v;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        float w = (warp.thread_rank() < warp.meta_group_size()) ? partial[warp.thread_rank()] : 0.0f;
        w = cg::reduce(warp, w, cg::plus<float>());
        if (warp.thread_rank() == 0) atomicAdd(result, w);
    }
}

int main() {
    size_t n = (size_t)1 << 24;
    float *a, *b, *r;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&b, n * sizeof(float)));
    CHECK(cudaMalloc(&r, sizeof(float)));
    CHECK(cudaMemset(a, 0, n * sizeof(float)));
    CHECK(cudaMemset(b, 0, n * sizeof(float)));
    CHECK(cudaMemset(r, 0, sizeof(float)));
    dot_atomic<<<(unsigned)((n + 255) / 256), 256>>>(a, b, r, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(r));
    return 0;
}
