"""A synthetic family where the best *variant* of a strategy depends on the kernel (the sample-efficiency work, docs/MEMORY-LOG.md v10):
HTAM must learn which block size pays on which kind of kernel from the other members' records; the ablations
without local memory, with its signal destroyed or without the hierarchy, and the method before v10, lose it.

The environment is the real candidate tree of four CUDA suite kernels (the committed static table
``tests/bench/fixtures/synthetic_space_static.jsonl``; its fifth kernel, a 2D transpose, has no block shape in
common with the others and is left out), replayed through the same runner as a GPU table. Each node's variant is
found again by proposing its transform on its parent's text (the tree holds only the candidates' hashes), and
the made-up speedup of a node is the product over its path of one factor per step:

* ``cuda_block_size`` with the block of the kernel's kind: x2.0; with another block: x0.8. The kind is the
  kernel's structure: the two elementwise kernels (``axpy_tiny_block``, ``bias_relu_residual``) want 1024
  threads, the transform's fourth and last variant; the two row kernels (``row_sum_serial``,
  ``softmax_row_per_thread``) want 512, their second;
* any other step: x1.05.

Nothing without the right block reaches 90 % of the best. Over all records each block pays on half of the kernels
and loses on the other half, so a memory that does not tell the variants apart, or keeps the transform's order,
needs more trials.

The environment's steps are ``cuda_block_size`` and the two steps the engine offers on every one of the four
kernels at the start, ``launch_bounds`` and ``restrict_pointers`` (:data:`STEPS`; every policy, the teachers whose
records make the warm memory included, ranks from a knowledge base holding only them). The rule makes every other
step kind-neutral, so the kinds differ in the best block and nothing else. The steps the engine offers on one kind
only (a warp per row, online softmax, fast math and unrolling on the row kernels; the grid-stride loop and float4
loads on the elementwise ones) or only after another step (``__ldg`` after the restrict qualifiers, until the
engine stopped offering it on ``const __restrict__`` inputs) are incidentals of its rules: they changed the
teachers' records, and with them which kind HTAM learned and which ablations lost it.

What HTAM learns here (pinned, docs/MEMORY-LOG.md, "The variant family pinned to its own steps"): both row members
at the first trial (512, the transform's second variant, so not the transform's order), neither elementwise member
(3 and 4 trials), 2.25 mean trials against 4.25 for the method before v10 (no variant credit). The elementwise
members are missed because of the data, as the row members were before the pinning: the teachers reach 1024 on an
elementwise kernel only at their seventh trial, after other steps, and a query at the start attends to start
records (start token, v2). After two trials (where the elementwise members' own failed variants count, v13) HTAM
is ahead of every ablation that removes what the variant needs. The test pins what is learned and what is lost, so
a change to either fails it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from htam_core.bench.replay import ReplayConfig, run_replay
from htam_core.bench.space import synthesize_table
from htam_core.memory.variants import variant_key
from htam_core.optimize.replay import text_key
from htam_core.source import language_for_path, parse_text
from htam_core.transforms import registry
from tests.memory.ablation_checks import ablation_params, assert_loses, pinned_strategies

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "bench" / "fixtures" / "synthetic_space_static.jsonl"
SEEDS = int(os.environ.get("S6SEEDS", "3"))  # the replay protocol's seeds
KERNELS = ["axpy_tiny_block", "bias_relu_residual", "row_sum_serial", "softmax_row_per_thread"]
BEST_BLOCK = {"axpy_tiny_block": [1024], "bias_relu_residual": [1024], "row_sum_serial": [512],
              "softmax_row_per_thread": [512]}
#: The environment's steps: the block size and the two kind-neutral steps every kernel here is offered at the start.
STEPS = ("cuda_block_size", "launch_bounds", "restrict_pointers")
#: Ablations that lose the variant (mean trials to 90 % and geomean after 2 trials; docs/MEMORY-LOG.md): no local
#: memory (the variant level is below it; 3.75), a memory whose outcomes are permuted (3.25), flat (3.25: it has the
#: same variant-level memory by design, but without the direction level it reaches the right block later on the
#: elementwise members), no-prefix (2.5) and no-update (2.5: the run's own failed variants do not move it to the next
#: one, v13), against HTAM's 2.25.
LOSE = ("flat", "no-local", "no-prefix", "no-update", "random-memory")
#: Ablations this environment cannot tell from HTAM, each for a stated reason (strict xfail: the day one of them
#: loses the variant, the test says so).
TIE = {"no-position": "the histories that matter are empty or one step long"}


def variant_tree(rows: list[dict]) -> dict[tuple[str, str], dict | None]:
    """``{(kernel id, key): params}`` of every node of the static table, found again by proposing each node's
    transform on its parent's text (``None`` for a start, or where the transform no longer makes that text)."""
    nodes = {(r["kernel"], r["key"]): r for r in rows if r.get("type") == "node"}
    texts: dict[tuple[str, str], str] = {}
    params: dict[tuple[str, str], dict | None] = {}
    for (kid, key), r in sorted(nodes.items(), key=lambda kv: kv[1].get("depth", 0)):
        path, name = kid.rsplit("::", 1)
        if r.get("parent") is None:
            texts[(kid, key)] = (REPO / path).read_text(encoding="utf-8")
            params[(kid, key)] = None
            continue
        parent = texts.get((kid, r["parent"]))
        params[(kid, key)] = None
        if parent is None or not r.get("transform"):
            continue
        model = parse_text(parent, language_for_path(path), path)
        kernel = next(k for k in model.kernels if k.answers_to(name))
        for c in registry.propose(r["transform"], model, kernel, None) or []:
            if text_key(c.new_text) == key:
                texts[(kid, key)], params[(kid, key)] = c.new_text, dict(c.params)
                break
    return params


