// Brightness total of an image over a 2-D grid, one atomicAdd per pixel.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void image_total(const float* img, int width, int height, float* total) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        atomicAdd(total, img[y * width + x]);
    }
}

int main() {
    const int w = 1920, h = 1080;
    float* hi = (float*)malloc(w * h * sizeof(float));
    for (int i = 0; i < w * h; ++i) hi[i] = (float)(i % 256) / 255.0f;
    float *d, *dt;
    cudaMalloc(&d, w * h * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(d, hi, w * h * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    dim3 block(16, 16);
    dim3 grid((w + block.x - 1) / block.x, (h + block.y - 1) / block.y);
    image_total<<<grid, block>>>(d, w, h, dt);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("total = %f\n", r);
    cudaFree(d); cudaFree(dt); free(hi);
    return 0;
}
