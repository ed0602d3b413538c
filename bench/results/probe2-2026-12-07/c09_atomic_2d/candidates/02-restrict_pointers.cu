// Brightness total of an image over a 2-D grid, one atomicAdd per pixel.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void image_total(const float* __restrict__ img, int width, int height, float* total) {
    float htam_acc = 0;  // this thread's part of total (one atomicAdd per block at the end)
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        htam_acc += static_cast<float>(img[y * width + x]);
    }
    {  // one atomicAdd per block: the threads' values combined in the block first
        __shared__ float htam_part[32];  // one value per warp (a block has at most 32 warps)
        const unsigned htam_t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x, htam_nt = blockDim.x * blockDim.y * blockDim.z;
        const unsigned htam_lane = htam_t % 32u, htam_warp = htam_t / 32u;
        const unsigned htam_left = htam_nt - htam_warp * 32u;
        const unsigned htam_width = htam_left < 32u ? htam_left : 32u;  // this warp's threads (the last may be partial)
        const unsigned htam_mask = htam_width == 32u ? 0xffffffffu : (1u << htam_width) - 1u;
        for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
            const float htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
            if (htam_lane + htam_o < htam_width) htam_acc += htam_y;
        }
        if (htam_lane == 0) htam_part[htam_warp] = htam_acc;
        __syncthreads();
        if (htam_warp == 0) {
            htam_acc = htam_lane < (htam_nt + 31u) / 32u ? htam_part[htam_lane] : 0;
            for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
                const float htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
                if (htam_lane + htam_o < htam_width) htam_acc += htam_y;
            }
            if (htam_lane == 0) atomicAdd(total, htam_acc);
        }
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
