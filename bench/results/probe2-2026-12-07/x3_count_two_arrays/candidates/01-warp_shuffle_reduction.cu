// Count where a mask is set and the value is above its neighbour's threshold array.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void count_masked(const float* x, const unsigned char* mask, const float* thr, int n, int* total) {
    __shared__ int s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = (i < n && mask[i] != 0 && x[i] > thr[i]) ? 1 : 0;
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
    count_masked<<<(n + 255) / 256, 256>>>(dx, dm, dt, n, dr);
    int r;
    cudaMemcpy(&r, dr, sizeof(int), cudaMemcpyDeviceToHost);
    printf("count = %d\n", r);
    cudaFree(dx); cudaFree(dt); cudaFree(dm); cudaFree(dr); free(hx); free(ht); free(hm);
    return 0;
}
