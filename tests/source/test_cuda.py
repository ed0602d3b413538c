"""General rules of the CUDA model, on small files written for these tests."""

from __future__ import annotations

import textwrap

from htam_core.source import parse_text


def model(src: str):
    return parse_text(textwrap.dedent(src).lstrip("\n"), "cuda")


def by_name(src: str) -> dict:
    return {k.name: k for k in model(src).kernels}


def test_templates_namespaces_extern_c_and_forward_declarations() -> None:
    ks = by_name("""
        namespace outer { namespace inner {
        template <typename T, int BLOCK, int ITEMS = 4>
        __global__ void fwd(const T* x, T* y, int n);

        template <typename T, int BLOCK, int ITEMS = 4>
        __global__ void fwd(const T* __restrict__ x, T* __restrict__ y, int n)
        {
            y[0] = x[0];
        }
        }}
        extern "C" __global__ void c_entry(float* out) { out[0] = 1.0f; }
        extern "C" {
        __global__ void in_block(float* out) { out[1] = 2.0f; }
        }
        """)
    assert sorted(ks) == ["c_entry", "fwd", "in_block"]
    fwd = ks["fwd"]
    assert (fwd.start_line, fwd.end_line) == (5, 9)  # definition, not the forward declaration at 2-3
    assert fwd.attributes["namespace"] == "outer::inner"
    assert fwd.attributes["template_params"] == ["typename T", "int BLOCK", "int ITEMS = 4"]
    assert [(p.name, p.is_pointer, p.is_const, p.is_restrict, p.written) for p in fwd.params] == [
        ("x", True, True, True, False), ("y", True, False, True, True), ("n", False, False, False, False)]
    assert ks["c_entry"].attributes["extern_c"] and ks["in_block"].attributes["extern_c"]
    assert (ks["c_entry"].start_line, ks["c_entry"].end_line) == (11, 11)


def test_launch_bounds_and_cluster_dims_variants_keep_name_and_range() -> None:
    ks = by_name("""
        __global__ void __launch_bounds__(256) after_void(float* x) { x[0] = 1; }
        __global__ __launch_bounds__(128, 2) void before_void(float* x)
        {
            x[0] = 2;
        }
        __global__ void __launch_bounds__(256, 2, 1) three_args(float* x) { x[0] = 3; }
        __global__ __launch_bounds__(64, 4, 1) void three_before(float* x) { x[0] = 4; }
        __global__ void __cluster_dims__(2, 1, 1) cluster_after(float* x) { x[0] = 5; }
        __global__ __cluster_dims__(4, 1, 1) void cluster_before(float* x)
        {
            x[0] = 6;
        }
        __global__ void tail(float* x) { x[0] = 7; }
        """)
    want = {"after_void": (1, 1, "256"), "before_void": (2, 5, "128, 2"), "three_args": (6, 6, "256, 2, 1"),
            "three_before": (7, 7, "64, 4, 1"), "cluster_after": (8, 8, None), "cluster_before": (9, 12, None),
            "tail": (13, 13, None)}
    assert sorted(ks) == sorted(want)
    for name, (s, e, lb) in want.items():
        assert (ks[name].start_line, ks[name].end_line) == (s, e), name
        assert ks[name].attributes["launch_bounds"] == lb, name
        assert ks[name].params[0].name == "x"
    assert ks["cluster_after"].attributes["cluster_dims"] == "2, 1, 1"
    assert ks["cluster_before"].attributes["cluster_dims"] == "4, 1, 1"


def test_macro_qualifiers_and_macro_kernels() -> None:
    m = model("""
        #define HD_INLINE __host__ __device__ __forceinline__
        #define RESTRICT __restrict__
        #define KERNEL extern "C" __global__
        HD_INLINE float sq(float v) { return v * v; }
        __global__ void scale(float* RESTRICT out, const float* RESTRICT in, int n)
        {
            out[0] = sq(in[0]);
        }
        KERNEL void via_macro(float* p) { p[0] = 0.f; }
        """)
    ks = {k.name: k for k in m.kernels}
    assert sorted(ks) == ["scale", "via_macro"]
    assert (ks["scale"].start_line, ks["scale"].end_line) == (5, 8)
    assert [p.name for p in ks["scale"].params] == ["out", "in", "n"]
    assert ks["scale"].params[0].is_restrict and ks["scale"].params[0].written
    assert ks["via_macro"].attributes["extern_c"]
    assert [d.name for d in m.device_functions] == ["sq"]


