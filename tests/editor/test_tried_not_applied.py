"""The file's history holds the steps applied to it, not the candidates ``htam optimize`` tried on copies.

``htam optimize`` records each candidate under the kernel's *tried* id: the ranker learns from it as evidence of the
kernel (the own-parent evidence counts it), the editor's history (the hover's "Last steps" and the ranking prefix)
does not hold it, until ``--apply`` writes the best kernel into the file and its lineage's records are adopted.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from htam_core.editor import ProfileView
from htam_core.editor.history import History
from htam_core.editor.memory import EditorMemory
from htam_core.editor.render import hover_markdown
from htam_core.editor.session import Session
from htam_core.memory import Outcome, open_store
from htam_core.memory.fingerprint import is_tried, kernel_fingerprint, kernel_of, tried_fingerprint
from htam_core.source import parse_text
from tests.memory.test_memory_own_parent import _local
from tests.memory.test_memory_ranker import STATE

NEUTRAL = Outcome(None, True, False, "neutral")


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "scale.cu"
    path.write_text("__global__ void scale(const float* x, float* y, int n) {\n"
                    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 2.0f * x[i];\n}\n")
    return path


@pytest.fixture
def store(tmp_path):
    st = open_store(tmp_path / "m.sqlite3")
    yield st
    st.close()


def test_the_tried_id_is_the_kernels_id_marked():
    fp = kernel_fingerprint("/p/k.cu", "k")
    t = tried_fingerprint(fp)
    assert t != fp and is_tried(t) and not is_tried(fp)
    assert kernel_of(t) == fp == kernel_of(fp) and tried_fingerprint(t) == t


def _fill(store, path) -> tuple[str, str]:
    fp = kernel_fingerprint(path, "scale")
    applied = store.record([], STATE, "restrict_pointers", NEUTRAL, fp, "static")
    for step in ("cuda_block_size", "vectorize_loads"):  # what an optimize run tried on copies
        store.record(["restrict_pointers"], STATE, step, NEUTRAL, tried_fingerprint(fp), "static")
    return fp, applied.uid


def test_history_holds_only_the_applied_steps(store, kernel_file):
    _fill(store, kernel_file)
    h = History()
    h.seed(store.records(), lambda s: s)
    assert h.prefix(str(kernel_file), "scale") == ("restrict_pointers",)
    assert [s.step for s in h.of(str(kernel_file), "scale")] == ["restrict_pointers"]
    assert [s.step for s in h.tried(str(kernel_file), "scale")] == ["cuda_block_size", "vectorize_loads"]


def test_apply_adopts_the_records_into_the_files_history(store, kernel_file):
    fp, _ = _fill(store, kernel_file)
    block = next(r for r in store.records() if r.step == "cuda_block_size")
    assert store.adopt([block.uid, "no-such-uid"]) == 1
    assert store.adopt([block.uid]) == 0  # already the file's
    h = History()
    h.seed(store.records(), lambda s: s)
    assert h.prefix(str(kernel_file), "scale") == ("restrict_pointers", "cuda_block_size")
    assert [s.step for s in h.tried(str(kernel_file), "scale")] == ["vectorize_loads"]
    assert next(r for r in store.records() if r.uid == block.uid).fingerprint == fp


def test_the_ranker_counts_tried_records_as_the_kernels_own(store):
    # the own-parent evidence (tests/memory/test_memory_own_parent.py) reads a tried record as the kernel's
    fp = "proj/k.cu::k"
    for i in range(4):
        store.record([], STATE, "cuda_block_size", Outcome(1.5, True, True, "win"), f"other{i}.cu::k", "H200")
    for _ in range(3):
        store.record([], STATE, "cuda_block_size", Outcome(0.6, True, True, "loss"), tried_fingerprint(fp), "H200")
    without, own = _local(store, [], None), _local(store, [], fp)
    assert own == pytest.approx(0.5 * without + 0.5 * math.log(0.6), abs=1e-9)


def test_hover_shows_tried_candidates_apart_from_the_last_steps(store, kernel_file):
    _fill(store, kernel_file)
    h = History()
    h.seed(store.records(), {"restrict_pointers": "const __restrict__ pointers",
                             "cuda_block_size": "retune the block size",
                             "vectorize_loads": "vectorize loads (float4)"}.get)
    k = parse_text(kernel_file.read_text(), "cuda", str(kernel_file)).kernel("scale")
    md = hover_markdown(k, ProfileView(None, False, False), [], h.of(str(kernel_file), "scale"), ready=True,
                        engine="rules", tried=h.tried(str(kernel_file), "scale"))
    last, _, tried = md.partition("**Tried by htam optimize, not applied**")
    assert "**Last steps**" in last and "const __restrict__ pointers" in last
    assert "retune the block size" not in last and "vectorize" not in last
    assert "retune the block size" in tried and "vectorize loads (float4)" in tried


def test_an_applied_auto_optimize_run_makes_its_lineage_the_files(tmp_path, kernel_file):
    # the editor's auto-optimize: the best (candidate 2, made from candidate 1) was applied to the file
    memory = EditorMemory()
    memory.open(str(tmp_path / "e.sqlite3"))
    tried = tried_fingerprint(kernel_fingerprint(kernel_file, "scale"))
    uids = {i: memory.store.record([], STATE, step, NEUTRAL, tried, "static").uid
            for i, step in ((1, "restrict_pointers"), (2, "cuda_block_size"), (3, "vectorize_loads"))}
    session = SimpleNamespace(history_log=History(), memory=memory)
    session.history_log.seed(memory.store.records(), memory.title)
    assert session.history_log.prefix(str(kernel_file), "scale") == ()
    Session.adopt_optimized(session, SimpleNamespace(recorded=uids, best_lineage=[1, 2]))
    assert session.history_log.prefix(str(kernel_file), "scale") == ("restrict_pointers", "cuda_block_size")
    assert [s.step for s in session.history_log.tried(str(kernel_file), "scale")] == ["vectorize_loads"]
    memory.close()
