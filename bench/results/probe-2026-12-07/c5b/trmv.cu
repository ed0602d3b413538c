#include <cuda_runtime.h>

namespace la {
// y = L x for a dense lower-triangular L (row-major n x n), one thread per row
__global__ void trmv_lower(const double* L, const double* x, double* y, int n) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    double s = 0.0;
    for (int k = 0; k <= row; k++)
        s += L[row * n + k] * x[k];
    y[row] = s;
}
}

int main() {
    const int n = 4096;
    double *L, *x, *y;
    cudaMalloc(&L, sizeof(double) * n * n);
    cudaMalloc(&x, sizeof(double) * n);
    cudaMalloc(&y, sizeof(double) * n);
    la::trmv_lower<<<(n + 255) / 256, 256>>>(L, x, y, n);
    cudaDeviceSynchronize();
    return 0;
}