def test_if0_comments_switch_and_qualified_template_launches() -> None:
    m = model("""
        namespace ops {
        template <typename T, int B>
        __global__ void k(T* x, int n) { x[0] = n; }
        }
        #if 0
        __global__ void dead(float* x) { x[0] = 0; }
        #endif
        void host(float* x, int n, int mode, cudaStream_t s)
        {
            // ops::k<float, 256><<<1, 2>>>(x, n);
            /* ops::k<float, 128><<<3, 4>>>(x, n); */
            switch (mode) {
            case 0:
                ops::k<float, 256><<<dim3(n / 256), 256, 64, s>>>(x, n);
                break;
            default:
                ops::k<float, 128><<<(n + 127) / 128, 128>>>(x, n);
            }
        #if 0
            ops::k<float, 64><<<1, 64>>>(x, n);
        #endif
        }
        """)
    assert [k.name for k in m.kernels] == ["k"]
    sites = m.kernels[0].launch_sites
    assert [s.line for s in sites] == [14, 17]
    assert sites[0].config == {"grid": "dim3(n / 256)", "block": "256", "smem": "64", "stream": "s",
                               "template_args": "<float, 256>"}
    assert sites[0].qualified_name == "ops::k<float, 256>"
    assert sites[1].config["smem"] == "0" and sites[1].config["stream"] == "default"
    assert sites[1].args == ["x", "n"]


def test_half_typed_kernel_between_complete_ones() -> None:
    src = """
        __global__ void first(float* x) { x[0] = 1; }

        __global__ void typing(float* x, int n)
        {
            for (int i = 0; i < n; ++i) {
                x[i] = x[i] *

        __global__ void third(float* y, int n)
        {
            y[0] = n;
        }

        void host(float* y) { third<<<1, 32>>>(y, 1); first<<<2, 64>>>(y); }
        """
    m = model(src)
    ks = {k.name: k for k in m.kernels}
    assert sorted(ks) == ["first", "third", "typing"]
    assert ks["typing"].incomplete and (ks["typing"].start_line, ks["typing"].end_line) == (3, 6)
    assert not ks["third"].incomplete and (ks["third"].start_line, ks["third"].end_line) == (8, 11)
    assert [s.line for s in ks["third"].launch_sites] == [13]
    assert m.errors


def test_half_typed_kernel_at_end_of_file() -> None:
    m = model("""
        __global__ void done(float* x) { x[0] = 1; }
        __global__ void typing(float* x, int n) {
            int i = blockIdx.x *
        """)
    ks = {k.name: k for k in m.kernels}
    assert (ks["done"].start_line, ks["done"].end_line) == (1, 1) and not ks["done"].incomplete
    assert ks["typing"].incomplete and (ks["typing"].start_line, ks["typing"].end_line) == (2, 3)


def test_features() -> None:
    k = by_name("""
        #define TILE 32
        __global__ void feat(const float4* __restrict__ a, float* out, float* acc, int n)
        {
            __shared__ float tile[TILE][TILE + 1];
            __shared__ double pad[8];
            extern __shared__ float dyn[];
            int stride = blockDim.x * gridDim.x;
            for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
                float4 v = a[i];
                out[i] = __expf(v.x) + tanhf(v.y) + __ldg(out + i);
            }
        #pragma unroll
            for (int k = 0; k < 8; ++k) { tile[threadIdx.y][k] = k; }
            for (int s = 16; s > 0; s >>= 1) { acc[0] += __shfl_down_sync(0xffffffff, acc[0], s); }
            __syncthreads();
            __syncthreads();
            atomicAdd(acc, 1.0f);
        }
        """)["feat"]
    f = k.features
    assert [(lp.line, lp.kind, lp.trip_count, lp.has_unroll_pragma) for lp in f.loops] == [
        (8, "for", None, False), (13, "for", 8, True), (14, "for", 5, False)]
    assert f.has_grid_stride_loop and f.uses_2d_index and f.uses_ldg
    assert f.syncthreads == 2 and f.atomics == ["atomicAdd"]
    assert f.vector_types == ["float4"]
    assert set(f.math_calls) == {"__expf", "tanhf"} and f.reductions == ["__shfl_down_sync"]
    shared = {s.name: s for s in f.shared_memory}
    assert shared["pad"].bytes == 64 and shared["pad"].dims == ["8"]
    assert shared["tile"].dims == ["TILE", "TILE + 1"] and shared["tile"].bytes == 32 * 33 * 4
    assert shared["dyn"].dynamic and shared["dyn"].bytes is None
    assert f.stores >= 2 and f.loads >= 3
    written = {p.name: p.written for p in k.params}
    assert written == {"a": False, "out": True, "acc": True, "n": False}


def test_resolved_launch_config_through_locals_and_constants() -> None:
    m = model("""
        #define THREADS 256
        constexpr int kItems = 4;
        __global__ void k(float* x, int n) { x[0] = n; }
        void go(float* x, int n, cudaStream_t st)
        {
            const int threads = THREADS;
            dim3 grid((n + threads * kItems - 1) / (threads * kItems));
            size_t smem = threads * sizeof(float);
            k<<<grid, threads, smem, st>>>(x, n);
        }
        """)
    s = m.kernels[0].launch_sites[0]
    assert s.config == {"grid": "grid", "block": "threads", "smem": "smem", "stream": "st"}
    assert s.resolved_config == {"grid": "dim3((n + 256 * 4 - 1) / (256 * 4))", "block": "256",
                                 "smem": "256 * sizeof(float)", "stream": "st"}
