#include <cuda_runtime.h>
// One 4-byte uchar4 load per pixel instead of three byte loads.
__global__ void rgba_to_gray(const unsigned char* __restrict__ rgba, unsigned char* __restrict__ gray, unsigned int npix)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < npix) {
        uchar4 p = reinterpret_cast<const uchar4*>(rgba)[i];
        gray[i] = (unsigned char)(0.299f * p.x + 0.587f * p.y + 0.114f * p.z);
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
