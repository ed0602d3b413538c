#include "include/softplus_naive.cuh"

int main() {
    const int n = 1 << 20;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    softplus<<<(n + 255) / 256, 256>>>(x, y, n);
    cudaDeviceSynchronize();
    return 0;
}
