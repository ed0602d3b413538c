#include <cuda_runtime.h>
struct Cfg { enum Sizes { kThreads = 128, kTree = 64 }; };

// one block per row: max of each row, tree over kTree partials
__global__ void row_max(const float* m, float* out, int cols) {
    __shared__ float part[Cfg::kThreads];
    const float* row = m + (size_t)blockIdx.x * cols;
    float best = -3.0e38f;
    for (int c = threadIdx.x; c < cols; c += Cfg::kThreads) best = fmaxf(best, row[c]);
    part[threadIdx.x] = best;
    __syncthreads();
    for (int s = 1; s < Cfg::kThreads; s <<= 1) {
        if (threadIdx.x % (2 * s) == 0) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

int main() {
    int rows = 4096, cols = 3000;
    float *m, *o;
    cudaMalloc(&m, sizeof(float) * rows * cols);
    cudaMalloc(&o, sizeof(float) * rows);
    row_max<<<rows, Cfg::kThreads>>>(m, o, cols);
    cudaDeviceSynchronize();
    return 0;
}
