// Separable convolution, column pass: dst[y][x] = sum_k c_Kernel[k] * src[y + k - RADIUS][x] (clamped at the edges).
// Written in the style of the CUDA samples; threadIdx.x walks the rows of the image.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define checkCudaErrors(val) check_cuda((val), #val, __FILE__, __LINE__)
static void check_cuda(cudaError_t result, const char* func, const char* file, int line) {
    if (result != cudaSuccess) {
        fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\"\n", file, line, (int)result,
                cudaGetErrorString(result), func);
        exit(EXIT_FAILURE);
    }
}

#define KERNEL_RADIUS 3
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)
__constant__ float c_Kernel[KERNEL_LENGTH];

template <int BLOCK_X, int BLOCK_Y>
__global__ void convolutionColumns(float* d_Dst, const float* d_Src, int imageW, int imageH) {
    const int y = blockIdx.x * BLOCK_X + threadIdx.x;   // row
    const int x = blockIdx.y * BLOCK_Y + threadIdx.y;   // column
    if (x >= imageW || y >= imageH) return;
    float sum = 0.0f;
    for (int k = -KERNEL_RADIUS; k <= KERNEL_RADIUS; k++) {
        int yy = min(max(y + k, 0), imageH - 1);
        sum += c_Kernel[KERNEL_RADIUS - k] * d_Src[yy * imageW + x];
    }
    d_Dst[y * imageW + x] = sum;
}

int main() {
    const int imageW = 3072, imageH = 3072;
    const size_t bytes = (size_t)imageW * imageH * sizeof(float);
    float* h_Src = (float*)malloc(bytes);
    float* h_Dst = (float*)malloc(bytes);
    float h_Kernel[KERNEL_LENGTH];
    for (int i = 0; i < KERNEL_LENGTH; i++) h_Kernel[i] = (float)(i + 1) / 16.0f;
    for (size_t i = 0; i < (size_t)imageW * imageH; i++) h_Src[i] = (float)(i % 251) / 251.0f;
    float *d_Src, *d_Dst;
    checkCudaErrors(cudaMalloc((void**)&d_Src, bytes));
    checkCudaErrors(cudaMalloc((void**)&d_Dst, bytes));
    checkCudaErrors(cudaMemcpyToSymbol(c_Kernel, h_Kernel, sizeof(h_Kernel)));
    checkCudaErrors(cudaMemcpy(d_Src, h_Src, bytes, cudaMemcpyHostToDevice));
    const int BX = 32, BY = 8;
    dim3 threads(BX, BY);
    dim3 grid((imageH + BX - 1) / BX, (imageW + BY - 1) / BY);
    convolutionColumns<BX, BY><<<grid, threads>>>(d_Dst, d_Src, imageW, imageH);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaMemcpy(h_Dst, d_Dst, bytes, cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (size_t i = 0; i < (size_t)imageW * imageH; i++) sum += h_Dst[i] * (double)((i % 7) + 1);
    printf("checksum = %.6f\n", sum);
    checkCudaErrors(cudaFree(d_Src));
    checkCudaErrors(cudaFree(d_Dst));
    free(h_Src);
    free(h_Dst);
    return 0;
}
