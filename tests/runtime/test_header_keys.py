"""Every build cache key and task key covers the content of the local headers a file includes.

A ``common.h`` edited next to a ``.cu`` file must change the key of its compile (static profile, cubin, program,
host launcher), of its measurement and of its benchmark task; a file that the unit does not include must not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from htam_core.bench.executors import task_key
from htam_core.optimize.measure_cache import measure_key
from htam_core.profile import static_cuda
from htam_core.runtime.cache import CompileCache
from htam_core.source.analysis.includes import header_paths, headers_digest

_UNIT = '#include <cstdio>\n#include "common.h"\n__global__ void k(float* y) { y[threadIdx.x] = SCALE; }\n'


@pytest.fixture
def unit(tmp_path: Path) -> Path:
    """A ``.cu`` file next to ``common.h``, which includes ``inc/base.h`` from an ``-I`` folder."""
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "base.h").write_text("#define BASE 2\n")
    (tmp_path / "common.h").write_text('#include "base.h"\n#define SCALE (BASE * 1.0f)\n')
    (tmp_path / "other.h").write_text("#define UNUSED 1\n")
    cu = tmp_path / "k.cu"
    cu.write_text(_UNIT)
    return cu


def test_headers_are_resolved_from_the_folder_and_the_include_folders(unit: Path) -> None:
    found, missing = header_paths(unit.read_text(), unit, [unit.parent / "inc"])
    assert [p.name for p in found] == ["base.h", "common.h"]
    assert missing == ()
    found, missing = header_paths(unit.read_text(), unit)
    assert [p.name for p in found] == ["common.h"] and missing == ("base.h",)


@pytest.mark.parametrize("edited,changes", [("common.h", True), ("inc/base.h", True), ("other.h", False)])
def test_headers_digest_follows_only_included_files(unit: Path, edited: str, changes: bool) -> None:
    inc = [unit.parent / "inc"]
    before = headers_digest(unit.read_text(), unit, inc)
    (unit.parent / edited).write_text((unit.parent / edited).read_text() + "// edited\n")
    assert (headers_digest(unit.read_text(), unit, inc) != before) is changes


@pytest.mark.parametrize("edited,changes", [("common.h", True), ("other.h", False)])
def test_task_key_changes_with_an_included_header(unit: Path, edited: str, changes: bool) -> None:
    before = task_key("k/htam", {"budget": 4}, [unit])
    (unit.parent / edited).write_text("#define SCALE 3.0f\n")
    assert (task_key("k/htam", {"budget": 4}, [unit]) != before) is changes


def test_a_header_that_appears_later_changes_the_task_key(tmp_path: Path) -> None:
    cu = tmp_path / "k.cu"
    cu.write_text(_UNIT)
    before = task_key("k/htam", {}, [cu])
    (tmp_path / "common.h").write_text("#define SCALE 1.0f\n")
    assert task_key("k/htam", {}, [cu]) != before


def test_measure_key_takes_the_headers() -> None:
    base: dict[str, Any] = dict(text="code", kernel="k", language="cuda", harness=None, trials=10, gpu=True)
    assert measure_key(**base, headers="a") != measure_key(**base, headers="b")
    assert measure_key(**base) == measure_key(**base, headers="")


class _Seen(Exception):
    pass


class _KeyCache(CompileCache):
    """A compile cache that records the key it is asked for and stops the compile there."""

    def __init__(self) -> None:
        super().__init__(enabled=False)
        self.keys: list[str] = []

    def get(self, key: str) -> dict[str, Any] | None:
        self.keys.append(key)
        raise _Seen


@pytest.mark.parametrize("edited,changes", [("common.h", True), ("inc/base.h", True), ("other.h", False)])
def test_static_compile_key_changes_with_an_included_header(unit: Path, monkeypatch: pytest.MonkeyPatch,
                                                            edited: str, changes: bool) -> None:
    monkeypatch.setattr(static_cuda, "find_nvcc", lambda: "/usr/bin/true")
    cache = _KeyCache()

    def key() -> str:
        with pytest.raises(_Seen):
            static_cuda.compile_cuda(unit.read_text(), source_name=str(unit), include_dirs=[str(unit.parent / "inc")],
                                     cache=cache)
        return cache.keys[-1]

    before = key()
    assert key() == before
    (unit.parent / edited).write_text((unit.parent / edited).read_text() + "// edited\n")
    assert (key() != before) is changes
