"""A grid the host program sizes from its device at run time: ``cudaDeviceGetAttribute(&sms,
cudaDevAttrMultiProcessorCount, dev); k<<<sms * 4, 256>>>``, or ``prop.multiProcessorCount * 2`` after
``cudaGetDeviceProperties`` (capped with ``std::min``).

The launch fact names the device quantity (``Dim.device``, no number), the inferred harness writes the grid over
``sm_count``, which the runner reads on the device that runs it, the static profile says "the grid from the
device's SM count (read at run time)", and the launch steps that keep the host's grid expression still apply. A
grid from the occupancy API is tested in test_occupancy_grid.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.harness.infer_cuda import infer_cuda_harness, inferred_summary
from htam_core.harness.runner import device_quantities_here
from htam_core.source.analysis import analyze
from htam_core.source.api import load
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.harness_oracle import same_and_wrong
from tests.support.nvcc_check import assert_compiles

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "device_grid"
CASES = [("attr_grid.cu", "add_one", "(sm_count * 4, 1, 1)", 256),
         ("props_grid.cu", "scale", "(min(sm_count * 2, 8192), 1, 1)", 128)]


@pytest.mark.parametrize(("file", "kernel", "grid", "block"), CASES)
def test_the_launch_fact_names_the_device_quantity(file, kernel, grid, block):
    model = load(str(FIX / file))
    (la,) = analyze(model, model.kernel(kernel)).launches
    assert la.grid[0].device == ("sm_count",) and la.grid[0].value is None
    assert la.block[0].value == block and la.block[0].device == ()


@pytest.mark.parametrize(("file", "kernel", "grid", "block"), CASES)
def test_the_harness_reads_the_grid_on_its_device(file, kernel, grid, block):
    h = infer_cuda_harness(FIX / file, kernel)
    assert h.grid == grid and h.block == f"({block}, 1, 1)"
    assert any("read on the device at run time (the device's SM count" in line for line in inferred_summary(h))
    # the runner's namespace gives sm_count on a GPU; the expression is plain Python over it
    assert eval(h.grid, {"min": min, "sm_count": 132}) == (eval(grid, {"min": min, "sm_count": 132}))  # noqa: S307
    assert eval(h.grid, {"min": min, "sm_count": 132})[0] > 0  # noqa: S307


def test_a_buffer_sized_from_the_device_is_unknown_not_a_crash(tmp_path):
    src = tmp_path / "partials.cu"
    src.write_text((FIX / "attr_grid.cu").read_text().replace(
        "    add_one<<<", "    float *d_p = nullptr;\n    cudaMalloc(&d_p, sms * 4 * sizeof(float));\n    add_one<<<"))
    h = infer_cuda_harness(src, "add_one")  # d_p is no argument: the harness is read all the same
    assert h.grid == "(sm_count * 4, 1, 1)"


def test_the_static_profile_names_the_device_grid():
    from htam_core.profile.static_roofline import estimate_work

    model = load(str(FIX / "attr_grid.cu"))
    work = estimate_work(model, model.kernel("add_one"))
    assert any("gridDim.x: the grid from the device's SM count (read at run time)" in u for u in work["unknown"])


@pytest.mark.parametrize(("file", "kernel", "grid_text"), [("attr_grid.cu", "add_one", "sms * 4"),
                                                          ("props_grid.cu", "scale", "blocks")])
def test_the_block_is_retuned_with_the_hosts_grid_expression_kept(file, kernel, grid_text):
    model = load(str(FIX / file))
    res = registry.propose("cuda.block_size", model, model.kernel(kernel))
    assert not isinstance(res, NotApplicable), res.reason
    for c in res:
        # the grid is kept (sms * 4), or follows a named block constant it divides by (`(n + threads - 1) / threads`)
        assert f"the grid ({grid_text}) is kept" in c.description or "recomputed" in c.description
        (la,) = analyze(load_text(c.new_text), load_text(c.new_text).kernel(kernel)).launches
        assert la.grid[0].text == grid_text and la.grid[0].device == ("sm_count",)


def load_text(text: str):
    """The source model of CUDA ``text``."""
    from htam_core.source import parse_text

    return parse_text(text, "cuda")


def test_no_device_quantities_without_a_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the gpu test covers this")
    assert device_quantities_here() == {}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("file", ["attr_grid.cu", "props_grid.cu", "occupancy_grid.cu"])
def test_the_fixtures_compile(file, tmp_path):
    assert_compiles(FIX / file, tmp=tmp_path)


@pytest.mark.gpu
def test_sm_count_is_the_devices_on_gpu():
    import torch

    assert device_quantities_here() == {
        "sm_count": torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count}


@pytest.mark.gpu
@pytest.mark.parametrize(("file", "kernel", "grid", "block"), CASES)
def test_the_inferred_harness_runs_on_gpu(tmp_path, file, kernel, grid, block):
    """The harness launches with the device's own SM count and checks the candidate against the start (the
    oracle); a wrong candidate is refused."""
    ok, bad = same_and_wrong(tmp_path, FIX / file, kernel, lambda t: t.replace("x[i] += 1.0f", "x[i] += 2.0f")
                             .replace("a * x[i]", "a * x[i] + 1.0f"))
    assert ok["correct"], ok["messages"]
    assert not bad["correct"]


@pytest.mark.parametrize(("tid", "file", "kernel", "grids"), [
    ("cuda.grid_size", FIX / "attr_grid.cu", "add_one", ["(sm_count * 8, 1, 1)", "(sm_count * 32, 1, 1)"]),
    ("cuda.grid_stride", FIX.parent / "zeroconf" / "cu_saxpy_define.cu", "saxpy",
     ["(min(16384, sm_count * 8), 1, 1)", "(min(16384, sm_count * 32), 1, 1)"]),
])
def test_a_candidate_is_run_with_its_own_sm_sized_grid(tmp_path, tid, file, kernel, grids):
    """htam's own grid helpers (``htam_sm_blocks(8)``, ``htam_sm_grid(blocks, 8)``) are read as device quantities,
    so a candidate's harness launches the grid it writes. Regression: the grid-stride step's candidate could not be
    read again (``htam_sm_grid`` was an unknown call) and was timed with the starting kernel's grid."""
    model = load(str(file))
    res = registry.propose(tid, model, model.kernel(kernel))
    assert not isinstance(res, NotApplicable), res.reason
    got = []
    for c in res:
        p = tmp_path / file.name
        p.write_text(c.new_text)
        got.append(infer_cuda_harness(p, kernel).grid)
    assert got == grids


