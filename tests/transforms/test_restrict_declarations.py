"""``cuda.restrict_const`` on a kernel that is also declared: a prototype above the definition, in a header the
kernel's file includes, in the launching file. The pointee's ``const`` is part of the function's type, so each
declaration is edited with the definition in the same change (a declaration left with ``float *`` names another
function, never defined: the link fails); the edited files build and link with nvcc (``sm_90``). A declaration
that cannot be matched is refused in one line; one with another number of parameters is another overload, left
alone."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate, apply_edits
from tests.support.workspace_fixtures import MAIN_CPP, VADD, workspace

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")

KERNEL = """__global__ void k(float *out, float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}
"""

SAME_FILE = "__global__ void k(float *out, float *in, int n);\n\n" \
    "void launch(float *out, float *in, int n) { k<<<(n + 255) / 256, 256>>>(out, in, n); }\n\n" + KERNEL

HEADER = "#pragma once\n__global__ void k(float*, float*, int);\n"
MAIN_CU = '#include "k.cuh"\nint main() { float *a = 0, *b = 0; k<<<1, 256>>>(a, b, 0); return 0; }\n'


def _propose(path: Path) -> Candidate:
    model = load(path)
    res = registry.propose("cuda.restrict_const", model, model.kernels[0])
    assert isinstance(res, list), res.reason
    (cand,) = res
    return cand


def _written(path: Path, cand: Candidate) -> dict[str, str]:
    out = {path.name: cand.new_text}
    for p, edits in cand.file_edits.items():
        out[Path(p).name] = apply_edits(Path(p).read_text(), edits)
    return out


def _build(tmp: Path, files: dict[str, str], sources: list[str]) -> subprocess.CompletedProcess[str]:
    out = tmp / "out"
    out.mkdir(exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text)
    return subprocess.run(["nvcc", "-arch=sm_90", "-rdc=true", *(str(out / s) for s in sources), "-o",
                           str(out / "prog")], capture_output=True, text=True, timeout=300)


def test_a_prototype_above_the_definition_is_edited_with_it(tmp_path):
    ws = workspace(tmp_path, {"k.cu": SAME_FILE})
    c = _propose(ws / "k.cu")
    lines = c.new_text.splitlines()
    assert lines[0] == "__global__ void k(float *out, const float *__restrict__ in, int n);"
    assert "__global__ void k(float *out, const float *__restrict__ in, int n) {" in lines
    assert c.description.endswith("its declaration too") and not c.file_edits


def test_a_header_declaration_is_edited_in_the_same_change(tmp_path):
    ws = workspace(tmp_path, {"k.cuh": HEADER, "k.cu": '#include "k.cuh"\n' + KERNEL, "main.cu": MAIN_CU})
    c = _propose(ws / "k.cu")
    files = _written(ws / "k.cu", c)
    assert files["k.cuh"] == "#pragma once\n__global__ void k(float*, const float* __restrict__, int);\n"
    assert "declaration in k.cuh edited too" in c.title_note
    assert "main.cu" not in files  # it declares nothing: its launch needs no edit


def test_a_prototype_in_the_launching_file_is_edited(tmp_path):
    k = VADD.replace("const float *a, const float *b", "float *a, float *b")
    main = MAIN_CPP.replace("(const float *a, const float *b, float *c, int n);", "(float *a, float *b, float *c, int n);")
    ws = workspace(tmp_path, {"k.cu": k, "main.cpp": main})
    files = _written(ws / "k.cu", _propose(ws / "k.cu"))
    assert "__global__ void vadd(const float *__restrict__ a, const float *__restrict__ b, float *c, int n);" \
        in files["main.cpp"]


def test_a_declaration_that_cannot_be_matched_is_refused_in_one_line(tmp_path):
    header = "typedef float *fptr;\n__global__ void k(float*, fptr, int);\n"
    ws = workspace(tmp_path, {"k.cuh": header, "k.cu": '#include "k.cuh"\n' + KERNEL})
    model = load(ws / "k.cu")
    why = registry.propose("cuda.restrict_const", model, model.kernels[0]).reason
    assert "parameter 2 of its declaration at line 2 of k.cuh is not written as a pointer" in why
    assert "\n" not in why


def test_another_overload_is_left_alone(tmp_path):
    header = "#pragma once\n__global__ void k(float*, int);\n"
    ws = workspace(tmp_path, {"k.cuh": header, "k.cu": '#include "k.cuh"\n' + KERNEL})
    c = _propose(ws / "k.cu")
    assert not c.file_edits and not c.description.endswith("too")


@needs_nvcc
def test_the_edited_files_build_and_link(tmp_path):
    ws = workspace(tmp_path / "ws", {"k.cuh": HEADER, "k.cu": '#include "k.cuh"\n' + KERNEL, "main.cu": MAIN_CU})
    files = _written(ws / "k.cu", _propose(ws / "k.cu"))
    b = _build(tmp_path, {**files, "main.cu": MAIN_CU}, ["k.cu", "main.cu"])
    assert b.returncode == 0, b.stderr[-3000:]
    same = workspace(tmp_path / "same", {"k.cu": SAME_FILE})
    c = _propose(same / "k.cu")
    b = _build(tmp_path / "same", {"k.cu": c.new_text + "int main() { launch(0, 0, 0); return 0; }\n"}, ["k.cu"])
    assert b.returncode == 0, b.stderr[-3000:]


@needs_nvcc
def test_regression_the_definition_alone_does_not_link(tmp_path):
    """Why the declarations are edited: with ``const`` on the definition only, the launch names the declared
    ``k(float*, float*, int)``, which nothing defines."""
    ws = workspace(tmp_path / "ws", {"k.cuh": HEADER, "k.cu": '#include "k.cuh"\n' + KERNEL, "main.cu": MAIN_CU})
    c = _propose(ws / "k.cu")
    b = _build(tmp_path, {"k.cuh": HEADER, "k.cu": c.new_text, "main.cu": MAIN_CU}, ["k.cu", "main.cu"])
    assert b.returncode != 0 and "undefined reference" in b.stderr
