"""The ranker on synthetic memories: priors, transition attention, position weights, ablations."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.memory import ABLATIONS, Outcome, Ranker, load_knowledge, open_store, state_from_profile
from htam_core.memory.features import STATE_KEYS
from htam_core.memory.ranker import RankerConfig
from htam_core.memory.store import Store
from htam_core.profile.classify import state_vector
from htam_core.source.model import KernelFeatures, Loop
from htam_core.types.profile import Bottleneck, Profile

KB = load_knowledge()
PROFILE = Profile("k", bottleneck=Bottleneck("memory-bound"))
STATE = state_from_profile(PROFILE)
OTHER = state_from_profile(Profile("k", bottleneck=Bottleneck("compute-bound")))
ELEMENTWISE = KernelFeatures(loads=2, stores=1)  # CUDA c[i] = a[i] + b[i]
MATMUL = KernelFeatures(loops=[Loop(line=5, kind="for")], loads=3, stores=1, uses_2d_index=True)


def _rank(ranker: Ranker, prefix=(), features=ELEMENTWISE, top=40, state=STATE, profile=PROFILE):
    return ranker.rank(state, list(prefix), features, "cuda", profile, top=top)


def _pos(steps, sid: str) -> int:
    return [s.strategy for s in steps].index(sid)


def _by_id(steps):
    return {s.strategy: s for s in steps}


@pytest.fixture
def store(tmp_path: Path):
    st = open_store(tmp_path / "m.sqlite3")
    yield st
    st.close()


def _fill(store: Store, prefix, step, speedup, n, state=STATE, status=None, kernels: int = 3) -> None:
    for i in range(n):
        st = status or ("win" if speedup > 1.02 else "loss" if speedup < 0.98 else "neutral")
        store.record(list(prefix), state, step, Outcome(speedup, True, True, st), f"fp{i % kernels}", "H200")


def test_empty_memory_priors_decide(store: Store) -> None:
    steps = _rank(Ranker(KB, store))
    assert steps == _rank(Ranker(KB, None))
    for s in steps:
        assert s.parts["transition"] == 0 and s.parts["exploration"] == 0
        assert s.score == pytest.approx(s.parts["prior"])
        assert s.expected_gain is None and s.trials == 0
        assert "no recorded trials" in s.evidence
    scores = [s.score for s in steps]
    assert scores == sorted(scores, reverse=True)
    assert steps[0].direction == "memory_access"  # memory-bound prior
    assert [s.rank for s in steps] == list(range(1, len(steps) + 1))


def test_recorded_wins_after_a_prefix_move_the_step_up(store: Store) -> None:
    prefix = ["vectorize_loads"]
    before = _rank(Ranker(KB, store), prefix)
    assert _pos(before, "launch_bounds") > 2
    _fill(store, prefix, "launch_bounds", 1.6, 7)
    _fill(store, prefix, "launch_bounds", 0.95, 2)
    after = _rank(Ranker(KB, store), prefix)
    assert _pos(after, "launch_bounds") < _pos(before, "launch_bounds")
    assert after[0].strategy == "launch_bounds"
    step = _by_id(after)["launch_bounds"]
    assert step.parts["local_transition"] > 0.1 and step.parts["direction_transition"] > 0.1
    assert step.evidence.startswith("after vectorize loads (float4), __launch_bounds__ register limit paid off "
                                    "7 of 9 times, median +60%")
    # each (kernel, prefix, step, state) group is valued by its best variant: +60% on all three kernels
    assert step.expected_gain == pytest.approx(0.6)
    assert (step.wins, step.trials) == (7, 9)


def test_losses_move_a_step_down(store: Store) -> None:
    before = _rank(Ranker(KB, store))
    top = before[0].strategy
    _fill(store, [], top, 0.6, 6)
    after = _rank(Ranker(KB, store))
    assert _pos(after, top) > 0
    assert _by_id(after)[top].parts["local_transition"] < 0


def test_own_evidence_outweighs_the_direction_value(store: Store) -> None:
    """Hierarchical shrinkage (RankerConfig.pool_local): a strategy with its own records of no gain is judged by
    them, not lifted by a sibling's wins; a sibling without records inherits the direction's value. Before the
    change, the direction's term was added in full to every strategy of the direction."""
    _fill(store, [], "vectorize_loads", 2.0, 9)
    _fill(store, [], "restrict_pointers", 1.0, 9)
    pooled = _by_id(_rank(Ranker(KB, store)))
    added = _by_id(_rank(Ranker(KB, store, config=RankerConfig(pool_local=False))))
    t_d = added["restrict_pointers"].parts["direction_transition"]
    assert t_d > 0.3  # memory_access is worth vectorize_loads' wins
    assert pooled["restrict_pointers"].parts["direction_transition"] < 0.25 * t_d
    assert pooled["restrict_pointers"].score < added["restrict_pointers"].score - 0.2
    assert pooled["readonly_cache_loads"].parts["direction_transition"] == pytest.approx(t_d)  # no own records
    assert pooled["readonly_cache_loads"].score > pooled["restrict_pointers"].score
    flat = [Ranker(KB, store, ablation="flat", config=RankerConfig(pool_local=p)) for p in (True, False)]
    assert [s.score for s in _rank(flat[0])] == [s.score for s in _rank(flat[1])]  # flat has no direction value


