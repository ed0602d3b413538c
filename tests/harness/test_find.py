"""Harness discovery: KernelBench pairs, htam.toml specs, .cu programs; clear errors with snippets."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from htam_core.harness import Harness, HarnessError, find_harness
from htam_core.harness.cu_main import has_main

FIX = Path(__file__).resolve().parents[1] / "fixtures"
H = FIX / "harness"


def test_spec_launcher_table():
    h = find_harness(H / "spec" / "vadd.py", "vadd_kernel")
    assert h.kind == "spec" and h.language == "triton" and h.launcher == "vector_add"
    assert [i.name for i in h.inputs] == ["a", "b"] and h.sizes == [{"N": 1000}, {"N": 4099}]
    assert h.reference == "a + b" and h.bytes_expr == "3 * N * 4" and h.label() == "htam.toml"
    assert Harness.from_json(h.to_json()) == h


def test_spec_grid_table():
    h = find_harness(H / "spec" / "vadd.py", "vadd_half_kernel")
    assert h.grid == "(triton.cdiv(N, BLOCK),)" and h.args == ["a", "b", "c", "n"]
    assert h.outputs == ["c"] and h.kwargs == {"BLOCK": 128}
    assert h.inputs[3].is_scalar and h.inputs[2].is_output_buffer


def test_kernelbench_sibling_same_file_and_config():
    h = find_harness(H / "kb" / "kb_tri.py", "relu_plus_one")
    assert h.kind == "kernelbench" and h.reference_path.endswith("kb_tri_ref.py") and h.language == "triton"
    h2 = find_harness(H / "kb" / "kb_wrong.py", "x")
    assert h2.reference_path == h2.path and h2.source == "same file"
    h3 = find_harness(H / "kbcfg" / "cand.py", "x")
    assert h3.reference_path.endswith("refs/problem.py")


def test_kernelbench_corpus_load_inline_pair():
    h = find_harness(FIX / "corpus" / "kb_swish.py", "swish_fwd_kernel")
    assert h.kind == "kernelbench" and h.language == "cuda-in-python"


def test_kernelbench_without_reference_says_what_to_add():
    with pytest.raises(HarnessError) as ei:
        find_harness(H / "kb" / "kb_orphan.py", "x")
    msg = str(ei.value)
    assert "kb_orphan_ref.py" in msg and "get_inputs" in msg and "[kernelbench.\"kb_orphan.py\"]" in msg


def test_cu_program_with_main():
    assert has_main((FIX / "corpus" / "sgemm_naive.cu").read_text())
    assert not has_main("__global__ void k(float* x) { x[0] = 1; }\n")
    h = find_harness(FIX / "corpus" / "sgemm_naive.cu", "sgemm_naive")
    assert h.kind == "inferred" and h.language == "cuda" and h.uses_oracle  # read from main()


def test_cu_program_whose_sizes_need_argv_runs_whole(tmp_path):
    src = tmp_path / "argv_only.cu"
    src.write_text("#include <cstdlib>\n__global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) "
                   "y[i] = 1.0f; }\nint main(int argc, char** argv) {\n  int n = atoi(argv[1]);\n  float* d;\n"
                   "  cudaMalloc(&d, n * sizeof(float));\n  k<<<1, 256>>>(d, n);\n  return 0;\n}\n")
    h = find_harness(src, "k")
    assert h.kind == "cu-main"
    assert "cannot size `d` (line 6)" in h.notes[0] and "command-line argument with no default" in h.notes[0]


def test_missing_harness_has_paste_ready_snippet(tmp_path):
    src = tmp_path / "k.py"
    shutil.copy(FIX / "corpus" / "vector_add_small_block.py", src)
    with pytest.raises(HarnessError) as ei:
        find_harness(src, "vadd_kernel")
    e = ei.value
    assert "[kernel.vadd_kernel]" in str(e) and e.path.endswith("htam.toml")
    tomllib.loads(e.snippet)  # the snippet is valid TOML


@pytest.mark.parametrize("table, expect", [
    ('launcher = "vector_add"\ninputs = [{ name = "a", shape = [4] }]\nreference = "a"', "version"),
    ('version = 2\nlauncher = "vector_add"\ninputs = [{ name = "a", shape = [4] }]\nreference = "a"', "version = 1"),
    ('version = 1\ninputs = [{ name = "a", shape = [4] }]\nreference = "a"', "launcher"),
    ('version = 1\nlauncher = "vector_add"\nreference = "a"', "inputs"),
    ('version = 1\nlauncher = "vector_add"\ninputs = [{ name = "a", shape = [4], dtype = "f32" }]\nreference = "a"',
     "dtype"),
    ('version = 1\nlauncher = "vector_add"\ninputs = [{ name = "a", shape = [4] }]', "reference"),
    ('version = 1\nlauncher = "vector_add"\ninputs = [{ name = "a", shape = [4] }]\nreference = "a +"',
     "not a valid Python expression"),
    ('version = 1\nlauncher = "nope"\ninputs = [{ name = "a", shape = [4] }]\nreference = "a"', "not a top-level"),
    ('version = 1\nlauncher = "vector_add"\ninputs = [{ name = "a", shape = [4] }]\nreference = "a"\nbogus = 1',
     "unknown keys"),
    ('version = 1\ngrid = "(1,)"\nargs = ["a", "zz"]\ninputs = [{ name = "a", shape = [4] }]\nreference = "a"',
     "not an input"),
])
def test_broken_spec_errors_name_the_fix(tmp_path, table, expect):
    shutil.copy(H / "spec" / "vadd.py", tmp_path / "vadd.py")
    (tmp_path / "htam.toml").write_text(f"[kernel.vadd_kernel]\n{table}\n")
    with pytest.raises(HarnessError, match=expect):
        find_harness(tmp_path / "vadd.py", "vadd_kernel")


def test_invalid_toml_and_missing_file(tmp_path):
    shutil.copy(H / "spec" / "vadd.py", tmp_path / "vadd.py")
    (tmp_path / "htam.toml").write_text("[kernel.vadd_kernel\n")
    with pytest.raises(HarnessError, match="not valid TOML(.|\n)*harness infer"):
        find_harness(tmp_path / "vadd.py", "vadd_kernel")
    with pytest.raises(HarnessError, match="does not exist"):
        find_harness(tmp_path / "nope.py", "k")
