// Each thread walks one row and adds every element of it into one global total.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void rows_total(const float* m, int rows, int cols, float* total) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        for (int c = 0; c < cols; ++c) atomicAdd(total, m[r * cols + c]);
    }
}

int main() {
    const int rows = 10000, cols = 64;
    float* h = (float*)malloc(rows * cols * sizeof(float));
    for (int i = 0; i < rows * cols; ++i) h[i] = 0.25f;
    float *dm, *dt;
    cudaMalloc(&dm, rows * cols * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(dm, h, rows * cols * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    rows_total<<<(rows + 127) / 128, 128>>>(dm, rows, cols, dt);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("total = %f\n", r);
    cudaFree(dm); cudaFree(dt); free(h);
    return 0;
}
