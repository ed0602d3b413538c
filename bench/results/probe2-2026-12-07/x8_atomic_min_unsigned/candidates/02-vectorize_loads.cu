// Minimum of unsigned keys with atomicMin on an unsigned total.
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

__global__ void min_key(const unsigned int* keys, int n, unsigned int* out) {
    unsigned int htam_acc = 0xffffffffu;  // this thread's part of out (one atomicMin per block at the end)
    {
        int htam_tail = 0;
        constexpr int htam_V = 16 / sizeof(unsigned int);
        struct alignas(htam_V * sizeof(unsigned int)) htam_q0_t { unsigned int v[htam_V]; };
        if (((reinterpret_cast<unsigned long long>(keys + (0))) & 15ull) == 0ull) {
            const int htam_n4 = (n) / htam_V;
            for (int htam_v4 = blockIdx.x * blockDim.x + threadIdx.x; htam_v4 < htam_n4; htam_v4 += (int)blockDim.x * gridDim.x) {
                htam_q0_t htam_q04 = reinterpret_cast<const htam_q0_t *>(keys + (0))[htam_v4];
                #pragma unroll
                for (int htam_l = 0; htam_l < htam_V; ++htam_l) {
                    unsigned int htam_q0 = htam_q04.v[htam_l]; { const unsigned int htam_v = static_cast<unsigned int>(htam_q0); if (htam_v < htam_acc) htam_acc = htam_v; } 
                }
            }
            htam_tail = htam_n4 * htam_V;
        }
        for (int i = htam_tail + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int)blockDim.x * gridDim.x)
            { const unsigned int htam_v = static_cast<unsigned int>(keys[i]); if (htam_v < htam_acc) htam_acc = htam_v; }
    }
    {  // one atomicMin per block: the threads' values combined in the block first
        __shared__ unsigned int htam_part[32];  // one value per warp (a block has at most 32 warps)
        const unsigned htam_t = threadIdx.x, htam_nt = blockDim.x;
        const unsigned htam_lane = htam_t % 32u, htam_warp = htam_t / 32u;
        const unsigned htam_left = htam_nt - htam_warp * 32u;
        const unsigned htam_width = htam_left < 32u ? htam_left : 32u;  // this warp's threads (the last may be partial)
        const unsigned htam_mask = htam_width == 32u ? 0xffffffffu : (1u << htam_width) - 1u;
        for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
            const unsigned int htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
            if (htam_lane + htam_o < htam_width && htam_y < htam_acc) htam_acc = htam_y;
        }
        if (htam_lane == 0) htam_part[htam_warp] = htam_acc;
        __syncthreads();
        if (htam_warp == 0) {
            htam_acc = htam_lane < (htam_nt + 31u) / 32u ? htam_part[htam_lane] : 0xffffffffu;
            for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
                const unsigned int htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
                if (htam_lane + htam_o < htam_width && htam_y < htam_acc) htam_acc = htam_y;
            }
            if (htam_lane == 0) atomicMin(out, htam_acc);
        }
    }
}

int main() {
    const int n = 1 << 20;
    unsigned int* h = (unsigned int*)malloc(n * sizeof(unsigned int));
    for (int i = 0; i < n; ++i) h[i] = 3000000000u + (unsigned)((i * 7919) % 100000);
    unsigned int *d, *dout;
    cudaMalloc(&d, n * sizeof(unsigned int));
    cudaMalloc(&dout, sizeof(unsigned int));
    cudaMemcpy(d, h, n * sizeof(unsigned int), cudaMemcpyHostToDevice);
    unsigned int init = 0xffffffffu;
    cudaMemcpy(dout, &init, sizeof(init), cudaMemcpyHostToDevice);
    min_key<<<htam_sm_grid((n + 255) / 256, 8), 256>>>(d, n, dout);
    unsigned int r;
    cudaMemcpy(&r, dout, sizeof(r), cudaMemcpyDeviceToHost);
    printf("min = %u\n", r);
    cudaFree(d); cudaFree(dout); free(h);
    return 0;
}
