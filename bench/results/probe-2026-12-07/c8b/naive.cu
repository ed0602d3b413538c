#include "rowsum_kernels.cuh"

int main() {
    int rows = 2048, cols = 1000;
    float *m, *o;
    cudaMalloc(&m, sizeof(float) * rows * cols);
    cudaMalloc(&o, sizeof(float) * rows);
    ops::rowsum<float><<<(rows + 127) / 128, 128>>>(m, o, rows, cols);
    cudaDeviceSynchronize();
    return 0;
}
