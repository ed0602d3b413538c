// Count where a mask is set and the value is above its neighbour's threshold array.
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

__global__ void count_masked(const float* x, const unsigned char* mask, const float* thr, int n, int* total) {
    __shared__ int s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    int htam_v = 0;
    for (int htam_j = i; htam_j < n; htam_j += blockDim.x * gridDim.x)
        if ((mask[htam_j] != 0) && (x[htam_j] > thr[htam_j])) htam_v += 1;
    s[t] = htam_v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 32; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t < 32) {  // the last warp finishes in registers: the same pairs, no barriers
        int htam_v = s[t] + s[t + 32];
        for (int htam_o = 16; htam_o > 0; htam_o >>= 1)
            htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);
        if (t == 0) s[0] = htam_v;
    }
    __syncthreads();
    if (t == 0) atomicAdd(total, s[0]);
}

int main() {
    const int n = 1 << 20;
    float* hx = (float*)malloc(n * sizeof(float));
    float* ht = (float*)malloc(n * sizeof(float));
    unsigned char* hm = (unsigned char*)malloc(n);
    for (int i = 0; i < n; ++i) { hx[i] = (float)(i % 10); ht[i] = 4.5f; hm[i] = (i % 3) != 0; }
    float *dx, *dt; unsigned char* dm; int* dr;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dt, n * sizeof(float));
    cudaMalloc(&dm, n);
    cudaMalloc(&dr, sizeof(int));
    cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dt, ht, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dm, hm, n, cudaMemcpyHostToDevice);
    cudaMemset(dr, 0, sizeof(int));
    count_masked<<<htam_sm_grid((n + 255) / 256, 4), 256>>>(dx, dm, dt, n, dr);
    int r;
    cudaMemcpy(&r, dr, sizeof(int), cudaMemcpyDeviceToHost);
    printf("count = %d\n", r);
    cudaFree(dx); cudaFree(dt); cudaFree(dm); cudaFree(dr); free(hx); free(ht); free(hm);
    return 0;
}
