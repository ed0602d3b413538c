"""Include folders beyond a file's own (htam_core.runtime.include_dirs), used by every nvcc call of the project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from htam_core.harness.base import cuda_include_dirs, include_flags, include_notes
from htam_core.runtime.compiler import compiler_verdict
from htam_core.runtime.include_dirs import include_dirs, included_names

TREE = Path(__file__).resolve().parents[1] / "fixtures" / "include_tree"
VECADD = TREE / "Samples" / "intro" / "vecadd" / "vecadd.cu"
NVCC = shutil.which("nvcc")


def test_included_names_keeps_order_and_bracket_kind() -> None:
    assert included_names('#include <a.h>\n  # include "b/c.h"\n#include <a.h>\n') == [("a.h", False), ("b/c.h", True)]


def test_a_header_two_levels_up_is_found_by_the_ancestor_search() -> None:
    dirs = include_dirs(VECADD)
    assert [d.path for d in dirs] == [TREE / "Common"]
    assert "htam_fixture_check.h" in dirs[0].why and "3 levels up" in dirs[0].why
    assert f"-I{TREE / 'Common'}" in include_flags(VECADD)
    assert any("include folder" in n and "Common" in n for n in include_notes(VECADD))


def test_no_search_when_every_header_is_found(tmp_path: Path) -> None:
    (tmp_path / "own.h").write_text("#pragma once\n")
    src = tmp_path / "k.cu"
    src.write_text('#include "own.h"\n#include <cuda_runtime.h>\n#include <vector>\n__global__ void k() {}\n')
    assert include_dirs(src) == []
    assert cuda_include_dirs(src) == [tmp_path.resolve()]


def test_a_header_found_nowhere_adds_no_folder(tmp_path: Path) -> None:
    src = tmp_path / "a" / "k.cu"
    src.parent.mkdir()
    src.write_text('#include "nowhere_to_be_found_xyz.h"\n')
    assert include_dirs(src) == []


def test_makefile_include_flags_are_read() -> None:
    dirs = include_dirs(TREE / "make_proj" / "src" / "scale.cu")
    assert [(d.path, d.why) for d in dirs] == [(TREE / "make_proj" / "include", "Makefile in src/")]


def test_cmake_target_include_directories_are_read() -> None:
    dirs = include_dirs(TREE / "cmake_proj" / "offset.cu")
    assert [d.path for d in dirs] == [TREE / "cmake_proj" / "third" / "inc"]
    assert dirs[0].why.startswith("CMakeLists.txt")


def test_compile_commands_json_comes_first(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "deps" / "inc").mkdir(parents=True)
    (tmp_path / "build").mkdir()
    src = tmp_path / "src" / "k.cu"
    src.write_text('#include "dep.h"\n__global__ void k() {}\n')
    (tmp_path / "deps" / "inc" / "dep.h").write_text("#pragma once\n")
    (tmp_path / "build" / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path / "build"), "file": "../src/k.cu",
         "command": "nvcc -I../deps/inc -isystem /nonexistent -c ../src/k.cu -o k.o"}]))
    dirs = include_dirs(src)
    assert [d.path for d in dirs] == [(tmp_path / "deps" / "inc").resolve()]
    assert dirs[0].why == f"compile_commands.json at {tmp_path / 'build'}"


def test_a_candidate_is_searched_from_its_original_folder(tmp_path: Path) -> None:
    cand = tmp_path / "cand" / "vecadd.cu"
    cand.parent.mkdir()
    cand.write_text(VECADD.read_text())
    dirs = include_dirs(cand, known=[cand.parent, VECADD.parent])
    assert [d.path for d in dirs] == [TREE / "Common"]


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_the_program_builds_and_the_compiler_accepts_it(tmp_path: Path) -> None:
    """Regression: a program including a header from an ancestor's folder did not build ("cannot open source
    file"), so its harness failed and the compiler called the file invalid."""
    from htam_core.harness.cu_main import build_program

    exe = build_program(VECADD, out_dir=tmp_path)
    assert exe.is_file()
    assert compiler_verdict(VECADD.read_text(), "cuda", str(VECADD)) is True


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_the_static_profile_compiles_with_the_found_folder(tmp_path: Path) -> None:
    """The static profiler's nvcc (ptxas -v) takes the same folders: the kernel's resources are read. (A cache of
    its own: a hit names the command of the checkout that compiled the same text first.)"""
    from htam_core.profile.static_cuda import compile_cuda
    from htam_core.runtime.cache import CompileCache

    res = compile_cuda(VECADD.read_text(), source_name=str(VECADD), cache=CompileCache(tmp_path))
    assert res.entries and f"-I{TREE / 'Common'}" in res.command
