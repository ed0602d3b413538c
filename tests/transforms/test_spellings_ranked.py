"""The step a spelling folder is about is in the editor's top 5 for its kernel, with a cold memory.

For every cell of the spelling matrix (``tests/fixtures/spellings/<step>/``), the kernel is ranked as
``htam suggest FILE --kernel NAME --top 5 --static`` ranks it on a new, empty memory store: the static profile
(a profiler failure gives the ``unknown`` class, as the command does), then :class:`htam_core.memory.Ranker` with
``top=5``. The step's strategy (the knowledge-base strategy whose transform is the folder's) must be among the 5.
A cell where it is not is listed in :data:`RANK_GAPS` with the reason, as a strict xfail: a cell that starts to
rank the step fails here until it is taken off the list.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from spellings import Spelling, all_spellings, have_nvcc, strategies_of

from htam_core.memory import Ranker, load_knowledge, open_store, state_from_profile
from htam_core.profile.api import profile_kernel
from htam_core.source import load
from htam_core.types.profile import Bottleneck, Profile

TOP = 5  # the editor's and `htam suggest`'s default
KB = load_knowledge()

_GRID_STRIDE = ("on a memory-bound elementwise kernel the grid-stride loop (Parallel Mapping, prior 0.4, no signal) "
                "ranks below float4, const __restrict__, __ldg, the block size and launch bounds on a cold memory")
_SOFTMAX = ("the row loops are uncoalesced (a thread per row): warp per row ranks first by design, and online "
            "softmax's signal holds only once the rows are read by lanes on consecutive elements")
_MULTI_ROW = ("several rows per program (Parallel Mapping, prior 0.25 for memory-bound kernels, no signal) ranks "
              "below the Triton memory hints and the launch steps on a cold memory")
_MOMENTS = ("the single-pass moments (Fusion, prior 0.3 for memory-bound kernels, no signal) ranks below the Triton "
            "memory hints, the register-resident row and the launch steps on a cold memory")
_NOT_OFFERED = "not offered: "

#: (step, spelling file) -> why the step is not in the top 5 of that spelling's ranking yet.
RANK_GAPS: dict[tuple[str, str], str] = {
    **{("grid_stride", f): _GRID_STRIDE for f in ("coop_groups.cu", "llmc.cu", "macro.cu",
                                                  "nvidia_samples.cu", "templated.cu", "unsigned_ternary.cu")},
    **{("online_softmax", f): _SOFTMAX for f in ("aten.cu", "coop_groups.cu", "llmc.cu", "macro.cu",
                                                 "nvidia_samples.cu", "templated.cu")},
    **{("triton_multi_row", f): _MULTI_ROW for f in ("alias_language.py", "from_import.py", "heuristics.py",
                                                     "liger_style.py", "module_method.py", "tutorial.py")},
    **{("triton_single_pass_moments", f): _MOMENTS for f in ("alias_language.py", "from_import.py",
                                                             "liger_style.py", "module_method.py",
                                                             "static_range.py", "tutorial.py")},
}

SPELLINGS = all_spellings()


def _param(sp: Spelling):
    marks = [pytest.mark.xfail(reason=RANK_GAPS[sp.cell], strict=True)] if sp.cell in RANK_GAPS else []
    if sp.language == "triton":  # the static profile compiles through Triton: tens of seconds a cell
        marks.append(pytest.mark.slow)
    return pytest.param(sp, id=f"{sp.step}/{sp.file}", marks=marks)


def _profile(sp: Spelling) -> Profile:
    """The static profile `htam suggest --static` ranks from; ``unknown`` when profiling fails, as there."""
    try:
        return profile_kernel(str(sp.path), sp.kernel, static=True)
    except Exception:  # the command ranks from the source alone then
        return Profile(kernel=sp.kernel, bottleneck=Bottleneck("unknown"))


def ranked(sp: Spelling, tmp: Path, top: int = TOP) -> list[str]:
    """The strategy ids `htam suggest --top <top> --static` lists for the spelling's kernel on an empty memory."""
    model = load(str(sp.path))
    kernel = model.kernel(sp.kernel)
    profile = _profile(sp)
    with open_store(tmp / "cold.sqlite3", kb=KB) as store:
        steps = Ranker(KB, store).rank(state_from_profile(profile), [], kernel.features, kernel.language, profile,
                                       top=top, kernel=kernel, model=model)
    return [s.strategy for s in steps]


def test_rank_gaps_name_real_cells():
    cells = {sp.cell for sp in SPELLINGS}
    assert not set(RANK_GAPS) - cells


@pytest.mark.parametrize("sp", [_param(sp) for sp in SPELLINGS])
def test_the_folders_step_is_in_the_top_5(sp: Spelling, tmp_path: Path):
    if sp.language == "cuda" and not have_nvcc():
        pytest.skip("nvcc is not installed: the static profile, and so the bottleneck class, needs it")
    want = {s.id for s in strategies_of(sp.strategy)}
    got = ranked(sp, tmp_path)
    assert want & set(got), f"{sorted(want)} not in the top {TOP}: {got}"
