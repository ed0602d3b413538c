"""``cuda.coarsen_reduction`` on a block tree whose result goes to one atomic total (the grid is free): the add during
the load becomes a grid-stride loop over a grid sized to the device (``htam_sm_grid(blocks, per_sm)``), and a
whole-block tree with its atomic becomes the warp-shuffle block combine with one atomic per block, in one step.

The kernels (``grid_free_reductions.cu``, written for these tests) are the sum of squares measured in the textbook
trial (an interleaved tree, ``atomicAdd(g_odata, sdata[0])``), an int count with an early return and sequential
addressing, a template sum over a typed view of dynamic shared memory with cooperative-groups barriers (run as
double), and an unsigned max. Each rewrite compiles with nvcc (sm_90) and runs on the CPU
(:func:`cpu_emulation.run_block_main`) with the grid its own launch writes on a device of 2 SMs (so every thread's
grid-stride loop runs several times), on ragged sizes, against totals computed here. A per-block partial output and
a block sum sent to an ``atomicMax`` (the largest block sum depends on the grid) keep the fixed factors and are not
given a device-sized grid. The textbook trial's kernel ranks this step first, and the ranked chain reaches the
grid-stride, shuffle-combined form in one step.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import SM_GRID_PRELUDE, compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, facts_of_text, fixture_path

from htam_core.source import parse_text

TID = "cuda.coarsen_reduction"
FILE = "grid_free_reductions.cu"
SIZES = (1, 127, 1000, 5003)
GRID_FREE = ("sumsq", "count_positive", "tsum", "umax")


def _kernel_text(text: str, kernel: str) -> str:
    """The kernel's definition in ``text`` (from its name to the closing brace at column 0)."""
    start = text.index(f"void {kernel}(")
    return text[start:text.index("\n}\n", start)]


@pytest.mark.parametrize("kernel", GRID_FREE)
def test_the_whole_rung_in_one_step(cand, kernel):
    cs = cand(TID, FILE, kernel)
    assert [(c.params["blocks_per_sm"], c.params["form"]) for c in cs] == [(4, "block_combine"), (8, "block_combine")]
    text = cs[0].new_text
    body = _kernel_text(text, kernel)
    f = facts_of_text(text, kernel)
    (gs,) = [lp for lp in f.loops if lp.grid_stride]
    assert [a.name for a in gs.accumulators] == ["htam_acc"]
    assert "__shfl_down_sync" in body and len(f.atomics) == 1  # one atomic per block, after the shuffles
    assert not f.shared_tree_loops()  # the tree is gone
    (grid,) = f.launches[0].grid
    assert grid.text.startswith("htam_sm_grid(") and grid.text.endswith(", 4)")
    assert "static inline unsigned int htam_sm_grid(" in text and cs[0].helpers


def test_per_block_partials_keep_their_grid_contract(cand):
    cs = cand(TID, FILE, "partials")
    assert [c.params.get("elements_per_thread") for c in cs] == [8, 4]
    for c in cs:
        assert "htam_sm_grid" not in c.new_text and "htam_acc" not in c.new_text
        assert c.params["per_block_output"] and "__shfl" not in _kernel_text(c.new_text, "partials")


def test_a_block_sum_sent_to_a_max_is_not_grid_free(cand):
    """The largest block sum changes with the blocks' extents: the grid only shrinks by the fixed factors, and the
    tree and its atomicMax stay."""
    cs = cand(TID, FILE, "max_block_sum")
    assert [c.params.get("elements_per_thread") for c in cs] == [8, 4]
    body = _kernel_text(cs[0].new_text, "max_block_sum")
    assert "htam_sm_grid" not in cs[0].new_text and "atomicMax(out, sdata[0]);" in body


def test_an_already_finished_tree_keeps_it_with_a_device_grid(cand):
    """After the warp-shuffle finish the statements between the load and the atomic are no longer one tree loop:
    the tree is kept, and only the accumulation and the grid change."""
    from htam_core.transforms import registry

    model = parse_text(fixture_path(FILE).read_text(), "cuda")
    (fin,) = registry.propose("cuda.warp_shuffle_finish", model, model.kernel("sumsq"))
    model2 = parse_text(fin.new_text, "cuda")
    cs = registry.propose(TID, model2, model2.kernel("sumsq"))
    assert [c.params["form"] for c in cs] == ["tree", "tree"]  # type: ignore[union-attr]
    text = cs[0].new_text  # type: ignore[index]
    assert "sdata[tid] = htam_v;" in text and "htam_sm_grid((n + threads - 1) / threads, 4)" in text


