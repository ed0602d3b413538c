#include <cuda_runtime.h>
#include <vector>

enum { BLOCK = 256, PER_THREAD = 8 };

// Each thread first sums PER_THREAD elements (strided by BLOCK, coalesced), the block then reduces with
// sequential addressing down to 32 values and one warp finishes with __shfl_down_sync.
__global__ void l1_dist(const float* __restrict__ a, const float* __restrict__ b, float* out, int n) {
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int base = blockIdx.x * BLOCK * PER_THREAD + t;
    float v = 0.0f;
    for (int j = 0; j < PER_THREAD; ++j) {
        int i = base + j * BLOCK;
        if (i < n) v += fabsf(a[i] - b[i]);
    }
    buf[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s >= 32; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t < 32) {
        v = buf[t];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (t == 0) atomicAdd(out, v);
    }
}

int main() {
    const int n = 1 << 24;
    std::vector<float> ha(n), hb(n);
    for (int i = 0; i < n; ++i) {
        ha[i] = (float)(i % 101) * 0.01f;
        hb[i] = (float)(i % 53) * 0.02f;
    }
    float *a, *b, *out;
    float result = 0.0f;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&out, sizeof(float));
    cudaMemcpy(a, ha.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(out, 0, sizeof(float));
    int per_block = BLOCK * PER_THREAD;
    l1_dist<<<(n + per_block - 1) / per_block, BLOCK>>>(a, b, out, n);
    cudaMemcpy(&result, out, sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(a);
    cudaFree(b);
    cudaFree(out);
    return 0;
}
