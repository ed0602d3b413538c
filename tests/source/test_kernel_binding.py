"""A launch binds to the kernel definition its translation unit sees: two headers defining a kernel of the same name,
each included by its own launch file, are two different kernels; the workspace launch search and the harness's
launcher files keep each launch with its own kernel (regression: ``htam optimize binarize.cuh`` took
``launch_expert.cu``, which includes ``binarize_expert.cuh``, as a launcher and edited its launch)."""

from __future__ import annotations

from pathlib import Path

from htam_core.source import load
from htam_core.source.kernel_binding import OTHER, OURS, UNSEEN, binding, binding_through_includers
from htam_core.source.workspace import find_launches, launch_unit, launcher_files

KERNEL = ("#pragma once\n__global__ void bin_k(const float* x, unsigned char* m, int n) {{\n"
          "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) m[i] = x[i] > {t}f ? 255 : 0;\n}}\n")
LAUNCH = ('#include "{h}"\n\nvoid binarize(const float* x, unsigned char* m, int n) {{\n'
          "    bin_k<<<(n + {b} - 1) / {b}, {b}>>>(x, m, n);\n}}\n")
MAIN = ('#include "{l}"\n\nint main() {{\n    float* x; unsigned char* m; int n = 1 << 20;\n'
        "    cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&m, n);\n    binarize(x, m, n);\n    return 0;\n}}\n")


def _pair(tmp_path: Path) -> Path:
    files = {"bin.cuh": KERNEL.format(t="0.5"), "bin_expert.cuh": KERNEL.format(t="0.25"),
             "launch.cu": LAUNCH.format(h="bin.cuh", b=256), "launch_expert.cu": LAUNCH.format(h="bin_expert.cuh", b=128),
             "naive.cu": MAIN.format(l="launch.cu"), "expert.cu": MAIN.format(l="launch_expert.cu")}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_each_launch_file_launches_the_kernel_of_the_header_it_includes(tmp_path):
    ws = _pair(tmp_path)
    for header, launcher, block in (("bin.cuh", "launch.cu", 256), ("bin_expert.cuh", "launch_expert.cu", 128)):
        model = load(ws / header)
        got = find_launches(model, model.kernels[0])
        assert [(Path(la.path).name, la.block_value) for la in got] == [(launcher, (block,))]


def test_the_joint_unit_holds_only_the_launch_file_that_sees_the_kernel(tmp_path):
    ws = _pair(tmp_path)
    model = load(ws / "bin.cuh")
    unit = launch_unit(model, model.kernels[0])
    assert unit is not None
    assert {Path(g.fragment.path).name for g in unit.segments} == {"launch.cu"}


def test_launcher_files_leave_out_the_units_that_see_another_definition(tmp_path):
    ws = _pair(tmp_path)
    model = load(ws / "bin.cuh")
    got = [p.name for p in launcher_files(model, model.kernels[0], ["binarize"])]
    assert got == ["launch.cu", "naive.cu"]
    model = load(ws / "bin_expert.cuh")
    assert [p.name for p in launcher_files(model, model.kernels[0], ["binarize"])] == ["expert.cu", "launch_expert.cu"]


def test_binding_of_one_file(tmp_path):
    ws = _pair(tmp_path)
    own = ws / "bin.cuh"
    for name, want in (("launch.cu", OURS), ("launch_expert.cu", OTHER), ("naive.cu", OURS), ("expert.cu", OTHER),
                       ("bin.cuh", OURS), ("bin_expert.cuh", OTHER)):
        assert binding(ws / name, (ws / name).read_bytes(), own, "bin_k") == want, name
    (ws / "alone.cu").write_text("__global__ void bin_k(const float*, unsigned char*, int);\n"
                                 "void go(const float* x, unsigned char* m) { bin_k<<<1, 32>>>(x, m, 32); }\n")
    assert binding(ws / "alone.cu", (ws / "alone.cu").read_bytes(), own, "bin_k") == UNSEEN


def test_a_fragment_included_after_the_header_binds_through_its_includers(tmp_path):
    # launch_*.cu include nothing: each main() includes a header and then the launch file (one translation unit)
    ws = _pair(tmp_path)
    for launcher in ("launch.cu", "launch_expert.cu"):
        (ws / launcher).write_text("\n".join((ws / launcher).read_text().splitlines()[1:]) + "\n")
    (ws / "naive.cu").write_text('#include "bin.cuh"\n' + (ws / "naive.cu").read_text())
    (ws / "expert.cu").write_text('#include "bin_expert.cuh"\n' + (ws / "expert.cu").read_text())
    files = sorted(ws.iterdir())

    def read(p: str) -> bytes | None:
        return Path(p).read_bytes()

    own = ws / "bin.cuh"
    assert binding(ws / "launch_expert.cu", (ws / "launch_expert.cu").read_bytes(), own, "bin_k") == UNSEEN
    assert binding_through_includers(ws / "launch_expert.cu", own, "bin_k", files, read) == OTHER
    assert binding_through_includers(ws / "launch.cu", own, "bin_k", files, read) == OURS
    model = load(own)
    assert [Path(la.path).name for la in find_launches(model, model.kernels[0])] == ["launch.cu"]


def test_a_separately_compiled_launcher_with_a_declaration_is_still_a_launcher(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL.format(t="0.5"))
    (tmp_path / "host.cu").write_text("__global__ void bin_k(const float*, unsigned char*, int);\n"
                                      "void go(const float* x, unsigned char* m) { bin_k<<<1, 32>>>(x, m, 32); }\n")
    model = load(tmp_path / "k.cu")
    assert [Path(la.path).name for la in find_launches(model, model.kernels[0])] == ["host.cu"]


def test_the_harness_program_is_the_one_whose_unit_sees_the_kernel(tmp_path):
    from htam_core.harness.infer_host import host_programs, infer_cuda

    ws = _pair(tmp_path)
    for header, program, block in (("bin.cuh", "naive.cu", 256), ("bin_expert.cuh", "expert.cu", 128)):
        model = load(ws / header)
        assert [h.path.name for h in host_programs(model, model.kernels[0])] == [program]
        h = infer_cuda(ws / header, "bin_k")
        assert (h.grid, h.block) == (f"({(1 << 20) // block}, 1, 1)", f"({block}, 1, 1)")
        assert h.source.startswith(f"inferred from main() of {program} ")
