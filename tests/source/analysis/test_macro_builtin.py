"""An object-like macro whose whole value is one builtin (``#define TID threadIdx.x``) is that builtin in the affine
indices and the builtin aliases; an expression macro is no builtin alias."""

from __future__ import annotations

from htam_core.source import parse_text
from htam_core.source.analysis import analyze

SRC = """
#define TID threadIdx.x
#define BX (blockIdx.x)
#define NEXT (threadIdx.x + 1)
__global__ void k(float *out)
{
    unsigned int t = TID;
    unsigned int b = BX;
    unsigned int n = NEXT;
    out[b * blockDim.x + t] = (float)n;
}
"""


def test_a_macro_that_is_one_builtin_is_that_builtin():
    model = parse_text(SRC, "cuda", "m.cu")
    f = analyze(model, model.kernel("k"))
    assert f.builtin_alias("t") == "threadIdx.x"
    assert f.builtin_alias("b") == "blockIdx.x"
    assert f.builtin_alias("n") is None  # an expression macro is not one builtin
    (w,) = [a for a in f.accesses if a.pointer == "out"]
    assert str(w.index).replace(" ", "") in ("blockDim.x*blockIdx.x+threadIdx.x", "threadIdx.x+blockDim.x*blockIdx.x",
                                             "blockIdx.x*blockDim.x+threadIdx.x")
