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
    assert kernel_key(a, "add") == kernel_key(b, "add") == "proj/kernels/add.cu::add"
    assert kernel_fingerprint(a, "add") == kernel_fingerprint(b, "add")
    # the rule before: the absolute path, so the two checkouts did not share their memory
    assert legacy_kernel_fingerprint(a, "add") != legacy_kernel_fingerprint(b, "add")


def test_a_moved_project_keeps_its_fingerprint(tmp_path):
    f = _project(tmp_path / "before" / "proj")
    fp = kernel_fingerprint(f, "add")
    (tmp_path / "after").mkdir()
    shutil.move(str(tmp_path / "before" / "proj"), str(tmp_path / "after" / "proj"))
    assert kernel_fingerprint(tmp_path / "after" / "proj" / "kernels" / "add.cu", "add") == fp


def test_relative_and_absolute_paths_agree(tmp_path, monkeypatch):
    f = _project(tmp_path / "proj")
    monkeypatch.chdir(tmp_path / "proj")
    assert kernel_fingerprint("kernels/add.cu", "add") == kernel_fingerprint(f, "add")


def test_nearest_root_and_no_root(tmp_path):
    f = _project(tmp_path / "proj")
    (tmp_path / "proj" / "kernels" / "htam.toml").write_text("")
    assert project_root(f) == tmp_path / "proj" / "kernels"  # the nearest marker wins
    assert kernel_key(f, "add") == "proj/add.cu::add"  # the project is still the repository
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


def test_unrelated_projects_with_the_same_file_stay_apart(tmp_path):
    """A user-wide store holds every project's records: two tutorials' ``kernels/add.cu::add`` are two kernels."""
    a = _project(tmp_path / "tutorial_a")
    b = _project(tmp_path / "tutorial_b")
    assert kernel_fingerprint(a, "add") != kernel_fingerprint(b, "add")


def test_clones_share_the_origin_and_a_worktree_its_main_checkout(tmp_path):
    a = _project(tmp_path / "mine")
    b = _project(tmp_path / "yours")
    for d in ("mine", "yours"):
        (tmp_path / d / ".git" / "config").write_text(
            '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://example.org/team/kernels.git\n'
            '\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch "main"]\n\tremote = origin\n')
    assert kernel_key(a, "add") == kernel_key(b, "add") == "https://example.org/team/kernels/kernels/add.cu::add"
    main = _project(tmp_path / "main")
    wt_git = tmp_path / "main" / ".git" / "worktrees" / "feature"
    wt_git.mkdir(parents=True)
    (wt_git / "commondir").write_text("../..\n")
    wt = tmp_path / "elsewhere" / "feature"
    (wt / "kernels").mkdir(parents=True)
    (wt / ".git").write_text(f"gitdir: {wt_git}\n")
    (wt / "kernels" / "add.cu").write_text(SRC)
    assert kernel_key(wt / "kernels" / "add.cu", "add") == kernel_key(main, "add") == "main/kernels/add.cu::add"
