"""The CUDA forms the transforms match, read in the analysis layer (``htam_core.source.analysis.forms``): builtin
fields, the global index in any operand order, written nodes, bound checks, and the elementwise shape with the
reason a kernel does not have it."""

from __future__ import annotations

from htam_core.source.analysis import analyze
from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.forms import (
    Elementwise,
    KernelText,
    barriers_in,
    builtin_field,
    cond_parts,
    elementwise,
    global_index_parts,
    is_global_index,
    is_lvalue,
    launch_bounds_node,
    param_names,
    uses_block_linear_index,
)
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.api import parse_text

SCALE = """__global__ void scale(float *x, int n, float a) {
    int i = threadIdx.x + blockDim.x * (int)blockIdx.x;
    if (i < n) { x[i] = a * x[i]; }
}
void run(float *x, int n) { scale<<<(n + 255) / 256, 256>>>(x, n, 2.0f); }
"""


def _view(text: str, name: str) -> KernelText:
    model = parse_text(text, "cuda")
    kernel = model.kernel(name)
    source = cuda_source(model, kernel)
    assert isinstance(source, CudaSource)
    return KernelText(source, analyze(model, kernel))


def _init(view: KernelText) -> syn.Node:
    return syn.init_declarators(view.body)[0].child_by_field_name("value")


def test_the_global_index_in_any_operand_order_with_casts() -> None:
    view = _view(SCALE, "scale")
    gid = _init(view)
    d, stride = global_index_parts(view, gid)  # type: ignore[misc]
    assert d == "x" and view.t(stride) == "blockDim.x" and is_global_index(view, gid)
    assert not is_global_index(view, gid, "y")
    assert builtin_field(view, stride) == "blockDim.x" and builtin_field(view, gid) is None


def test_written_nodes_and_bound_checks() -> None:
    view = _view(SCALE, "scale")
    assert [is_lvalue(n) for n in syn.subscripts(view.body)] == [True, False]  # x[i] = a * x[i]
    assert not any(is_lvalue(n) for n in syn.references(view.body, view.src, "x"))
    cond = syn.of_type(view.body, "condition_clause")[0]
    var, op, bound = cond_parts(view, cond)  # type: ignore[misc]
    assert (var, op, view.t(bound)) == ("i", "<", "n")


def test_the_elementwise_shape_and_why_not() -> None:
    ew = elementwise(_view(SCALE, "scale"))
    assert isinstance(ew, Elementwise)
    assert (ew.name, ew.type, ew.form, ew.extra) == ("i", "int", "if", "")
    synced = SCALE.replace("x[i] = a * x[i];", "x[i] = a * x[i]; __syncthreads();")
    view = _view(synced, "scale")
    assert len(barriers_in(view, view.body)) == 1
    assert elementwise(view) == "the guarded code uses __syncthreads() (a block barrier)"
    early = SCALE.replace("if (i < n) { x[i] = a * x[i]; }", "x[i] = 0.0f;\n    if (i < n) { x[i] = a * x[i]; }")
    assert elementwise(_view(early, "scale")) == "i is used before its bound check"
    extra = SCALE.replace("if (i < n)", "if (i < n && n > 0)")
    assert isinstance(elementwise(_view(extra, "scale")), str)
    ew2 = elementwise(_view(extra, "scale"), invariant_terms=True)
    assert isinstance(ew2, Elementwise) and ew2.extra == "((n > 0))"


def test_parameter_names_block_slices_and_launch_bounds() -> None:
    view = _view(SCALE, "scale")
    assert param_names(view.source) == ["x", "n", "a"]
    assert uses_block_linear_index(view.source, "x") and not uses_block_linear_index(view.source, "y")
    assert launch_bounds_node(view.source) is None
    bounded = _view(SCALE.replace("__global__ void", "__global__ void __launch_bounds__(256)"), "scale")
    lb = launch_bounds_node(bounded.source)
    assert lb is not None and "256" in bounded.t(lb)
    macro = "#define LB(n) __launch_bounds__(n)\n" + SCALE.replace("__global__ void", "__global__ void LB(256)")
    assert launch_bounds_node(_view(macro, "scale").source) is not None


def test_a_grid_stride_kernel_is_named_as_one_not_as_a_missing_declaration():
    """Regression (a new user's trial): the refusal said "no `i = ...` index declaration" on a kernel that
    declares ``i`` exactly so, in its grid-stride loop's header."""
    text = """__global__ void scale(float *x, int n, float a) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) x[i] *= a;
}
"""
    why = elementwise(_view(text, "scale"))
    assert isinstance(why, str) and "grid-stride loop over i (line 2)" in why
