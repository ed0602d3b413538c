#include <cuda_runtime.h>
#include "binarize_expert.cuh"

void binarize(const float* img, uint8_t* mask, int H, int W, float thr, cudaStream_t stream) {
    dim3 block(32, 8);
    dim3 grid((W + block.x - 1) / block.x, (H + block.y - 1) / block.y);
    binarize_kernel<<<grid, block, 0, stream>>>(img, mask, H, W, thr);
}
