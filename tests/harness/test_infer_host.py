"""A kernel launched from another file of its folder: the harness is read from the program that runs it
(htam_core.harness.infer_host), through find_harness, htam harness infer and the nvcc build check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.harness.base import HarnessError
from htam_core.harness.build_check import check_build
from htam_core.harness.find import find_harness
from htam_core.harness.infer_host import host_programs, infer_from_program
from htam_core.source.api import load

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "launched_elsewhere"
NVCC = shutil.which("nvcc")


def _copy(tmp_path: Path, name: str) -> Path:
    """The fixture folder ``name`` copied out of the repository (its workspace is then that folder alone)."""
    dest = tmp_path / name
    shutil.copytree(FIX / name, dest)
    return dest


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


def test_a_launch_through_a_prototype_in_main_cu_gives_a_direct_launch(tmp_path: Path) -> None:
    """Regression: a kernel file with no main() was refused ("no harness ... htam does not know how to call it")
    although main.cu of its folder launches it."""
    ws = _copy(tmp_path, "proto")
    h = find_harness(ws / "vectorAdd.cu", "vectorAdd")
    assert h.kind == "inferred" and h.path == str(ws / "vectorAdd.cu") and h.oracle_path == h.path
    assert (h.grid, h.block) == ("(4096, 1, 1)", "(256, 1, 1)")  # (1 << 20) / 256 blocks of 256
    assert h.args == ["A", "B", "C", "N"] and h.outputs == ["C"] and h.sizes == [{"N": 1 << 20}]
    line = _line_of(ws / "main.cu", "vectorAdd<<<")
    assert h.source == f"inferred from main() of main.cu (launch at line {line} of main.cu)"
    assert h.notes[0] == f"program: main() of {ws / 'main.cu'} (launches vectorAdd)"


def test_a_wrapper_of_the_kernel_file_called_from_main_cpp_is_the_launcher(tmp_path: Path) -> None:
    ws = _copy(tmp_path, "wrapper")
    h = find_harness(ws / "add.cu", "add_kernel")
    assert h.launcher == "launch_add" and h.grid is None and h.path == str(ws / "add.cu")
    assert [i.name for i in h.inputs] == ["a", "b", "c", "n"] and h.outputs == ["c"]
    assert h.notes[0] == f"program: main() of {ws / 'main.cpp'} (calls launch_add)"
    call = _line_of(ws / "main.cpp", "launch_add(a, b, c, n)")
    assert any(f"called from main() at line {call} of main.cpp" in n for n in h.notes), h.notes


def test_a_kernel_in_a_header_included_by_main_cu(tmp_path: Path) -> None:
    ws = _copy(tmp_path, "header")
    h = find_harness(ws / "transpose.cuh", "transpose_naive")
    assert (h.grid, h.block) == ("(32, 256, 1)", "(32, 8, 1)")  # col 1024 / 32, row 2048 / 8
    assert h.outputs == ["out"] and {i.name: i.shape for i in h.inputs}["in_"] == [2048 * 1024]


def test_the_nearest_program_is_picked_and_the_others_named(tmp_path: Path) -> None:
    ws = _copy(tmp_path, "two")
    model = load(ws / "relu.cu")
    order = [p.path.relative_to(ws).as_posix() for p in host_programs(model, model.kernel("relu"))]
    assert order == ["bench.cu", "host.cu", "sub/aaa.cu"]  # the kernel's folder first, by path; then sub-folders
    h = infer_from_program(ws / "relu.cu", "relu", model)
    assert h.sizes == [{"n": 1 << 22}]  # bench.cu's n, not host.cu's
    assert "also run by host.cu, aaa.cu: the nearest program is used" in h.notes[0]


def test_a_program_whose_launch_cannot_be_read_gives_way_to_the_next(tmp_path: Path) -> None:
    ws = _copy(tmp_path, "two")
    (ws / "bench.cu").write_text((ws / "bench.cu").read_text().replace("int n = 1 << 22;", "int n = atoi(getenv(\"N\"));"))
    h = infer_from_program(ws / "relu.cu", "relu")
    assert h.sizes == [{"n": 1 << 16}] and "main() of" in h.notes[0] and "host.cu" in h.notes[0]


def test_a_python_launcher_is_named_with_what_to_write(tmp_path: Path) -> None:
    ws = _copy(tmp_path, "python")
    with pytest.raises(HarnessError) as ei:
        find_harness(ws / "scale.cu", "scale_kernel")
    e = ei.value
    assert e.missing and "scale_kernel is run from run_scale.py" in e.message and "[kernel.scale_kernel]" in e.message
    assert "\n" not in e.message.strip() and e.snippet and "[kernel.scale_kernel]" in e.snippet


def test_no_launcher_anywhere_says_so_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text((FIX / "proto" / "vectorAdd.cu").read_text())
    with pytest.raises(HarnessError) as ei:
        find_harness(tmp_path / "k.cu", "vectorAdd")
    assert "no main() in k.cu or in a file of its workspace launches vectorAdd" in ei.value.message
    assert ei.value.snippet and "[kernel.vectorAdd]" in ei.value.snippet


def test_harness_infer_prints_the_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _copy(tmp_path, "proto")
    assert main(["harness", "infer", str(ws / "vectorAdd.cu")]) == 0
    out = capsys.readouterr().out
    assert "inferred from main() of main.cu" in out and f"program: main() of {ws / 'main.cu'}" in out
    assert 'grid = "(4096, 1, 1)"' in out


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize(("folder", "file", "kernel"), [("proto", "vectorAdd.cu", "vectorAdd"),
                                                        ("wrapper", "add.cu", "add_kernel"),
                                                        ("header", "transpose.cuh", "transpose_naive"),
                                                        ("bridge", "scale.cuh", "scale_rows")])
def test_the_inferred_harness_builds_with_nvcc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str,
                                               file: str, kernel: str) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    ws = _copy(tmp_path, folder)
    built = check_build(find_harness(ws / file, kernel)).built
    assert len(built) == 1 and f"of {file}" in built[0]


@pytest.mark.gpu
@pytest.mark.parametrize(("folder", "file", "kernel", "old", "new"), [
    ("proto", "vectorAdd.cu", "vectorAdd", "A[i] + B[i]", "A[i] - B[i]"),
    ("wrapper", "add.cu", "add_kernel", "a[i] + b[i]", "a[i] * b[i]"),
    ("header", "transpose.cuh", "transpose_naive", "out[x * row + y]", "out[y * col + x]"),
    ("bridge", "scale.cuh", "scale_rows", "s * in[i]", "s + in[i]"),
])
def test_the_pair_runs_and_a_wrong_kernel_is_refused_on_gpu(tmp_path: Path, folder: str, file: str, kernel: str,
                                                            old: str, new: str) -> None:
    """On the GPU: the harness read from the program verifies the kernel's file against itself, and refuses an
    edit that changes the result (the oracle is the starting kernel)."""
    import dataclasses

    from htam_core.verify.run import verify_harness

    ws = _copy(tmp_path, folder)
    h = find_harness(ws / file, kernel)
    same = verify_harness(h.to_json())
    assert same["correct"], same["messages"]
    wrong = tmp_path / "wrong" / file
    wrong.parent.mkdir()
    text = (ws / file).read_text()
    assert old in text
    wrong.write_text(text.replace(old, new))
    bad = verify_harness(dataclasses.replace(h, path=str(wrong)).to_json())
    assert not bad["correct"] and bad["status"] == "incorrect", bad["messages"]


def test_a_torch_extension_names_its_files_and_the_launcher_template(tmp_path: Path) -> None:
    """A kernel run by a pybind11 binding (built by torch's load from a .py): no program to read; the message
    names both launchers and the template calls the kernel file's own wrapper."""
    ws = _copy(tmp_path, "torch_ext")
    with pytest.raises(HarnessError) as ei:
        find_harness(ws / "add.cu", "add_kernel")
    e = ei.value
    assert "add_kernel is run from setup_run.py, bind.cpp, which htam does not run as a program" in e.message
    assert e.snippet and 'launcher = "add_launcher"' in e.snippet


def test_one_hop_through_a_file_that_launches_it(tmp_path: Path) -> None:
    """scale.cuh holds the kernel, ops.cu launches it in run_scale, main.cpp calls run_scale: read as one unit,
    a direct launch (the launcher is not in the kernel's file), lines named in their own files."""
    ws = _copy(tmp_path, "bridge")
    h = find_harness(ws / "scale.cuh", "scale_rows")
    assert h.launcher is None and (h.grid, h.block) == ("(4096, 1, 1)", "(128, 1, 1)")  # (1 << 19) / 128
    assert h.notes[0] == f"program: main() of {ws / 'main.cpp'} (calls run_scale of ops.cu)"
    launch = _line_of(ws / "ops.cu", "scale_rows<<<")
    assert h.source == f"inferred from main() of main.cpp (launch at line {launch} of ops.cu)"
    call = _line_of(ws / "main.cpp", "run_scale(in, out")
    assert any(f"called from main() at line {call} of main.cpp" in n for n in h.notes), h.notes
