"""Harnesses inferred from a ``.cu`` program's ``main()`` (htam_core.harness.infer_cuda) and the oracle rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.harness.base import Harness, HarnessError, InputSpec
from htam_core.harness.cu_launcher import shim_source
from htam_core.harness.cu_main import has_main
from htam_core.harness.find import find_harness
from htam_core.harness.infer_cuda import infer_cuda_harness, inferred_summary
from htam_core.source.api import load

FIX = Path(__file__).resolve().parents[1] / "fixtures"
ZC = FIX / "zeroconf"


def _inputs(h: Harness) -> dict[str, InputSpec]:
    return {i.name: i for i in h.inputs}


def test_define_sizes_and_in_out_output():
    h = infer_cuda_harness(ZC / "cu_saxpy_define.cu", "saxpy")
    assert h.kind == "inferred" and h.language == "cuda" and h.uses_oracle and h.reference is None
    assert h.oracle_path == str(ZC / "cu_saxpy_define.cu")
    assert (h.grid, h.block) == ("(16384, 1, 1)", "(256, 1, 1)")  # (N + BLOCK - 1) / BLOCK with N = 1 << 22
    assert h.args == ["n", "a", "x", "y"]
    ins = _inputs(h)
    assert ins["x"].shape == [1 << 22] and ins["x"].dtype == "float32" and ins["x"].init == "randn"
    assert ins["n"].value == "n" and h.sizes == [{"n": 1 << 22}]  # a size symbol: the static profile reads it
    assert ins["a"].value == 3.0 and ins["a"].dtype == "float32"
    # y is written and read (y = a*x + y) and main() copies host data into it first: an in-out output
    assert h.outputs == ["y"] and ins["y"].init == "randn"


def test_dim3_2d_launch_from_vectors():
    h = infer_cuda_harness(ZC / "cu_matadd_2d.cu", "mat_add")
    assert (h.grid, h.block) == ("(125, 188, 1)", "(16, 16, 1)")  # ceil(2000/16), ceil(3000/16)
    ins = _inputs(h)
    assert [ins[n].shape for n in ("A", "B", "C")] == [[6_000_000]] * 3
    assert h.outputs == ["C"] and ins["C"].init == "empty"  # never filled before the launch: write-only
    assert h.sizes == [{"rows": 3000, "cols": 2000}]


def test_argv_size_takes_its_default():
    h = infer_cuda_harness(ZC / "cu_scale_argv.cu", "scale")
    assert (h.grid, h.block) == ("(8192, 1, 1)", "(128, 1, 1)")
    ins = _inputs(h)
    assert "in_" in ins and ins["in_"].shape == [1 << 20]  # `in` is a Python keyword: renamed
    assert ins["factor"].value == 2.0 and h.outputs == ["out"]


def test_templated_kernel_behind_cpp_host_launcher():
    h = infer_cuda_harness(ZC / "cu_relu_template_launcher.cu", "relu_kernel")
    assert h.launcher == "act::relu" and h.grid is None  # the launch configuration stays in the code
    assert [i.name for i in h.inputs] == ["x", "y", "n"]  # the defaulted stream is not an input
    assert h.outputs == ["y"] and _inputs(h)["x"].shape == [5_000_000]
    shim = shim_source(ZC / "cu_relu_template_launcher.cu", h.launcher,
                       [None if not i.is_scalar else i.dtype for i in h.inputs])
    assert 'extern "C" void htam_shim_launch(void* a0, void* a1, int a2)' in shim
    assert "act::relu(HtamAnyPtr{a0}, HtamAnyPtr{a1}, a2, (cudaStream_t)0);" in shim


def test_sgemm_launcher_and_argc_branch():
    h = infer_cuda_harness(FIX / "corpus" / "sgemm_naive.cu", "sgemm_naive")
    assert h.launcher == "run_sgemm_naive"  # plain C++ function: no extern "C"
    ins = _inputs(h)
    assert h.sizes == [{"M": 1024, "N": 1024, "K": 1024}]  # `if (argc == 4)` is false without arguments
    assert ins["beta"].value == 0.5 and h.outputs == ["dC"] and ins["dC"].init == "randn"


def test_launch_in_timing_helper_is_a_direct_launch():
    h = infer_cuda_harness(FIX / "corpus" / "transpose_naive.cu", "transpose_naive")
    assert h.launcher is None and (h.grid, h.block) == ("(64, 128, 1)", "(32, 32, 1)")
    assert any("time_kernel" in n and "line 81" in n for n in h.notes)  # the call that takes the branch


def test_corpus_inference_rate():
    """At least 80% of the kernels launched by ordinary programs with main() get an inferred harness."""
    files = sorted(ZC.glob("cu_*.cu")) + sorted((FIX / "corpus").glob("*.cu"))
    results: dict[str, str | None] = {}
    for f in files:
        text = f.read_text()
        if not has_main(text):
            continue
        model = load(f)
        for k in model.kernels:
            if not k.launch_sites:
                continue
            try:
                infer_cuda_harness(f, k.name, model)
                results[f"{f.name}:{k.name}"] = None
            except HarnessError as e:
                assert e.message.strip(), f"empty message for {f.name}:{k.name}"
                results[f"{f.name}:{k.name}"] = e.message
    assert len({key.split(":")[0] for key in results}) >= 9
    inferred = [k for k, v in results.items() if v is None]
    assert len(inferred) / len(results) >= 0.8, results


def test_messages_name_what_is_missing(tmp_path):
    src = tmp_path / "argv.cu"
    src.write_text("#include <cstdlib>\n__global__ void k(float* y, int n) { y[threadIdx.x] = n; }\n"
                   "int main(int argc, char** argv) {\n  int n = atoi(argv[1]);\n  size_t bytes = n * 4;\n"
                   "  float* d_out;\n  cudaMalloc(&d_out, bytes);\n  k<<<1, 32>>>(d_out, n);\n}\n")
    with pytest.raises(HarnessError) as ei:
        infer_cuda_harness(src, "k")
    msg = ei.value.message
    assert "cannot size `d_out` (line 7)" in msg and "cudaMalloc size `bytes`: `atoi(argv[1])`" in msg
    assert "atoi(argv[1])` (line 4) depends on a command-line argument with no default" in msg
    src.write_text("__global__ void k(float* y) { y[0] = 1; }\nvoid helper(float* y) { k<<<1, 1>>>(y); }\n"
                   "int main() { return 0; }\n")
    with pytest.raises(HarnessError, match=r"launched in `helper`, which main\(\) does not call"):
        infer_cuda_harness(src, "k")
    src.write_text("__global__ void k(const float* x, float* y) { y[0] = x[0]; }\nint main() {\n"
                   "  float* d; cudaMalloc(&d, 64);\n  k<<<1, 1>>>(d, d);\n}\n")
    with pytest.raises(HarnessError, match=r"`x` and `y` of k are the same buffer `d`"):
        infer_cuda_harness(src, "k")


def test_find_prefers_spec_then_inference(tmp_path):
    src = tmp_path / "cu_saxpy_define.cu"
    shutil.copy(ZC / "cu_saxpy_define.cu", src)
    h = find_harness(src, "saxpy")
    assert h.kind == "inferred" and h.label() == "inferred" and "main() of cu_saxpy_define.cu" in h.source
    assert "oracle: the starting kernel" in inferred_summary(h)
    (tmp_path / "htam.toml").write_text(
        '[kernel.saxpy]\nversion = 1\ngrid = "(cdiv(n, 256),)"\nblock = 256\nargs = ["n", "a", "x", "y"]\n'
        'inputs = [{ name = "n", dtype = "int32", value = 1024 }, { name = "a", dtype = "float32", value = 2.0 },\n'
        '  { name = "x", shape = [1024] }, { name = "y", shape = [1024] }]\noutputs = ["y"]\n'
        'reference = "a * x + y"\n')
    assert find_harness(src, "saxpy").kind == "spec"


def test_no_gpu_says_not_verified(tmp_path):
    from htam_core.verify.run import verify_harness

    h = infer_cuda_harness(ZC / "cu_scale_argv.cu", "scale")
    res = verify_harness(h.to_json())
    if res["verified_on"] == "gpu":
        pytest.skip("a GPU is present: the gpu test covers this")
    assert res["status"] == "unverified" and not res["correct"]
    assert res["messages"][0].startswith("not verified: no GPU")


_START = """import torch

