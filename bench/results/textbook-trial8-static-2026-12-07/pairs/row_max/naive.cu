#include <cuda_runtime.h>
#include <cmath>
#include <vector>

namespace ops {
namespace rows {

// out[r] = max over c of x[r][c] (row-major rows x cols); one thread walks a whole row.
__global__ void row_max(const float* __restrict__ x, float* __restrict__ out, int nrows, int ncols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nrows) return;
    float m = -INFINITY;
    for (int c = 0; c < ncols; ++c) m = fmaxf(m, x[(size_t)r * ncols + c]);
    out[r] = m;
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
    ops::rows::row_max<<<(nrows + 127) / 128, 128>>>(x, out, nrows, ncols);
    cudaDeviceSynchronize();
    cudaFree(x);
    cudaFree(out);
    return 0;
}
