#include <cuda_runtime.h>
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s\n", cudaGetErrorString(e_)); return 1; } } while (0)
#define T 32

// out[b][c][r] = in[b][r][c] for a [B][R][C] tensor.
__global__ void permute021(const float* __restrict__ in, float* __restrict__ out, int R, int C) {
    int c = blockIdx.x * T + threadIdx.x;
    int r = blockIdx.y * T + threadIdx.y;
    size_t b = blockIdx.z;
    if (r < R && c < C) out[b * R * C + (size_t)c * R + r] = in[b * R * C + (size_t)r * C + c];
}

void permute(const float* in, float* out, int B, int R, int C) {
    dim3 block(T, T);
    dim3 grid((C + T - 1) / T, (R + T - 1) / T, B);
    permute021<<<grid, block>>>(in, out, R, C);
}

int main() {
    int B = 16, R = 2048, C = 1024;
    size_t bytes = (size_t)B * R * C * sizeof(float);
    float *in, *out;
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMalloc(&out, bytes));
    CHECK(cudaMemset(in, 0, bytes));
    permute(in, out, B, R, C);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(in)); CHECK(cudaFree(out));
    return 0;
}
