"""An object-like macro whose whole value is one builtin (``#define TID threadIdx.x``) is that builtin in the affine
indices and the builtin aliases, the macro's own name included (a transform that reads the aliases sees ``TID`` as
``threadIdx.x``); an expression macro is no builtin alias (its affine form is read where it stands)."""

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


TREE = """
#define TID (threadIdx.x)
#define tx ((unsigned)threadIdx.x)
#define GIDX (blockIdx.x * blockDim.x + threadIdx.x)
__global__ void k(const int *in, int *out, int n)
{
    __shared__ int sdata[256];
    unsigned int i = GIDX;
    sdata[TID] = i < n ? in[i] : 0;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (TID % (2 * s) == 0) sdata[TID] += sdata[TID + s];
        __syncthreads();
    }
    if (tx == 0) out[blockIdx.x] = sdata[0];
}
void run(const int *in, int *out, int n) { k<<<(n + 255) / 256, 256>>>(in, out, n); }
"""


def test_an_object_like_macro_of_one_builtin_is_itself_an_alias():
    model = parse_text(TREE, "cuda", "m.cu")
    f = analyze(model, model.kernel("k"))
    assert f.builtin_alias("TID") == "threadIdx.x"
    assert f.builtin_alias("tx") == "threadIdx.x"  # through a cast, as a local's initializer is read
    assert f.builtin_alias("GIDX") is None  # an affine form: a thread index, not one builtin
    assert f.builtin_alias("i") is None


def test_a_local_of_the_macro_name_wins():
    src = "#define TID (threadIdx.x)\n__global__ void k(int *o) { int TID = 3; o[TID] = 1; }\n"
    model = parse_text(src, "cuda", "m.cu")
    assert analyze(model, model.kernel("k")).builtin_alias("TID") is None


def test_the_tree_indexed_by_a_macro_is_rewritten():
    """The interleaved tree indexed by ``TID`` (a macro) is made sequential, the macro kept in the edit."""
    from htam_core.transforms.base import apply_edits
    from htam_core.transforms.registry import propose

    model = parse_text(TREE, "cuda", "m.cu")
    res = propose("cuda.sequential_addressing", model, model.kernel("k"))
    assert isinstance(res, list), getattr(res, "reason", res)
    text = apply_edits(model.text, res[0].edits)
    assert "if (TID < s) sdata[TID] += sdata[TID + s];" in text and "s = blockDim.x / 2" in text
