"""Same-name CUDA kernels through the CLI: ``htam kernels`` lists qualified names, a shared plain name is refused in
one line that lists the choices, and a qualified ``--kernel`` reads that kernel's own launch."""

from __future__ import annotations

import json
from pathlib import Path

from htam_core.cli.main import main

SRC = """#include <cuda_runtime.h>
namespace f32 {
__global__ void scale(float* x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}
}
namespace f64 {
__global__ void scale(double* x, double s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}
}
int main() {
    int n = 1 << 20; float* a; double* b;
    cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 8);
    f32::scale<<<n / 256, 256>>>(a, 2.f, n);
    f64::scale<<<n / 128, 128>>>(b, 2.0, n);
    cudaDeviceSynchronize(); return 0;
}
"""


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "two.cu"
    path.write_text(SRC)
    return path


def test_kernels_lists_qualified_names_with_their_own_launches(tmp_path: Path, capsys) -> None:
    assert main(["kernels", str(_file(tmp_path)), "--json"]) == 0
    out = {k["qualified_name"]: [s["line"] for s in k["launch_sites"]] for k in json.loads(capsys.readouterr().out)}
    assert out == {"f32::scale": [17], "f64::scale": [18]}


def test_a_shared_name_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    assert main(["suggest", str(_file(tmp_path)), "--kernel", "scale"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pass one of f32::scale, f64::scale" in err[0]


def test_qualified_kernel_reads_its_own_launch(tmp_path: Path, capsys) -> None:
    assert main(["harness", "infer", str(_file(tmp_path)), "--kernel", "f64::scale", "--json"]) == 0
    harness = json.loads(capsys.readouterr().out)["harness"]
    assert harness["block"] in ("(128, 1, 1)", [128, 1, 1]) and harness["inputs"][0]["dtype"] == "float64"


def test_launch_in_another_file_goes_to_its_own_kernel(tmp_path: Path, capsys) -> None:
    header = tmp_path / "ops.cuh"
    header.write_text(SRC[SRC.index("namespace f32"): SRC.index("int main")])
    (tmp_path / "host.cu").write_text('#include <cuda_runtime.h>\n#include "ops.cuh"\nint main() {\n'
                                      "    int n = 1 << 20; double* b; cudaMalloc(&b, n * 8);\n"
                                      "    f64::scale<<<n / 128, 128>>>(b, 2.0, n);\n    return 0;\n}\n")
    assert main(["kernels", str(header), "--json"]) == 0
    out = {k["qualified_name"]: [(Path(la["path"]).name, la["line"]) for la in k.get("launches_elsewhere", [])]
           for k in json.loads(capsys.readouterr().out)}
    assert out == {"f32::scale": [], "f64::scale": [("host.cu", 5)]}
