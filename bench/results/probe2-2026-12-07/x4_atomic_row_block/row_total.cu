// One block per row, threads over columns, every element added into one global total.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void matrix_total(const float* m, int ncols, float* total) {
    int row = blockIdx.x;
    int col = threadIdx.x;
    if (col < ncols) atomicAdd(total, m[row * ncols + col]);
}

int main() {
    const int rows = 4096, cols = 200;
    float* h = (float*)malloc(rows * cols * sizeof(float));
    for (int i = 0; i < rows * cols; ++i) h[i] = 0.5f;
    float *dm, *dt;
    cudaMalloc(&dm, rows * cols * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(dm, h, rows * cols * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    matrix_total<<<rows, 256>>>(dm, cols, dt);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("total = %f\n", r);
    cudaFree(dm); cudaFree(dt); free(h);
    return 0;
}