def test_records_in_a_different_state_weigh_less(store: Store) -> None:
    _fill(store, [], "cuda_block_size", 2.0, 3, state=STATE)
    _fill(store, [], "cuda_block_size", 0.5, 3, state=OTHER)
    here = _by_id(_rank(Ranker(KB, store)))["cuda_block_size"]
    there = _by_id(_rank(Ranker(KB, store), state=OTHER, profile=None))["cuda_block_size"]
    assert here.parts["local_transition"] > 0 > there.parts["local_transition"]


@pytest.mark.parametrize("quantile, n_loss", [(None, 3), (0.75, 9)])
def test_position_weights_make_the_last_step_count_most(store: Store, quantile: float | None, n_loss: int) -> None:
    """The attention weighs the records made after the same last step most. Under the attended mean (before v12)
    three kernels each way show it; under v12's upper quartile the wins after the mirrored history still hold a
    third of the attention mass and read as the quartile in both orders, so the losing context is measured on three
    times as many kernels here (the wins then hold a seventh of the mass)."""
    a, b, x = "restrict_pointers", "readonly_cache_loads", "cuda_block_size"
    _fill(store, [a, b], x, 1.8, 3)  # after ... a, b  -> x wins
    _fill(store, [b, a], x, 0.6, n_loss, kernels=n_loss)  # after ... b, a  -> x loses
    ranker = Ranker(KB, store, config=RankerConfig(quantile=quantile))
    last_b = _by_id(_rank(ranker, [a, b]))[x].parts["local_transition"]
    last_a = _by_id(_rank(ranker, [b, a]))[x].parts["local_transition"]
    assert last_b > 0 > last_a
    flat_pos = Ranker(KB, store, ablation="no-position", config=RankerConfig(quantile=quantile))
    assert _by_id(_rank(flat_pos, [a, b]))[x].parts == _by_id(_rank(flat_pos, [b, a]))[x].parts


@pytest.mark.parametrize("ablation", [a for a in ABLATIONS if a != "flat"])
def test_ablations_change_nothing_on_an_empty_memory(store: Store, ablation: str) -> None:
    # the last step has no hand-written strategy edge (no-local drops those) and no-prefix is compared
    # without history (it drops the history's edge priors)
    prefix = [] if ablation == "no-prefix" else ["vectorize_loads", "restrict_pointers"]
    base = [s.to_json() for s in _rank(Ranker(KB, store), prefix)]
    assert any(s["parts"]["direction_transition"] for s in base) or not prefix  # an edge prior is in play
    assert [s.to_json() for s in _rank(Ranker(KB, store, ablation=ablation), prefix)] == base


