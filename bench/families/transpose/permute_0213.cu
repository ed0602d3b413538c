// permute_0213.cu -- (B, T, H, D) -> (B, H, T, D) in fp32 (splitting attention heads), one thread per
// element with the index decomposed by division and modulo, 256-thread blocks.
#include <cuda_runtime.h>

__global__ void permute_0213(float *out, const float *inp, int B, int T, int H, int D)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * T * H * D) {
        int b = idx / (T * H * D);
        int rest = idx % (T * H * D);
        int t = rest / (H * D);
        rest = rest % (H * D);
        int h = rest / D;
        int d = rest % D;
        out[((b * H + h) * T + t) * D + d] = inp[idx];
    }
}

extern "C" void launch_permute_0213(float *out, const float *inp, int B, int T, int H, int D)
{
    int total = B * T * H * D;
    permute_0213<<<(total + 255) / 256, 256>>>(out, inp, B, T, H, D);
}
