"""A kernel taking a struct by value (``Weights w = {0.5f, 0.25f};`` passed to the launch): a struct of numbers is
passed as one scalar input per field (``w__wa``), valued as main() sets it, a pointer field as the buffer main()
points it at, and a generated shim builds the struct for the launch; a struct htam cannot pass (a ``void*``, a
``std::vector``, a union) is refused in one line that names the struct, the field and the way out, and the program
then runs whole."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.harness.cu_struct_launch import struct_shim_source
from htam_core.harness.find import find_harness
from htam_core.harness.infer_cuda import harness_table, infer_cuda_harness
from htam_core.harness.spec import parse_kernel_table
from htam_core.harness.template import write_template
from htam_core.source import load

TRIAL = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "trial"
NVCC = shutil.which("nvcc")

#: spelling -> (the struct's declaration, main()'s value for `w`, the parameter's type, expected field values)
KERNELS = {
    "brace": ("struct Weights { float wa, wb; };", "Weights w = {0.5f, 0.25f};", "Weights",
              {"w__wa": 0.5, "w__wb": 0.25}),
    "list_init": ("struct Weights { float wa, wb; };", "Weights w{0.5f, 0.25f};", "Weights",
                  {"w__wa": 0.5, "w__wb": 0.25}),
    "short_brace": ("struct Weights { float wa, wb; };", "Weights w = {3.0f};", "Weights",
                    {"w__wa": 3.0, "w__wb": 0.0}),
    "designated": ("struct Weights { float wa, wb; };", "Weights w = {.wa = 2.0f, .wb = 0.75f};", "Weights",
                   {"w__wa": 2.0, "w__wb": 0.75}),
    "typedef_fields": ("typedef struct { float wa, wb; } Weights;", "Weights w; w.wa = 0.5f; w.wb = 0.25f;",
                       "Weights", {"w__wa": 0.5, "w__wb": 0.25}),
    "class": ("class Weights { public: float wa, wb; };", "Weights w; w.wa = 1.5f; w.wb = 2.5f;", "Weights",
              {"w__wa": 1.5, "w__wb": 2.5}),
    "c_style": ("typedef struct Weights { double wa; float wb; } Weights;",
                "struct Weights w = {1.5, 0.5f};", "struct Weights", {"w__wa": 1.5, "w__wb": 0.5}),
    "nested_float3": ("struct Pair { float wa; int k; };\nstruct Weights { Pair p; float3 v; float wb; };",
                      "Weights w = {{0.5f, 3}, {1.0f, 2.0f, 4.0f}};\n  w.wb = 0.125f;", "Weights",
                      {"w__p__wa": 0.5, "w__p__k": "w__p__k", "w__v__x": 1.0, "w__v__y": 2.0, "w__v__z": 4.0,
                       "w__wb": 0.125}),
    "array_field": ("struct Weights { float c[3]; unsigned int n; };", "Weights w = {{1.0f, 2.0f}, 7u};\n"
                    "  w.c[2] = 5.0f;", "Weights",
                    {"w__c__0": 1.0, "w__c__1": 2.0, "w__c__2": 5.0, "w__n": "w__n"}),
}
#: the kernel's use of `w` per spelling (every field the struct has is read)
USES = {"nested_float3": "w.p.wa * a[i] + w.wb * b[i] + w.v.x + w.v.y + w.v.z + w.p.k",
        "array_field": "w.c[0] * a[i] + w.c[1] * b[i] + w.c[2] + w.n"}

BODY = """{decl}
__global__ void wsum2(const float *a, const float *b, float *out, {ty} w, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = {use};
}}
int main() {{
  const int n = 4096;
  float *a, *b, *out;
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMalloc(&out, n * 4);
  {value}
  wsum2<<<(n + 255) / 256, 256>>>(a, b, out, w, n);
  return 0;
}}
"""


def _kernel(which: str, decl: str | None = None) -> str:
    d, value, ty, _ = KERNELS[which]
    return BODY.format(decl=d if decl is None else decl, value=value, ty=ty,
                       use=USES.get(which, "w.wa * a[i] + w.wb * b[i]"))


def _compile(source: str, tmp_path: Path) -> None:
    """Build a shim as htam does (``nvcc -shared -Xcompiler -fPIC``), without running it."""
    shim = tmp_path / "shim.cu"
    shim.write_text(source)
    p = subprocess.run([NVCC or "nvcc", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-std=c++17", str(shim),
                        "-o", str(tmp_path / "shim.so")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]


@pytest.mark.parametrize("which", sorted(KERNELS))
def test_a_struct_of_numbers_is_passed_as_its_fields(tmp_path: Path, which: str) -> None:
    p = tmp_path / f"{which}.cu"
    p.write_text(_kernel(which))
    h = infer_cuda_harness(p, "wsum2")
    expected = KERNELS[which][3]
    got = {i.name: i.value for i in h.inputs if i.name.startswith("w__")}
    assert got == expected, got
    assert h.args == ["a", "b", "out", "w", "n"] and h.outputs == ["out"]
    ints = {k for k, v in expected.items() if isinstance(v, str)}
    assert ints <= set(h.sizes[0]) and all(isinstance(h.sizes[0][k], int) for k in ints), h.sizes


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("which", ["brace", "typedef_fields", "c_style", "nested_float3", "array_field"])
def test_the_shim_that_builds_the_struct_compiles(tmp_path: Path, which: str) -> None:
    p = tmp_path / f"{which}.cu"
    p.write_text(_kernel(which))
    shim = struct_shim_source(p, infer_cuda_harness(p, "wsum2"))
    assert shim.order[:3] == ("a", "b", "out") and shim.order[-1] == "n"
    assert set(shim.order[3:-1]) == set(KERNELS[which][3])
    _compile(shim.source, tmp_path)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_a_struct_defined_in_a_local_header(tmp_path: Path) -> None:
    (tmp_path / "params.h").write_text("#pragma once\nstruct Weights { float wa; int k; float wb; };\n")
    p = tmp_path / "header.cu"
    p.write_text(BODY.format(decl='#include "params.h"', value="Weights w = {0.5f, 2, 0.25f};", ty="Weights",
                             use="w.wa * a[i] + w.wb * b[i] * w.k"))
    h = infer_cuda_harness(p, "wsum2")
    assert [i.name for i in h.inputs if i.name.startswith("w__")] == ["w__wa", "w__k", "w__wb"]
    assert h.sizes[0]["w__k"] == 2
    shim = struct_shim_source(p, h).source
    _compile(shim, tmp_path)
    (tmp_path / "params.h").write_text("#pragma once\n#define SCALE 2\nstruct Weights { float wa; int k; float wb; };\n")
    assert struct_shim_source(p, h).source != shim  # an edited header makes a new shim (never a stale build)


@pytest.mark.parametrize("literal", ["Weights{0.5f, 0.25f}", "(Weights){0.5f, 0.25f}"])
def test_a_struct_written_in_the_launch_is_read(tmp_path: Path, literal: str) -> None:
    p = tmp_path / "literal.cu"
    p.write_text(_kernel("brace").replace("Weights w = {0.5f, 0.25f};", "").replace("out, w, n)", f"out, {literal}, n)"))
    h = infer_cuda_harness(p, "wsum2")
    assert {i.name: i.value for i in h.inputs if i.name.startswith("w__")} == {"w__wa": 0.5, "w__wb": 0.25}


def test_a_struct_made_by_a_function_gets_defaults_and_a_todo(tmp_path: Path) -> None:
    p = tmp_path / "made.cu"
    p.write_text(_kernel("brace").replace("Weights w = {0.5f, 0.25f};", "Weights w = make_weights();").replace(
        "int main() {", "Weights make_weights();\nint main() {"))
    h = infer_cuda_harness(p, "wsum2")
    assert {i.name: i.value for i in h.inputs if i.name.startswith("w__")} == {"w__wa": 1.0, "w__wb": 1.0}
    assert any(n.startswith("TODO: main() sets no value htam reads for `w.wa` (w__wa), `w.wb` (w__wb)")
               for n in h.notes), h.notes


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_a_struct_in_a_namespace_is_declared_as_the_kernel_spells_it(tmp_path: Path) -> None:
    p = tmp_path / "ns.cu"
    p.write_text(BODY.format(decl="namespace cfg { struct Weights { float wa, wb; }; }",
                             value="cfg::Weights w = {0.5f, 0.25f};", ty="cfg::Weights",
                             use="w.wa * a[i] + w.wb * b[i]"))
    h = infer_cuda_harness(p, "wsum2")
    assert {i.name: i.value for i in h.inputs if i.name.startswith("w__")} == {"w__wa": 0.5, "w__wb": 0.25}
    shim = struct_shim_source(p, h)
    assert "cfg::Weights s3{};" in shim.source
    _compile(shim.source, tmp_path)


def test_a_field_main_leaves_unset_gets_a_default_and_a_todo(tmp_path: Path) -> None:
    p = tmp_path / "partial.cu"
    p.write_text(BODY.format(decl="struct Weights { float wa, wb; };", value="Weights w; w.wa = 0.5f;",
                             ty="Weights", use="w.wa * a[i] + w.wb * b[i]"))
    h = infer_cuda_harness(p, "wsum2")
    assert {i.name: i.value for i in h.inputs if i.name.startswith("w__")} == {"w__wa": 0.5, "w__wb": 1.0}
    table = harness_table(h)
    todo = [ln for ln in table.splitlines() if "TODO" in ln]
    assert len(todo) == 1 and "`w.wb` (w__wb)" in todo[0] and "w.wa" not in todo[0], todo
    assert '{ name = "w__wb", dtype = "float32", value = 1.0 }' in table


@pytest.mark.parametrize(("decl", "value", "field"), [
    ("struct Weights { float wa, wb; void *ctx; };", "Weights w = {0.5f, 0.25f, nullptr};",
     "`Weights`'s field `ctx` is a pointer to `void`, not to numbers"),
    ("struct Weights { float wa, wb; float **rows; };", "Weights w = {0.5f, 0.25f};",
     "`Weights`'s field `rows` is a pointer to pointers"),
    ("#include <vector>\nstruct Weights { float wa, wb; std::vector<float> extra; };", "Weights w;",
     "`Weights`'s field `extra` is a `vector<float>`"),
    ("union Weights { float wa; int bits; };", "Weights w; w.wa = 1.0f;", "`Weights` is a union"),
    ("struct Inner { int k; float &r; };\nstruct Weights { float wa, wb; Inner in; };", "Weights w = {1.0f, 2.0f};",
     "`Weights`'s field `in`'s field `r` is a reference"),
])
def test_a_struct_htam_cannot_pass_as_numbers_is_refused_in_one_line(tmp_path: Path, decl: str, value: str,
                                                                     field: str) -> None:
    p = tmp_path / "unsupported.cu"
    use = "w.wa * a[i]" if "union" in decl else "w.wa * a[i] + w.wb * b[i]"
    p.write_text(BODY.format(decl=decl, value=value, ty="Weights", use=use))
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(p, "wsum2")
    msg = e.value.message
    assert "`w` of wsum2 is a `Weights` passed by value" in msg and field in msg and "host function" in msg, msg
    assert "\n" not in msg and "Dim3" not in msg and e.value.missing


PARAMS = """struct Params {{ float *out; const float *in; float scale; int n; }};
__global__ void scale_k(Params p) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) p.out[i] = p.scale * p.in[i];
}}
int main() {{
  const int n = 5000;
  float *d_in, *d_out;
  cudaMalloc(&d_in, n * sizeof(float)); cudaMalloc(&d_out, n * sizeof(float));
  cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice);
  {value}
  scale_k<<<(n + 127) / 128, 128>>>(p);
  return 0;
}}
"""


@pytest.mark.parametrize("value", ["Params p; p.out = d_out; p.in = d_in; p.scale = 3.0f; p.n = n;",
                                   "Params p = {d_out, d_in, 3.0f, n};",
                                   "Params p = {.out = d_out, .in = d_in, .scale = 3.0f, .n = n};"])
def test_a_struct_with_pointers_to_numbers_gets_a_buffer_per_pointer(tmp_path: Path, value: str) -> None:
    """A pointer field is a buffer: sized by the cudaMalloc main() points it at, an output unless its elements
    are declared const."""
    p = tmp_path / "params.cu"
    p.write_text("static float h_in[5000];\n" + PARAMS.format(value=value))
    h = infer_cuda_harness(p, "scale_k")
    got = {i.name: (i.shape, i.init, i.value) for i in h.inputs}
    assert got == {"p__out": ([5000], "empty", None), "p__in": ([5000], "randn", None),
                   "p__scale": (None, None, 3.0), "p__n": (None, None, "p__n")}, got
    assert h.args == ["p"] and h.outputs == ["p__out"] and h.sizes == [{"p__n": 5000}]


def test_a_pointer_field_main_does_not_point_at_a_buffer_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "params.cu"
    p.write_text("static float h_in[5000];\n" + PARAMS.format(value="Params p; p.out = d_out; p.scale = 3.0f; "
                                                                     "p.n = n;"))
    with pytest.raises(HarnessError, match=r"`p\.in` of scale_k is a pointer, but the launch passes None"):
        infer_cuda_harness(p, "scale_k")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_the_shim_fills_the_struct_pointers(tmp_path: Path) -> None:
    p = tmp_path / "params.cu"
    p.write_text("static float h_in[5000];\n" + PARAMS.format(value="Params p = {d_out, d_in, 3.0f, n};"))
    shim = struct_shim_source(p, infer_cuda_harness(p, "scale_k"))
    assert shim.order == ("p__out", "p__in", "p__scale", "p__n")
    assert "s0.out = HtamAnyPtr{a0}; s0.in = HtamAnyPtr{a1}; s0.scale = a2; s0.n = a3;" in shim.source
    _compile(shim.source, tmp_path)


def test_a_spec_written_with_the_field_names_makes_the_same_shim(tmp_path: Path) -> None:
    p = tmp_path / "wsum.cu"
    p.write_text(_kernel("brace"))
    table = {"version": 1, "file": "wsum.cu", "grid": "(cdiv(N, 256),)", "block": "256",
             "args": ["a", "b", "out", "w", "n"], "outputs": ["out"], "sizes": [{"N": 4096}],
             "reference": "w__wa * a + w__wb * b",
             "inputs": [{"name": "a", "shape": ["N"]}, {"name": "b", "shape": ["N"]},
                        {"name": "out", "shape": ["N"], "init": "empty"},
                        {"name": "w__wa", "value": 0.5}, {"name": "w__wb", "value": 0.25},
                        {"name": "n", "dtype": "int32", "value": "N"}]}
    h = parse_kernel_table(table, kernel="wsum2", spec_path=tmp_path / "htam.toml", file_path=p)
    inferred = infer_cuda_harness(p, "wsum2")
    assert struct_shim_source(p, h).source == struct_shim_source(p, inferred).source
    saved = tomllib.loads(harness_table(inferred))["kernel"]["wsum2"]  # the inferred harness saved, read back
    again = parse_kernel_table(saved, kernel="wsum2", spec_path=tmp_path / "htam.toml", file_path=p)
    assert again.args == inferred.args and struct_shim_source(p, again).source == struct_shim_source(p, h).source
    table["inputs"] = [i for i in table["inputs"] if i["name"] != "w__wb"] + [{"name": "w__wz", "value": 1.0}]
    h = parse_kernel_table(table, kernel="wsum2", spec_path=tmp_path / "htam.toml", file_path=p)
    with pytest.raises(HarnessError, match=r"missing: w__wb; no such field: w__wz"):
        struct_shim_source(p, h)


def test_the_template_lists_the_fields_and_parses_as_a_spec(tmp_path: Path) -> None:
    """When main() cannot be read (here a size from the command line), the template still gives one input per
    field; with a reference written, the table loads and launches through the same shim."""
    p = tmp_path / "struct_weights.cu"
    p.write_text((TRIAL / "struct_weights.cu").read_text().replace("const int n = 1 << 24;",
                                                                   "const int n = atoi(getenv(\"N\"));"))
    model = load(str(p))
    text = write_template(model, model.kernel("wsum2"))
    fields = [ln for ln in text.splitlines() if 'name = "w' in ln]
    assert [ln.split('"')[1] for ln in fields] == ["w__wa", "w__wb"] and "TODO" not in "".join(fields), fields
    assert "over a, b, w__wa, w__wb, n" in text
    table = tomllib.loads(text.replace('reference = ""', 'reference = "w__wa * a + w__wb * b"'))["kernel"]["wsum2"]
    h = parse_kernel_table(table, kernel="wsum2", spec_path=tmp_path / "htam.toml", file_path=p)
    assert h.args == ["a", "b", "out", "w", "n"] and "s3.wa = a3;" in struct_shim_source(p, h).source


def test_the_template_marks_a_struct_it_cannot_pass_with_the_reason(tmp_path: Path) -> None:
    p = tmp_path / "struct_ptr.cu"
    p.write_text((TRIAL / "struct_weights.cu").read_text().replace("struct Weights { float wa, wb; };",
                                                                   "struct Weights { float wa, wb; void *ctx; };"))
    model = load(str(p))
    lines = [ln for ln in write_template(model, model.kernel("wsum2")).splitlines() if 'name = "w' in ln]
    assert len(lines) == 1 and "TODO: a `Weights` passed by value, and `Weights`'s field `ctx` is a pointer to " \
        "`void`" in lines[0], lines


def test_a_host_launcher_that_builds_the_struct_is_inferred(tmp_path: Path) -> None:
    text = (TRIAL / "struct_weights.cu").read_text()
    text = text.replace("int main() {", "void run(const float *a, const float *b, float *out, int n) {\n"
                        "  Weights w = {0.5f, 0.25f};\n  wsum2<<<(n + 255) / 256, 256>>>(a, b, out, w, n);\n}\n"
                        "int main() {")
    text = text.replace("  Weights w = {0.5f, 0.25f};\n  wsum2<<<(n + 255) / 256, 256>>>(a, b, out, w, n);\n"
                        "  cudaDeviceSynchronize();", "  run(a, b, out, n);\n  cudaDeviceSynchronize();")
    assert "run(a, b, out, n);" in text
    p = tmp_path / "launcher.cu"
    p.write_text(text)
    h = infer_cuda_harness(p, "wsum2")
    assert h.launcher == "run" and [i.name for i in h.inputs] == ["a", "b", "out", "n"]


def test_the_program_runs_whole_and_an_optimize_report_says_nothing_is_checked(tmp_path: Path) -> None:
    from htam_core.optimize.loop import run_optimize
    from htam_core.optimize.task import OptimizeTask

    p = tmp_path / "struct_ptr.cu"
    p.write_text(BODY.format(decl="struct Weights { float wa, wb; void *log; };", value="Weights w = {0.5f, 0.25f};",
                             ty="Weights", use="w.wa * a[i] + w.wb * b[i]"))
    h = find_harness(p, "wsum2", load(str(p)))
    assert h.kind == "cu-main" and "`w` of wsum2 is a `Weights` passed by value" in h.notes[0]
    res = run_optimize(OptimizeTask(path=str(p), kernel="wsum2", budget=1, static=True, out_dir=str(tmp_path / "out"),
                                    memory_path=str(tmp_path / "mem.sqlite3")))
    line = next(w for w in res.warnings if w.startswith("harness: "))
    assert "run whole" in line and "no candidate is checked for correctness" in line and "`Weights`" in line
    assert "no candidate is checked for correctness" in (tmp_path / "out" / "report.md").read_text()


def test_a_type_alias_of_a_number_is_not_taken_for_a_struct(tmp_path: Path) -> None:
    """``typedef float real; real s;`` declares a number: only the structs the file defines are passed whole."""
    p = tmp_path / "alias.cu"
    p.write_text(BODY.format(decl="typedef float real;", value="real w = 0.5f;", ty="real", use="w * a[i] + w"))
    h = infer_cuda_harness(p, "wsum2")
    assert "w" in [i.name for i in h.inputs] and not any(i.name.startswith("w__") for i in h.inputs)


WSUM3 = """struct Weights { float wa, wb, wc; };
__global__ void wsum3(const float *a, const float *b, const float *c, float *out, Weights w, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = w.wa * a[i] + w.wb * b[i] + w.wc * c[i];
}
int main() {
  const unsigned int n = 100000;
  float *a, *b, *c, *out;
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMalloc(&c, n * 4); cudaMalloc(&out, n * 4);
  Weights w = {0.5f, -0.25f, 2.0f};
  wsum3<<<(n + 127) / 128, 128>>>(a, b, c, out, w, n);
  cudaDeviceSynchronize();
  return 0;
}
"""


@pytest.mark.gpu
def test_the_struct_kernel_runs_through_the_harness_on_gpu(tmp_path: Path) -> None:
    import numpy as np

    from htam_core.harness.runner import prepare_spec

    p = tmp_path / "wsum3.cu"
    p.write_text(WSUM3)
    h = infer_cuda_harness(p, "wsum3")
    prepared = prepare_spec(h, "cuda")
    assert prepared.launcher_kind == "cu-host-launcher"
    xs = prepared.trial.make_inputs(0, 0, 1.0)
    env = dict(zip(prepared.arg_names, xs, strict=True))
    (out,) = prepared.trial.run_candidate(xs)
    a, b, c = (env[k].cpu().numpy() for k in "abc")
    want = env["w__wa"] * a + env["w__wb"] * b + env["w__wc"] * c
    assert (env["w__wa"], env["w__wb"], env["w__wc"]) == (0.5, -0.25, 2.0)
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_the_compile_only_check_builds_the_struct_shim(tmp_path: Path) -> None:
    """``check_build`` (no GPU) builds what a run builds: for a struct by value, the shim, not a bare cubin."""
    from htam_core.harness.build_check import check_build

    p = tmp_path / "wsum3.cu"
    p.write_text(WSUM3)
    (line,) = check_build(infer_cuda_harness(p, "wsum3")).built
    assert line.startswith("wsum3 of wsum3.cu: struct shim ") and line.endswith(".so"), line


@pytest.mark.gpu
def test_the_struct_with_pointers_runs_through_the_harness_on_gpu(tmp_path: Path) -> None:
    import numpy as np

    from htam_core.harness.runner import prepare_spec

    p = tmp_path / "params.cu"
    p.write_text("static float h_in[5000];\n" + PARAMS.format(value="Params p = {d_out, d_in, 3.0f, n};"))
    prepared = prepare_spec(infer_cuda_harness(p, "scale_k"), "cuda")
    xs = prepared.trial.make_inputs(0, 0, 1.0)
    env = dict(zip(prepared.arg_names, xs, strict=True))
    (out,) = prepared.trial.run_candidate(xs)
    np.testing.assert_allclose(out.cpu().numpy(), 3.0 * env["p__in"].cpu().numpy(), rtol=1e-6, atol=1e-6)
