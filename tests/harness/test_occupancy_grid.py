"""A grid sized with the occupancy API: ``cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, threads, smem)``
(also its ``WithFlags`` form) times the SM count, or ``cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, k)``,
which picks the block size too.

The analysis reads the call (which kernel, the threads and shared-memory arguments), the launch facts name the device
quantity ``occupancy`` (no number), the inferred harness writes the grid over the runner's occupancy functions
(``blocks_per_sm(256, 0) * sm_count``), the static profile says "read at run time", and the runner evaluates them
for the kernel it compiled (unit level here with a fake CuPy function and device; end to end on a GPU).
"""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.harness.device_occupancy import Compiled, DeviceOccupancy, occupancy_functions
from htam_core.harness.infer_cuda import infer_cuda_harness, inferred_summary
from htam_core.profile.occupancy import arch_limits, theoretical_occupancy
from htam_core.source.analysis import analyze
from htam_core.source.analysis.device_queries import OCCUPANCY_FUNCTIONS, occupancy_query
from htam_core.source.analysis.syntax import of_type
from htam_core.source.api import load
from tests.support.harness_oracle import same_and_wrong
from tests.support.nvcc_check import assert_compiles

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "device_grid"
#: (fixture, kernel, the launch's grid as written, its block as written)
FILES = [("occupancy_grid.cu", "fill", "numBlocksPerSm * sms", "threads"),
         ("occupancy_flags.cu", "stage_scale", "perSm * prop.multiProcessorCount", "threads"),
         ("occupancy_potential.cu", "axpy", "gridSize", "blockSize")]

KERNEL = "__global__ void k(float *x, int n) { for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = 0.0f; }\n"


def _query(call_text: str):
    """The occupancy query of the one call in ``call_text`` (placed in a host function)."""
    from htam_core.source.parsing import new_parser, node_text

    tree = new_parser("cuda").parse(f"{KERNEL}void host() {{ {call_text}; }}".encode())
    calls = [c for c in of_type(tree.root_node, "call_expression") if occupancy_query(node_text, c) is not None]
    assert len(calls) == 1, call_text
    return occupancy_query(node_text, calls[0]), node_text


@pytest.mark.parametrize(("call", "kind", "outs", "threads", "smem", "limit", "flags"), [
    ("cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, threads, smem)", "blocks", ["&per_sm"], "threads",
     "smem", None, None),
    ("cudaOccupancyMaxActiveBlocksPerMultiprocessor(&(per_sm), &k, 128, 0)", "blocks", ["&(per_sm)"], "128", "0",
     None, None),
    ("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&b, (void *)k, 64, 4 * 64, cudaOccupancyDefault)",
     "blocks", ["&b"], "64", "4 * 64", None, "cudaOccupancyDefault"),
    ("::cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, reinterpret_cast<const void *>(k), t, 0)", "blocks", ["&b"],
     "t", "0", None, None),
    ("cudaOccupancyMaxPotentialBlockSize(&minGrid, &blockSize, k, 0, 0)", "potential", ["&minGrid", "&blockSize"],
     None, "0", "0", None),
    ("cudaOccupancyMaxPotentialBlockSize(&g, &b, k)", "potential", ["&g", "&b"], None, None, None, None),
    ("cudaOccupancyMaxPotentialBlockSizeWithFlags(&g, &b, k<float, 4>, 1024, 512, 0)", "potential", ["&g", "&b"],
     None, "1024", "512", "0"),
])
def test_the_analysis_reads_each_spelling_of_the_call(call, kind, outs, threads, smem, limit, flags):
    q, text = _query(call)
    assert q.kind == kind and q.kernel == "k"
    assert [text(o) for o in q.outputs] == outs
    assert (text(q.threads) if q.threads is not None else None) == threads
    assert (text(q.smem) if q.smem is not None else None) == smem
    assert (text(q.limit) if q.limit is not None else None) == limit
    assert (text(q.flags) if q.flags is not None else None) == flags


@pytest.mark.parametrize("call", ["cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, k, 256)",
                                  "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&b, k, 256, 0)",
                                  "cudaOccupancyMaxPotentialBlockSizeVariableSMem(&g, &b, k, smem_of, 0)"])