def test_hand_written_edge_priors_count_without_records(store: Store) -> None:
    steps = _by_id(_rank(Ranker(KB, store), ["vectorize_loads"]))
    edge = KB.transitions[("strategy", "vectorize_loads", "cuda_block_size")]
    assert steps["cuda_block_size"].parts["local_transition"] == pytest.approx(edge.gain)
    assert edge.why in steps["cuda_block_size"].evidence


def test_flat_drops_the_hierarchy(store: Store) -> None:
    _fill(store, ["vectorize_loads"], "cuda_block_size", 1.5, 5)
    _fill(store, [], "strength_reduction", 1.3, 3)
    flat = _rank(Ranker(KB, store, ablation="flat"), ["vectorize_loads"], features=MATMUL)
    base = _rank(Ranker(KB, store), ["vectorize_loads"], features=MATMUL, top=3)
    assert all(s.parts["direction_transition"] == 0 and s.parts["direction_exploration"] == 0 for s in flat)
    assert any(s.parts["direction_transition"] != 0 for s in _rank(Ranker(KB, store), ["vectorize_loads"],
                                                                    features=MATMUL))
    # flat: every applicable strategy competes; hierarchical: the top directions only
    assert {s.direction for s in flat} == {s.direction for s in Ranker(KB, store).applicable(MATMUL, "cuda")}
    assert len({s.direction for s in base}) <= 2
    # local memory still counts in flat
    assert _by_id(flat)["cuda_block_size"].parts["local_transition"] > 0


def test_no_local_drops_local_memory_only(store: Store) -> None:
    _fill(store, ["vectorize_loads"], "cuda_block_size", 1.5, 5)
    base = _by_id(_rank(Ranker(KB, store), ["vectorize_loads"]))
    nolocal = _by_id(_rank(Ranker(KB, store, ablation="no-local"), ["vectorize_loads"]))
    assert set(nolocal) <= set(base)
    for sid, s in nolocal.items():
        assert s.parts["local_transition"] == 0 and s.parts["local_exploration"] == 0 and s.expected_gain is None
        for key in ("direction_prior", "direction_exploration", "local_prior"):
            assert s.parts[key] == pytest.approx(base[sid].parts[key])
        # the direction's value is the same; with local memory, a strategy with its own records receives it
        # shrunk toward its own lower evidence (RankerConfig.pool_local), one without records all of it
        share = base[sid].parts["direction_transition"]
        if base[sid].trials:
            assert 0 < share <= s.parts["direction_transition"]
        else:
            assert share == pytest.approx(s.parts["direction_transition"])
    assert base["cuda_block_size"].parts["local_transition"] > 0


def test_no_prefix_ignores_the_history(store: Store) -> None:
    _fill(store, ["vectorize_loads"], "cuda_block_size", 1.7, 5)
    _fill(store, [], "cuda_block_size", 0.7, 5)
    base = Ranker(KB, store)
    assert _rank(base, ["vectorize_loads"]) != _rank(base, [])
    nop = Ranker(KB, store, ablation="no-prefix")
    with_prefix = [s.to_json() for s in _rank(nop, ["vectorize_loads"])]
    assert with_prefix == [s.to_json() for s in _rank(nop, [])]
    # without the start token (the earlier encoding), an empty history adds nothing: identical to no-prefix
    old = Ranker(KB, store, config=RankerConfig(start_token=False))
    assert [s.to_json() for s in _rank(old, [])] == with_prefix
    # with it, a query at the start attends to the records made at a start: cuda_block_size's x0.7 there
    # weighs more than its x1.7 after vectorize_loads
    start = _by_id(_rank(base, []))["cuda_block_size"].parts["local_transition"]
    assert start < _by_id(_rank(nop, []))["cuda_block_size"].parts["local_transition"]
    assert start < 0