def launch(x, out):
    out.copy_(torch.sin(x) * 2.0)
"""


@pytest.mark.parametrize(("candidate", "correct"), [
    (_START, True),
    (_START.replace("* 2.0", "* 2.0 + 1e-2"), False),  # changed arithmetic: refused under the oracle rule
])
def test_oracle_rule_on_cpu(tmp_path, candidate, correct):
    """The oracle plumbing with a Python launcher (runs on the CPU): candidate vs the starting kernel."""
    from htam_core.verify.run import verify_harness

    start = tmp_path / "start.py"
    start.write_text(_START)
    cand = tmp_path / "cand.py"
    cand.write_text(candidate)
    h = Harness(kind="inferred", path=str(cand), kernel="launch", language="python", launcher="launch",
                inputs=[InputSpec("x", shape=[4096]), InputSpec("out", shape=[4096], init="empty")],
                outputs=["out"], oracle_path=str(start))
    res = verify_harness(h.to_json())
    assert res["correct"] is correct, res["messages"]
    if not correct:
        assert res["status"] == "incorrect"


def _verify_gpu(h: Harness) -> dict:
    from htam_core.verify.run import verify_harness

    return verify_harness(h.to_json())


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "kernel", "old", "new"), [
    ("cu_saxpy_define.cu", "saxpy", "a * x[i] + y[i]", "a * x[i] - y[i]"),
    ("cu_matadd_2d.cu", "mat_add", "A[row * cols + col] + B", "A[row * cols + col] * B"),
    ("cu_relu_template_launcher.cu", "relu_kernel", "x[i] : T(0)", "x[i] : T(0.01) * x[i]"),
])
def test_wrong_candidate_refused_on_gpu(tmp_path, name, kernel, old, new):
    start = tmp_path / name
    shutil.copy(ZC / name, start)
    h = find_harness(start, kernel)
    assert h.kind == "inferred"
    same = tmp_path / "same" / name
    same.parent.mkdir()
    shutil.copy(start, same)
    import dataclasses

    ok = _verify_gpu(dataclasses.replace(h, path=str(same)))
    assert ok["correct"], ok["messages"]
    assert any("matched" in m for m in ok["messages"])
    wrong = tmp_path / "wrong" / name
    wrong.parent.mkdir()
    text = start.read_text()
    assert old in text
    wrong.write_text(text.replace(old, new))
    bad = _verify_gpu(dataclasses.replace(h, path=str(wrong)))
    assert not bad["correct"] and bad["status"] == "incorrect", bad["messages"]


@pytest.mark.parametrize(("name", "kernel"), [("cu_saxpy_define.cu", "saxpy"),
                                              ("cu_relu_template_launcher.cu", "relu_kernel")])
def test_saved_table_round_trips_through_the_spec(tmp_path, name, kernel):
    """The inferred harness saved to htam.toml parses back to the same harness (no reference: the oracle)."""
    import tomllib

    from htam_core.harness.infer_cuda import harness_table

    src = tmp_path / name
    shutil.copy(ZC / name, src)
    inferred = infer_cuda_harness(src, kernel)
    (tmp_path / "htam.toml").write_text(harness_table(inferred))
    tomllib.loads(harness_table(inferred))
    h = find_harness(src, kernel)
    assert h.kind == "spec" and h.uses_oracle and h.oracle_path == str(src.resolve())
    assert [(i.name, i.dtype, i.shape, i.init, i.value) for i in h.inputs] == \
        [(i.name, i.dtype, i.shape, i.init, i.value) for i in inferred.inputs]
    assert (h.launcher, h.grid, h.block, h.args, h.outputs, h.sizes) == \
        (inferred.launcher, inferred.grid, inferred.block, inferred.args, inferred.outputs, inferred.sizes)


def test_candidate_launch_configuration_is_read_from_its_main(tmp_path):
    """An inferred direct launch follows the candidate's retuned block size; the start keeps its own."""
    import dataclasses

    from htam_core.harness.runner import relaunched

    start = tmp_path / "start" / "cu_scale_argv.cu"
    start.parent.mkdir()
    shutil.copy(ZC / "cu_scale_argv.cu", start)
    h = infer_cuda_harness(start, "scale")
    cand = tmp_path / "cand" / "cu_scale_argv.cu"
    cand.parent.mkdir()
    cand.write_text(start.read_text().replace("int threads = 128;", "int threads = 512;"))
    moved = relaunched(dataclasses.replace(h, path=str(cand)))
    assert (moved.grid, moved.block) == ("(2048, 1, 1)", "(512, 1, 1)")
    assert (relaunched(h).grid, relaunched(h).block) == ("(8192, 1, 1)", "(128, 1, 1)")
    spec_like = dataclasses.replace(h, kind="spec", path=str(cand))
    assert relaunched(spec_like).block == "(128, 1, 1)"  # a grid from htam.toml is kept


