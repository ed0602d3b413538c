// reduce_sum_smem.cu -- sum of a large float array (naive-kernel suite, reduction).
// Kernel copied from the dev corpus (tests/fixtures/corpus/reduce_sum_smem.cu): each block reduces
// blockDim.x inputs in shared memory with an interleaved tree; the kernel is re-launched on the partial
// sums until one value is left. The launcher ping-pongs between two halves of `tmp` and never writes `in`.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void block_sum_interleaved(const float *in, float *partial, unsigned int n)
{
    __shared__ float sdata[THREADS];

    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();

    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }

    if (tid == 0)
        partial[blockIdx.x] = sdata[0];
}

// Reduces in[0..n) into out[0]. tmp holds at least n / 32 + 64 floats.
extern "C" void launch_reduce_sum(const float *in, float *out, float *tmp, unsigned int n)
{
    float *bufs[2] = {tmp, tmp + (n + THREADS - 1) / THREADS};
    const float *src = in;
    int w = 0;
    while (n > 1) {
        unsigned int blocks = (n + THREADS - 1) / THREADS;
        float *dst = blocks == 1 ? out : bufs[w];
        block_sum_interleaved<<<blocks, THREADS>>>(src, dst, n);
        src = dst;
        w ^= 1;
        n = blocks;
    }
}
