#include <cuda_runtime.h>
#include <cstdint>

// transpose + narrow: double matrix to float, scaled by 2
__global__ void transpose_to_float(const double* src, float* dst, int64_t rows, int64_t cols) {
    int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t r = blockIdx.y * (int64_t)blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        double v = src[r * cols + c];
        dst[c * rows + r] = static_cast<float>(2 * v);
    }
}

int main() {
    int64_t rows = 2048, cols = 4096;
    double* s; float* d;
    cudaMalloc(&s, sizeof(double) * rows * cols);
    cudaMalloc(&d, sizeof(float) * rows * cols);
    transpose_to_float<<<dim3(cols / 32, rows / 32), dim3(32, 32)>>>(s, d, rows, cols);
    cudaDeviceSynchronize();
    return 0;
}
