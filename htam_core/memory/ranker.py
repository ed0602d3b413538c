"""The transition-attended ranker: one HTAM step choice (steps 1 and 2 of an evolution step; formulas in docs/MEMORY.md).

**Direction score** (global level) for direction d, bottleneck b, history prefix h (last step ``a``):

* ``prior_d = w[b][d] + 0.5 * max_{b2 in secondary} w[b2][d] + sum of d's signal boosts that fire``
  (``w`` is the knowledge base's bottleneck -> direction table);
* ``T_d = lam_d * V_d + (1 - lam_d) * g(dir(a) -> d)``: the transition-attended value ``V_d =
  sum_r alpha_r v_r`` with ``alpha = softmax(q . k_r / tau)`` over the records whose step falls under d,
  ``q = phi(s_t, h_t)``, ``k_r = phi(state_r, prefix_r)`` (:mod:`htam_core.memory.features`),
  shrunk toward the hand-written edge prior ``g`` (0 when none) by ``lam = n_eff / (n_eff + N0)``,
  where ``n_eff = sum_r max(q . k_r, 0)`` counts the records similar to the query;
* ``U_d = C_D * sqrt(ln(1 + N) / (1 + n_d))``: a UCB1-style exploration bonus over trial counts.

**Strategy score** (local level), for the applicable strategies of the top ``breadth`` directions
(more directions are added while fewer than ``top`` strategies apply; a direction whose ``score_d`` plus the
largest sum of fired signal boosts among its applicable strategies exceeds a chosen direction's score is
added too, so a direction whose strongest evidence is a strategy's matched signal is not cut before that
strategy is scored):
``score_s = score_d + LOCAL_PRIOR_SCALE * prior_s + boosts_s + L_s + U_s`` where ``L_s`` and ``U_s`` are
the same attention and bonus over the records whose step is s, with the strategy-level edge prior.

**Ablations** (the paper's table; each switches off exactly one thing):

* ``flat``: no hierarchy: no direction-level memory (``T_d = U_d = 0``), no direction block in phi,
  every applicable strategy competes (no top-direction gating);
* ``no-local``: no local memory: ``L_s = U_s = 0`` and no expected gain;
* ``no-prefix``: the history is ignored (prefix blocks of phi and edge priors dropped);
* ``no-position``: every prefix position weighs 1 instead of ``GAMMA ** distance``;
* ``no-update``: the memory is read once when the ranker is built and :meth:`Ranker.record` writes
  nothing;
* ``random``: randomized memory: the outcomes of the records are permuted with a generator seeded by
  ``seed`` (structure kept, signal destroyed).

All arithmetic is float64 numpy (the ranker never imports torch: the editor ranks without loading it); the
only randomness is the seeded permutation (:func:`seeded_permutation`, the one ``torch.randperm`` gives under
the same seed, so rankings made when the ranker ran on torch are unchanged), so results are deterministic under
a seed. Constants are in :class:`RankerConfig`.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from htam_core.memory.facts import compute_facts, normalize_language
from htam_core.memory.features import (
    PREFIX_LEN,
    STATE_KEYS,
    STRUCT_KEYS,
    W_PREFIX_DIRECTION,
    W_PREFIX_STRATEGY,
    W_STATE,
    bottleneck_of_state,
    has_structure,
    prefix_block,
    state_tensor,
    unit_rows,
    with_structure,
)
from htam_core.memory.fingerprint import kernel_of
from htam_core.memory.knowledge import KnowledgeBase, Strategy
from htam_core.memory.records import Outcome, Record, value_of
from htam_core.memory.store import Store, gpu_model
from htam_core.source.model import Kernel, KernelFeatures, SourceModel
from htam_core.types.profile import Profile
from htam_core.types.text import first_sentence

__all__ = ["ABLATIONS", "RankerConfig", "RankedStep", "Ranker"]

#: Ablation switches accepted by :class:`Ranker` and ``htam suggest --ablation``.
ABLATIONS = ("flat", "no-local", "no-prefix", "no-position", "no-update", "random")


@dataclass(frozen=True)
class RankerConfig:
    """Constants of the ranker (our choices; see docs/MEMORY.md).

    Attributes:
        tau: softmax temperature of transition attention (q . k is in [0, 1]).
        shrink_n0: pseudo-count of the prior in the shrinkage ``lam = n_eff / (n_eff + n0)``.
        c_direction, c_strategy: UCB exploration coefficients (log-speedup units).
        breadth: how many top directions contribute strategies.
        local_prior_scale: scale of a strategy's 0..1 base prior.
        secondary_weight: weight of secondary bottleneck classes in the direction prior.
        credit: transition credit: a record's value is its own log-speedup plus ``credit`` times the best
            (credited) value recorded from the kernel it led to, when that is positive: a step that opens the
            way to a large next step earns part of it (0 switches it off; docs/MEMORY-LOG.md, "Changes").
        start_token: an empty history is encoded as a "start" position (one-hot in both prefix blocks), so that
            a query at the start attends to the records made at a start, not to every record alike (``False``:
            the empty prefix adds nothing to ``q . k``, the earlier encoding).
        direction_best: a direction's transition term is at least the largest shrunk local value among its
            applicable strategies (``False``: the attention average over every record under the direction only).
        pool_local: a strategy with its own records receives its direction's transition term shrunk toward its
            own evidence: ``(1 - lam_s) * T_d + lam_s * min(T_d, L_s)``, with the confidence ``lam_s`` of its own
            ``L_s``. A sibling that its own records show to gain nothing no longer rides on the direction's best
            strategy; the best strategy itself (``L_s = T_d``) and strategies without records keep ``T_d``
            (``False``: ``T_d`` is added in full to every strategy of the direction; not under ``flat``, which has
            no direction value).
        structure: (v9) the query and records carry the kernel's structure block (:data:`STRUCT_KEYS`, pattern
            flags from the analysis layer); where both have it, the state part of ``q . k`` is the mean of the
            state block's and the structure block's cosines, so kernels of one bottleneck class but different
            structure stop looking alike (``False``: the state block alone, as before v9; records older than v9
            always compare on it alone).
        variants: (v10) the candidates one strategy proposes from a parent (its variants: block sizes, vector
            widths, tile shapes) are tried in the order of their own attended value, shrunk toward the strategy's
            ``L_s`` (:meth:`Ranker.rank_variants`), instead of the transform's order (``False``: the transform's
            order, as before v10).
        same_gpu_weight: attention weight of records measured on the GPU model being ranked for, relative to
            the others (1.0: no preference). It multiplies such a record's softmax weight in transition
            attention (it adds ``tau * ln(w)`` to its logit) and nothing else: counts and confidence are kept.
        quantile: (v12) a strategy's own attended value ``L_s`` is this upper quantile of the attention-weighted
            distribution of its records' own values (:func:`_segment_quantile`), plus the attended mean of their
            transition credit, instead of the mean of both, so a step whose similar records reach a gain
            outranks one measured neutral everywhere (``None``: the attended mean, as before v12). The
            direction level, the expected gain shown and the variant order keep the mean.
        signal_lift: (v15) a direction whose score plus the largest sum of signal boosts that fire for one of
            its applicable strategies exceeds the score of a direction chosen by score (the top ``breadth``,
            widened to ``top`` strategies) is chosen too, so a direction whose one strong piece of evidence is a
            matched strategy signal (the analysis recognizes the pattern the step rewrites) is not cut before
            its strategies are scored; no direction chosen by score is dropped and the scores are unchanged
            (``False``: the directions are chosen by their own score only, as before v15).
        own_parent: (v13) when the ranking is given the kernel's fingerprint, the records of *this* kernel made
            at *this* node (same fingerprint, same full history) are the kernel's own evidence for each step: a
            strategy's local value is pooled with them, ``(n_own * mean_own + shrink_n0 * L_s) / (n_own +
            shrink_n0)``, so the variants already tried here without a win lower what one more variant of the
            same step is expected to give (``False``: the kernel's own records count only as similar records,
            as before v13).
    """

    tau: float = 0.1
    shrink_n0: float = 2.0
    c_direction: float = 0.05
    c_strategy: float = 0.03
    breadth: int = 2
    local_prior_scale: float = 0.25
    secondary_weight: float = 0.5
    credit: float = 0.9
    start_token: bool = True
    direction_best: bool = True
    pool_local: bool = True
    structure: bool = True
    variants: bool = True
    same_gpu_weight: float = 1.5
    quantile: float | None = 0.75
    own_parent: bool = True
    signal_lift: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.same_gpu_weight) and self.same_gpu_weight > 0):
            raise ValueError(f"same_gpu_weight must be a positive number, got {self.same_gpu_weight!r}")
        if self.quantile is not None and not (0.0 < self.quantile < 1.0):
            raise ValueError(f"quantile must be between 0 and 1 (exclusive) or None, got {self.quantile!r}")


@dataclass
class RankedStep:
    """One ranked optimization step.

    Attributes:
        rank: 1-based position.
        direction, strategy: ids in the knowledge base; direction_name, title: their display text.
        score: total score (log-speedup units); ``parts`` sums to it through prior + transition + exploration.
        parts: ``{"prior", "transition", "exploration"}`` plus the per-level terms.
        expected_gain: expected fractional gain from memory (0.35 = +35%), or ``None`` without measured
            records for this strategy.
        wins, trials: this strategy's recorded wins and trials.
        evidence: where the expectation comes from, in words.
        rationale: one line for a human, whole (never cut: ``htam suggest --json`` carries it as is).
        transform: mechanical transform id, or ``None``.
        risk: the strategy's risk note, or ``None``.
    """

    rank: int
    direction: str
    strategy: str
    score: float
    parts: dict[str, float]
    expected_gain: float | None
    wins: int
    trials: int
    evidence: str
    rationale: str
    transform: str | None
    risk: str | None
    direction_name: str = ""
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        """The ``htam suggest --json`` object of this step."""
        return {"rank": self.rank, "direction": self.direction, "strategy": self.strategy,
                "score": round(self.score, 6), "parts": {k: round(v, 6) for k, v in self.parts.items()},
                "expected_gain": None if self.expected_gain is None else round(self.expected_gain, 6),
                "evidence": self.evidence, "rationale": self.rationale, "transform": self.transform,
                "risk": self.risk, "title": self.title, "direction_name": self.direction_name,
                "wins": self.wins, "trials": self.trials}


class _Memory:
    """The records of a store as numpy arrays, loaded once and extended incrementally."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.s_index = {s.id: i for i, s in enumerate(kb.strategies)}
        self.d_index = {d.id: i for i, d in enumerate(kb.directions)}
        self.n = 0
        self.state = np.zeros((0, 0), dtype=np.float64)
        self.struct = np.zeros((0, len(STRUCT_KEYS) - 1), dtype=np.float64)  # unit, ``struct`` flag left out
        self.has_struct = np.zeros(0, dtype=bool)
        self.pidx = np.zeros((0, PREFIX_LEN), dtype=np.int64)
        self.pdir = np.zeros((0, PREFIX_LEN), dtype=np.int64)
        self.plen = np.zeros(0, dtype=np.int64)
        self.step = np.zeros(0, dtype=np.int64)
        self.dir = np.zeros(0, dtype=np.int64)
        self.last = np.zeros(0, dtype=np.int64)
        self.value = np.zeros(0, dtype=np.float64)
        self.speedup = np.zeros(0, dtype=np.float64)
        self.win = np.zeros(0, dtype=bool)
        self.fail = np.zeros(0, dtype=bool)
        self.fingerprints: list[str] = []
        self.gpus: list[str | None] = []
        self.group = np.zeros(0, dtype=np.int64)  # (kernel, prefix, step) group of each record
        self.variant = np.zeros(0, dtype=np.int64)  # variant id of each record (-1: none recorded)
        self.v_index: dict[tuple[str, str], int] = {}  # (step, variant key) -> variant id
        self.credit = 0.0  # set by the ranker (RankerConfig.credit)
        self.start_token = False  # set by the ranker (RankerConfig.start_token)
        self._at: list[tuple[str, tuple[str, ...]]] = []  # (kernel, full prefix): where each record was made
        self.at_index: dict[tuple[str, tuple[str, ...]], list[int]] = {}  # (kernel, full prefix) -> record rows
        self.fp_index: dict[str, list[int]] = {}  # kernel -> record rows
        self._led: list[tuple[str, tuple[str, ...]]] = []  # (kernel, full prefix + step): the kernel it led to
        self._credited: tuple[int, np.ndarray] | None = None
        self._groups: dict[tuple[str, str, str, str], int] = {}
        self._blocks: dict[bool, tuple[np.ndarray, np.ndarray]] = {}
        self._perm: tuple[int, int, np.ndarray] | None = None

    def append(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Add records given as :meth:`Store.ranking_rows_after` tuples (state in STATE_KEYS order)."""
        if not rows:
            return
        k = PREFIX_LEN
        pidx, pdir, plen, step, dirs, last, value, speedup, win, fail, group, variant = ([] for _ in range(12))
        kb_dir = {s.id: self.d_index[s.direction] for s in self.kb.strategies}
        prefixes = json.loads("[" + ",".join(r[1] for r in rows) + "]")  # one decode call for all rows
        for row, full_prefix in zip(rows, prefixes, strict=True):
            _uid, _pj, step_id, direction, sp, correct, measured, status, fp, gpu, vkey = row[:11]
            fp = kernel_of(fp)  # a candidate htam optimize tried is evidence of its kernel too
            pre = full_prefix[-k:]
            ids = [self.s_index.get(p, -1) for p in pre]
            dids = [kb_dir.get(p, -1) for p in pre]
            pidx.append(ids + [-1] * (k - len(ids)))
            pdir.append(dids + [-1] * (k - len(dids)))
            plen.append(len(pre))
            step.append(self.s_index.get(step_id, -1))
            dirs.append(self.d_index.get(direction, -1))
            last.append(ids[-1] if ids else -2)
            v = value_of(sp, bool(correct), bool(measured), status)
            value.append(math.nan if v is None else v)
            speedup.append(sp if (measured and correct and sp is not None) else math.nan)
            win.append(status == "win")
            fail.append(status in ("incorrect", "failed"))
            self.fingerprints.append(fp)
            self.gpus.append(gpu)
            self._at.append((fp, tuple(full_prefix)))
            self.at_index.setdefault(self._at[-1], []).append(self.n + len(step) - 1)
            self.fp_index.setdefault(fp, []).append(self.n + len(step) - 1)
            self._led.append((fp, (*full_prefix, step_id)))
            # one group per parent kernel: same kernel, history, step and parent state
            key = (fp, json.dumps(pre), step_id, repr(tuple(row[11:])))
            group.append(self._groups.setdefault(key, len(self._groups)))
            variant.append(-1 if vkey is None else self.v_index.setdefault((step_id, vkey), len(self.v_index)))
        ns = len(STATE_KEYS)
        raw_state = np.array([r[11:] for r in rows], dtype=np.float64).reshape(len(rows), -1)
        new_state = unit_rows(raw_state[:, :ns])
        new_struct = unit_rows(raw_state[:, ns + 1:])
        new_has = raw_state[:, ns] > 0 if raw_state.shape[1] > ns else np.zeros(len(rows), dtype=bool)
        self.struct = np.concatenate([self.struct, new_struct.reshape(len(rows), len(STRUCT_KEYS) - 1)])
        self.has_struct = np.concatenate([self.has_struct, new_has])
        new_pidx = np.array(pidx, dtype=np.int64).reshape(len(rows), k)
        new_pdir = np.array(pdir, dtype=np.int64).reshape(len(rows), k)
        new_plen = np.array(plen, dtype=np.int64)
        for use_pos, (sb, db) in list(self._blocks.items()):
            nsb, ndb = self._encode(new_pidx, new_pdir, new_plen, use_pos)
            self._blocks[use_pos] = (np.concatenate([sb, nsb]), np.concatenate([db, ndb]))
        self.state = new_state if self.n == 0 else np.concatenate([self.state, new_state])
        self.pidx = np.concatenate([self.pidx, new_pidx])
        self.pdir = np.concatenate([self.pdir, new_pdir])
        self.plen = np.concatenate([self.plen, new_plen])
        self.step = np.concatenate([self.step, np.array(step, dtype=np.int64)])
        self.dir = np.concatenate([self.dir, np.array(dirs, dtype=np.int64)])
        self.last = np.concatenate([self.last, np.array(last, dtype=np.int64)])
        self.value = np.concatenate([self.value, np.array(value, dtype=np.float64)])
        self.speedup = np.concatenate([self.speedup, np.array(speedup, dtype=np.float64)])
        self.win = np.concatenate([self.win, np.array(win, dtype=bool)])
        self.fail = np.concatenate([self.fail, np.array(fail, dtype=bool)])
        self.group = np.concatenate([self.group, np.array(group, dtype=np.int64)])
        self.variant = np.concatenate([self.variant, np.array(variant, dtype=np.int64)])
        self.n += len(rows)

    def _encode(self, pidx: np.ndarray, pdir: np.ndarray, plen: np.ndarray,
                use_pos: bool) -> tuple[np.ndarray, np.ndarray]:
        sb = prefix_block(pidx, plen, len(self.s_index), use_pos)
        db = prefix_block(pdir, plen, len(self.d_index), use_pos)
        start = (plen == 0).astype(np.float64)[:, None] * (1.0 if self.start_token else 0.0)
        return (unit_rows(np.concatenate([sb, start], axis=1)),
                unit_rows(np.concatenate([db, start], axis=1)))

    def own_values(self, seed: int | None) -> np.ndarray:
        """Every record's own value (no transition credit), permuted with ``seed`` as :meth:`outcomes` permutes
        (``random`` ablation)."""
        if seed is None:
            return self.value
        self.outcomes(seed)  # makes the permutation of this seed and size
        assert self._perm is not None
        return self.value[self._perm[2]]

    def credited(self) -> np.ndarray:
        """Every record's value with transition credit (:attr:`RankerConfig.credit`): its own value plus
        ``credit`` times the best credited value of the records made at the kernel it led to (same kernel,
        history extended by its step), when positive. Records without a value stay NaN. Cached per size."""
        if self._credited is not None and self._credited[0] == self.n:
            return self._credited[1]
        vals = self.value.tolist()
        if self.credit > 0:
            order = sorted(range(self.n), key=lambda i: -len(self._at[i][1]))  # deepest first
            best: dict[tuple[str, tuple[str, ...]], float] = {}
            for i in order:
                v = vals[i]
                if math.isnan(v):
                    continue
                nxt = best.get(self._led[i])
                if nxt is not None and nxt > 0:
                    v += self.credit * nxt
                    vals[i] = v
                at = self._at[i]
                best[at] = max(best.get(at, -math.inf), v)
        out = np.array(vals, dtype=np.float64)
        self._credited = (self.n, out)
        return out

    def blocks(self, use_pos: bool) -> tuple[np.ndarray, np.ndarray]:
        """Unit prefix blocks ``([N, V], [N, D])`` for this position setting (cached)."""
        if use_pos not in self._blocks:
            self._blocks[use_pos] = self._encode(self.pidx, self.pdir, self.plen, use_pos)
        return self._blocks[use_pos]

    def outcomes(self, seed: int | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(value, raw, speedup, win, fail)``, permuted jointly with ``seed`` when given (``random``
        ablation).

        Values carry transition credit (:meth:`credited`).
        ``value`` is :func:`best_of_groups` of the records' values: one valued record per (kernel, prefix,
        step, state) group, i.e. per parent kernel and step. ``raw`` (every record's own value), ``speedup``,
        ``win`` and ``fail`` stay per record (confidence and evidence count every trial).
        """
        raw, speedup, win, fail = self.credited(), self.speedup, self.win, self.fail
        if seed is not None:
            if self._perm is None or self._perm[:2] != (seed, self.n):
                self._perm = (seed, self.n, seeded_permutation(self.n, seed))
            p = self._perm[2]
            raw, speedup, win, fail = raw[p], speedup[p], win[p], fail[p]
        return best_of_groups(raw, self.group), raw, speedup, win, fail


def seeded_permutation(n: int, seed: int) -> np.ndarray:
    """A permutation of ``range(n)`` drawn from ``seed``: the one ``torch.randperm(n, generator=
    torch.Generator().manual_seed(seed))`` returns on the CPU, without torch.

    The same algorithm: a Mersenne Twister (MT19937) seeded with the low 32 bits of ``seed`` (Matsumoto and
    Nishimura's ``init_genrand``, numpy's legacy ``RandomState`` seeding), then a Fisher-Yates shuffle that swaps
    position ``i`` with ``i + r_i % (n - i)`` for each 32-bit output ``r_i`` (torch's ``randperm_cpu`` for
    ``n`` below 2**32 / 20). Keeping torch's permutation keeps the ``random`` ablation's rankings as they were.

    Args:
        n: length (>= 0); seed: any integer (negative ones wrap as torch wraps them).

    Returns:
        ``[n]`` int64 array.

    Raises:
        ValueError: ``n`` is negative or not below 2**32 / 20 (torch switches to another algorithm there).
    """
    if n < 0 or n >= (2**32 - 1) // 20:
        raise ValueError(f"permutation length out of range: {n}")
    out = np.arange(n, dtype=np.int64)
    if n < 2:
        return out
    raw = np.random.RandomState(seed & 0xFFFFFFFF).randint(0, 2**32, size=n - 1, dtype=np.uint64).tolist()
    perm = out.tolist()
    for i, r in enumerate(raw):
        z = i + r % (n - i)
        perm[i], perm[z] = perm[z], perm[i]
    return np.array(perm, dtype=np.int64)


def best_of_groups(value: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Keep, in each group, only the best valued record's value; the others become NaN.

    A strategy with parameters (block sizes, warp counts, tile shapes) is tried one candidate at a time from
    the same parent: the loop takes the first new variant, and the later ones are the search *inside* the
    strategy. Their losses are not evidence against the strategy, and a strategy with many variants would
    otherwise outweigh one with a single variant. So the memory values a (kernel, prefix, step, state) group
    -- one parent kernel and one step -- by its best outcome, once; the other records still count as trials for the exploration bonus.

    Args:
        value: ``[N]`` float64 numpy array of values (NaN = no value, e.g. not measured).
        group: ``[N]`` int64 group ids (``>= 0``).

    Returns:
        ``[N]`` float64: ``value[r]`` where r is the first record reaching its group's maximum, else NaN.
    """
    n = value.size
    if n == 0:
        return value
    width = int(group.max()) + 1
    filled = np.where(np.isnan(value), -math.inf, value)
    gmax = np.full(width, -math.inf, dtype=np.float64)
    np.maximum.at(gmax, group, filled)
    idx = np.arange(n)
    is_max = (filled == gmax[group]) & ~np.isnan(value)
    first = np.full(width, n, dtype=np.int64)
    np.minimum.at(first, group, np.where(is_max, idx, n))
    return np.where(idx == first[group], value, math.nan)


@dataclass
class _Attended:
    value: np.ndarray  # attended value per node (nan where no valued record)
    n_eff: np.ndarray  # similarity mass per node
    count: np.ndarray  # trials per node


def _segment_sum(groups: np.ndarray, weights: np.ndarray, width: int) -> np.ndarray:
    """``[width]`` float64 sums of ``weights`` per group id (ids in ``0..width``; ``width`` collects the rest)."""
    return np.bincount(groups, weights=weights.astype(np.float64), minlength=width + 1)[:width]


def _segment_attention(sims: np.ndarray, groups: np.ndarray, value: np.ndarray, width: int,
                       tau: float, evidence: np.ndarray | None = None,
                       log_weight: np.ndarray | None = None) -> _Attended:
    """Softmax-weighted value per group: ``sum_r alpha_r v_r`` with alpha a softmax within each group.

    ``log_weight`` (per record, or ``None``) is added to the logits ``sims / tau``: a record's softmax weight is
    multiplied by ``exp(log_weight)`` (the same-GPU weight).

    ``n_eff`` (the confidence of the shrinkage) sums the similarity of the records that carry a value in
    ``evidence`` (default ``value``): every measured trial adds confidence, also the variants whose value
    :func:`best_of_groups` folded into their group's best.
    """
    valid = groups >= 0
    g = np.where(valid, groups, width)
    count = _segment_sum(g, valid, width)
    valued = valid & ~np.isnan(value)
    if sims.size == 0 or not bool(valued.any()):
        return _Attended(np.full(width, math.nan), np.zeros(width, dtype=np.float64), count)
    logits = sims / tau if log_weight is None else sims / tau + log_weight
    top = logits[valued].max()
    w = np.where(valued, np.exp(logits - top), 0.0)
    v = np.where(valued, value, 0.0)
    z = _segment_sum(g, w, width)
    num = _segment_sum(g, w * v, width)
    counted = valid & ~np.isnan(evidence if evidence is not None else value)
    mass = np.where(counted, np.maximum(sims, 0.0), 0.0)
    n_eff = _segment_sum(g, mass, width)
    att = np.where(z > 0, num / np.maximum(z, 1e-300), math.nan)
    return _Attended(att, n_eff, count)


def _segment_quantile(sims: np.ndarray, groups: np.ndarray, value: np.ndarray, width: int, tau: float,
                      q: float, log_weight: np.ndarray | None = None) -> np.ndarray:
    """Per group, the ``q`` quantile of its valued records' values under the attention weights of
    :func:`_segment_attention` (the same softmax of ``sims / tau + log_weight`` within the group): the smallest
    value whose weight from below reaches ``q`` of the group's weight. ``[width]`` float64, NaN for a group
    without a valued record.

    Where the mean of a mixed outcome distribution (a gain on the nearest kernels, losses on others) falls below
    zero, its upper quantile still shows the gain it can reach, while a step measured neutral on every record
    stays at exactly 0: ranking by it tries first what can reach the best (a quantile, not mean + k sigma,
    because it does not reward a spread of losses). The upper-quantile ("optimism in the face of uncertainty")
    ranking follows the Bayes-UCB rule of Kaufmann, Cappe and Garivier (AISTATS 2012), which ranks arms by a
    posterior quantile; here the attended outcome distribution stands in for the posterior.
    """
    out = np.full(width, math.nan, dtype=np.float64)
    valued = (groups >= 0) & ~np.isnan(value)
    if sims.size == 0 or not bool(valued.any()):
        return out
    logits = sims / tau if log_weight is None else sims / tau + log_weight
    for g in np.unique(groups[valued]).tolist():
        m = valued & (groups == g)
        lg, v = logits[m], value[m]
        w = np.exp(lg - lg.max())
        order = np.argsort(v, kind="stable")
        cum = np.cumsum(w[order])
        k = int(np.searchsorted(cum, q * float(cum[-1]) - 1e-12 * float(cum[-1])))
        out[g] = v[order][min(k, v.size - 1)]
    return out


@dataclass
class _Query:
    """What one ranking reads: the facts, the state (with its structure block), the last known step of the
    history, ``q . k`` per record, the outcomes (permuted under ``random``) and the same-GPU log weights."""

    facts: dict[str, Any]
    state: Mapping[str, float]
    last: str | None
    sims: np.ndarray
    value: np.ndarray
    raw: np.ndarray
    speedup: np.ndarray
    win: np.ndarray
    fail: np.ndarray
    lw: np.ndarray | None


def _fired_boost(s: Strategy, facts: Mapping[str, Any]) -> float:
    """The sum of strategy ``s``'s signal boosts whose condition holds on ``facts`` (log-speedup units, 0 when
    none fires; a fired negative boost counts as 0: it lowers the strategy's own score, never its direction's
    place). Read by the direction choice under :attr:`RankerConfig.signal_lift`."""
    return max(0.0, sum(sig.boost for sig in s.signals if sig.when.evaluate(facts) is True))


def _choose_directions(order: list[str], by_dir: Mapping[str, list[Strategy]],
                       dir_terms: Mapping[str, tuple[float, float, float, str | None]], facts: Mapping[str, Any],
                       cfg: RankerConfig, top: int) -> list[str]:
    """The directions whose strategies are scored: the ``cfg.breadth`` best of ``order`` (directions sorted by
    prior + transition + exploration), then more in order until their strategies fill ``top``; with
    ``cfg.signal_lift`` (v15) also every direction that its best applicable strategy's fired signal boosts lift
    above the lowest chosen one (a matched strategy signal is evidence for its direction too, as ``best_local`` is
    for records; none is dropped). ``dir_terms``: direction -> (prior, transition, exploration, why)."""
    chosen = order[: cfg.breadth]
    for d in order[cfg.breadth:]:
        if sum(len(by_dir[c]) for c in chosen) >= top:
            break
        chosen.append(d)
    if cfg.signal_lift and chosen:
        floor = min(sum(dir_terms[c][:3]) for c in chosen)
        chosen += [d for d in order if d not in chosen
                   and sum(dir_terms[d][:3]) + max(_fired_boost(s, facts) for s in by_dir[d]) > floor]
    return chosen


def _fmt_pct(x: float) -> str:
    return f"{x * 100:+.0f}%"


@dataclass
class Ranker:
    """Rank the next optimization steps for a kernel from the knowledge base and the memory.

    Args:
        kb: the knowledge base.
        store: the memory store (``None``: an empty memory; the priors decide).
        seed: seed of the ``random`` ablation's permutation.
        ablation: one of :data:`ABLATIONS` or ``None``.
        config: constants.
        gpu: the GPU model being ranked for (records of it weigh ``config.same_gpu_weight``); ``None`` takes it
            from the profile passed to :meth:`rank` when that was measured on a GPU.

    Raises:
        ValueError: unknown ablation.
    """

    kb: KnowledgeBase
    store: Store | None = None
    seed: int = 0
    ablation: str | None = None
    config: RankerConfig = field(default_factory=RankerConfig)
    gpu: str | None = None

    def __post_init__(self) -> None:
        if self.ablation is not None and self.ablation not in ABLATIONS:
            raise ValueError(f"unknown ablation {self.ablation!r}; expected one of {', '.join(ABLATIONS)}")
        self._memory = _Memory(self.kb)
        self._memory.credit = self.config.credit
        self._memory.start_token = self.config.start_token
        self._mark: tuple[int, ...] | None = None
        self._titles = {s.id: s.title for s in self.kb.strategies}
        self.refresh(force=True)

    @property
    def updates_memory(self) -> bool:
        """``False`` under the ``no-update`` ablation."""
        return self.ablation != "no-update"

    def refresh(self, force: bool = False) -> int:
        """Load records added to the store since the last call (all of them the first time).

        Under ``no-update`` only the first (forced) load happens. Returns the number of records loaded.
        """
        if self.store is None or (not force and not self.updates_memory):
            return 0
        if self._mark is not None and self.store.high_water() == self._mark:
            return 0
        rows, self._mark = self.store.ranking_rows_after(self._mark, STATE_KEYS + STRUCT_KEYS)
        self._memory.append(rows)
        return len(rows)

    def record(self, prefix: list[str], state: dict[str, float], step: str, outcome: Outcome, fingerprint: str,
               device: str, variant: str | None = None) -> Record | None:
        """Store a record through this ranker; under ``no-update`` nothing is written and ``None`` returned.

        ``variant`` is the candidate's variant key (:func:`htam_core.memory.variants.variant_key`) or ``None``.

        Raises:
            ValueError: no store, unknown step. MemoryStoreError: the store cannot be written.
        """
        if not self.updates_memory:
            return None
        if self.store is None:
            raise ValueError("this ranker has no store to record into")
        return self.store.record(prefix, state, step, outcome, fingerprint, device, variant=variant)

    # ---- ranking -------------------------------------------------------------------------------
    def applicable(self, features: KernelFeatures, language: str, profile: Profile | None = None,
                   kernel: Kernel | None = None, model: SourceModel | None = None) -> list[Strategy]:
        """The strategies that can apply: right language and a predicate that is not definitely false
        (``model``: the file ``kernel`` was read from, for the facts of the ``__device__`` functions it calls)."""
        facts = compute_facts(features, language, profile, kernel, model)
        lang = facts["language"]
        return [s for s in self.kb.strategies if lang in s.languages and s.applies.evaluate(facts) is not False]

    def rank(self, state: Mapping[str, float], prefix: Sequence[str], features: KernelFeatures, language: str,
             profile: Profile | None = None, top: int = 5, kernel: Kernel | None = None,
             model: SourceModel | None = None, fingerprint: str | None = None) -> list[RankedStep]:
        """Rank the next steps.

        Args:
            state: the state vector s_t (:func:`~htam_core.memory.features.state_from_profile`).
            prefix: the strategy ids applied so far, oldest first (only the last ``PREFIX_LEN`` count;
                unknown ids are ignored).
            features: the kernel's syntactic features; language: ``cuda``, ``cuda-in-python`` or ``triton``.
            profile: the profile (bottleneck, signals) or ``None`` (bottleneck from ``state``).
            top: how many steps to return (>= 1).
            kernel: the kernel, when known (parameters and launch sites sharpen applicability).
            model: the file ``kernel`` was read from, when known: a kernel that does its work in a ``__device__``
                function it calls gets that function's facts (``matmul_like`` of a helper's dot loop).
            fingerprint: the kernel's memory id (:func:`~htam_core.memory.fingerprint.kernel_fingerprint`), when
                known: its own records made after ``prefix`` are pooled into each step's value
                (:attr:`RankerConfig.own_parent`, v13).

        Returns:
            at most ``top`` steps, best first; strategies whose predicate is false never appear.

        Raises:
            ValueError: unknown language or ``top < 1``.
        """
        if top < 1:
            raise ValueError("top must be >= 1")
        normalize_language(language)
        self.refresh()
        return self._rank(state, prefix, features, language, profile, top, kernel, model, fingerprint)

    def rank_variants(self, state: Mapping[str, float], prefix: Sequence[str], strategy: str,
                      variants: Sequence[str | None], features: KernelFeatures, language: str,
                      profile: Profile | None = None, kernel: Kernel | None = None,
                      model: SourceModel | None = None) -> list[float]:
        """Score the variants one strategy proposes from the current kernel (v10, ``RankerConfig.variants``).

        The score of variant v of strategy s is ``lam_v * A_v + (1 - lam_v) * B_s``: ``A_v`` the transition-attended
        value (same query, similarity and permutation as :meth:`rank`) of the records of s made with variant key v,
        shrunk toward the same attention ``B_s`` over every record of s (0 when none) by
        ``lam_v = n_eff_v / (n_eff_v + N0)``. A variant without records scores ``B_s``. Unlike ``L_s``, both count
        every trial (not only a parent's best: telling the variants of one parent apart is the point) and read
        each record's own value, without transition credit: the variants are alternatives from one parent, and
        what follows one of them (often another variant of the same strategy) is open after the others too; with
        credit, a losing block size followed by the winning one would be credited with the winner's gain. Under
        ``no-local`` (no local memory) or ``variants=False`` every score is 0.

        Args:
            state, prefix, features, language, profile, kernel, model: as for :meth:`rank`.
            strategy: the strategy id whose candidates are ranked.
            variants: the candidates' variant keys (:func:`htam_core.memory.variants.variant_key`), in the
                transform's order; ``None`` for a candidate without one.

        Returns:
            one score per variant (log-speedup units); sort by it, stably, to keep the transform's order on ties.

        Raises:
            ValueError: unknown language or strategy.
        """
        normalize_language(language)
        if not self.kb.has_strategy(strategy):
            raise ValueError(f"unknown strategy {strategy!r}")
        if not self.config.variants or self.ablation == "no-local" or not variants:
            return [0.0] * len(variants)
        self.refresh()
        q = self._query(state, prefix, features, language, profile, kernel, model)
        mem, cfg = self._memory, self.config
        own = mem.own_values(self.seed if self.ablation == "random" else None)
        j = mem.s_index[strategy]
        sims = q.sims
        s_att = _segment_attention(sims, mem.step, own, len(self.kb.strategies), cfg.tau, own, q.lw)
        local = float(s_att.value[j])
        local = 0.0 if math.isnan(local) else local
        v_att = _segment_attention(sims, mem.variant, own, max(len(mem.v_index), 1), cfg.tau, own, q.lw)
        out = []
        for key in variants:
            vid = mem.v_index.get((strategy, key)) if key is not None else None
            out.append(local if vid is None else self._shrunk(v_att, vid, local))
        return out

    def _query(self, state: Mapping[str, float], prefix: Sequence[str], features: KernelFeatures, language: str,
               profile: Profile | None, kernel: Kernel | None, model: SourceModel | None = None) -> _Query:
        """The query of one ranking: facts, the state with its structure block, the last known step, ``q . k``
        for every record, the (permuted under ``random``) outcomes and the same-GPU log weights."""
        cfg, kb, ab = self.config, self.kb, self.ablation
        facts = compute_facts(features, language, profile, kernel, model)
        if cfg.structure and state:
            state = with_structure(state, facts)
        use_prefix = ab != "no-prefix"
        known = [p for p in prefix if kb.has_strategy(p)] if use_prefix else []
        last = known[-1] if known and prefix and prefix[-1] == known[-1] else None
        sims = self._similarities(state, list(prefix)[-PREFIX_LEN:], use_prefix)
        value, raw, speedup, win, fail = self._memory.outcomes(self.seed if ab == "random" else None)
        return _Query(facts, state, last, sims, value, raw, speedup, win, fail, self._gpu_log_weight(profile))

    def _rank(self, state: Mapping[str, float], prefix: Sequence[str], features: KernelFeatures, language: str,
              profile: Profile | None, top: int, kernel: Kernel | None,
              model: SourceModel | None = None, fingerprint: str | None = None) -> list[RankedStep]:
        cfg, kb, ab = self.config, self.kb, self.ablation
        q = self._query(state, prefix, features, language, profile, kernel, model)
        facts, state, last, sims, lw = q.facts, q.state, q.last, q.sims, q.lw
        value, raw, speedup, win, fail = q.value, q.raw, q.speedup, q.win, q.fail
        lang = facts["language"]
        bottleneck = profile.bottleneck.cls if profile is not None else bottleneck_of_state(state)
        secondary = list(profile.bottleneck.secondary) if profile is not None else []
        mem = self._memory
        n_dirs, n_strats = len(kb.directions), len(kb.strategies)
        d_att = _segment_attention(sims, mem.dir, value, n_dirs, cfg.tau, raw, lw)
        s_att = _segment_attention(sims, mem.step, value, n_strats, cfg.tau, raw, lw)
        total = float(d_att.count.sum())
        # v12: a strategy's own value, as scored, is an upper quantile of its attended outcomes (the mean stays
        # the expected gain shown)
        s_val = s_att
        if cfg.quantile is not None and ab != "no-local":
            # the quantile of the step's own outcomes, plus the attended mean of the transition credit (what
            # the kernel it led to gave next): optimism about what the step does, not about what may follow
            own = np.where(np.isnan(value), value, mem.own_values(self.seed if ab == "random" else None))
            credit = _segment_attention(sims, mem.step, value - own, n_strats, cfg.tau, raw, lw).value
            s_val = _Attended(_segment_quantile(sims, mem.step, own, n_strats, cfg.tau, cfg.quantile, lw) + credit,
                              s_att.n_eff, s_att.count)

        applicable = [s for s in kb.strategies if lang in s.languages and s.applies.evaluate(facts) is not False]
        own = self._own_evidence(fingerprint, prefix) if cfg.own_parent and ab != "no-local" else {}

        def local(j: int, gain: float) -> float:
            # the step's shrunk value, pooled with this kernel's own outcomes of it at this node (v13)
            v = self._shrunk(s_val, j, gain)
            if j in own:
                n, mean = own[j]
                n -= 1
                v = (n * mean + cfg.shrink_n0 * v) / (n + cfg.shrink_n0)
            return v

        # a direction is worth its best strategy: the largest shrunk local value among its applicable
        # strategies with records (a bad sibling must not hide a good one; docs/MEMORY-LOG.md, "Changes")
        best_local: dict[str, float] = {}
        if cfg.direction_best and ab not in ("flat", "no-local"):
            for s in applicable:
                j = mem.s_index[s.id]
                if not math.isnan(float(s_val.value[j])):
                    edge = kb.transitions.get(("strategy", last, s.id)) if last else None
                    v = local(j, edge.gain if edge else 0.0)
                    best_local[s.direction] = max(best_local.get(s.direction, -math.inf), v)

        # --- directions
        dir_terms: dict[str, tuple[float, float, float, str | None]] = {}
        for i, d in enumerate(kb.directions):
            prior = kb.prior_weight(bottleneck, d.id)
            if secondary:
                prior += cfg.secondary_weight * max(kb.prior_weight(b, d.id) for b in secondary)
            why = None
            for sig in d.signals:
                if sig.when.evaluate(facts) is True:
                    prior += sig.boost
                    why = why or sig.why
            trans = explore = 0.0
            if ab != "flat":
                edge = kb.transitions.get(("direction", kb.strategy(last).direction, d.id)) if last else None
                trans = self._shrunk(d_att, i, edge.gain if edge else 0.0)
                if d.id in best_local:
                    trans = max(trans, best_local[d.id])
                explore = cfg.c_direction * math.sqrt(math.log1p(total) / (1.0 + float(d_att.count[i])))
            dir_terms[d.id] = (prior, trans, explore, why)

        by_dir: dict[str, list[Strategy]] = {}
        for s in applicable:
            by_dir.setdefault(s.direction, []).append(s)
        order = sorted(by_dir, key=lambda d: (-sum(dir_terms[d][:3]), [x.id for x in kb.directions].index(d)))
        chosen = order if ab == "flat" else _choose_directions(order, by_dir, dir_terms, facts, cfg, top)

        # --- strategies
        scored: list[tuple[float, int, Strategy, dict[str, float], str | None]] = []
        for s in (s for d in chosen for s in by_dir[d]):
            j = mem.s_index[s.id]
            dprior, dtrans, dexpl, _ = dir_terms[s.direction]
            lprior = cfg.local_prior_scale * s.prior
            why = None
            for sig in s.signals:
                if sig.when.evaluate(facts) is True:
                    lprior += sig.boost
                    why = why or sig.why
            ltrans = lexpl = 0.0
            if ab != "no-local":
                edge = kb.transitions.get(("strategy", last, s.id)) if last else None
                gain = edge.gain if edge else 0.0
                if cfg.pool_local and ab != "flat":
                    # the direction's value, shrunk toward this strategy's own (lower) evidence
                    ltrans = local(j, gain)
                    lam = self._lam(s_val, j)
                    dtrans = (1.0 - lam) * dtrans + lam * min(dtrans, ltrans)
                else:
                    ltrans = local(j, gain)
                n_parent = total if ab == "flat" else float(d_att.count[mem.d_index[s.direction]])
                lexpl = cfg.c_strategy * math.sqrt(math.log1p(n_parent) / (1.0 + float(s_att.count[j])))
            parts = {"prior": dprior + lprior, "transition": dtrans + ltrans, "exploration": dexpl + lexpl,
                     "direction_prior": dprior, "direction_transition": dtrans, "direction_exploration": dexpl,
                     "local_prior": lprior, "local_transition": ltrans, "local_exploration": lexpl}
            score = parts["prior"] + parts["transition"] + parts["exploration"]
            scored.append((score, kb.strategies.index(s), s, parts, why))
        scored.sort(key=lambda t: (-t[0], t[1]))

        out = []
        for rank, (score, _, s, parts, why) in enumerate(scored[:top], start=1):
            j = mem.s_index[s.id]
            mask = mem.step == j
            wins, trials = int(win[mask].sum()), int(mask.sum())
            gain = None
            if ab != "no-local" and not math.isnan(float(s_att.value[j])):
                gain = math.exp(float(s_att.value[j])) - 1.0
            evidence = self._evidence(s, last, mask, speedup, win, fail)
            d = kb.direction(s.direction)
            dwhy = dir_terms[s.direction][3] or f"prior for {bottleneck} kernels"
            swhy = why or first_sentence(s.guidance, stop=False)  # whole: the JSON contract keeps it uncut
            rationale = f"{d.name} ({dwhy}): {s.title} - {swhy}"
            out.append(RankedStep(rank, d.id, s.id, score, parts, gain, wins, trials, evidence, rationale,
                                  s.transform, s.risk, d.name, s.title))
        return out

    # ---- helpers -------------------------------------------------------------------------------
    def _own_evidence(self, fingerprint: str | None, prefix: Sequence[str]) -> dict[int, tuple[int, float]]:
        """Per strategy index, ``(n, mean)`` of this kernel's own valued records made at this node: the same
        fingerprint and the same full history (under ``no-prefix``, which ignores the history, every record of
        the kernel). Each record counts with its own value (no transition credit, no best-of-group fold: the
        variants already tried here are what the next one is judged against), permuted under ``random``.
        Empty without a fingerprint or own records."""
        mem = self._memory
        if fingerprint is None or mem.n == 0:
            return {}
        rows = (mem.fp_index.get(fingerprint, []) if self.ablation == "no-prefix"
                else mem.at_index.get((fingerprint, tuple(prefix)), []))
        if not rows:
            return {}
        vals = mem.own_values(self.seed if self.ablation == "random" else None)
        acc: dict[int, list[float]] = {}
        for i in rows:
            v, j = float(vals[i]), int(mem.step[i])
            if j >= 0 and not math.isnan(v):
                acc.setdefault(j, []).append(v)
        return {j: (len(vs), sum(vs) / len(vs)) for j, vs in acc.items()}

    def _gpu_log_weight(self, profile: Profile | None) -> np.ndarray | None:
        """``ln(same_gpu_weight)`` for records of the GPU model ranked for, 0 for the others; ``None`` when
        there is no GPU model (static) or the weight is 1."""
        gpu = self.gpu or (gpu_model(profile.device) if profile is not None else None)
        w = self.config.same_gpu_weight
        if gpu is None or w == 1.0 or self._memory.n == 0:
            return None
        same = np.array([g == gpu for g in self._memory.gpus], dtype=bool)
        # ln(w) rounded to float32, then float64: the weight the torch ranker used (its ``torch.where`` of two
        # Python numbers made a float32 tensor), so that rankings stay what they were
        return np.where(same, float(np.float32(math.log(w))), 0.0)

    def _similarities(self, state: Mapping[str, float], prefix: list[str], use_prefix: bool = True) -> np.ndarray:
        """``q . k_r`` for every record: weighted cosine similarities of the state and prefix blocks (the prefix
        blocks only when ``use_prefix``; an empty prefix is the start position under
        :attr:`RankerConfig.start_token`)."""
        mem = self._memory
        if mem.n == 0:
            return np.zeros(0, dtype=np.float64)
        q_state = unit_rows(state_tensor([state]))[0]
        cos = mem.state @ q_state
        if self.config.structure and has_structure(state):
            # v9: the structure block shares the state weight where the record has one too (older records
            # compare on the state block alone)
            q_struct = unit_rows(state_tensor([state], STRUCT_KEYS[1:]))[0]
            cos = np.where(mem.has_struct, 0.5 * cos + 0.5 * (mem.struct @ q_struct), cos)
        sims = W_STATE * cos
        if use_prefix and (prefix or self.config.start_token):
            use_pos = self.ablation != "no-position"
            k = len(prefix)
            pidx = np.array([[mem.s_index.get(p, -1) for p in prefix] + [-1] * (PREFIX_LEN - k)], dtype=np.int64)
            pdir = np.array([[mem.d_index[self.kb.strategy(p).direction] if p in mem.s_index else -1
                              for p in prefix] + [-1] * (PREFIX_LEN - k)], dtype=np.int64)
            plen = np.array([k], dtype=np.int64)
            qs, qd = mem._encode(pidx, pdir, plen, use_pos)
            ks, kd = mem.blocks(use_pos)
            sims = sims + W_PREFIX_STRATEGY * (ks @ qs[0])
            if self.ablation != "flat":
                sims = sims + W_PREFIX_DIRECTION * (kd @ qd[0])
        return sims

    def _lam(self, att: _Attended, i: int) -> float:
        """The shrinkage weight ``n_eff / (n_eff + N0)`` of node ``i`` (0 when it has no valued record)."""
        if math.isnan(float(att.value[i])):
            return 0.0
        n = float(att.n_eff[i])
        return n / (n + self.config.shrink_n0)

    def _shrunk(self, att: _Attended, i: int, prior_gain: float) -> float:
        v = float(att.value[i])
        if math.isnan(v):
            return prior_gain
        lam = self._lam(att, i)
        return lam * v + (1.0 - lam) * prior_gain

    def _evidence(self, s: Strategy, last: str | None, mask: np.ndarray, speedup: np.ndarray,
                  win: np.ndarray, fail: np.ndarray) -> str:
        mem = self._memory

        def summary(m: np.ndarray, where: str = "") -> str:
            n, w, f = int(m.sum()), int(win[m].sum()), int(fail[m].sum())
            sp = [x for x in speedup[m].tolist() if not math.isnan(x)]
            unmeasured = max(0, n - len(sp) - f)  # correct but not timed (no GPU): a trial, not a loss
            parts = []
            if sp:
                parts.append(f"paid off {w} of {len(sp)} time{'s' if len(sp) != 1 else ''}{where}, "
                             f"median {_fmt_pct(statistics.median(sp) - 1.0)}")
            if unmeasured:
                parts.append(f"tried {unmeasured} time{'s' if unmeasured != 1 else ''} without a GPU measurement"
                             + ("" if sp else where))
            if f:
                parts.append(f"failed or incorrect {f} time{'s' if f != 1 else ''}" + ("" if sp or unmeasured else where))
            return "; ".join(parts)

        if last is not None:
            edge_mask = mask & (mem.last == mem.s_index[last])
            if bool(edge_mask.any()):
                return f"after {self._titles[last]}, {s.title} {summary(edge_mask)}"
        if bool(mask.any()):
            kernels = len({mem.fingerprints[i] for i in np.flatnonzero(mask).tolist()})
            text = f"{s.title} {summary(mask, f' on {kernels} kernel' + ('s' if kernels != 1 else ''))}"
            return text + (f" (never recorded after {self._titles[last]})" if last else "")
        text = "no recorded trials; ranked by the knowledge-base prior"
        edge = self.kb.transitions.get(("strategy", last, s.id)) if last else None
        if edge:
            text += f"; after {self._titles[last]}: {edge.why}" if last else ""
        return text
