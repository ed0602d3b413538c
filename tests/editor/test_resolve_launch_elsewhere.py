"""A step on a kernel launched from another file resolves into edits of both files; a step whose only change is in
the launcher is still an edit; the verdict carries the note the action's title shows."""

from __future__ import annotations

from htam_core.editor.makeable import check
from htam_core.editor.resolve import resolve_step
from htam_core.memory import load_knowledge
from htam_core.source import load
from htam_core.transforms.base import apply_edits
from tests.support.workspace_fixtures import MAIN_CPP, VADD, workspace


def test_block_size_resolves_into_an_edit_of_the_launcher(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "main.cpp": MAIN_CPP})
    model = load(ws / "k.cu")
    kb = load_knowledge()
    strat = kb.strategy("cuda_block_size")
    res = resolve_step(model, model.kernels[0], strat, kb.direction(strat.direction), None)
    assert res.ok, res.reason
    assert res.edits == [] and res.new_text == VADD  # the kernel's file is unchanged
    (path,) = res.file_edits
    assert path == str(ws / "main.cpp")
    assert apply_edits(MAIN_CPP, res.file_edits[path]) == res.files[path] != MAIN_CPP
    assert res.title_note == "launch in main.cpp edited too"
    assert check(strat, model, model.kernels[0]).note == "launch in main.cpp edited too"


def test_launch_not_found_note_reaches_the_verdict(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD})
    model = load(ws / "k.cu")
    strat = load_knowledge().strategy("grid_stride_loop")
    v = check(strat, model, model.kernels[0])
    assert v.makeable and v.note == "launch not found: correct for any grid"