def test_other_calls_or_too_few_arguments_are_no_query(call):
    from htam_core.source.parsing import new_parser, node_text

    tree = new_parser("cuda").parse(f"void host() {{ {call}; }}".encode())
    assert all(occupancy_query(node_text, c) is None for c in of_type(tree.root_node, "call_expression"))


@pytest.mark.parametrize(("file", "kernel", "grid", "block"), FILES)
def test_the_launch_fact_names_the_occupancy(file, kernel, grid, block):
    model = load(str(FIX / file))
    (la,) = analyze(model, model.kernel(kernel)).launches
    assert la.grid[0].text == grid and "occupancy" in la.grid[0].device and la.grid[0].value is None
    assert la.block[0].text == block
    # the block is a number unless the occupancy API picked it
    assert (la.block[0].value is None) == (la.block[0].device == ("occupancy",))


@pytest.mark.parametrize(("file", "kernel", "grid", "block", "smem"), [
    ("occupancy_grid.cu", "fill", "(blocks_per_sm(256, 0) * sm_count, 1, 1)", "(256, 1, 1)", 0),
    ("occupancy_flags.cu", "stage_scale", "(blocks_per_sm(128, 512) * sm_count, 1, 1)", "(128, 1, 1)", 128 * 4),
    ("occupancy_potential.cu", "axpy",
     "(min(((1048576 + occupancy_block(0, 0)) - 1) // occupancy_block(0, 0), occupancy_grid(0, 0)), 1, 1)",
     "(occupancy_block(0, 0), 1, 1)", 0),
])
def test_the_harness_writes_the_grid_over_the_occupancy(file, kernel, grid, block, smem):
    h = infer_cuda_harness(FIX / file, kernel)
    assert (h.grid, h.block, h.shared_bytes) == (grid, block, smem)
    assert any("read on the device at run time (the device's occupancy" in line for line in inferred_summary(h))
    # plain Python over the runner's names: a fake device of 100 SMs that fits 3 blocks of 128 threads per SM
    fake = {"sm_count": 100, "min": min, "blocks_per_sm": lambda t, s: 3,
            "occupancy_grid": lambda s, lim: 300, "occupancy_block": lambda s, lim: 128}
    g, b = eval(h.grid, fake), eval(h.block, fake)  # noqa: S307
    assert b[0] == (128 if "occupancy_block" in block else int(block.strip("()").split(",")[0]))
    assert g[0] == (min(-(-(1 << 20) // 128), 300) if "occupancy_grid" in grid else 3 * 100)


def test_the_occupancy_of_another_kernel_is_refused_in_one_line():
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(FIX / "occupancy_other.cu", "light")
    msg = str(e.value)
    assert "the grid is the occupancy of heavy (line 18), not of light" in msg and "\n" not in msg


@pytest.mark.parametrize(("flags", "ok"), [("cudaOccupancyDisableCachingOverride", True), ("1", True),
                                           ("cudaOccupancyPreferL1", False), ("argc + 7", False)])
def test_flags_that_change_the_answer_are_refused(tmp_path, flags, ok):
    src = tmp_path / "f.cu"
    src.write_text((FIX / "occupancy_flags.cu").read_text().replace("cudaOccupancyDefault", flags))
    if ok:
        assert infer_cuda_harness(src, "stage_scale").grid.startswith("(blocks_per_sm(128, 512)")
        return
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(src, "stage_scale")
    assert "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags() (line 37) cannot be read again" in str(e.value)
    assert "\n" not in str(e.value)


def test_a_block_size_from_argv_is_refused_with_the_reason(tmp_path):
    src = tmp_path / "g.cu"
    text = (FIX / "occupancy_grid.cu").read_text().replace("int main() {", "int main(int argc, char **argv) {")
    src.write_text(text.replace("const int threads = 256;", "const int threads = atoi(argv[1]);"))
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(src, "fill")
    assert "command-line argument" in str(e.value) and "\n" not in str(e.value)


def test_the_static_profile_says_read_at_run_time():
    from htam_core.profile.static_roofline import estimate_work

    for file, kernel, _, _ in FILES:
        model = load(str(FIX / file))
        unknown = " ".join(estimate_work(model, model.kernel(kernel))["unknown"])
        assert "gridDim.x: the grid from the device's occupancy (read at run time)" in unknown, unknown
    model = load(str(FIX / "occupancy_potential.cu"))
    unknown = " ".join(estimate_work(model, model.kernel("axpy"))["unknown"])
    assert "blockDim.x: the block from the device's occupancy (read at run time)" in unknown


# -- the runner's occupancy functions ----------------------------------------------------------------------------
class FakeDriver:
    """CuPy's driver calls, recording what they were asked; without ``potential`` it has only the blocks call."""

    def __init__(self, per_sm=None, potential: bool = True) -> None:
        self.asked: list[tuple] = []
        self.per_sm = per_sm or (lambda threads, smem: 5)
        if not potential:
            self.occupancyMaxPotentialBlockSize = None

    def occupancyMaxActiveBlocksPerMultiprocessor(self, handle, threads, smem):  # noqa: N802 - CuPy's name
        self.asked.append(("blocks", handle, threads, smem))
        return self.per_sm(threads, smem)

    def occupancyMaxPotentialBlockSize(self, handle, smem, limit):  # noqa: N802, F811 - CuPy's name
        self.asked.append(("potential", handle, smem, limit))
        return 77, 384


def _calculator(regs: int, static: int):
    """Blocks per SM from htam's occupancy calculator (sm_90), standing for the driver's answer."""
    return lambda threads, smem: theoretical_occupancy(regs, threads, static, dynamic_shared_bytes=smem,
                                                       target="sm_90").active_blocks_per_sm


def test_the_driver_answers_for_the_compiled_function():
    drv = FakeDriver()
    fns = DeviceOccupancy(Compiled(1234, 1024), 132, drv).functions()
    assert sorted(fns) == sorted(OCCUPANCY_FUNCTIONS)
    assert fns["blocks_per_sm"](256, 512) == 5
    assert (fns["occupancy_grid"](0, 0), fns["occupancy_block"](0, 64)) == (77, 384)
    assert drv.asked == [("blocks", 1234, 256, 512), ("potential", 1234, 0, 0), ("potential", 1234, 0, 64)]


def test_the_handle_of_a_function_or_a_raw_kernel():
    assert Compiled.of(types.SimpleNamespace(ptr=5, max_threads_per_block=640)) == Compiled(5, 640)
    raw = types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=6), max_threads_per_block=256)
    assert Compiled.of(raw) == Compiled(6, 256)


def test_the_potential_block_stays_within_the_functions_thread_limit():
    """``__launch_bounds__(128)``: without the driver's potential call, no block over 128 threads is tried (the
    driver answers a larger block too, as it did on an H200 for such a kernel, though it cannot launch)."""
    drv = FakeDriver(lambda threads, smem: 2048 // threads, potential=False)
    occ = DeviceOccupancy(Compiled(1, 128), 132, drv)
    assert occ.potential() == (16 * 132, 128)
    assert max(t for _, _, t, _ in drv.asked) == 128


@pytest.mark.parametrize(("regs", "static", "smem", "limit", "max_threads"), [
    (32, 0, 0, 0, 1024), (32, 0, 0, 200, 1024), (128, 0, 0, 0, 512), (72, 0, 8192, 0, 1024), (40, 0, 0, 0, 640)])
def test_without_the_drivers_potential_call_the_block_has_the_most_resident_threads(regs, static, smem, limit,
                                                                                    max_threads):
    occ = DeviceOccupancy(Compiled(7, max_threads), 114, FakeDriver(_calculator(regs, static), potential=False))
    grid, block = occ.potential(smem, limit)
    cap = min(max_threads, limit or 1 << 30, arch_limits("sm_90").max_threads_per_block)
    sizes = sorted({min(b, cap) for b in range(32, cap + 32, 32)})
    best = max(s * occ.blocks_per_sm(s, smem) for s in sizes)
    assert block <= cap and block * occ.blocks_per_sm(block, smem) == best > 0
    assert block == max(s for s in sizes if s * occ.blocks_per_sm(s, smem) == best)  # the larger on a tie
    assert grid == occ.blocks_per_sm(block, smem) * 114


def test_a_driver_without_occupancy_calls_is_refused_in_one_line():
    with pytest.raises(HarnessError) as e:
        DeviceOccupancy(Compiled(1, 1024), 10, types.SimpleNamespace()).blocks_per_sm(256)
    assert "cannot be read on this device" in str(e.value) and "\n" not in str(e.value)


def test_the_runner_reads_the_compiled_function_and_the_device(monkeypatch):
    """:func:`occupancy_functions` with a fake CuPy (a function's handle and thread limit, the driver's blocks call
    only) and a fake device of 78 SMs."""
    import torch

    drv = FakeDriver(_calculator(32, 0), potential=False)
    fake_cupy = types.ModuleType("cupy")
    fake_cupy.cuda = types.SimpleNamespace(driver=drv)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda i: types.SimpleNamespace(multi_processor_count=78, major=9, minor=0))
    # a RawKernel (RawModule.get_function) holds the driver's handle in its compiled `kernel`
    fns = occupancy_functions(types.SimpleNamespace(max_threads_per_block=1024, kernel=types.SimpleNamespace(ptr=99)))
    h = infer_cuda_harness(FIX / "occupancy_grid.cu", "fill")
    assert eval(h.grid, {**fns, "sm_count": 78}) == (_calculator(32, 0)(256, 0) * 78, 1, 1)  # noqa: S307
    assert drv.asked[-1] == ("blocks", 99, 256, 0)
    h = infer_cuda_harness(FIX / "occupancy_potential.cu", "axpy")
    grid, block = DeviceOccupancy(Compiled(99, 1024), 78, drv).potential()
    assert eval(h.block, {**fns}) == (block, 1, 1)  # noqa: S307
    assert eval(h.grid, {**fns, "min": min})[0] == min(-(-(1 << 20) // block), grid)  # noqa: S307


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("file", ["occupancy_flags.cu", "occupancy_potential.cu", "occupancy_other.cu"])
def test_the_fixtures_compile(file, tmp_path):
    assert_compiles(FIX / file, tmp=tmp_path)


@pytest.mark.gpu
@pytest.mark.parametrize(("file", "kernel", "wrong"), [
    ("occupancy_grid.cu", "fill", ("2.0f * i", "2.0f * i + 1.0f")),
    ("occupancy_flags.cu", "stage_scale", ("a * tile[threadIdx.x]", "a * tile[threadIdx.x] + 1.0f")),
    ("occupancy_potential.cu", "axpy", ("y[i] += a * x[i]", "y[i] += a * x[i] + 1.0f")),
])
def test_the_occupancy_grid_runs_on_gpu(tmp_path, file, kernel, wrong):
    """The harness launches with the occupancy of the compiled kernel on this device and checks the candidate against
    the start (the oracle); the grid it launched is the one the runtime's own occupancy call gives; a wrong
    candidate is refused."""
    ok, bad = same_and_wrong(tmp_path, FIX / file, kernel, lambda t: t.replace(*wrong))
    assert ok["correct"], ok["messages"]
    assert not bad["correct"]


@pytest.mark.gpu
def test_the_drivers_occupancy_matches_htams_calculator_on_gpu():
    """The runner's answer for the compiled kernel (the driver's) equals htam's occupancy calculator's from the
    function's registers and shared memory, and the potential block size has the most resident threads."""
    import torch

    from htam_core.harness.runner import _cuda_function

    major, minor = torch.cuda.get_device_capability()
    func = _cuda_function(str(FIX / "occupancy_flags.cu"), "stage_scale", f"sm_{major}{minor}")
    fns = occupancy_functions(func)
    for threads, smem in ((128, 512), (256, 1024), (1024, 0)):
        want = theoretical_occupancy(func.num_regs, threads, func.shared_size_bytes, dynamic_shared_bytes=smem,
                                     target=f"sm_{major}{minor}").active_blocks_per_sm
        assert fns["blocks_per_sm"](threads, smem) == want > 0
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    block = fns["occupancy_block"](0, 0)
    best = max(b * fns["blocks_per_sm"](b, 0) for b in range(32, func.max_threads_per_block + 1, 32))
    assert block * fns["blocks_per_sm"](block, 0) == best
    assert fns["occupancy_grid"](0, 0) == fns["blocks_per_sm"](block, 0) * sms
