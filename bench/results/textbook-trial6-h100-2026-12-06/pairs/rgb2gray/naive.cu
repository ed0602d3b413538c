#include <cuda_runtime.h>
// RGBA8 (interleaved bytes) -> 8-bit gray, one thread per pixel.
__global__ void rgba_to_gray(const unsigned char* rgba, unsigned char* gray, unsigned int npix)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < npix) {
        float r = rgba[4 * i + 0];
        float g = rgba[4 * i + 1];
        float b = rgba[4 * i + 2];
        gray[i] = (unsigned char)(0.299f * r + 0.587f * g + 0.114f * b);
    }
}

int main(int argc, char** argv)
{
    unsigned int npix = 4096u * 4096u;
    unsigned char *d_rgba, *d_gray;
    cudaMalloc((void**)&d_rgba, 4 * (size_t)npix);
    cudaMalloc((void**)&d_gray, npix);
    cudaMemset(d_rgba, 100, 4 * (size_t)npix);
    unsigned int threads = 256;
    unsigned int blocks = (npix + threads - 1) / threads;
    rgba_to_gray<<<blocks, threads>>>(d_rgba, d_gray, npix);
    cudaDeviceSynchronize();
    cudaFree(d_rgba); cudaFree(d_gray);
    return 0;
}
