#include <cuda_runtime.h>

__global__ void transpose_naive(const double* in, double* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        out[c * rows + r] = in[r * cols + c];
    }
}

template <int BX, int BY>
void launch(const double* in, double* out, int rows, int cols, cudaStream_t s) {
    dim3 block(BX, BY);
    dim3 grid((cols + BX - 1) / BX, (rows + BY - 1) / BY);
    transpose_naive<<<grid, block, 0, s>>>(in, out, rows, cols);
}

int main() {
    const int rows = 4096, cols = 2048;
    double *in, *out;
    cudaMalloc(&in, sizeof(double) * rows * cols);
    cudaMalloc(&out, sizeof(double) * rows * cols);
    launch<32, 8>(in, out, rows, cols, 0);
    cudaDeviceSynchronize();
    return 0;
}
