#include <cuda_runtime.h>

// one thread per row: squared L2 norm of each row
__global__ void row_sq_norm(const float* __restrict__ m, float* __restrict__ out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const int last = cols - 1;
        float acc = 0.0f;
        for (int k = 0; k <= last; ++k) {
            float v = m[(size_t)r * cols + k];
            acc += v * v;
        }
        out[r] = acc;
    }
}

int main() {
    int rows = 8192, cols = 1024;
    float *m, *o;
    cudaMalloc(&m, sizeof(float) * rows * cols);
    cudaMalloc(&o, sizeof(float) * rows);
    row_sq_norm<<<(rows + 127) / 128, 128>>>(m, o, rows, cols);
    cudaDeviceSynchronize();
    return 0;
}