@pytest.mark.parametrize(("path", "kernel"), [(FIX / "corpus" / "sgemm_naive.cu", "sgemm_naive"),
                                              (ZC / "cu_relu_template_launcher.cu", "relu_kernel")])
def test_cpp_host_launcher_binds_through_the_shim(tmp_path, monkeypatch, path, kernel):
    """A C++ launcher (mangled, namespaced, default stream argument) is bound through the extern "C" shim.

    Building and loading the shared library needs nvcc but no GPU; nothing is launched here."""
    from htam_core.harness.cu_launcher import host_launcher
    from htam_core.harness.cu_main import find_nvcc

    if find_nvcc() is None:
        pytest.skip("nvcc not found")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    h = infer_cuda_harness(path, kernel)
    assert h.launcher is not None
    bind = host_launcher(path, h.launcher, "sm_90", [i.dtype if i.is_scalar else None for i in h.inputs])
    assert callable(bind)
    assert list((tmp_path / "cache").rglob("shim-*.cu")), "the C++ name was not called through a shim"


@pytest.mark.parametrize(("path", "kernel"), [(ZC / "cu_saxpy_define.cu", "saxpy"),
                                              (ZC / "cu_matadd_2d.cu", "mat_add"),
                                              (FIX / "corpus" / "reduce_sum_smem.cu", "block_sum_interleaved")])
