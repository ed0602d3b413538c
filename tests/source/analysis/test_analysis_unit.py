"""The one parsed-unit type (:class:`CudaSource`): built once per kernel version, its launch sites paired
with their calls, and the transforms' :class:`CudaUnit` a view on it that never re-parses."""

from __future__ import annotations

from dataclasses import replace

from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.api import parse_text
from htam_core.transforms._cuda import load_unit, param_names
from htam_core.transforms.base import apply_edits

TEXT = """#define N 1024
__global__ void scale(float* __restrict__ x, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i];
}
void run(float* x) {
    dim3 block(256);
    scale<<<(N + 255) / 256, block>>>(x, N, 2.0f);
    scale<<<4, 128, 0>>>(x, 512, 3.0f);
}
"""


def _model():
    model = parse_text(TEXT, "cuda")
    return model, model.kernel("scale")


def test_sites_paired_with_their_calls():
    model, k = _model()
    src = cuda_source(model, k)
    assert isinstance(src, CudaSource)
    assert [s.site.line for s in src.sites] == [8, 9]
    assert [src.t(s.grid) for s in src.sites] == ["(N + 255) / 256", "4"]
    assert [src.t(s.block) for s in src.sites] == ["block", "128"]
    assert [len(s.config_args) for s in src.sites] == [2, 3]
    assert all(src.t(s.host.child_by_field_name("declarator")).startswith("run") for s in src.sites)
    assert [src.t(p) for p in src.params] == ["float* __restrict__ x", "int n", "float a"]
    decl = src.declarator
    assert src.node_at(src.span(decl)) == decl and src.file_byte(decl) == src.span(decl)[0]
    assert src.node_at((-1, 3)) is None


def test_cache_is_per_kernel_version_and_sites():
    model, k = _model()
    assert cuda_source(model, k) is cuda_source(model, k)
    bare = replace(k, launch_sites=[])  # a kernel copy without its sites gets its own unit, not a stale one
    assert cuda_source(model, bare).sites == ()
    assert len(cuda_source(model, k).sites) == 2
    edited = parse_text(TEXT.replace("2.0f", "4.0f"), "cuda")
    assert cuda_source(edited, edited.kernel("scale")) is not cuda_source(model, k)


def test_cuda_unit_is_a_view_that_never_reparses():
    model, k = _model()
    unit = load_unit(model, k)
    assert not isinstance(unit, str)
    src = cuda_source(model, k)
    assert unit.source is src
    assert (unit.src, unit.root, unit.func, unit.body, unit.env) == (src.src, src.root, src.func, src.body, src.env)
    assert unit.launches is src.sites
    assert param_names(unit) == ["x", "n", "a"]
    # edits are in file offsets whatever the unit's base
    assert "scale<<<8, 128, 0>>>" in apply_edits(TEXT, [unit.replace(src.sites[1].grid, "8")])


def test_embedded_unit_offsets():
    text = 'SRC = """\n' + TEXT + '"""\n'
    model = parse_text(text, "python")
    k = model.kernel("scale")
    unit = load_unit(model, k)
    assert not isinstance(unit, str)
    assert unit.base == text.index('"""') + 3  # the string content starts after the quotes
    decl = unit.declarator
    assert [s.site.line for s in unit.launches] == [9, 10]
    assert "scale<<<8, block>>>" in apply_edits(text, [unit.replace(unit.launches[0].grid, "8")])
    assert unit.file_byte(decl) == text.encode().index(b"scale(float*")
    assert unit.node_at((unit.file_byte(decl), decl.end_byte + unit.base)) == decl


def test_launch_config_leaves_comments_out():
    """Regression: a comment inside ``<<<...>>>`` was read as the block (and the block as the shared memory)."""
    from htam_core.source.analysis import analyze

    text = ("__global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
            " if (i < n) x[i] = 0.f; }\n"
            "void run(float* x, int n) { k<<<(n + 255) / 256, /* threads */ 256 /* no smem */>>>(x, n); }\n")
    model = parse_text(text, "cuda")
    k = model.kernel("k")
    (la,) = analyze(model, k).launches
    assert [d.text for d in la.block] == ["256"] and la.threads == 256 and la.smem == 0
    src = cuda_source(model, k)
    assert [src.t(n) for n in src.sites[0].config_args] == ["(n + 255) / 256", "256"]
    assert k.launch_sites[0].config["block"] == "256"
