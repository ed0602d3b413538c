// segment_sum_fp16.cu -- sum of each of `segs` contiguous segments of length `len` of an fp16 array
// (a segmented reduction), one block per segment: a strided accumulation loop, then an interleaved tree.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void segment_sum_fp16(float *out, const __half *x, int segs, int len)
{
    __shared__ float buf[128];
    int seg = blockIdx.x;
    int tid = threadIdx.x;
    float acc = 0.0f;
    for (int j = tid; j < len; j += blockDim.x)
        acc += __half2float(x[seg * len + j]);
    buf[tid] = acc;
    __syncthreads();
    for (int stride = 1; stride < blockDim.x; stride *= 2) {
        if (tid % (2 * stride) == 0)
            buf[tid] += buf[tid + stride];
        __syncthreads();
    }
    if (tid == 0) out[seg] = buf[0];
}

extern "C" void launch_segment_sum_fp16(float *out, const __half *x, int segs, int len)
{
    segment_sum_fp16<<<segs, 128>>>(out, x, segs, len);
}