def test_no_update_freezes_the_memory(store: Store) -> None:
    base, frozen = Ranker(KB, store), Ranker(KB, store, ablation="no-update")
    assert frozen.record([], STATE, "cuda_block_size", Outcome(2.0, True, True, "win"), "k", "H200") is None
    assert store.count() == 0
    _fill(store, [], "cuda_block_size", 2.0, 5)
    assert _by_id(_rank(base))["cuda_block_size"].parts["local_transition"] > 0  # default sees new records
    assert _by_id(_rank(frozen))["cuda_block_size"].parts["local_transition"] == 0
    assert base.record([], STATE, "cuda_block_size", Outcome(2.0, True, True, "win"), "k", "H200") is not None


def test_random_permutes_outcomes_deterministically(store: Store) -> None:
    for i in range(12):
        _fill(store, [], "cuda_block_size", 1.8, 1)
        _fill(store, [], "vectorize_loads", 0.5 + i * 0.001, 1)
    r1 = [s.to_json() for s in _rank(Ranker(KB, store, seed=3, ablation="random"))]
    r2 = [s.to_json() for s in _rank(Ranker(KB, store, seed=3, ablation="random"))]
    base = _by_id(_rank(Ranker(KB, store)))
    assert r1 == r2
    rnd = {s["strategy"]: s for s in r1}
    assert rnd["vectorize_loads"]["parts"]["local_transition"] > base["vectorize_loads"].parts["local_transition"]
    for sid, s in rnd.items():
        assert s["parts"]["prior"] == pytest.approx(base[sid].parts["prior"], abs=1e-6)
        assert s["parts"]["exploration"] == pytest.approx(base[sid].parts["exploration"], abs=1e-6)


def test_unknown_ablation_and_bad_top() -> None:
    with pytest.raises(ValueError, match="unknown ablation"):
        Ranker(KB, None, ablation="no-brain")
    with pytest.raises(ValueError):
        Ranker(KB, None).rank(STATE, [], ELEMENTWISE, "cuda", PROFILE, top=0)


def test_exploration_favours_untried_strategies(store: Store) -> None:
    _fill(store, [], "vectorize_loads", 1.0, 10)
    steps = _by_id(_rank(Ranker(KB, store)))
    assert steps["readonly_cache_loads"].parts["local_exploration"] > steps["vectorize_loads"].parts[
        "local_exploration"]


def test_incremental_refresh_sees_new_records(store: Store) -> None:
    ranker = Ranker(KB, store)
    _rank(ranker)
    _fill(store, [], "cuda_block_size", 1.5, 2)
    assert _by_id(_rank(ranker))["cuda_block_size"].trials == 2
    _fill(store, [], "cuda_block_size", 1.5, 1)
    assert _by_id(_rank(ranker))["cuda_block_size"].trials == 3
    assert ranker.refresh() == 0


def test_a_group_is_valued_by_its_best_variant(store: Store) -> None:
    """Parameter variants tried from the same parent are the search inside a strategy: their losses do not
    pull the strategy down, while the same losses on another kernel (its own group) do."""
    import math

    import numpy as np

    from htam_core.memory.ranker import best_of_groups

    v = np.array([0.1, math.nan, 0.5, -0.3, 0.5, math.nan], dtype=np.float64)
    g = np.array([0, 0, 0, 1, 1, 2], dtype=np.int64)
    out = best_of_groups(v, g)
    assert out[2] == 0.5 and out[4] == 0.5 and all(math.isnan(float(out[i])) for i in (0, 1, 3, 5))
    for sp in (1.5, 0.7, 0.6, 0.5):  # one kernel: the first block size wins, later variants lose
        store.record([], STATE, "cuda_block_size", Outcome(sp, True, True, "win" if sp > 1 else "loss"), "k1", "H200")
    step = _by_id(_rank(Ranker(KB, store)))["cuda_block_size"]
    assert step.expected_gain == pytest.approx(0.5) and step.trials == 4
    for sp in (0.6, 0.5):  # two other kernels where it only lost
        store.record([], STATE, "cuda_block_size", Outcome(sp, True, True, "loss"), f"k{sp}", "H200")
    assert _by_id(_rank(Ranker(KB, store)))["cuda_block_size"].expected_gain < 0.5


