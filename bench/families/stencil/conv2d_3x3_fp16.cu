// conv2d_3x3_fp16.cu -- single-channel 3x3 convolution ("same" size, zero padding) of an fp16 image with
// fp32 weights and accumulation, one thread per output pixel, 16 x 16 blocks.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void conv2d_3x3_fp16(__half *out, const __half *img, const float *k3, int H, int W)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < W && y < H) {
        float acc = 0.0f;
        for (int dy = 0; dy < 3; dy++) {
            for (int dx = 0; dx < 3; dx++) {
                int yy = y + dy - 1;
                int xx = x + dx - 1;
                if (yy >= 0 && yy < H && xx >= 0 && xx < W)
                    acc += k3[dy * 3 + dx] * __half2float(img[yy * W + xx]);
            }
        }
        out[y * W + x] = __float2half(acc);
    }
}

extern "C" void launch_conv2d_3x3_fp16(__half *out, const __half *img, const float *k3, int H, int W)
{
    dim3 block(16, 16);
    dim3 grid((W + 15) / 16, (H + 15) / 16);
    conv2d_3x3_fp16<<<grid, block>>>(out, img, k3, H, W);
}
