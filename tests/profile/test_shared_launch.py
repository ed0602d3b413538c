"""Shared memory of a launch: the profile's shared line reports static plus the launch's dynamic bytes, as the
occupancy counts them; a block over 48 KB of static plus dynamic shared memory cannot launch unless the host opts
the kernel in (``cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...)``), and with the
opt-in it may use up to the device's opt-in maximum."""

from __future__ import annotations

import pytest

from htam_core.cli.profile import format_profile
from htam_core.profile import static_cuda as sc
from htam_core.profile.api import static_profile
from htam_core.profile.occupancy import arch_limits, theoretical_occupancy
from htam_core.runtime.cache import CompileCache
from htam_core.source import parse_text
from htam_core.source.analysis.smem_optin import shared_optins

KB = 1024

_KERNEL = """
__global__ void stage(const float* in, float* out, int n)
{{
    __shared__ float fixed[{static_floats}];
    extern __shared__ float extra[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    fixed[threadIdx.x] = i < n ? in[i] : 0.0f;
    extra[threadIdx.x] = fixed[threadIdx.x] * 2.0f;
    __syncthreads();
    if (i < n) out[i] = extra[threadIdx.x] + fixed[(threadIdx.x + 1) % blockDim.x];
}}

int main()
{{
    const int n = 1 << 20;
    float *in, *out;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    const size_t dyn = {dyn};
{optin}
    stage<<<n / 256, 256, dyn>>>(in, out, n);
    cudaDeviceSynchronize();
    return 0;
}}
"""


# -- occupancy: the 48 KB default and the opt-in ---------------------------------------------------------------------
@pytest.mark.parametrize("target", ["sm_80", "sm_86", "sm_89", "sm_90"])
def test_over_48_kb_without_the_opt_in_cannot_launch_and_with_it_fits(target: str) -> None:
    lim = arch_limits(target)
    static, dynamic = 16 * KB, lim.smem_per_block_default  # 16 KB static + 48 KB dynamic: over 48 KB, under the max
    no = theoretical_occupancy(32, 256, static, dynamic_shared_bytes=dynamic, target=target, shared_optin=False)
    assert no.active_blocks_per_sm == 0 and no.occupancy == 0
    assert any("without opting in" in r and "cudaFuncSetAttribute" in r for r in no.cannot_launch)
    yes = theoretical_occupancy(32, 256, static, dynamic_shared_bytes=dynamic, target=target, shared_optin=True)
    assert yes.cannot_launch == [] and yes.active_blocks_per_sm == lim.smem_per_sm // yes.smem_per_block


def test_at_48_kb_exactly_a_block_launches_without_the_opt_in() -> None:
    occ = theoretical_occupancy(32, 256, 16 * KB, dynamic_shared_bytes=32 * KB, shared_optin=False)
    assert occ.cannot_launch == [] and occ.active_blocks_per_sm > 0


def test_over_the_opt_in_maximum_nothing_helps() -> None:
    lim = arch_limits("sm_90")
    occ = theoretical_occupancy(32, 256, 0, dynamic_shared_bytes=lim.smem_per_block_optin + KB, shared_optin=True)
    assert occ.active_blocks_per_sm == 0 and any("opt in to" in r for r in occ.cannot_launch)


# -- the opt-in as the host code spells it -----------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    "cudaFuncSetAttribute(stage, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn);",
    "cudaFuncSetAttribute((const void*)&stage, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);",
    "CHECK(cudaFuncSetAttribute(stage, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn));",
    "auto fn = stage; cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn);",
])
def test_the_runtime_api_opt_in_is_found_in_its_spellings(call: str) -> None:
    text = _KERNEL.format(static_floats=4096, dyn="48 * 1024", optin="    " + call)
    found = shared_optins(text, "stage", ["stage"])
    assert len(found) == 1 and "cudaFuncSetAttribute" in found[0].text


def test_an_opt_in_for_another_kernel_or_another_attribute_does_not_count() -> None:
    text = _KERNEL.format(static_floats=4096, dyn="48 * 1024", optin=(
        "    cudaFuncSetAttribute(other, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn);\n"
        "    cudaFuncSetAttribute(stage, cudaFuncAttributePreferredSharedMemoryCarveout, 100);"))
    assert shared_optins(text, "stage", ["stage", "other"]) == ()


def test_cupy_and_driver_api_opt_ins_in_python() -> None:
    text = ('import cupy as cp\nk = cp.RawKernel(src, "stage")\nk.max_dynamic_shared_size_bytes = 64 * 1024\n'
            "cuFuncSetAttribute(fn, CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536)\n")
    assert [o.line for o in shared_optins(text, "stage", ["stage"], python=True)] == [3, 4]
    assert shared_optins('k = cp.RawKernel(src, "stage")\n', "stage", ["stage"], python=True) == ()


# -- the static profile: shared line and the opt-in, compiled with nvcc ---------------------------------------------
needs_nvcc = pytest.mark.skipif(sc.find_nvcc() is None, reason="needs nvcc")