def test_direct_launch_kernel_is_an_entry_of_the_compiled_program(tmp_path, path, kernel):
    """A direct launch compiles the whole program (host code and all) to a cubin and finds the kernel's
    mangled entry there, as the GPU runner does; needs nvcc, not a GPU."""
    import subprocess

    from htam_core.harness.cu_main import find_nvcc
    from htam_core.harness.runner import mangled_entry

    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found")
    h = infer_cuda_harness(path, kernel)
    assert h.grid is not None and h.launcher is None
    out = tmp_path / "k.cubin"
    proc = subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-O3", str(path), "-o", str(out)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert mangled_entry(out.read_bytes(), h.kernel).startswith(("_Z", kernel))


def test_every_fixture_file_gives_a_harness_or_one_clear_error():
    """No .cu file of the test fixtures makes inference raise anything but a HarnessError with a message."""
    files = sorted(FIX.rglob("*.cu"))
    assert len(files) >= 20
    for f in files:
        text = f.read_text(errors="replace")
        model = load(f)
        for k in model.kernels:
            try:
                infer_cuda_harness(f, k.name, model, text)
            except HarnessError as e:
                assert e.message.strip() and "\n" not in e.message.strip(), (f, k.name, e.message)


def test_local_header_defines_and_inline_functions_are_read(tmp_path):
    (tmp_path / "helpers.h").write_text("#pragma once\n#define TILE 16\n"
                                        "__host__ __device__ inline int ceil_div(int a, int b) "
                                        "{ return (a + b - 1) / b; }\n")
    src = tmp_path / "sqmat.cu"
    src.write_text('#include <cstdio>\n#include "helpers.h"\n'
                   "__global__ void sq_mat(const float* a, float* b, int rows, int cols) {\n"
                   "  int r = blockIdx.y * TILE + threadIdx.y, c = blockIdx.x * TILE + threadIdx.x;\n"
                   "  if (r < rows && c < cols) b[r * cols + c] = a[r * cols + c] * a[r * cols + c];\n}\n"
                   "int main() {\n  int rows = 1024, cols = 2048;\n  float *a, *b;\n"
                   "  cudaMalloc(&a, rows * cols * sizeof(float));\n  cudaMalloc(&b, rows * cols * sizeof(float));\n"
                   "  dim3 block(TILE, TILE);\n  dim3 grid(ceil_div(cols, TILE), ceil_div(rows, TILE));\n"
                   "  sq_mat<<<grid, block>>>(a, b, rows, cols);\n  return 0;\n}\n")
    h = infer_cuda_harness(src, "sq_mat")
    assert "grid (128, 64, 1), block (16, 16, 1)" in inferred_summary(h)
    (tmp_path / "helpers.h").unlink()  # without the header the launch cannot be read, and the program
    found = find_harness(src, "sq_mat")  # run whole says why in its one line
    assert found.kind == "cu-main"
    line = found.description()
    assert "run whole (timed, not checked)" in line and "cannot read the launch configuration of sq_mat" in line
    assert "\n" not in line


