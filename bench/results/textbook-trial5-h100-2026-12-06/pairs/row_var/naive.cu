// Per-row variance (population), llm.c style: one thread per row, two passes over the row.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void row_variance(float* out, const float* inp, int N, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) {
        const float* x = inp + idx * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) { m += x[i]; }
        m = m / C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) { float d = x[i] - m; v += d * d; }
        out[idx] = v / C;
    }
}

int main() {
    int N = 8 * 4096, C = 1024;  // 128 MB
    float *inp, *out;
    cudaMalloc(&inp, (size_t)N * C * sizeof(float));
    cudaMalloc(&out, N * sizeof(float));
    cudaMemset(inp, 0, (size_t)N * C * sizeof(float));
    int block_size = 256;
    row_variance<<<(N + block_size - 1) / block_size, block_size>>>(out, inp, N, C);
    cudaDeviceSynchronize();
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