def _profile(tmp_path, static_floats: int, dyn: str, optin: str = ""):
    path = tmp_path / "stage.cu"
    path.write_text(_KERNEL.format(static_floats=static_floats, dyn=dyn, optin=optin))
    model = parse_text(path.read_text(), "cuda", path=str(path))
    return static_profile(model, "stage", cache=CompileCache(tmp_path / "cache"), harness=None)


@needs_nvcc
def test_the_shared_line_reports_static_plus_dynamic_as_the_occupancy_counts_them(tmp_path) -> None:
    p = _profile(tmp_path, 256, "256 * sizeof(float)")
    static, dyn = p.shared_bytes, p.extra["dynamic_shared"]["bytes"]
    assert static == 256 * 4 and dyn == 256 * 4
    line = next(ln for ln in format_profile(p).splitlines() if ln.strip().startswith("shared"))
    launch = p.extra["dynamic_shared"]["line"]
    assert f"{static} bytes static + {dyn} dynamic (launch, line {launch})" in line
    lim = arch_limits("sm_90")
    alloc = p.extra["occupancy"]["smem_per_block"]
    assert alloc >= static + dyn + lim.smem_reserved_per_block and f"allocates {alloc}" in line


@needs_nvcc
def test_a_profile_over_48_kb_without_the_opt_in_says_it_cannot_launch(tmp_path) -> None:
    p = _profile(tmp_path, 4096, "48 * 1024")  # 16 KB static + 48 KB dynamic
    assert p.theoretical_occupancy is None and p.extra["occupancy"]["occupancy"] == 0
    assert p.warnings[0].startswith("cannot launch on sm_90") and "48 KB" in p.warnings[0]
    assert p.bottleneck.cls == "cannot-launch"


@needs_nvcc
def test_with_the_opt_in_the_same_launch_gets_its_occupancy(tmp_path) -> None:
    call = "    cudaFuncSetAttribute(stage, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn);"
    p = _profile(tmp_path, 4096, "48 * 1024", call)
    occ = p.extra["occupancy"]
    assert occ["cannot_launch"] == [] and p.theoretical_occupancy and p.theoretical_occupancy > 0
    assert occ["active_blocks_per_sm"] == arch_limits("sm_90").smem_per_sm // occ["smem_per_block"]
    assert p.extra["shared_optin"] and "cudaFuncSetAttribute" in p.extra["shared_optin"][0]["text"]


# -- one wording for the CLI and the editor -------------------------------------------------------------------------
@pytest.mark.parametrize(("static", "dyn", "expect"), [
    (0, {"bytes": 2048, "line": 40, "expr": "n * sizeof(float)"}, "0 bytes static + 2048 dynamic (launch, line 40)"),
    (512, {"bytes": None, "line": 12, "expr": "smem"}, "512 bytes static + dynamic `smem` (launch, line 12"),
    (768, {"bytes": 0, "line": 9, "expr": "0"}, "768 bytes"),
    (768, None, "768 bytes"),
])
def test_the_cli_and_the_editor_say_the_same_static_plus_dynamic(static, dyn, expect) -> None:
    from htam_core.editor import ProfileView, render
    from htam_core.editor.profiles import ProfileEntry
    from htam_core.types.profile import Profile

    extra = {"dynamic_shared": dyn} if dyn else {}
    p = Profile("k", mode="static", registers=16, shared_bytes=static, block_size=256, extra=extra)
    assert p.shared_text().startswith(expect)
    cli = next(ln for ln in format_profile(p).splitlines() if ln.strip().startswith("shared"))
    assert expect in cli
    md = "\n".join(render.profile_lines(ProfileView(ProfileEntry("/f.cu", "k", "h", profile=p), False, False)))
    assert f"shared {expect}" in md


@needs_nvcc
def test_an_opt_in_below_the_launch_s_dynamic_bytes_cannot_launch(tmp_path) -> None:
    call = "    cudaFuncSetAttribute(stage, cudaFuncAttributeMaxDynamicSharedMemorySize, 56 * 1024);"
    p = _profile(tmp_path, 4096, "60 * 1024", call)  # 16 KB static + 60 KB dynamic, opted in to 56 KB only
    assert p.theoretical_occupancy is None and p.bottleneck.cls == "cannot-launch"
    assert "61,440 B of dynamic shared memory > the 57,344 B the host opts the kernel in to" in p.warnings[0]
    assert f"line {p.extra['shared_optin'][0]['line']}" in p.warnings[0]


def test_opt_ins_in_a_cuda_string_get_file_lines_and_their_bytes() -> None:
    cuda = "void host() {\n  cudaFuncSetAttribute(stage, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024);\n}\n"
    found = shared_optins("x = 1\n", "stage", ["stage"], python=True, cuda_text=cuda, cuda_first_line=10)
    assert [(o.line, o.value, o.cuda) for o in found] == [(11, "96 * 1024", True)]
    assert cuda[found[0].byte:].startswith("cudaFuncSetAttribute")
