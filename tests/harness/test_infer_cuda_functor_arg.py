"""A stateless functor passed by value (``apply<Gelu><<<...>>>(x, y, n, Gelu{})``, a plain kernel's ``Gelu op``
too): a struct with no non-static data member is passed default-constructed (one byte, the size of an empty C++
object, whose value no code reads). A struct with a data member keeps the one-line refusal."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.harness.infer_cuda import harness_table, infer_cuda_harness
from htam_core.harness.spec import parse_kernel_table

_MAIN = """
int main() {{
  const int n = 4096;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float));
  {launch}
  cudaDeviceSynchronize();
  return 0;
}}
"""

_FUNCTORS = {
    "operator": "struct Act { __device__ float operator()(float v) const { return v > 0.f ? v : 0.f; } };\n",
    "static": "struct Act {\n  static constexpr float k = 2.0f;\n"
              "  __device__ float operator()(float v) const { return k * v; }\n};\n",
    "class": "class Act { public: __device__ float operator()(float v) const { return v * v; } };\n",
}
_TEMPLATE = ("template <typename Op>\n__global__ void apply(const float* x, float* y, int n, Op op) {\n"
             "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = op(x[i]);\n}\n")
_PLAIN = ("__global__ void apply(const float* x, float* y, int n, Act op) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = op(x[i]);\n}\n")
_LAUNCHES = {
    "template_temporary": (_TEMPLATE, "apply<Act><<<(n + 255) / 256, 256>>>(x, y, n, Act{});"),
    "template_deduced": (_TEMPLATE, "Act a; apply<<<(n + 255) / 256, 256>>>(x, y, n, a);"),
    "plain_temporary": (_PLAIN, "apply<<<(n + 255) / 256, 256>>>(x, y, n, Act{});"),
    "plain_variable": (_PLAIN, "Act a{}; apply<<<(n + 255) / 256, 256>>>(x, y, n, a);"),
}


def _write(tmp_path: Path, functor: str, launch: str) -> Path:
    kernel, call = _LAUNCHES[launch]
    p = tmp_path / "act.cu"
    p.write_text(_FUNCTORS.get(functor, functor) + kernel + _MAIN.format(launch=call))
    return p


@pytest.mark.parametrize("functor", sorted(_FUNCTORS))
@pytest.mark.parametrize("launch", sorted(_LAUNCHES))
def test_a_stateless_functor_is_passed_default_constructed(tmp_path, functor, launch):
    h = infer_cuda_harness(_write(tmp_path, functor, launch), "apply")
    assert h.args == ["x", "y", "n", "op"]
    op = next(i for i in h.inputs if i.name == "op")
    assert (op.dtype, op.shape, op.value) == ("uint8", None, 0)
    assert h.outputs == ["y"]
    assert any("`op` is a `Act` passed by value, which holds no data member" in n for n in h.notes), h.notes
    table = harness_table(h)
    back = parse_kernel_table(tomllib.loads(table)["kernel"]["apply"], kernel="apply",
                              spec_path=tmp_path / "htam.toml", file_path=tmp_path / "act.cu")
    assert [i.name for i in back.inputs] == ["x", "y", "n", "op"]


@pytest.mark.parametrize("functor", [
    "struct Act { float k; __device__ float operator()(float v) const { return k * v; } };\n",
    "struct Act { float k = 2.0f; __device__ float operator()(float v) const { return k * v; } };\n",
])
def test_a_functor_with_a_data_member_in_a_template_launch_keeps_the_refusal(tmp_path, functor):
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(_write(tmp_path, functor, "template_temporary"), "apply")
    assert "`op` of apply is a `Act` passed by value" in e.value.message and "\n" not in e.value.message


@pytest.mark.gpu
def test_the_functor_kernel_runs_through_the_harness_on_gpu(tmp_path):
    from htam_core.harness.runner import prepare_spec

    h = infer_cuda_harness(_write(tmp_path, "operator", "template_temporary"), "apply")
    prepared = prepare_spec(h, "cuda")
    xs = prepared.trial.make_inputs(0, 0, 1.0)
    env = dict(zip(prepared.arg_names, xs, strict=True))
    (out,) = prepared.trial.run_candidate(xs)
    assert (out.cpu() == env["x"].cpu().clamp(min=0)).all()
