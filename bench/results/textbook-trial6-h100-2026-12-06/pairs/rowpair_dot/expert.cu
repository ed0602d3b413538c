#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
// One warp per row, float4 loads, cooperative-groups reduce.
__global__ void rowpair_dot_kernel(float* out, const float* __restrict__ a, const float* __restrict__ b, int B, int C) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int r = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (r >= B) { return; }
    const float4* ar = reinterpret_cast<const float4*>(a + (long)r * C);
    const float4* br = reinterpret_cast<const float4*>(b + (long)r * C);
    float acc = 0.0f;
    for (int c = warp.thread_rank(); c < C / 4; c += warp.size()) {
        float4 x = ar[c], y = br[c];
        acc += x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
    }
    acc = cg::reduce(warp, acc, cg::plus<float>());
    if (warp.thread_rank() == 0) { out[r] = acc; }
}

__global__ void fill(float* p, long n, float v) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { p[i] = v; }
}

int main() {
    int B = 16384, C = 1024;
    float *a, *b, *out;
    cudaMalloc(&a, (size_t)B * C * sizeof(float));
    cudaMalloc(&b, (size_t)B * C * sizeof(float));
    cudaMalloc(&out, B * sizeof(float));
    long n = (long)B * C;
    fill<<<(n + 511) / 512, 512>>>(a, n, 0.5f);
    fill<<<(n + 511) / 512, 512>>>(b, n, 2.0f);
    int block_size = 128;
    rowpair_dot_kernel<<<(B * 32 + block_size - 1) / block_size, block_size>>>(out, a, b, B, C);
    cudaDeviceSynchronize();
    return 0;
}
