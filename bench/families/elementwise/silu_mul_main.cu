// silu_mul_main.cu -- SwiGLU gate: out[i] = silu(gate[i]) * up[i], fp32, checked against a CPU loop in main().
// A stand-alone program (no htam.toml): htam reads the launch from main().
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define N (1 << 24)
#define THREADS 64

__global__ void silu_mul(float *out, float *gate, float *up, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

int main()
{
    size_t bytes = N * sizeof(float);
    float *h_gate = (float *)malloc(bytes), *h_up = (float *)malloc(bytes), *h_out = (float *)malloc(bytes);
    for (int i = 0; i < N; i++) {
        h_gate[i] = (float)rand() / RAND_MAX * 8.0f - 4.0f;
        h_up[i] = (float)rand() / RAND_MAX;
    }
    float *d_gate, *d_up, *d_out;
    cudaMalloc(&d_gate, bytes);
    cudaMalloc(&d_up, bytes);
    cudaMalloc(&d_out, bytes);
    cudaMemcpy(d_gate, h_gate, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(d_up, h_up, bytes, cudaMemcpyHostToDevice);
    silu_mul<<<(N + THREADS - 1) / THREADS, THREADS>>>(d_out, d_gate, d_up, N);
    cudaMemcpy(h_out, d_out, bytes, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float ref = h_gate[i] / (1.0f + expf(-h_gate[i])) * h_up[i];
        if (fabsf(ref - h_out[i]) > 1e-5f * (1.0f + fabsf(ref))) bad++;
    }
    printf("%s (%d mismatches)\n", bad ? "FAIL" : "ok", bad);
    cudaFree(d_gate); cudaFree(d_up); cudaFree(d_out);
    free(h_gate); free(h_up); free(h_out);
    return bad != 0;
}
