// stencil1d_r3.cu -- 7-point 1-D stencil (radius 3) with weights w[0..6], fp32, zero outside the array,
// one thread per output reading its seven neighbours straight from global memory.
#include <cuda_runtime.h>

#define RADIUS 3

__global__ void stencil1d_r3(float *out, const float *in, const float *w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float acc = 0.0f;
        for (int k = -RADIUS; k <= RADIUS; k++) {
            int j = i + k;
            if (j >= 0 && j < n)
                acc += w[k + RADIUS] * in[j];
        }
        out[i] = acc;
    }
}

extern "C" void launch_stencil1d_r3(float *out, const float *in, const float *w, int n)
{
    stencil1d_r3<<<(n + 127) / 128, 128>>>(out, in, w, n);
}
