// Segmented row sum: out[r] = sum_c x[r * cols + c], one block per row. Unsigned indices, __restrict__ on every
// pointer and #pragma unroll on the loops; the block tree is interleaved (index = 2 * s * tid).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

template <int BLOCK>
__global__ void row_sum_seg(const float* __restrict__ x, float* __restrict__ out, unsigned rows, unsigned cols) {
    __shared__ float buf[BLOCK];
    const unsigned tid = threadIdx.x;
    const unsigned r = blockIdx.x;
    if (r >= rows) return;
    const float* __restrict__ row = x + (size_t)r * cols;
    float acc = 0.0f;
#pragma unroll 4
    for (unsigned c = tid; c < cols; c += BLOCK) acc += row[c];
    buf[tid] = acc;
    __syncthreads();
#pragma unroll
    for (unsigned s = 1; s < BLOCK; s <<= 1) {
        unsigned index = 2 * s * tid;
        if (index < BLOCK) buf[index] += buf[index + s];
        __syncthreads();
    }
    if (tid == 0) out[r] = buf[0];
}

int main() {
    const unsigned rows = 8192, cols = 3000;
    const size_t n = (size_t)rows * cols;
    float* h = (float*)malloc(n * sizeof(float));
    float* ho = (float*)malloc(rows * sizeof(float));
    for (size_t i = 0; i < n; i++) h[i] = (float)(i % 19) * 0.1f - 0.9f;
    float *dx, *dout;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dout, rows * sizeof(float));
    cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice);
    row_sum_seg<256><<<rows, 256>>>(dx, dout, rows, cols);
    cudaMemcpy(ho, dout, rows * sizeof(float), cudaMemcpyDeviceToHost);
    double sum = 0.0;
    for (unsigned r = 0; r < rows; r++) sum += ho[r] * (double)((r % 9) + 1);
    printf("checksum = %.4f\n", sum);
    cudaFree(dx);
    cudaFree(dout);
    free(h);
    free(ho);
    return 0;
}
