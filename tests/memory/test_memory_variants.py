"""v10: the variant key a record stores (schema 4) and the ranking of a strategy's variants by it
(docs/MEMORY-LOG.md, v10)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from htam_core.memory import Outcome, Ranker, load_knowledge, open_store, state_of_kernel
from htam_core.memory.ranker import RankerConfig
from htam_core.memory.store import SCHEMA_VERSION, read_records
from htam_core.memory.variants import variant_key
from htam_core.optimize.policy import order_variants
from htam_core.source.api import parse_text
from htam_core.types.profile import Bottleneck, Profile

KB = load_knowledge()
PROFILE = Profile("k", bottleneck=Bottleneck("memory-bound"))
STEP = "cuda_block_size"
ROW_CU = """
__global__ void row_sum(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; c++) s += x[r * cols + c];
    out[r] = s;
}
"""
ADD_CU = """
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def _kernel(src: str):
    return parse_text(src, "cuda").kernels[0]


def _key(block: int) -> str:
    return variant_key({"block": [block], "previous_block": [128], "transform_id": "cuda.block_size",
                        "changes_numerics": False})


# ---- the key ------------------------------------------------------------------------------------------------
def test_the_key_keeps_what_kernels_share_and_drops_what_names_one_kernel():
    assert _key(256) == '{"block":[256]}'  # previous_block and the generator's bookkeeping dropped
    assert variant_key({"BLOCK_N": 1024, "previous": 256}) == '{"scale":4}'  # a parameter the kernel names
    assert variant_key({"BLOCK_M": 128, "previous": 64}) == variant_key({"BLOCK_L": 256, "previous": 128})
    assert variant_key({"eviction_policy": "evict_first", "loads": ["tl.load(x_ptr + offs)"]}) == \
        '{"eviction_policy":"evict_first"}'
    assert variant_key({"loops": [11], "vector_width": 4}) == '{"vector_width":4}'  # line numbers dropped
    assert variant_key({"params": ["x", "y"]}) == "{}"  # one variant: nothing to tell apart
    assert variant_key({"block": [32, 8], "tile": 32}) != variant_key({"block": [32, 32], "tile": 32})
    assert variant_key(None) is None and variant_key({}) is None


# ---- the store ----------------------------------------------------------------------------------------------
def test_a_record_keeps_its_variant_through_the_store_and_an_export(tmp_path):
    with open_store(tmp_path / "a.sqlite3") as st:
        st.record([], {"memory_bound": 1.0}, STEP, Outcome(1.5, True, True, "win"), "fp", "H200",
                  variant=_key(512))
        st.record([], {"memory_bound": 1.0}, STEP, Outcome(1.1, True, True, "win"), "fp", "H200")
        assert [r.variant for r in st.records()] == [_key(512), None]
        data = json.loads(json.dumps(st.export()))
    with open_store(tmp_path / "b.sqlite3") as other:
        other.import_json(data)
        assert [r.variant for r in other.records()] == [_key(512), None]
        assert other.export() == data


def _schema_3_store(path: Path) -> None:
    """A store as htam wrote it before v10 (schema 3: no variant column), holding one record."""
    with open_store(path) as st:
        st.record([], {"memory_bound": 1.0}, STEP, Outcome(1.3, True, True, "win"), "fp", "H200")
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE records DROP COLUMN variant")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()


def test_a_schema_3_store_reads_and_ranks_as_before(tmp_path):
    path = tmp_path / "old.sqlite3"
    _schema_3_store(path)
    assert [r.variant for r in read_records(path)] == [None]  # read without migrating
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 3
    with open_store(path) as st:  # opened for writing: migrated, the record kept
        ranker = Ranker(KB, st)
        assert ranker._memory.n == 1 and int(ranker._memory.variant[0]) == -1
        k = _kernel(ADD_CU)
        # a record without a variant is no variant evidence: every variant scores the strategy's value
        scores = ranker.rank_variants(state_of_kernel(PROFILE, k), [], STEP, [_key(256), _key(512)], k.features,
                                      "cuda", PROFILE, kernel=k)
        assert scores[0] == scores[1]
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4


def test_a_read_only_schema_3_store_still_reads(tmp_path, monkeypatch):
    import htam_core.memory.store as store_mod

    path = tmp_path / "old.sqlite3"
    _schema_3_store(path)
    monkeypatch.setattr(store_mod, "_writable", lambda p: False)  # as on a read-only file system
    with open_store(path) as st:
        assert st.read_only
        assert [r.variant for r in st.records()] == [None]
        rows, _ = st.ranking_rows_after(None, ["memory_bound"])
        assert rows[0][10:12] == (None, 1.0)  # the variant NULL, then the state
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 3  # never migrated


# ---- the ranking --------------------------------------------------------------------------------------------
def _memory(tmp_path: Path) -> Path:
    """Block 512 paid off on a row kernel and lost on an elementwise one; block 1024 the other way round."""
    path = tmp_path / "m.sqlite3"
    row, add = _kernel(ROW_CU), _kernel(ADD_CU)
    with open_store(path) as st:
        for k, fp, good in ((row, "row", 512), (add, "add", 1024)):
            for block in (512, 1024):
                sp = 2.0 if block == good else 0.8
                st.record([], state_of_kernel(PROFILE, k), STEP,
                          Outcome(sp, True, True, "win" if sp > 1 else "loss"), fp, "NVIDIA H200",
                          variant=_key(block))
    return path


@pytest.mark.parametrize("src,first", [(ROW_CU, 512), (ADD_CU, 1024)])
def test_the_variant_that_paid_off_on_a_similar_kernel_goes_first(tmp_path, src, first):
    k = _kernel(src)
    with open_store(_memory(tmp_path)) as st:
        ranker = Ranker(KB, st)
        cands = [type("C", (), {"params": {"block": [b], "previous_block": [128]}})() for b in (256, 512, 1024)]
        ordered = order_variants(ranker, state_of_kernel(PROFILE, k), [], STEP, cands, k, PROFILE)
        assert ordered[0].params["block"] == [first]
        assert ordered[-1].params["block"] == [1536 - first]  # the one that lost on the similar kernel goes last
        # switched off (the method before v10, or no local memory): the transform's order
        for off in (Ranker(KB, st, config=RankerConfig(variants=False)), Ranker(KB, st, ablation="no-local")):
            assert order_variants(off, state_of_kernel(PROFILE, k), [], STEP, cands, k, PROFILE) == cands


def test_the_random_ablation_permutes_the_variant_evidence(tmp_path):
    k = _kernel(ROW_CU)
    with open_store(_memory(tmp_path)) as st:
        keys = [_key(512), _key(1024)]
        plain = Ranker(KB, st).rank_variants(state_of_kernel(PROFILE, k), [], STEP, keys, k.features, "cuda",
                                             PROFILE, kernel=k)
        shuffled = [Ranker(KB, st, ablation="random", seed=s).rank_variants(
            state_of_kernel(PROFILE, k), [], STEP, keys, k.features, "cuda", PROFILE, kernel=k) for s in range(6)]
        assert plain[0] > plain[1]
        assert any(s != plain for s in shuffled)


def test_the_config_switch_is_the_only_difference():
    assert RankerConfig().variants is True
    assert dataclasses.replace(RankerConfig(), variants=False) == RankerConfig(variants=False)
