#include <cuda_runtime.h>
#include <cmath>
#include <vector>

namespace ops {
namespace rows {

// out[r] = max over c of x[r][c]; one warp per row, coalesced lane-strided reads, shuffle max.
__global__ void row_max(const float* __restrict__ x, float* __restrict__ out, int nrows, int ncols) {
    int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (r >= nrows) return;
    float m = -INFINITY;
    for (int c = lane; c < ncols; c += 32) m = fmaxf(m, x[(size_t)r * ncols + c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) out[r] = m;
}

}  // namespace rows
}  // namespace ops

int main() {
    const int nrows = 16384, ncols = 1024;
    std::vector<float> h((size_t)nrows * ncols);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 7) % 1001);
    float *x, *out;
    cudaMalloc(&x, h.size() * sizeof(float));
    cudaMalloc(&out, nrows * sizeof(float));
    cudaMemcpy(x, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
    ops::rows::row_max<<<(nrows * 32 + 255) / 256, 256>>>(x, out, nrows, ncols);
    cudaDeviceSynchronize();
    cudaFree(x);
    cudaFree(out);
    return 0;
}
