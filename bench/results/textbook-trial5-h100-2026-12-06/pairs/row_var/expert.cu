// Per-row variance, one warp per row with Welford's update per lane and a shuffle merge of (count, mean, M2).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void row_variance(float* out, const float* inp, int N, int C) {
    int idx = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (idx >= N) return;
    const float* x = inp + (size_t)idx * C;
    float n = 0.f, mean = 0.f, m2 = 0.f;
    for (int i = lane; i < C; i += 32) {
        float v = x[i];
        n += 1.f;
        float d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
    }
    for (int off = 16; off > 0; off >>= 1) {
        float n_b = __shfl_down_sync(0xffffffff, n, off);
        float mean_b = __shfl_down_sync(0xffffffff, mean, off);
        float m2_b = __shfl_down_sync(0xffffffff, m2, off);
        float nt = n + n_b;
        if (nt > 0.f) {
            float d = mean_b - mean;
            mean += d * n_b / nt;
            m2 += m2_b + d * d * n * n_b / nt;
            n = nt;
        }
    }
    if (lane == 0) out[idx] = m2 / C;
}

int main() {
    int N = 8 * 4096, C = 1024;
    float *inp, *out;
    cudaMalloc(&inp, (size_t)N * C * sizeof(float));
    cudaMalloc(&out, N * sizeof(float));
    cudaMemset(inp, 0, (size_t)N * C * sizeof(float));
    int block_size = 256;
    row_variance<<<(N * 32 + block_size - 1) / block_size, block_size>>>(out, inp, N, C);
    cudaDeviceSynchronize();
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
