"""Every textbook step on every spelling of its kernel (``tests/fixtures/spellings/<step>/``): the step is offered,
made, and compiles (nvcc sm_90, or the Triton interpreter matching the start); on a GPU the made kernel matches the
start. A cell the engine cannot make yet is listed in :data:`KNOWN_GAPS` with the reason, and is a strict xfail: a gap
that gets fixed fails here until it is taken off the list."""

from __future__ import annotations

import pytest
from spellings import all_spellings, check_cell, gpu_usable, have_nvcc, load_step, nvcc_error

SPELLINGS = all_spellings()

#: (step, spelling file) -> why the engine does not make the step on that spelling yet.
KNOWN_GAPS: dict[tuple[str, str], str] = {
    # reductions, histograms, row operations and softmax
}


def _param(sp):
    marks = [pytest.mark.xfail(reason=KNOWN_GAPS[sp.cell], strict=True)] if sp.cell in KNOWN_GAPS else []
    if sp.language == "triton":  # every candidate runs under the Triton interpreter: tens of seconds a cell
        marks.append(pytest.mark.slow)
    return pytest.param(sp, id=f"{sp.step}/{sp.file}", marks=marks)


CELLS = [_param(sp) for sp in SPELLINGS]


def test_every_step_has_six_spellings():
    steps: dict[str, int] = {}
    for sp in SPELLINGS:
        steps[sp.step] = steps.get(sp.step, 0) + 1
    assert steps, "no spelling steps found"
    thin = {s: n for s, n in steps.items() if n < 6}
    assert not thin, f"steps with fewer than six spellings: {thin}"


def test_known_gaps_name_real_cells():
    cells = {sp.cell for sp in SPELLINGS}
    assert not set(KNOWN_GAPS) - cells


def test_a_declared_file_that_is_missing_is_one_clear_error(tmp_path):
    (tmp_path / "step.json").write_text('{"strategy": "cuda.grid_stride", "language": "cuda", '
                                        '"spellings": {"gone.cu": {"kernel": "k"}}}')
    with pytest.raises(ValueError, match="gone.cu is declared but missing"):
        load_step(tmp_path)


@pytest.mark.parametrize("sp", [pytest.param(sp, id=f"{sp.step}/{sp.file}") for sp in SPELLINGS
                                if sp.language == "cuda"])
def test_the_start_compiles(sp):
    if not have_nvcc():
        pytest.skip("nvcc is not installed")
    assert nvcc_error(sp.path.read_text()) == ""


@pytest.mark.parametrize("sp", CELLS)
def test_offered_made_compiled(sp):
    if sp.language == "cuda" and not have_nvcc():
        pytest.skip("nvcc is not installed")
    res = check_cell(sp)
    assert res.offered, res.reason
    assert res.made, res.reason
    assert res.compiled, res.reason


@pytest.mark.gpu
@pytest.mark.parametrize("sp", CELLS)
def test_matches_the_start_on_gpu(sp, tmp_path):
    if sp.language != "cuda":
        pytest.skip("Triton spellings are checked against the start under the interpreter")
    if not gpu_usable():
        pytest.skip("no CUDA device or no nvcc")
    if not (sp.host and sp.gpu.get("args")):
        pytest.skip("the step declares no host launcher for the GPU check")
    res = check_cell(sp, gpu=True, tmp=tmp_path)
    assert res.ok and res.gpu, res.reason
