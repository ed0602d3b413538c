"""A step on a kernel launched from another file is one proposal over both files; a step whose only change is in
the launcher is still an edit; the proposal carries the note the action's title shows."""

from __future__ import annotations

from htam_core.editor.makeable import check
from htam_core.editor.proposals import propose_step
from htam_core.memory import load_knowledge
from htam_core.source import load
from htam_core.transforms.base import apply_edits
from tests.support.workspace_fixtures import MAIN_CPP, VADD, workspace


def test_block_size_is_a_proposal_over_the_launcher(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "main.cpp": MAIN_CPP})
    model = load(ws / "k.cu")
    kb = load_knowledge()
    strat = kb.strategy("cuda_block_size")
    p = propose_step(model, model.kernels[0], strat, kb.direction(strat.direction), None)
    assert p.ok, p.reason
    assert p.kernel_edits() == []  # the kernel's file is unchanged
    (fe,) = p.edits
    assert fe.path == str(ws / "main.cpp")
    assert "const int threads = " in apply_edits(MAIN_CPP, list(fe.edits)) != MAIN_CPP
    assert p.title_note == "launch in main.cpp edited too"
    v = check(strat, model, model.kernels[0])
    assert v.makeable and v.proposal is not None and v.proposal.title_note == "launch in main.cpp edited too"


def test_grid_stride_edits_the_kernel_and_the_launcher(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD, "main.cpp": MAIN_CPP})
    model = load(ws / "k.cu")
    kb = load_knowledge()
    strat = kb.strategy("grid_stride_loop")
    p = propose_step(model, model.kernels[0], strat, kb.direction(strat.direction), None)
    assert p.ok, p.reason
    assert [f.path for f in p.edits] == [None, str(ws / "main.cpp")]
    assert "gridDim.x" in apply_edits(VADD, p.kernel_edits())


def test_launch_not_found_note_reaches_the_verdict(tmp_path):
    ws = workspace(tmp_path, {"k.cu": VADD})
    model = load(ws / "k.cu")
    strat = load_knowledge().strategy("grid_stride_loop")
    v = check(strat, model, model.kernels[0])
    assert v.makeable and v.proposal.title_note == "launch not found: correct for any grid"
