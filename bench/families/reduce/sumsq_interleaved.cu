// sumsq_interleaved.cu -- sum of squares of an fp32 vector (squared L2 norm): each block reduces its slice
// in shared memory with the textbook interleaved tree, then one atomicAdd per block.
#include <cuda_runtime.h>

#define BLOCK 256

__global__ void sumsq_interleaved(float *out, const float *x, int n)
{
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? x[i] : 0.0f;
    sdata[tid] = v * v;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, sdata[0]);
}

extern "C" void launch_sumsq(float *out, const float *x, int n)
{
    cudaMemset(out, 0, sizeof(float));
    sumsq_interleaved<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(out, x, n);
}