def test_the_fact_reads_only_a_grid_wide_result():
    model = parse_text(fixture_path(FILE).read_text(), "cuda")
    from htam_core.source.analysis import analyze

    got = {k.name: analyze(model, k).grid_free_result() for k in model.kernels}
    assert {k for k, r in got.items() if r is not None} == {*GRID_FREE, "max_block_sum"}
    assert got["umax"].op == "max" and got["tsum"].element_type == "T"  # type: ignore[union-attr]


def test_the_trial_kernel_ranks_the_whole_rung_first(tmp_path, capsys):
    """``htam suggest`` on a new memory ranks the add during the load first (its grid-free signal), and a one-step
    static ``optimize`` makes the grid-stride, shuffle-combined form with a device-sized grid."""
    from htam_core.cli.main import main

    src = tmp_path / "sumsq.cu"  # the textbook trial's kernel, with its main()
    src.write_text(fixture_path("sumsq_atomic_trial.cu").read_text())
    store = tmp_path / "mem.sqlite"
    assert main(["suggest", str(src), "--kernel", "sumsq", "--static", "--memory", str(store)]) == 0
    first = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("1. "))
    assert "(thread_coarsening)" in first
    out = tmp_path / "out"
    assert main(["optimize", str(src), "--kernel", "sumsq", "--static", "--budget", "1", "--out", str(out),
                 "--memory", str(store)]) == 0
    (made,) = (out / "candidates").glob("01-*/*.cu")
    body = _kernel_text(made.read_text(), "sumsq")
    assert made.parent.name == "01-thread_coarsening" and "__shfl_down_sync" in body and "sdata[tid]" not in body
    assert "sumsq<<<htam_sm_grid((n + threads - 1) / threads, 4)" in made.read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_rewrite_compiles(cand, tmp_path):
    for i, kernel in enumerate(GRID_FREE):
        for c in cand(TID, FILE, kernel):
            assert_nvcc_compiles(c.new_text, tmp_path, f"g{i}_{c.params['blocks_per_sm']}.cu")


_PRELUDE = SM_GRID_PRELUDE + """
#include <algorithm>
using std::max;
namespace cg {  // the two cooperative-groups calls the template kernel keeps
struct thread_block {};
inline thread_block this_thread_block() { return {}; }
inline void sync(thread_block) { __syncthreads(); }
}
template <class T> struct SmemView { operator T *() { static unsigned char b[1 << 16]; return (T *)b; } };
"""

_MAIN = """
int main() {
    const int threads = 256;  // the host local the sum of squares' launch reads
    (void)threads;
    for (unsigned int n : {SIZES}) {
        std::vector<ELEM> x(n), out(1, INIT);
        for (unsigned int k = 0; k < n; ++k) x[k] = (ELEM)(VALUE);
        htam_launch(GRID, BLOCK, 1, [&] { CALL(x.data(), out.data(), n); });
        std::printf("%.17g\\n", (double)out[0]);
    }
    return 0;
}
"""

#: kernel -> (element type, initial total, value of element k as C text, the same in Python, the total's fold)
_RUNS = {
    "sumsq": ("float", "0.0f", "0.5f * (float)((k * 7) % 13) - 3.0f", lambda k: 0.5 * ((k * 7) % 13) - 3.0,
              lambda xs: sum(x * x for x in xs)),
    "count_positive": ("int", "0", "(int)((k * 7) % 13) - 6", lambda k: (k * 7) % 13 - 6,
                       lambda xs: sum(1 for x in xs if x > 0)),
    "tsum": ("double", "0.0", "0.25 * (double)((k * 5) % 11) - 1.0", lambda k: 0.25 * ((k * 5) % 11) - 1.0, sum),
    "umax": ("unsigned int", "0u", "(k * 2654435761u) % 100003u", lambda k: (k * 2654435761) % 2**32 % 100003, max),
}


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel", GRID_FREE)
def test_the_rewrite_totals_the_same_on_the_cpu(cand, kernel, tmp_path):
    text = cand(TID, FILE, kernel)[0].new_text
    f = facts_of_text(text, kernel)
    (grid,) = [d.text for d in f.launches[0].grid]
    (block,) = [d.text for d in f.launches[0].block]
    elem, init, value, py_value, fold = _RUNS[kernel]
    call = "tsum<double>" if kernel == "tsum" else kernel
    main = (_MAIN.replace("SIZES", ", ".join(f"{n}u" for n in SIZES)).replace("GRID", grid).replace("BLOCK", block)
            .replace("CALL", call).replace("ELEM", elem).replace("INIT", init).replace("VALUE", value))
    got = run_block_main(text, kernel, main, tmp_path, prelude=_PRELUDE)
    assert got == [float(fold([py_value(k) for k in range(n)])) for n in SIZES]
