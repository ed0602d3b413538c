// logsoftmax_main.cu -- log-softmax of each row of a B x V fp32 matrix (V = vocabulary), one thread per
// row, with its own main() that checks one row on the CPU. No htam.toml: htam reads the launch from main().
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

const int B = 4096;
const int V = 2048;

__global__ void log_softmax_rows(float *out, float *logits, int b, int v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < b) {
        float m = logits[i * v];
        for (int j = 1; j < v; j++)
            m = fmaxf(m, logits[i * v + j]);
        float s = 0.0f;
        for (int j = 0; j < v; j++)
            s += expf(logits[i * v + j] - m);
        float lse = m + logf(s);
        for (int j = 0; j < v; j++)
            out[i * v + j] = logits[i * v + j] - lse;
    }
}

int main()
{
    size_t n = (size_t)B * V;
    float *h = (float *)malloc(n * sizeof(float)), *ho = (float *)malloc(n * sizeof(float));
    for (size_t k = 0; k < n; k++) h[k] = (float)rand() / RAND_MAX * 10.0f - 5.0f;
    float *d_logits, *d_out;
    cudaMalloc(&d_logits, n * sizeof(float));
    cudaMalloc(&d_out, n * sizeof(float));
    cudaMemcpy(d_logits, h, n * sizeof(float), cudaMemcpyHostToDevice);
    log_softmax_rows<<<(B + 31) / 32, 32>>>(d_out, d_logits, B, V);
    cudaMemcpy(ho, d_out, n * sizeof(float), cudaMemcpyDeviceToHost);
    double m = h[0], s = 0.0;
    for (int j = 1; j < V; j++) m = fmax(m, h[j]);
    for (int j = 0; j < V; j++) s += exp(h[j] - m);
    float err = fabsf(ho[0] - (float)(h[0] - m - log(s)));
    printf("%s (row 0 error %g)\n", err < 1e-4f ? "ok" : "FAIL", err);
    cudaFree(d_logits); cudaFree(d_out); free(h); free(ho);
    return err >= 1e-4f;
}
