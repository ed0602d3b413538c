"""Launch macros read from the headers a file includes (:mod:`htam_core.source.analysis.header_macros`): a header
beside the file, in a sub-folder, one level up (``../``), found through an include folder, nested includes, an
include cycle; ``<...>`` system headers and a macro ``#undef``-ed at the header's end give nothing; the ``#define``
lines written back read as the same macros. Headers written for these tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source.analysis.header_macros import define_lines, included_launch_macros
from htam_core.source.analysis.macros import macro_table

TWO = "#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)\n"
FOUR = "#define LAUNCH_KERNEL(kernel, g, b, s, st, ...) \\\n    kernel<<<g, b, s, st>>>(__VA_ARGS__)\n"
GNU = "#define LAUNCH_G(k, g, b, args...) k<<<g, b>>>(args)\n"
OTHER = "#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _names(root: Path, user: str, dirs: tuple[Path, ...] = ()) -> list[str]:
    path = root / user
    return [d.name for d in included_launch_macros(path.read_bytes(), path, dirs)]


@pytest.mark.parametrize(("user", "include"), [
    ("host.cu", "include/launch.cuh"),
    ("src/host.cu", "../include/launch.cuh"),
    ("src/deep/host.cpp", "../../include/launch.cuh"),
])
def test_a_quoted_include_resolves_from_the_including_file(tmp_path: Path, user: str, include: str) -> None:
    _write(tmp_path, {"include/launch.cuh": "#pragma once\n" + OTHER + TWO + FOUR + GNU,
                      user: f'#include <cstdio>\n#include "{include}"\nvoid f() {{}}\n'})
    assert _names(tmp_path, user) == ["LAUNCH", "LAUNCH_KERNEL", "LAUNCH_G"]  # CEIL_DIV launches nothing


def test_an_include_folder_and_nested_headers(tmp_path: Path) -> None:
    _write(tmp_path, {"include/common.cuh": '#include "launch.cuh"\n' + OTHER,
                      "include/launch.cuh": GNU,
                      "src/host.cu": '#include "common.cuh"\n'})
    assert _names(tmp_path, "src/host.cu") == []  # not beside host.cu, and no -I folder given
    assert _names(tmp_path, "src/host.cu", (tmp_path / "include",)) == ["LAUNCH_G"]


def test_an_include_cycle_ends(tmp_path: Path) -> None:
    _write(tmp_path, {"a.cuh": '#include "b.cuh"\n' + TWO, "b.cuh": '#include "a.cuh"\n' + GNU,
                      "host.cu": '#include "a.cuh"\n'})
    assert sorted(_names(tmp_path, "host.cu")) == ["LAUNCH", "LAUNCH_G"]


def test_system_headers_and_undefined_macros_give_nothing(tmp_path: Path) -> None:
    _write(tmp_path, {"launch.cuh": TWO + "#undef LAUNCH\n" + GNU, "sys.cuh": FOUR,
                      "host.cu": '#include <sys.cuh>\n#include "launch.cuh"\n'})
    assert _names(tmp_path, "host.cu") == ["LAUNCH_G"]
    assert _names(tmp_path, "host.cu") != []  # the check can fail: a quoted header is read


@pytest.mark.parametrize("define", [TWO, FOUR, GNU])
def test_the_define_lines_read_as_the_same_macros(tmp_path: Path, define: str) -> None:
    _write(tmp_path, {"launch.cuh": define, "host.cu": '#include "launch.cuh"\n'})
    (d,) = included_launch_macros(b'#include "launch.cuh"\n', tmp_path / "host.cu")
    (back,) = macro_table(define_lines([d]).encode()).defs
    assert (back.name, back.params, back.variadic, back.body) == (d.name, d.params, d.variadic, d.body)
    assert define_lines([]) == ""
