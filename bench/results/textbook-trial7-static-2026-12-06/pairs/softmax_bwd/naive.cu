#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#define CHECK(call) do { cudaError_t err = (call); if (err != cudaSuccess) { fprintf(stderr, "CUDA error %s\n", cudaGetErrorString(err)); exit(EXIT_FAILURE); } } while (0)

// dx = y * (dy - sum_j(dy_j * y_j)) per row; one thread per row.
__global__ void softmax_bwd(const float* __restrict__ y, const float* __restrict__ dy, float* __restrict__ dx,
                            int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* yr = y + (size_t)r * cols;
    const float* dyr = dy + (size_t)r * cols;
    float dot = 0.0f;
    for (int c = 0; c < cols; ++c) dot += yr[c] * dyr[c];
    for (int c = 0; c < cols; ++c) dx[(size_t)r * cols + c] = yr[c] * (dyr[c] - dot);
}

static void run_softmax_bwd(const float* y, const float* dy, float* dx, int rows, int cols) {
    int threads = 128;
    softmax_bwd<<<(rows + threads - 1) / threads, threads>>>(y, dy, dx, rows, cols);
    CHECK(cudaGetLastError());
}

int main() {
    int rows = 16384, cols = 1024;
    size_t bytes = (size_t)rows * cols * sizeof(float);
    float *y, *dy, *dx;
    CHECK(cudaMalloc(&y, bytes));
    CHECK(cudaMalloc(&dy, bytes));
    CHECK(cudaMalloc(&dx, bytes));
    CHECK(cudaMemset(y, 0, bytes));
    CHECK(cudaMemset(dy, 0, bytes));
    run_softmax_bwd(y, dy, dx, rows, cols);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(y)); CHECK(cudaFree(dy)); CHECK(cudaFree(dx));
    return 0;
}
