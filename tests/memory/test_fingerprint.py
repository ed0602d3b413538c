"""Kernel fingerprints do not depend on where the project sits on disk, and old records stay found."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

from htam_core.editor.history import AppliedStep, History
from htam_core.memory.fingerprint import (
    fingerprint_aliases,
    kernel_fingerprint,
    kernel_key,
    legacy_kernel_fingerprint,
    project_root,
)

SRC = "__global__ void add(float* a) { a[threadIdx.x] += 1.0f; }\n"


def _project(base: Path) -> Path:
    (base / ".git").mkdir(parents=True)
    (base / "kernels").mkdir()
    f = base / "kernels" / "add.cu"
    f.write_text(SRC)
    return f


def test_two_checkouts_of_one_project_give_one_fingerprint(tmp_path):
    a = _project(tmp_path / "one" / "proj")
    b = _project(tmp_path / "elsewhere" / "deeper" / "proj")
    assert kernel_key(a, "add") == kernel_key(b, "add") == "kernels/add.cu::add"
    assert kernel_fingerprint(a, "add") == kernel_fingerprint(b, "add")
    # the rule before: the absolute path, so the two checkouts did not share their memory
    assert legacy_kernel_fingerprint(a, "add") != legacy_kernel_fingerprint(b, "add")


def test_a_moved_project_keeps_its_fingerprint(tmp_path):
    f = _project(tmp_path / "before" / "proj")
    fp = kernel_fingerprint(f, "add")
    shutil.move(str(tmp_path / "before" / "proj"), str(tmp_path / "after"))
    assert kernel_fingerprint(tmp_path / "after" / "kernels" / "add.cu", "add") == fp


def test_relative_and_absolute_paths_agree(tmp_path, monkeypatch):
    f = _project(tmp_path / "proj")
    monkeypatch.chdir(tmp_path / "proj")
    assert kernel_fingerprint("kernels/add.cu", "add") == kernel_fingerprint(f, "add")


def test_nearest_root_and_no_root(tmp_path):
    f = _project(tmp_path / "proj")
    (tmp_path / "proj" / "kernels" / "htam.toml").write_text("")
    assert project_root(f) == tmp_path / "proj" / "kernels"  # the nearest marker wins
    assert kernel_key(f, "add") == "add.cu::add"
    assert kernel_key(None, "add") == "<text>::add"
    assert kernel_fingerprint(f, "add") != kernel_fingerprint(f, "sub")  # the kernel name is part of the key


def test_history_finds_steps_recorded_under_the_old_id(tmp_path):
    """A store written before the project-relative rule: its records carry the absolute-path id, and the editor's
    history of the same file still finds them, with the new steps after them."""
    f = _project(tmp_path / "proj")
    new, old = fingerprint_aliases(f, "add")
    assert old == legacy_kernel_fingerprint(f, "add") and new == kernel_fingerprint(f, "add")
    rec = SimpleNamespace(fingerprint=old, step="launch_bounds", direction="occupancy", time=1.0, outcome=None)
    h = History()
    h.seed([rec], lambda s: s)
    assert h.prefix(str(f), "add") == ("launch_bounds",)
    before = h.add(str(f), "add", AppliedStep("unroll_loops", "ilp", "unroll", 2.0))
    assert before == ["launch_bounds"]
    assert h.prefix(str(f), "add") == ("launch_bounds", "unroll_loops")
    assert h.prefix(str(tmp_path / "proj" / "kernels" / "other.cu"), "add") == ()
