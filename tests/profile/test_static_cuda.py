"""Static CUDA profiles of the corpus: registers and shared memory agree with ptxas's own report
(nvcc run independently here), broken kernels give a clear error, repeated profiles hit the cache."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from htam_core.profile import static_cuda as sc
from htam_core.profile.api import profile_kernel, static_profile
from htam_core.runtime.cache import CompileCache
from htam_core.source import load, parse_text
from htam_core.types.errors import ProfileError

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
CU_CASES = [(e["file"], k["name"]) for e in MANIFEST if e["compiles"] and e["file"].endswith(".cu")
            for k in e["kernels"]]
PY_CUDA_CASES = [(e["file"], k["name"]) for e in MANIFEST if e["language"] == "kernelbench-cuda"
                 for k in e["kernels"]]

pytestmark = pytest.mark.skipif(sc.find_nvcc() is None, reason="needs nvcc")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("htam-cache")


@pytest.fixture(scope="module")
def profiles(cache_dir):
    """Static profiles of every compiling CUDA kernel of the corpus, compiled once per module."""
    cache = CompileCache(cache_dir)
    out = {}
    for f, k in CU_CASES + PY_CUDA_CASES:
        out[(f, k)] = profile_kernel(CORPUS / f, k, static=True, cache=cache)
    return out


def _independent_ptxas(path: Path) -> dict[str, tuple[int, int]]:
    """{symbol: (registers, smem)} from nvcc's own -Xptxas -v output, parsed here on its own."""
    proc = subprocess.run([sc.find_nvcc(), "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o", "/dev/null", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, tuple[int, int]] = {}
    current = None
    for line in (proc.stdout + proc.stderr).splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            current = m.group(1)
        m = re.search(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?", line)
        if m and current:
            out[current] = (int(m.group(1)), int(m.group(2) or 0))
    return out


@pytest.mark.parametrize(("fname", "kernel"), CU_CASES)
def test_cu_file_matches_ptxas(profiles, fname, kernel):
    p = profiles[(fname, kernel)]
    ref = _independent_ptxas(CORPUS / fname)
    # the symbol contains the kernel name as a length-prefixed identifier (Itanium) or verbatim
    mine = {s: v for s, v in ref.items() if f"{len(kernel)}{kernel}" in s or s == kernel}
    assert mine, f"no entry for {kernel} in {list(ref)}"
    assert p.registers == max(r for r, _ in mine.values())
    assert p.shared_bytes == max(s for _, s in mine.values())
    assert p.mode == "static" and p.time_ms is None and p.sol is None and p.achieved_occupancy is None
    assert p.bandwidth_bytes_per_s is None and p.roofline_fraction is None
    assert len(p.extra["instantiations"]) == len(mine)


def test_known_values(profiles):
    red = profiles[("reduce_sum_smem.cu", "block_sum_interleaved")]
    assert red.shared_bytes == 256 * 4  # __shared__ float sdata[THREADS]
    assert red.block_size == 256  # THREADS from #define
    sg = profiles[("sgemm_naive.cu", "sgemm_naive")]
    assert sg.block_size == 256  # dim3 block(16, 16)
    fwd = profiles[("bias_gelu_templates.cu", "bias_gelu_fwd")]
    assert fwd.block_size == 128  # dim3 block(kBlock), constexpr int kBlock = 128 in its launcher
    grad = profiles[("bias_gelu_templates.cu", "bias_grad_colsum")]
    assert grad.block_size == 256 and grad.extra["dynamic_shared_bytes"] == 1024  # kBlock * sizeof(float)
    assert {i["name"].split("<")[1].split(",")[0] for i in fwd.extra["instantiations"]} == {"float", "__half"}
    assert all(0 < p.theoretical_occupancy <= 1 for p in profiles.values())


@pytest.mark.parametrize(("fname", "kernel"), PY_CUDA_CASES)
def test_cuda_in_python_kernel_only(profiles, fname, kernel):
    p = profiles[(fname, kernel)]
    assert p.extra["compile"]["mode"] == "kernel-only"
    assert p.block_size == 256  # const int threads/block_size = 256 in the host function
    # independent: nvcc on the kernel's own text (from the source model) gives the same registers
    model = load(CORPUS / fname)
    k = model.kernel(kernel)
    unit = "#include <cstdint>\n#include <cuda_runtime.h>\n" + k.text
    tmp = Path(f"/tmp/htam-test-{kernel}.cu")
    tmp.write_text(unit)
    ref = _independent_ptxas(tmp)
    assert p.registers == max(r for r, _ in ref.values())


def test_complete_kernel_of_a_broken_file_compiles_without_the_half_typed_one(cache_dir):
    # the half-typed kernel and its launch in main() are blanked out for the compile (source.without_incomplete),
    # so axpby compiles and nothing of row_l2_normalize is quoted as an error of axpby (it was: "identifier
    # row_l2_normalize is undefined" at its launch)
    p = profile_kernel(CORPUS / "broken_partial_kernels.cu", "axpby", static=True, cache=CompileCache(cache_dir))
    assert p.registers is not None
    assert not any("error" in w for w in p.warnings), p.warnings
    assert any("half-typed kernel(s) row_l2_normalize" in w for w in p.warnings)


def test_unknown_kernel_and_missing_file(cache_dir):
    with pytest.raises(ProfileError, match="no kernel named 'nope'"):
        profile_kernel(CORPUS / "sgemm_naive.cu", "nope", static=True)
    with pytest.raises(ProfileError, match="no such file"):
        profile_kernel(CORPUS / "missing.cu", "k", static=True)


def test_second_profile_does_not_invoke_nvcc(tmp_path, monkeypatch):
    src = "__global__ void scale(float* x, float a, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n" \
          "  if (i < n) x[i] *= a;\n}\nvoid run(float* x, int n) { scale<<<(n + 127) / 128, 128>>>(x, 2.f, n); }\n"
    model = parse_text(src, "cuda", path=str(tmp_path / "scale.cu"))
    cache = CompileCache(tmp_path / "cache")
    first = static_profile(model, "scale", cache=cache)
    assert first.extra["compile"]["cached"] is False and first.block_size == 128

    def boom(*a, **k):
        raise AssertionError("nvcc must not run on a cache hit")

    monkeypatch.setattr(sc.subprocess, "run", boom)
    second = static_profile(model, "scale", cache=CompileCache(tmp_path / "cache"))
    assert second.extra["compile"]["cached"] is True
    assert (second.registers, second.shared_bytes, second.spill_bytes) == (first.registers, first.shared_bytes,
                                                                         first.spill_bytes)
    # a changed source or target misses
    with pytest.raises(AssertionError, match="must not run"):
        static_profile(model, "scale", target="sm_80", cache=CompileCache(tmp_path / "cache"))


def test_parse_ptxas_and_demangle():
    log = """ptxas info    : Compiling entry function '_ZN3mlp13bias_gelu_fwdIfLi128ELi4EEEvPKT_S3_PS1_i' for 'sm_90'
ptxas info    : Function properties for _ZN3mlp13bias_gelu_fwdIfLi128ELi4EEEvPKT_S3_PS1_i
    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]
"""
    (e,) = sc.parse_ptxas_verbose(log)
    assert (e.registers, e.spill_bytes, e.stack_bytes, e.shared_bytes, e.cmem_bytes, e.barriers) == (
        255, 28, 8, 4096, {"0": 380}, 1)
    names = sc.demangle([e.mangled])
    assert sc.entry_base_name(names[e.mangled]) == "bias_gelu_fwd"
    assert sc.entry_base_name("vadd_kernel") == "vadd_kernel"
    assert sc.entry_base_name("void ns::k<(anonymous namespace)::T, 4>(int (*)(int))") == "k"


def test_const_expr_resolution():
    src = "#define T 64\nnamespace n { constexpr int kB = 2 * T; }\nvoid f() { dim3 b(kB, 2); int x = 0; }\n"
    at = src.index("int x")
    assert sc.eval_const_expr(src, "b", at) == 256
    assert sc.eval_const_expr(src, "T * sizeof(float)") == 256
    assert sc.eval_const_expr(src, "n_runtime * 2") is None
