"""Running harnesses in a worker on the CPU: Triton under TRITON_INTERPRET=1, CUDA compile-only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from htam_core.harness import find_harness
from htam_core.harness.runner import mangled_entry
from htam_core.verify.run import verify_in_worker

FIX = Path(__file__).resolve().parents[1] / "fixtures"
H = FIX / "harness"
pytest.importorskip("triton")


def v(path, kernel, **kw):
    return verify_in_worker(find_harness(path, kernel), timeout_s=300, interpret=True, **kw)


def test_triton_launcher_spec_is_correct_under_interpreter():
    r = v(H / "spec" / "vadd.py", "vadd_kernel")
    assert r.correct and r.status == "correct" and r.verified_on == "interpreter"
    assert r.trials == 6 and r.max_abs_err == 0.0  # 5 seeds + the second input set


def test_unwritten_output_is_refused():
    r = v(H / "spec" / "vadd.py", "vadd_half_kernel")
    assert not r.correct and "unwritten-output" in r.refused_by and "never written" in r.messages[0]


def test_input_mutation_is_refused():
    r = v(H / "spec" / "vadd.py", "vadd_mutating_kernel")
    assert not r.correct and r.refused_by == ["input-mutated"] and "modified its input(s) a" in r.messages[0]


def test_kernelbench_triton_pair_and_wrong_pair():
    ok = v(H / "kb" / "kb_tri.py", "relu_plus_one")
    assert ok.correct and ok.verified_on == "interpreter" and ok.trials == 5
    bad = v(H / "kb" / "kb_wrong.py", "x")
    assert not bad.correct and bad.status == "incorrect" and "mismatch" in bad.refused_by


def test_caching_launcher_is_caught_by_fresh_seeds(tmp_path):
    shutil.copy(H / "spec" / "vadd.py", tmp_path / "vadd.py")
    toml = (H / "spec" / "htam.toml").read_text().replace('launcher = "vector_add"', 'launcher = "vector_add_cached"')
    (tmp_path / "htam.toml").write_text(toml)
    r = v(tmp_path / "vadd.py", "vadd_kernel")
    assert not r.correct and "mismatch" in r.refused_by


@pytest.mark.slow
def test_cuda_without_gpu_is_compile_only_unverified():
    if shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists():
        pytest.skip("nvcc not installed")
    r = v(FIX / "corpus" / "sgemm_naive.cu", "sgemm_naive")
    assert not r.correct and r.status == "unverified" and r.verified_on == "compile-only"
    kb = v(FIX / "corpus" / "kb_swish.py", "swish_fwd_kernel")
    assert not kb.correct and kb.status == "unverified" and kb.verified_on == "compile-only", kb


def test_broken_cuda_is_an_error(tmp_path):
    if shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists():
        pytest.skip("nvcc not installed")
    src = tmp_path / "bad.cu"
    src.write_text("__global__ void k(float* x) { x[0] = undefined_thing; }\nint main() { return 0; }\n")
    r = v(src, "k")
    assert r.status == "error" and "compile" in r.refused_by and any("undefined_thing" in m for m in r.messages)


def test_hanging_triton_kernel_times_out_and_next_verify_works(tmp_path):
    (tmp_path / "spin.py").write_text(
        "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def spin_kernel(x_ptr, n):\n    i = 0\n    while i >= 0:\n        i += 1\n    tl.store(x_ptr, i)\n\n\n"
        "def run(x):\n    spin_kernel[(1,)](x, 1)\n    return x\n")
    (tmp_path / "htam.toml").write_text(
        '[kernel.spin_kernel]\nversion = 1\nlauncher = "run"\n'
        'inputs = [{ name = "x", shape = [1], dtype = "float32", init = "zeros" }]\nreference = "x"\n')
    h = find_harness(tmp_path / "spin.py", "spin_kernel")
    verify_in_worker(find_harness(H / "spec" / "vadd.py", "vadd_kernel"), timeout_s=300, interpret=True)  # warm
    r = verify_in_worker(h, timeout_s=5, interpret=True)
    assert r.status == "error" and r.refused_by == ["timeout"]
    assert v(H / "spec" / "vadd.py", "vadd_kernel").correct


def test_mangled_entry_from_cubin_strtab():
    blob = b"\x00.text._Z11sgemm_naiveiiifPKfS0_fPf\x00.text.extern_k\x00.nv.info\x00"
    assert mangled_entry(blob, "sgemm_naive") == "_Z11sgemm_naiveiiifPKfS0_fPf"
    assert mangled_entry(blob, "extern_k") == "extern_k"
    with pytest.raises(Exception, match="not an entry"):
        mangled_entry(blob, "other")


def test_scratch_buffer_is_neither_output_nor_mutated_input():
    """Regression (GPU run of the suite's multi-pass reduction): a workspace the launcher writes was refused as
    'modified its input in place'. ``init = "scratch"`` declares it."""
    r = v(H / "scratch" / "two_pass_sum.py", "partial_sum_kernel")
    assert r.correct and r.status == "correct", r.messages


def test_reference_expression_may_build_tensors() -> None:
    """Regression: torch's C++ code imports modules through the caller's builtins, so a reference such as
    ``conv1d(x, torch.tensor([[[...]]]))`` failed with an internal assert when ``__import__`` was left out of
    the harness expressions' builtins (seen on the GPU with a stencil reference)."""
    from htam_core.harness.runner import _eval, _namespace

    ns = _namespace({"x": torch.arange(5.0)})
    expr = ("torch.nn.functional.conv1d(x.view(1, 1, -1), torch.tensor([[[0.25, 0.5, 0.25]]], device=x.device), "
            "padding=1).view(-1).tolist()")
    assert _eval(expr, ns, "htam.toml") == [0.25, 1.0, 2.0, 3.0, 2.75]