def test_a_2d_candidate_is_run_with_its_own_capped_grid(tmp_path):
    """``cuda.grid_size`` on a 2-D grid-stride kernel writes ``dim3(htam_sm_grid(grid.x, 8), htam_sm_rows(grid.x,
    grid.y, 8))``: its harness reads both components on the device, x capped first, y with the blocks left, neither
    past the launch's own grid."""
    file = FIX / "grid2d.cu"
    model = load(str(file))
    res = registry.propose("cuda.grid_size", model, model.kernel("scale2d"))
    assert not isinstance(res, NotApplicable), res.reason
    gx, gy = -(-2500 // 32), -(-3000 // 8)
    for c in res:
        per_sm = c.params["blocks_per_sm"]
        p = tmp_path / file.name
        p.write_text(c.new_text)
        h = infer_cuda_harness(p, "scale2d")
        assert h.block == "(32, 8, 1)"
        for sms in (1, 16, 132):
            cap = sms * per_sm
            x = min(gx, cap)
            want = (x, min(gy, max(1, cap // x)), 1)
            got = eval(h.grid, {"min": min, "max": max, "sm_count": sms})  # noqa: S307
            assert got == want and got[0] * got[1] <= max(cap, 1), (sms, got)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_2d_candidate_compiles(tmp_path):
    model = load(str(FIX / "grid2d.cu"))
    (c, _) = registry.propose("cuda.grid_size", model, model.kernel("scale2d"))
    assert_compiles(c.new_text, tmp=tmp_path, name="c.cu")


@pytest.mark.gpu
def test_the_2d_candidates_match_the_start_on_gpu(tmp_path):
    """Each capped 2-D grid, launched by its own harness on the device, gives what the start gives (the oracle)."""
    import dataclasses

    from htam_core.verify.run import verify_harness

    start = tmp_path / "grid2d.cu"
    shutil.copy(FIX / "grid2d.cu", start)
    h = infer_cuda_harness(start, "scale2d")
    model = load(str(start))
    for c in registry.propose("cuda.grid_size", model, model.kernel("scale2d")):
        cand = tmp_path / f"per_sm_{c.params['blocks_per_sm']}" / "grid2d.cu"
        cand.parent.mkdir()
        cand.write_text(c.new_text)
        ok = verify_harness(dataclasses.replace(h, path=str(cand)).to_json())
        assert ok["correct"], ok["messages"]
