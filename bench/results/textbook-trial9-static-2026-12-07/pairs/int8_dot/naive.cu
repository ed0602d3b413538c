#include <cuda_runtime.h>
#include <vector>

// *result += sum a[i] * b[i] over int8 vectors. Each block sums its slice in dynamic shared memory with the
// interleaved tree (tid % (2*s) == 0), then thread 0 adds the block's sum with one atomic.
__global__ void dot_i8(const signed char* a, const signed char* b, int* result, int n) {
    extern __shared__ int partial[];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    partial[tid] = i < n ? (int)a[i] * (int)b[i] : 0;
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) partial[tid] += partial[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(result, partial[0]);
}

int main() {
    const int n = 1 << 24;
    std::vector<signed char> ha(n), hb(n);
    for (int i = 0; i < n; ++i) {
        ha[i] = (signed char)((i * 7) % 255 - 127);
        hb[i] = (signed char)((i * 13) % 17 - 8);
    }
    signed char *a, *b;
    int* result;
    int out = 0;
    cudaMalloc(&a, n);
    cudaMalloc(&b, n);
    cudaMalloc(&result, sizeof(int));
    cudaMemcpy(a, ha.data(), n, cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), n, cudaMemcpyHostToDevice);
    cudaMemset(result, 0, sizeof(int));
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    dot_i8<<<blocks, threads, threads * sizeof(int)>>>(a, b, result, n);
    cudaMemcpy(&out, result, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(a);
    cudaFree(b);
    cudaFree(result);
    return 0;
}