def test_endpoint_fault_is_never_an_outcome(store: Store) -> None:
    """An LLM endpoint fault says nothing about the strategy: it cannot be built as an Outcome, so it can never
    reach the records the ranker learns from (the optimize loop skips it before recording)."""
    from htam_core.memory.records import ENDPOINT_FAULT, NOT_LEARNED, Record

    assert ENDPOINT_FAULT in NOT_LEARNED
    with pytest.raises(ValueError, match="fault of the LLM endpoint"):
        Outcome(None, False, False, ENDPOINT_FAULT)
    bad = {"uid": "u", "time": 1.0, "prefix": [], "state": {}, "step": "cuda_block_size", "direction": "launch",
           "outcome": {"speedup": None, "correct": False, "measured": False, "status": ENDPOINT_FAULT},
           "fingerprint": "k", "device": "H200"}
    with pytest.raises(ValueError, match="never recorded in the memory"):
        Record.from_json(bad)
    assert store.count() == 0


def test_state_keys_are_the_classifiers_and_entries_are_clipped() -> None:
    p = Profile("k", mode="gpu", sol={"memory_pct": 250.0, "compute_pct": float("nan")}, registers=300,
                achieved_occupancy=-0.5, bottleneck=Bottleneck("memory-bound", secondary=["latency-bound"]))
    assert tuple(state_vector(p)) == STATE_KEYS
    s = state_from_profile(p)
    assert s["sol_memory"] == 1.0 and s["sol_compute"] == 0.0 and s["registers"] == 1.0
    assert s["achieved_occupancy"] == 0.0 and s["measured"] == 1.0
    assert s["class=memory-bound"] == 1.0 and s["class=latency-bound"] == 0.5 and s["class=unknown"] == 0.0


def test_a_matched_strategy_signal_keeps_its_direction_in_the_choice(store: Store) -> None:
    """The directions are chosen with their best strategy's fired signals: on a textbook interleaved tree
    reduction (memory-bound), Parallel Mapping's prior alone is below Memory Access, Data Reuse and Launch
    Configuration, so choosing by the direction's score cut sequential addressing out of the top 5; its matched
    signal (the analysis finds the interleaved tree) keeps the direction, and the step ranks first."""
    from htam_core.source import load

    path = Path(__file__).resolve().parents[1] / "fixtures" / "spellings" / "sequential_addressing" / "nvidia_samples.cu"
    model = load(str(path))
    kernel = model.kernel("reduceInterleaved")

    def top5(lift: bool) -> list[str]:
        ranker = Ranker(KB, store, config=RankerConfig(signal_lift=lift))
        steps = ranker.rank(STATE, [], kernel.features, "cuda", PROFILE, top=5, kernel=kernel, model=model)
        return [s.strategy for s in steps]

    assert "sequential_addressing" not in top5(False)
    assert top5(True)[0] == "sequential_addressing"
    # the scores are unchanged: only which directions are scored moves
    full = {s.strategy: s.score for s in Ranker(KB, store, config=RankerConfig(signal_lift=False)).rank(
        STATE, [], kernel.features, "cuda", PROFILE, top=40, kernel=kernel, model=model)}
    lifted = Ranker(KB, store).rank(STATE, [], kernel.features, "cuda", PROFILE, top=5, kernel=kernel, model=model)
    for s in lifted:
        assert s.score == pytest.approx(full[s.strategy])


def test_the_signal_lift_leaves_flat_alone(store: Store) -> None:
    """``flat`` scores every applicable strategy already: the lift changes nothing there."""
    a = Ranker(KB, store, ablation="flat")
    b = Ranker(KB, store, ablation="flat", config=RankerConfig(signal_lift=False))
    assert [s.strategy for s in _rank(a, top=5)] == [s.strategy for s in _rank(b, top=5)]
