// causal_conv1d_main.cu -- depthwise causal 1-D convolution (width 4, as in Mamba-style blocks) over
// (channels, length) fp32 data with a per-channel filter and bias, then SiLU; one thread per output.
// A stand-alone program: htam reads the launch from main().
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CH 1024
#define LEN 8192
#define KW 4

__global__ void causal_conv1d(float *y, float *x, float *w, float *bias, int channels, int len)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y;
    if (t < len && c < channels) {
        float acc = bias[c];
        for (int k = 0; k < KW; k++) {
            int src = t - (KW - 1) + k;
            if (src >= 0)
                acc += w[c * KW + k] * x[c * len + src];
        }
        y[c * len + t] = acc / (1.0f + expf(-acc));
    }
}

int main()
{
    size_t n = (size_t)CH * LEN;
    float *hx = (float *)malloc(n * sizeof(float)), *hy = (float *)malloc(n * sizeof(float));
    float *hw = (float *)malloc(CH * KW * sizeof(float)), *hb = (float *)malloc(CH * sizeof(float));
    for (size_t i = 0; i < n; i++) hx[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < CH * KW; i++) hw[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < CH; i++) hb[i] = 0.1f;
    float *dx, *dy, *dw, *db;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dy, n * sizeof(float));
    cudaMalloc(&dw, CH * KW * sizeof(float));
    cudaMalloc(&db, CH * sizeof(float));
    cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dw, hw, CH * KW * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb, CH * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(128);
    dim3 grid((LEN + 127) / 128, CH);
    causal_conv1d<<<grid, block>>>(dy, dx, dw, db, CH, LEN);
    cudaMemcpy(hy, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    float acc = hb[0] + hw[3] * hx[0];
    float ref = acc / (1.0f + expf(-acc));
    printf("%s\n", fabsf(ref - hy[0]) < 1e-5f ? "ok" : "FAIL");
    cudaFree(dx); cudaFree(dy); cudaFree(dw); cudaFree(db); free(hx); free(hy); free(hw); free(hb);
    return 0;
}