def speedup(kernel: str, path: list[tuple[str, dict | None]]) -> float:
    """The synthetic speedup over the start of the node reached by ``path`` ((strategy, params) from the start)."""
    v = 1.0
    for strategy, params in path:
        if strategy == "cuda_block_size":
            v *= 2.0 if (params or {}).get("block") == BEST_BLOCK.get(kernel) else 0.8
        else:
            v *= 1.05
    return v


def write_table(out: Path) -> None:
    """The synthetic table: :func:`synthesize_table`'s file, each node's times from :func:`speedup`."""
    synthesize_table(FIXTURE, out, lambda p: 1.0, note=__doc__.split("\n\n")[1])
    lines = out.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(ln) for ln in lines]
    params = variant_tree(rows)
    nodes = {(r["kernel"], r["key"]): r for r in rows if r.get("type") == "node"}

    def path_of(r: dict) -> list[tuple[str, dict | None]]:
        if not r.get("parent"):
            return []
        return [*path_of(nodes[(r["kernel"], r["parent"])]), (r["strategy"], params[(r["kernel"], r["key"])])]

    with out.open("w", encoding="utf-8") as fh:
        for r in rows:
            if r.get("type") == "node" and r.get("parent"):
                sp = speedup(r["kernel"].rsplit("::", 1)[1], path_of(r))
                t = 1.0 / sp
                r = {**r, "speedup_vs_start": sp, "evaluation": {**r["evaluation"], "time_ms": t,
                                                                 "per_set_ms": [t] * len(r["evaluation"]["per_set_ms"])}}
            fh.write(json.dumps(r) + "\n")


def _replay(tmp: Path, policies: list[str] | None = None) -> dict:
    old = os.getcwd()
    os.chdir(REPO)
    try:
        table = tmp / "synthetic-variants.jsonl"
        write_table(table)
        cfg = ReplayConfig(table=str(table), work=str(tmp / "work"), kernels=KERNELS, budget=8, seeds=SEEDS,
                           warm_leave_out="kernel")
        if policies:
            cfg.policies = policies
        with pinned_strategies(STEPS):
            return run_replay(cfg, log=lambda m: None)
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    return _replay(tmp_path_factory.mktemp("synthetic-variants"))


def test_the_environment_finds_every_variant_again():
    rows = [json.loads(ln) for ln in FIXTURE.read_text(encoding="utf-8").splitlines()]
    params = variant_tree(rows)
    blocks = {(kid.rsplit("::", 1)[1], variant_key(p)) for (kid, _), p in params.items()
              if p is not None and "block" in p and "tile" not in p}
    for k in KERNELS:  # the right block is among the kernel's variants, and it is not the transform's first
        assert (k, json.dumps({"block": BEST_BLOCK[k]}, separators=(",", ":"))) in blocks


def test_the_environment_has_one_best_variant(replay):
    targets = {r["kernel"].rsplit("::", 1)[1]: r["target"] for r in replay["rows"]}
    assert set(targets) == set(KERNELS)
    assert all(2.0 <= t <= 2.0 * 1.05 + 1e-9 for t in targets.values())


def test_htam_learns_the_variant_of_the_row_kind(replay):
    warm = replay["aggregates"]["htam"]
    assert warm["reached_90"] == warm["kernels_measured"] == 4
    t90 = {r["kernel"].rsplit("::", 1)[1]: r["trials_to_90"] for r in replay["rows"] if r["policy"] == "htam"}
    assert t90["row_sum_serial"] == t90["softmax_row_per_thread"] == 1  # 512, the transform's second variant, first
    assert t90["axpy_tiny_block"] > 1 and t90["bias_relu_residual"] > 1  # not learned (module docstring)
    assert warm["mean_trials_to_90"] <= 2.25
    assert warm["geomean_at"]["1"] >= 2.0 ** 0.5 - 1e-9


@pytest.mark.parametrize("ablation", ablation_params(LOSE, TIE))
def test_every_ablation_loses_it(replay, ablation):
    assert_loses(replay, ablation, at="2")


def test_the_method_before_v10_loses_it(tmp_path, monkeypatch):
    """The test can fail: without variant credit (``RankerConfig(variants=False)``, the transform's order) HTAM
    needs more trials here."""
    import functools

    import htam_core.optimize.loop as loop_mod
    from htam_core.memory.ranker import Ranker, RankerConfig

    monkeypatch.setattr(loop_mod, "Ranker", functools.partial(Ranker, config=RankerConfig(variants=False)))
    doc = _replay(tmp_path, ["htam"])
    warm = doc["aggregates"]["htam"]
    assert warm["mean_trials_to_90"] > 2.25 and warm["geomean_at"]["1"] < 2.0 ** 0.5


def test_the_loop_records_each_candidates_variant(replay):
    from htam_core.memory.store import read_records

    stores = sorted(Path(replay["config"]["work"]).glob("stores/*-htam-cold-s0.sqlite3"))
    recs = [r for p in stores for r in read_records(p)]
    blocks = {r.variant for r in recs if r.step == "cuda_block_size"}
    assert blocks and all(b is not None and b.startswith('{"block":[') for b in blocks)
    assert len(blocks) >= 3  # the variants tried are told apart
