"""The float64 reference of a CUDA start under the oracle rule (:mod:`htam_core.harness.reference64`): which outputs
it serves, how its launch is given float64 inputs of the same values, and the one line when there is none. The twin's
launch is emulated on the CPU by a stand-in bind (the real one needs a GPU). Kernels written for these tests."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from htam_core.harness.infer_cuda import infer_cuda_harness
from htam_core.harness.reference64 import long_sum_outputs, reference64, write_twin

_START = """#include <cuda_runtime.h>
__global__ void sq_mean(const float* a, const float* b, float* total, float* scaled, size_t n, float s)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float d = a[i] - b[i];
    scaled[i] = s * d;
    atomicAdd(total, d * d / (float)n);
}
int main()
{
    const size_t n = 1 << 16;
    float *x, *y, *acc, *sc;
    cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&acc, sizeof(float)); cudaMalloc(&sc, n * sizeof(float));
    cudaMemset(acc, 0, sizeof(float));
    sq_mean<<<(unsigned)((n + 255) / 256), 256>>>(x, y, acc, sc, n, 0.5f);
    cudaDeviceSynchronize();
    return 0;
}
"""


@pytest.fixture
def start(tmp_path: Path):
    p = tmp_path / "start.cu"
    p.write_text(_START)
    return infer_cuda_harness(str(p), "sq_mean")


def test_the_long_sum_output_is_found_through_the_launch_arguments(start):
    assert start.uses_oracle
    k = long_sum_outputs(start, _START)
    assert [start.outputs[i] for i in k] == ["total"]
    # a harness whose inputs are named otherwise (an htam.toml table): mapped through the launch's arguments
    renamed = {"total": "d_sum", "scaled": "d_out"}
    h = dataclasses.replace(start, args=[renamed.get(a, a) for a in start.args],
                            outputs=[renamed.get(o, o) for o in start.outputs],
                            inputs=[dataclasses.replace(s, name=renamed.get(s.name, s.name)) for s in start.inputs])
    assert [h.outputs[i] for i in long_sum_outputs(h, _START)] == ["d_sum"]


def test_the_twin_runs_on_float64_copies_and_returns_float32(start, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    seen: dict[str, object] = {}

    def bind_twin(h64, twin_path):
        seen["dtypes"] = {s.name: s.dtype for s in h64.inputs}
        seen["twin"] = Path(twin_path).read_text()
        names = [s.name for s in h64.inputs]

        def bind(xs):
            def launch():
                a, b, n = xs[names.index("a")], xs[names.index("b")], xs[names.index("n")]
                assert a.dtype == torch.float64
                d = a - b
                xs[names.index("total")] += (d * d / n).sum()
                xs[names.index("scaled")].copy_(0.5 * d)
            return launch
        return bind

    names = [s.name for s in start.inputs]
    r = reference64(start, bind_twin, {names.index("scaled")},
                    lambda: {names.index("total"): torch.zeros(1)})
    assert r.run is not None and [start.outputs[i] for i in r.outputs] == ["total"]
    assert "float64 reference of the start" in r.notes[0]
    assert seen["dtypes"]["a"] == seen["dtypes"]["s"] == "float64" and seen["dtypes"]["n"] != "float64"
    assert "double" in seen["twin"] and "int main" not in seen["twin"]
    g = torch.Generator().manual_seed(3)
    x, y = torch.rand(1 << 16, generator=g), torch.rand(1 << 16, generator=g)
    vals = {"a": x, "b": y, "total": torch.full((1,), 7.0), "scaled": torch.empty(1 << 16), "n": 1 << 16, "s": 0.5}
    inputs = [vals[s] for s in names]
    outs = r.run(inputs)
    exact = float(((x.double() - y.double()) ** 2).sum() / (1 << 16))
    acc = outs[start.outputs.index("total")]
    assert acc.dtype == torch.float32 and abs(float(acc) - exact) < 1e-6  # restored to 0, not the 7 left in it
    assert torch.equal(inputs[names.index("total")], torch.full((1,), 7.0))  # the caller's tensors are untouched


def test_no_twin_in_one_line(start, tmp_path: Path):
    def never(*_a):
        raise AssertionError("no twin must be launched")
    half = tmp_path / "half.cu"
    half.write_text(_START.replace("#include <cuda_runtime.h>", "#include <cuda_fp16.h>").replace(
        "float d = a[i] - b[i];", "float d = __half2float(__float2half(a[i] - b[i]));"))
    h = dataclasses.replace(start, path=str(half), oracle_path=str(half))
    r = reference64(h, never, set(), dict)
    assert r.run is None and len(r.notes) == 1 and "half" in r.notes[0] and "\n" not in r.notes[0]
    r = reference64(dataclasses.replace(start, launcher="launch_sq_mean"), never, set(), dict)
    assert r.run is None and "host code" in r.notes[0]


def test_no_long_sum_no_note(tmp_path: Path):
    p = tmp_path / "ew.cu"
    p.write_text(_START.replace("    atomicAdd(total, d * d / (float)n);\n", "    total[0] = d;\n"))
    h = infer_cuda_harness(str(p), "sq_mean")
    r = reference64(h, lambda *_a: None, set(), dict)
    assert r.run is None and r.notes == [] and r.outputs == ()


def test_the_twin_finds_the_start_headers(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "common.h").write_text("#define SCALE 2.0f\n")
    out = write_twin(tmp_path / "k.cu", '#include "common.h"\n#include "missing.h"\n#include <cstdio>\n')
    text = out.read_text()
    assert f'#include "{(tmp_path / "common.h").resolve()}"' in text
    assert '#include "missing.h"' in text and "#include <cstdio>" in text
