#include <cuda_runtime.h>
#define THREADS 128

// each thread scales one element by its row's factor
__global__ void scale_by_row(const float* in, const float* rowscale, float* out, int rows, int cols) {
    int idx = blockIdx.x * THREADS + threadIdx.x;
    if (idx < rows * cols) {
        int r = idx / cols;
        out[idx] = in[idx] * rowscale[r];
    } else return;
}

__global__ void clip_inplace(float* v, float lo, float hi, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        v[i] = fminf(fmaxf(v[i], lo), hi);
    } else {}
}

int main() {
    int rows = 1024, cols = 4096, n = rows * cols;
    float *a, *s, *b;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&s, rows * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    scale_by_row<<<(n + THREADS - 1) / THREADS, THREADS>>>(a, s, b, rows, cols);
    clip_inplace<<<(n + 511) / 512, 512>>>(b, -1.f, 1.f, n);
    cudaDeviceSynchronize();
    return 0;
}
