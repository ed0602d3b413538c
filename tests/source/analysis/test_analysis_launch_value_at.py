"""``LaunchFacts.value_at``: an expression over the kernel's parameters evaluated at one launch, where the launch
passes constants (a ``const int`` of the launcher, a ``#define``, a literal), and ``None`` where it does not."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import analyze, sym
from htam_core.source.api import parse_text

TEXT = """#define ROWS 4096
__global__ void k(float *out, const float *x, int B, int T, int OC) {
    out[blockIdx.x] = x[threadIdx.x] + (float)(B * T * OC);
}
void a(float *o, const float *x) {
    const int B = 8, T = 1024, OC = 768;
    k<<<OC, 256>>>(o, x, B, T, OC);
}
void b(float *o, const float *x, int t) {
    k<<<7, 256>>>(o, x, ROWS, t, 3 * 5);
}
"""


@pytest.mark.parametrize("expr,at_a,at_b", [
    (sym("B") * sym("T"), 8192, None),
    (sym("OC"), 768, 15),
    (sym("B") + 1, 9, 4097),
    (sym("rows"), None, None),  # not a parameter
    (None, None, None),
])
def test_value_at_each_launch(expr, at_a, at_b):
    model = parse_text(TEXT, "cuda")
    f = analyze(model, model.kernel("k"))
    params = ["out", "x", "B", "T", "OC"]
    by_host = {lf.host: lf for lf in f.launches}
    assert by_host["a"].value_at(expr, params) == at_a
    assert by_host["b"].value_at(expr, params) == at_b
