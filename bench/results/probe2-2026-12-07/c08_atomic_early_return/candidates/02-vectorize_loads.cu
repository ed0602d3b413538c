// Sum of absolute values with a guarded early return before the atomic.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// htam: cap a 1-D grid at per_sm blocks per SM (grid-stride kernels cover any n with any grid)
static inline unsigned int htam_sm_grid(long long blocks, int per_sm)
{
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const long long cap = (long long)(sms > 0 ? sms : 1) * per_sm;
    return (unsigned int)(blocks < cap ? blocks : cap);
}

__global__ void abs_sum(const float* in, float* total, int n) {
    float htam_acc = 0;  // this thread's part of total (one atomicAdd per block at the end)
    {
        int htam_tail = 0;
        if (((reinterpret_cast<unsigned long long>(in + (0))) & 15ull) == 0ull) {
            const int htam_n4 = (n) / 4;
            for (int htam_v4 = blockIdx.x * blockDim.x + threadIdx.x; htam_v4 < htam_n4; htam_v4 += (int)blockDim.x * gridDim.x) {
                float4 htam_q04 = reinterpret_cast<const float4 *>(in + (0))[htam_v4];
                { float htam_q0 = htam_q04.x; { float v = fabsf(htam_q0); htam_acc += static_cast<float>(v); }  }
                { float htam_q0 = htam_q04.y; { float v = fabsf(htam_q0); htam_acc += static_cast<float>(v); }  }
                { float htam_q0 = htam_q04.z; { float v = fabsf(htam_q0); htam_acc += static_cast<float>(v); }  }
                { float htam_q0 = htam_q04.w; { float v = fabsf(htam_q0); htam_acc += static_cast<float>(v); }  }
            }
            htam_tail = htam_n4 * 4;
        }
        for (int i = htam_tail + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int)blockDim.x * gridDim.x)
            {
                float v = fabsf(in[i]);
                htam_acc += static_cast<float>(v);
            }
    }
    {  // one atomicAdd per block: the threads' values combined in the block first
        __shared__ float htam_part[32];  // one value per warp (a block has at most 32 warps)
        const unsigned htam_t = threadIdx.x, htam_nt = blockDim.x;
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
    const int n = 777777;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)((i % 21) - 10) * 0.25f;
    float *d, *dt;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    dim3 block(256);
    dim3 grid((n + block.x - 1) / block.x);
    abs_sum<<<dim3(htam_sm_grid(grid.x, 8), grid.y, grid.z), block>>>(d, dt, n);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("abs sum = %f\n", r);
    cudaFree(d); cudaFree(dt); free(h);
    return 0;
}
