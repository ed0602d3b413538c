"""The grading scenario on the sample-project look-alikes (tests/fixtures/sample_projects): a new user opens a
teaching sample's naive kernel and asks for the next step.

- ``reduction``: ``reduce0`` (templated, ``SharedMemory<T>``, ``cg::sync``), launched from a ``switch`` in the
  templated host ``reduce<T>`` that ``main()`` in ``reduction.cpp`` calls with a block count computed at run time;
  each block writes one partial sum that the host reads back.
- ``transpose``: ``transposeNaive`` (``TILE_DIM``/``BLOCK_ROWS`` loop over rows), launched only through a
  function pointer (``kernel = &transposeNaive; kernel<<<grid, threads>>>``).

For each: a textbook step is offered and its edit compiles (``nvcc -arch=sm_90`` with the workspace's
``Common/`` as ``-I``, when nvcc is installed), as ``bench/bench_textbook.py`` counts it; no offered step
changes the grid or block size of a kernel writing one result per block; on a cold memory a textbook step is in
the top 5 (``htam suggest --top 5 --static``); the function-pointer launch is read for the harness."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_corpus_steps import tb

from htam_core.memory import Ranker, load_knowledge, open_store, state_from_profile
from htam_core.profile.api import profile_kernel
from htam_core.source import load

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "sample_projects"
#: (workspace, kernel file under it, naive kernel, its textbook steps: knowledge-base strategy ids)
CASES = [
    ("reduction", "Samples/reduction/reduction_kernel.cu", "reduce0",
     ("sequential_addressing", "warp_shuffle_reduction", "thread_coarsening")),
    ("transpose", "Samples/transpose/transpose.cu", "transposeNaive", ("transpose_smem_tile",)),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name,rel,kernel,steps", CASES, ids=IDS)
def test_a_textbook_step_is_makeable_and_compiles(name: str, rel: str, kernel: str, steps: tuple[str, ...],
                                                  tmp_path: Path) -> None:
    compile_edits = shutil.which("nvcc") is not None
    (tmp_path / "cache").mkdir()
    row = tb.static_facts(ROOT / name / rel, kernel, steps, tmp_path, tmp_path / "cache", compile_edits,
                          includes=(ROOT / name / "Common",))
    assert row["error"] is None, row["error"]
    assert not row["textbook_unchecked"], row["compile_errors"]
    assert row["textbook_makeable"], (row["textbook_refused"], row["compile_errors"])
    assert not row["contract_ruled_out"], row["contract_ruled_out"]


def test_the_reductions_partial_sums_rule_out_grid_steps(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    row = tb.static_facts(ROOT / "reduction" / CASES[0][1], "reduce0", ("thread_coarsening",), tmp_path,
                          tmp_path / "cache", False)
    assert row["per_block_outputs"] == ["out[blockIdx.x] line 34"]
    assert not set(row["offered"]) & tb.GRID_STEPS
    assert "the grid cannot shrink here" in row["textbook_refused"]["thread_coarsening"]


@pytest.mark.parametrize("name,rel,kernel,steps", CASES, ids=IDS)
def test_a_textbook_step_is_in_the_top_5_on_a_cold_memory(name: str, rel: str, kernel: str,
                                                          steps: tuple[str, ...], tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed: the static profile, and so the bottleneck class, needs it")
    kb = load_knowledge()
    model = load(str(ROOT / name / rel))
    k = model.kernel(kernel)
    profile = profile_kernel(str(ROOT / name / rel), kernel, static=True)
    with open_store(tmp_path / "cold.sqlite3", kb=kb) as store:
        ranked = Ranker(kb, store).rank(state_from_profile(profile), [], k.features, k.language, profile, top=5,
                                        kernel=k, model=model)
    assert set(steps) & {s.strategy for s in ranked}, [s.strategy for s in ranked]


def test_the_function_pointer_launch_gives_the_transposes_harness() -> None:
    from htam_core.harness.find import find_harness

    h = find_harness(ROOT / "transpose" / CASES[1][1], "transposeNaive", run_code=False)
    assert h.kind == "inferred", h.notes
    assert (str(h.grid), str(h.block)) == ("(32, 32, 1)", "(32, 8, 1)")


def test_no_step_that_changes_the_parameter_types_is_offered_through_the_pointer(tmp_path: Path) -> None:
    # regression: const __restrict__ was offered on transposeNaive and its edit failed to compile, since
    # `kernel = &transposeNaive;` assigns it to a pointer typed void (*)(float *, float *, int, int)
    (tmp_path / "cache").mkdir()
    row = tb.static_facts(ROOT / "transpose" / CASES[1][1], "transposeNaive", ("restrict_pointers",), tmp_path,
                          tmp_path / "cache", False)
    assert "restrict_pointers" not in row["offered"]
    assert "reaches transposeNaive through the function pointer" in row["textbook_refused"]["restrict_pointers"]


def test_the_block_size_refusal_names_the_output_contract() -> None:
    # a new user read only "not a compile-time constant" and could not tell the step stays ruled out once it is one
    from htam_core.transforms.registry import propose

    model = load(str(ROOT / "reduction" / CASES[0][1]))
    reason = propose("cuda.block_size", model, model.kernel("reduce0")).reason
    assert "the block size threads is not a compile-time constant" in reason
    assert "reduce0 writes one output per block (out[blockIdx.x] on line 34)" in reason
