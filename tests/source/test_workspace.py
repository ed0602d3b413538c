"""The workspace launch index: a kernel's launches in other files of the workspace (host ``.cpp``, a ``#define``
wrapper, the CUDA string of a ``load_inline`` call, a cupy launcher, a Triton launcher in another module), each
with its file, range, grid and block as written, template arguments and the values that are known."""

from __future__ import annotations

from pathlib import Path

from htam_core.source import load
from htam_core.source.workspace import find_launches, launch_unit, workspace_root
from tests.support.workspace_fixtures import (
    CUPY_PY,
    LOAD_INLINE_PY,
    MACRO_CU,
    MAIN_CPP,
    TRITON_KERNELS,
    TRITON_MAIN,
    VADD,
    workspace,
)


def _launches(path: Path):
    model = load(path)
    return find_launches(model, model.kernels[0])


def test_launch_in_another_cpp_file(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "main.cpp": MAIN_CPP})
    (la,) = _launches(ws / "k.cu")
    assert la.path == str(ws / "main.cpp") and la.style == "cuda" and la.line == 5
    data = (ws / "main.cpp").read_bytes()
    assert data[la.span[0]:la.span[1]].decode().startswith("vadd<<<")
    assert la.grid == "(n + threads - 1) / threads" and la.block == "threads"
    assert la.block_value == (256,) and la.known and la.editable


def test_launch_in_a_define_wrapper_of_the_same_file(tmp_path):
    ws = workspace(tmp_path, {"m.cu": MACRO_CU})
    (la,) = _launches(ws / "m.cu")
    assert la.style == "macro" and la.path == str(ws / "m.cu") and la.line == 1
    assert la.block == "256" and la.block_value == (256,) and la.grid == "((n) + 255) / 256"


def test_launch_in_a_load_inline_string(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "ext.py": LOAD_INLINE_PY})
    (la,) = _launches(ws / "k.cu")
    assert la.style == "python-string" and la.path == str(ws / "ext.py") and la.line == 5
    data = (ws / "ext.py").read_bytes()
    assert data[la.span[0]:la.span[1]].decode() == "vadd<<<(n + 127) / 128, 128>>>(a, b, c, n)"
    assert la.block_value == (128,)


def test_launch_through_a_cupy_raw_module(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "launch.py": CUPY_PY})
    (la,) = _launches(ws / "k.cu")
    assert la.style == "cupy" and la.line == 9 and la.editable  # read with the kernel: a step can edit it
    assert la.grid == "((n + THREADS - 1) // THREADS,)" and la.block == "(THREADS,)"
    assert la.block_value == (256,) and la.grid_value is None


def test_cupy_raw_kernel_by_name(tmp_path):
    py = 'import cupy as cp\nk = cp.RawKernel(open("k.cu").read(), "vadd")\nk((4,), (128,), (1, 2, 3, 4))\n'
    ws = workspace(tmp_path, {"k.cu": VADD, "r.py": py})
    (la,) = _launches(ws / "k.cu")
    assert la.grid_value == (4,) and la.block_value == (128,)


def test_triton_launch_in_an_importing_module(tmp_path):
    ws = workspace(tmp_path, {"kernels.py": TRITON_KERNELS, "main.py": TRITON_MAIN})
    (la,) = _launches(ws / "kernels.py")
    assert la.style == "triton" and la.path == str(ws / "main.py") and la.line == 9
    assert la.grid == "(triton.cdiv(n, 1024),)" and la.template_args == ("BLOCK=1024",) and la.known


def test_template_arguments_of_the_launch(tmp_path):
    kern = VADD.replace("__global__ void vadd(", "template <typename T, int B>\n__global__ void vadd(")
    host = ("template <typename T, int B> __global__ void vadd(const float *a, const float *b, float *c, int n);\n"
            "void run(const float *a, const float *b, float *c, int n) {\n"
            "    vadd<float, 128><<<(n + 127) / 128, 128>>>(a, b, c, n);\n}\n")
    ws = workspace(tmp_path, {"k.cu": kern, "host.cu": host})
    (la,) = _launches(ws / "k.cu")
    assert la.template_args == ("float", "128")


def test_no_launch_anywhere(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "notes.cpp": "// vadd is launched elsewhere\nint x;\n"})
    model = load(ws / "k.cu")
    assert find_launches(model, model.kernels[0]) == [] and launch_unit(model, model.kernels[0]) is None


def test_a_file_defining_its_own_kernel_of_that_name_is_not_a_launcher(tmp_path):
    other = VADD + "void go(float *a, int n) { vadd<<<1, 32>>>(a, a, a, n); }\n"
    ws = workspace(tmp_path, {"k.cu": VADD, "sub/other.cu": other})
    assert _launches(ws / "k.cu") == []


def test_workspace_is_the_git_root_or_the_folder(tmp_path):
    ws = workspace(tmp_path, {"a/b/k.cu": VADD, "a/main.cpp": MAIN_CPP})
    assert workspace_root(ws / "a" / "b" / "k.cu") == (ws / "a" / "b").resolve()
    assert _launches(ws / "a" / "b" / "k.cu") == []  # no git root: the kernel's own folder only
    (ws / ".git").mkdir()
    assert workspace_root(ws / "a" / "b" / "k.cu") == ws.resolve()
    assert workspace_root(ws / "a" / "b" / "k.cu", root=ws / "a") == (ws / "a").resolve()


def test_a_cuda_string_that_does_not_compile_the_kernels_file_is_not_a_launcher(tmp_path):
    # a Python file whose CUDA string declares and launches a kernel of the same name, never naming k.cu: another
    # program's kernel (found by a new user: htam's own test helpers in the enclosing repository were edited)
    other = LOAD_INLINE_PY.replace('open("k.cu").read() + LAUNCHER', "PROTO + LAUNCHER").replace(
        "LAUNCHER = r", 'PROTO = "__global__ void vadd(const float *a, const float *b, float *c, int n);"\nLAUNCHER = r')
    ws = workspace(tmp_path, {"k.cu": VADD, "ext.py": other})
    assert "k.cu" not in (ws / "ext.py").read_text()
    assert _launches(ws / "k.cu") == []


def test_an_htam_output_folder_is_not_searched(tmp_path):
    from htam_core.source.workspace import OUTPUT_MARKER, mark_output_folder

    ws = workspace(tmp_path, {"k.cu": VADD, "out/run1/main.cpp": MAIN_CPP})
    assert [la.path for la in _launches(ws / "k.cu")] == [str(ws / "out" / "run1" / "main.cpp")]
    mark_output_folder(ws / "out")
    assert (ws / "out" / OUTPUT_MARKER).is_file()
    from htam_core.source import workspace as wsmod

    wsmod._LISTINGS.clear()  # the listing is reused for a few seconds
    assert _launches(ws / "k.cu") == []
