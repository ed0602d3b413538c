"""How a kernel's last statement writes a block's total (``htam_core.source.analysis.accumulate``: added into the
output, linear in the total, or stored) and how its shared tree ends (``htam_core.source.analysis.tree_finish``:
where a halving tree stops, a warp-shuffle finish). Kernels written here."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import analyze
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.accumulate import accumulation, linear_in, output_read_elsewhere
from htam_core.source.analysis.forms import KernelText
from htam_core.source.analysis.syntax import statements
from htam_core.source.analysis.tree_finish import tree_left, warp_finish
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.api import parse_text

KERNEL = """__global__ void k(float *out, const float *x, int n) {
    __shared__ float sh[256];
    int tid = threadIdx.x;
    float s = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) s += x[i * 8 + blockIdx.x];
    sh[tid] = s;
    __syncthreads();
    for (int h = blockDim.x / 2; TREE; h /= 2) {
        if (tid < h) sh[tid] += sh[tid + h];
        __syncthreads();
    }
    LAST
}
"""


def _view(text: str) -> KernelText:
    model = parse_text(text, "cuda")
    kernel = model.kernel("k")
    source = cuda_source(model, kernel)
    assert isinstance(source, CudaSource)
    return KernelText(source, analyze(model, kernel))


def _last(view: KernelText):
    return statements(view.body)[-1]


def _kernel(last: str, tree: str = "h > 0") -> str:
    return KERNEL.replace("LAST", last).replace("TREE", tree)


@pytest.mark.parametrize("write,term,negated,atomic", [
    ("out[blockIdx.x] += sh[0];", "sh[0]", False, False),
    ("out[blockIdx.x] -= 0.5f * sh[0];", "0.5f * sh[0]", True, False),
    ("out[blockIdx.x] = out[blockIdx.x] + sh[0];", "sh[0]", False, False),
    ("out[blockIdx.x] = (sh[0] / n) + out[ blockIdx.x ];", "(sh[0] / n)", False, False),
    ("atomicAdd(&out[blockIdx.x], sh[0]);", "sh[0]", False, True),
])
def test_additions_into_the_output(write, term, negated, atomic):
    v = _view(_kernel(f"if (tid == 0) {write}"))
    (st,) = statements(_last(v).child_by_field_name("consequence"))
    acc = accumulation(v, st)
    assert acc is not None and v.t(acc.term) == term and (acc.negated, acc.atomic) == (negated, atomic)
    assert " ".join(v.t(acc.target).split()) == "out[blockIdx.x]"
    totals = [n for n in syn.identifiers(st) if v.t(n) == "sh"]
    assert linear_in(v, acc.term, [t.parent for t in totals]) is True
    assert output_read_elsewhere(v, st) is None


@pytest.mark.parametrize("write", ["out[blockIdx.x] = sh[0];", "out[blockIdx.x] = out[0] + sh[0];",
                                   "atomicMax(&out[blockIdx.x], sh[0]);"])
def test_stores_are_no_additions(write):
    v = _view(_kernel(f"if (tid == 0) {write}"))
    (st,) = statements(_last(v).child_by_field_name("consequence"))
    assert accumulation(v, st) is None


@pytest.mark.parametrize("expr,linear", [("sh[0] * sh[0]", None), ("sh[0] + 1.0f", None),
                                         ("2.0f * sh[0] - sh[0]", True), ("n / sh[0]", None), ("(float)n", False),
                                         ("sh[0] / (n * 2)", True)])
def test_linear_in_the_total(expr, linear):
    v = _view(_kernel(f"if (tid == 0) out[blockIdx.x] += {expr};"))
    (st,) = statements(_last(v).child_by_field_name("consequence"))
    acc = accumulation(v, st)
    totals = [n.parent for n in syn.identifiers(st) if v.t(n) == "sh"]
    assert acc is not None and linear_in(v, acc.term, totals) is linear


def test_an_output_read_elsewhere_is_named():
    text = _kernel("if (tid == 0) out[blockIdx.x] += sh[0];").replace("float s = 0.0f;", "float s = out[0];")
    v = _view(text)
    (st,) = statements(_last(v).child_by_field_name("consequence"))
    assert output_read_elsewhere(v, st) == "the kernel reads its output out on line 4, outside the write"


@pytest.mark.parametrize("tree,left", [("h > 0", 1), ("h >= 1", 1), ("h >= 32", 32), ("h > 16", 32), ("h > 31", 32),
                                       ("h >= 64", 64), ("h > n", None)])
def test_where_a_halving_tree_stops(tree, left):
    f = analyze(*(lambda m: (m, m.kernel("k")))(parse_text(_kernel("if (tid == 0) out[0] = sh[0];", tree), "cuda")))
    (lp,) = f.shared_tree_loops()
    assert tree_left(lp) == left


FINISH = """if (tid < 32) {
        float v = sh[tid];
        for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffff, v, off);
        if (tid == 0) out[blockIdx.x] += v;
    }"""


@pytest.mark.parametrize("old,new", [("", ""), ("tid < 32", "threadIdx.x < warpSize"), ("off /= 2", "off >>= 1"),
                                     ("off > 0", "off >= 1"), ("__shfl_down_sync", "__shfl_xor_sync")])
def test_warp_finish_spellings(old, new):
    v = _view(_kernel(FINISH.replace(old, new) if old else FINISH, "h >= 32"))
    fin = warp_finish(v, _last(v))
    assert fin is not None and fin.var == "v" and v.t(fin.write) == "out[blockIdx.x] += v;"
    assert v.t(fin.decl) == "float v = sh[tid];"


@pytest.mark.parametrize("old,new", [("int off = 16", "int off = 8"), ("tid < 32", "tid < 16"),
                                     ("if (tid == 0)", "if (tid == 1)"), ("v += __shfl", "v = __shfl"),
                                     ("(0xffffffff, v, off)", "(0xffffffff, v, 1)")])
def test_not_a_warp_finish(old, new):
    v = _view(_kernel(FINISH.replace(old, new), "h >= 32"))
    assert warp_finish(v, _last(v)) is None
