"""``__device__`` variables as a kernel's output: the analysis layer's facts (``KernelFacts.device_globals``, the
uniform atomic ``atomicAdd(&g_count, 1u)``, the histogram ``atomicAdd(&hist[b], 1)`` into a ``__device__``
array), the step the ranker offers for them, and the privatization transforms' candidate text (compiled with nvcc
when it is installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from htam_core.memory.facts import compute_facts
from htam_core.source import load
from htam_core.source.analysis import analyze
from htam_core.transforms.registry import get

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "devsym"


def _facts(path: Path, kernel: str):
    model = load(path)
    return model, model.kernel(kernel), analyze(model, model.kernel(kernel))


def test_a_device_scalar_written_by_an_atomic_is_a_fact_and_a_uniform_atomic():
    _, _, f = _facts(FIX / "devcount.cu", "count_pos")
    (g,) = f.device_globals
    assert (g.name, g.element_type, g.scalar, g.count, g.mode) == ("g_count", "unsigned int", True, 1, "readwrite")
    (u,) = f.uniform_atomics
    assert (u.update.pointer, u.address_text, u.scope, u.stable, u.address_locals) == (
        "g_count", "&g_count", "grid", True, ())
    assert f.grid_total()  # the count is the kernel's only output
    assert f.pointer("g_count") is not None and f.pointer("g_count").element_type == "unsigned int"


@pytest.mark.parametrize("kernel, name, qualified, etype, static, header", [
    ("sum_total", "total", "total", "float", True, False),
    ("count_ns", "acc::ns_count", "acc::ns_count", "unsigned int", False, False),
    ("count_hdr", "hdr_count", "hdr_count", "unsigned long long", False, True),
])
def test_other_spellings_of_a_device_counter(kernel, name, qualified, etype, static, header):
    _, _, f = _facts(FIX / "multi" / "multi.cu", kernel)
    (g,) = f.device_globals
    assert (g.name, g.qualified, g.element_type, g.static, bool(g.header)) == (name, qualified, etype, static, header)
    (u,) = f.uniform_atomics
    assert u.update.pointer == name and u.stable


def test_a_device_array_histogram_has_its_declared_bin_count():
    _, _, f = _facts(FIX / "multi" / "multi.cu", "histo")
    (g,) = f.device_globals
    assert (g.name, g.scalar, g.count, g.count_text) == ("hist", False, 256, "NUM_BINS")
    (h,) = f.histogram_updates()
    assert h.pointer == "hist" and h.extent == 256


def test_a_parameter_hides_a_device_variable_and_constant_memory_is_no_output():
    _, _, f = _facts(FIX / "multi" / "multi.cu", "hidden")
    assert f.device_globals == ()
    _, _, f = _facts(FIX / "multi" / "multi.cu", "sum_total")
    assert [g.name for g in f.device_globals] == ["total"]  # scale is __constant__


def test_a_plain_store_into_a_device_scalar_is_a_write():
    _, _, f = _facts(FIX / "multi" / "multi.cu", "plain_store")
    (g,) = f.device_globals
    assert g.mode == "write" and g.written


def test_the_ranker_sees_the_uniform_atomic_into_a_device_variable():
    model, kernel, _ = _facts(FIX / "devcount.cu", "count_pos")
    facts = compute_facts(kernel.features, kernel.language, None, kernel, model)
    assert facts["uniform_atomic"] is True


def _candidates(path: Path, kernel: str, transform: str):
    model = load(path)
    out = get(transform).propose(model, model.kernel(kernel), None)
    assert isinstance(out, list), out
    return out


def test_privatize_atomic_keeps_the_device_variable_as_the_address():
    cands = _candidates(FIX / "devcount.cu", "count_pos", "cuda.privatize_atomic")
    for c in cands:
        assert "if (htam_lane == 0) atomicAdd(&g_count, htam_acc);" in c.new_text
        assert c.new_text.count("atomicAdd(&g_count") == 1
    assert any("htam_sm_grid" in c.new_text for c in cands)  # the grid-stride form: the count is the only output


def test_smem_histogram_takes_a_device_array():
    (c,) = _candidates(FIX / "multi" / "multi.cu", "histo", "cuda.smem_histogram")
    assert "__shared__" in c.new_text and "atomicAdd(&hist[" in c.new_text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("path, kernel, transform", [
    ("devcount.cu", "count_pos", "cuda.privatize_atomic"),
    ("multi/multi.cu", "count_ns", "cuda.privatize_atomic"),
    ("multi/multi.cu", "count_hdr", "cuda.privatize_atomic"),
    ("multi/multi.cu", "sum_total", "cuda.privatize_atomic"),
    ("multi/multi.cu", "histo", "cuda.smem_histogram"),
])
def test_the_candidates_compile(tmp_path, path, kernel, transform):
    src = FIX / path
    for c in _candidates(src, kernel, transform):
        shutil.copytree(src.parent, tmp_path / "w", dirs_exist_ok=True)
        cu = tmp_path / "w" / src.name
        cu.write_text(c.new_text)
        proc = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(cu), "-o", str(tmp_path / "k.o")],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