@pytest.mark.parametrize(("query", "grid"), [
    ("cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);", "(sm_count * 8, 1, 1)"),
    ("CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));", "(sm_count * 8, 1, 1)"),
    ("cudaOccupancyMaxActiveBlocksPerMultiprocessor(&sms, k, 256, 0);", "(blocks_per_sm(256, 0) * 8, 1, 1)"),
    ("query_sms(&sms);", None),
])
def test_a_value_set_through_its_address_is_not_its_initializer(tmp_path, query, grid):
    # `int sms = 0;` then a runtime query writes it: the grid is not 0 * 8 (a zero grid timed as a kernel)
    src = tmp_path / "sms.cu"
    src.write_text("#define CHECK(x) (x)\n__global__ void k(float* y, int n) {\n"
                   "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = 1;\n"
                   "}\nint main() {\n  int n = 1 << 20;\n  float* d; cudaMalloc(&d, n * sizeof(float));\n"
                   f"  int sms = 0;\n  {query}\n  k<<<sms * 8, 256>>>(d, n);\n}}\n")
    if grid is not None:  # the SM count (the occupancy) is read again on the device that runs the harness
        assert infer_cuda_harness(src, "k").grid == grid
    else:
        with pytest.raises(HarnessError, match=r"`sms` is set at run time by \w+\(\) \(line 9\)"):
            infer_cuda_harness(src, "k")
    src.write_text(src.read_text().replace(query, "sms = 132;"))
    assert infer_cuda_harness(src, "k").grid == "(1056, 1, 1)"


STRUCT_ARG = """struct Weights { float wa, wb; };
__global__ void wsum2(const float *a, const float *b, float *out, Weights w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = w.wa * a[i] + w.wb * b[i];
}
int main() {
  const int n = 1 << 12;
  float *a, *b, *out;
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMalloc(&out, n * 4);
  INIT
  wsum2<<<(n + 255) / 256, 256>>>(a, b, out, w, n);
  return 0;
}
"""


@pytest.mark.parametrize("init", ["Weights w = {0.5f, 0.25f};", "Weights w{0.5f, 0.25f};",
                                  "Weights w; w.wa = 0.5f; w.wb = 0.25f;"])
def test_a_struct_passed_by_value_is_named_as_one(tmp_path, init):
    """Regression (a new user's report): a struct argument built by brace initialization was read as a dim3
    ("gets Dim3(x=0, y=0, z=1), not a number"); the struct is now passed as its fields, valued as main() sets them."""
    src = tmp_path / "wsum.cu"
    src.write_text(STRUCT_ARG.replace("INIT", init))
    h = infer_cuda_harness(src, "wsum2")
    values = {i.name: i.value for i in h.inputs if i.is_scalar}
    assert values["w__wa"] == 0.5 and values["w__wb"] == 0.25 and "w" in h.args, values
    assert not any("Dim3" in n for n in h.notes), h.notes
