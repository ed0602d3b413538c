"""A launch's grid that is a ``dim3`` variable keeps its y and z when a step changes its block count, wherever the
variable is declared (in the launching function or at file scope) and whatever sets its components. Regression
(read on a public sample): a file-scope ``dim3 grid;`` whose ``x`` and ``y`` main() sets was written ``((grid) + 3)
/ 4``, which does not compile. Kernels written here."""

from __future__ import annotations

import shutil

import pytest

from htam_core.source import parse_text
from htam_core.transforms.registry import propose

FILE_SCOPE = """dim3 block(256);
dim3 grid;
__global__ void inc(int *out, const int *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] + 1;
}
int main() {
    int n = 1 << 20, *a, *b;
    cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4);
    int blocks = n / 256;
    grid.x = blocks % 65535;
    grid.y = blocks / 65535 + 1;
    inc<<<grid, block>>>(b, a, n);
    inc<<<grid, block, 0, 0>>>(b, a, n);
    return 0;
}
"""

LOCAL = FILE_SCOPE.replace("dim3 grid;\n", "").replace("    int blocks = n / 256;\n",
                                                         "    int blocks = n / 256;\n    dim3 grid;\n")


@pytest.mark.parametrize("text", [FILE_SCOPE, LOCAL], ids=["file_scope", "local"])
def test_a_dim3_grid_variable_keeps_y_and_z(text):
    m = parse_text(text, "cuda", "inc.cu")
    cs = propose("cuda.vectorize_float4", m, m.kernel("inc"))
    assert isinstance(cs, list), cs
    t = cs[0].new_text
    assert t.count("inc<<<dim3(((grid.x) + 3) / 4, grid.y, grid.z), block") == 2, t
    if shutil.which("nvcc"):
        from spellings import nvcc_error

        assert nvcc_error(t, "inc.cu") == ""
