#include <cuda_runtime.h>
// out[r] = dot(a[r, :], b[r, :]) for B rows of length C; one thread per row.
__global__ void rowpair_dot_kernel(float* out, const float* a, const float* b, int B, int C) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= B) { return; }
    const float* ar = a + (long)r * C;
    const float* br = b + (long)r * C;
    float acc = 0.0f;
    for (int c = 0; c < C; c++) {
        acc += ar[c] * br[c];
    }
    out[r] = acc;
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
    rowpair_dot_kernel<<<(B + block_size - 1) / block_size, block_size>>>(out, a, b, B, C);
    cudaDeviceSynchronize();
    return 0;
}
