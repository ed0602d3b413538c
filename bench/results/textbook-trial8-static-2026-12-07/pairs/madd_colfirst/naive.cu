#include <cuda_runtime.h>
#include <cstdio>

// c = a + b for rows x cols row-major matrices; x walks rows (neighbouring threads are a row apart).
__global__ void madd(const float* a, const float* b, float* c, int rows, int cols) {
    int r = threadIdx.x + blockIdx.x * blockDim.x;
    int col = threadIdx.y + blockIdx.y * blockDim.y;
    if (r < rows && col < cols) {
        c[r * cols + col] = a[r * cols + col] + b[r * cols + col];
    }
}

void launch_madd(const float* a, const float* b, float* c, int rows, int cols, cudaStream_t stream) {
    dim3 block(32, 8);
    dim3 grid((rows + 31) / 32, (cols + 7) / 8);
    madd<<<grid, block, 0, stream>>>(a, b, c, rows, cols);
}

__global__ void fill(float* p, int n, float s) {
    for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x) p[i] = s * (i % 13);
}

int main() {
    const int rows = 4096, cols = 4096;
    size_t bytes = (size_t)rows * cols * sizeof(float);
    float *a, *b, *c;
    cudaMalloc(&a, bytes);
    cudaMalloc(&b, bytes);
    cudaMalloc(&c, bytes);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    fill<<<256, 256, 0, stream>>>(a, rows * cols, 0.5f);
    fill<<<256, 256, 0, stream>>>(b, rows * cols, 0.25f);
    launch_madd(a, b, c, rows, cols, stream);
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return 0;
}
