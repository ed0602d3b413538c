"""A launch's grid and block are resolved through every declarator of one declaration
(``dim3 grid(a, b), threads(c, d);``), not only the first (a teaching sample's transpose declares both at once)."""

from __future__ import annotations

from htam_core.source import parse_text

TEXT = """
#define TILE 32
#define ROWS 8
__global__ void k(float *o, const float *i, int w) {
  int x = blockIdx.x * TILE + threadIdx.x;
  o[x] = i[x];
}
void run(float *o, const float *i, int w, int h) {
  dim3 grid(w / TILE, h / TILE), threads(TILE, ROWS);
  k<<<grid, threads>>>(o, i, w);
}
"""


def test_both_declarators_of_one_dim3_declaration_resolve() -> None:
    site = parse_text(TEXT, "cuda", "k.cu").kernels[0].launch_sites[0]
    assert site.resolved_config["grid"] == "dim3(w / 32, h / 32)"
    assert site.resolved_config["block"] == "dim3(32, 8)"
