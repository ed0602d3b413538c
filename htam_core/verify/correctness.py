"""Runtime correctness check of a candidate against its reference, with KernelBench semantics.

Rules (KernelBench, upstream commit 423217d, ``eval.py``), plus the runtime
reward-hack guards:

* **Seeds.** ``n_seeds`` trials (5), each seeded from a base seed of 42; the reference and the
  candidate see the same inputs (the reference gets its own copy).
* **Tolerances.** ``allclose`` with atol = rtol = 1e-4 for fp32 (configurable), 1e-2 for fp16 and
  bf16, exact for integers and bool (:data:`DEFAULT_TOLERANCES`).
* **Shapes** must match exactly, and so must the number of outputs.
* **Poisoned outputs.** Write-only output buffers are filled with NaN (the dtype's maximum for integers)
  before every run (in-out buffers, which the kernel also reads, are restored to their initial value instead), and on CUDA the caching allocator is pre-filled with NaN blocks of each
  output's size, so an output left unwritten (or a ``torch.empty`` result never written) fails.
  *Rationale:* a kernel that writes nothing can pass when stale memory already holds the answer.
* **NaN/Inf refused.** A non-finite candidate value where the reference is finite fails.
  *Rationale:* ``allclose`` semantics around NaN are easy to game.
* **Inputs mutated in place** are detected (inputs compared with a snapshot after the run).
  *Rationale:* mutating inputs can make later reference runs agree with a wrong result.
* **Varied magnitude.** The later seeds scale floating inputs (:data:`DEFAULT_SCALES`).
  *Rationale:* reductions that return constants can pass loose tolerances at one magnitude.
* **Second input set.** Every further input set the harness gives is checked too (caching
  results across calls keyed on shapes would fail there).
* **Poisoned allocations.** While the candidate runs, every ``torch.empty``/``empty_like``/
  ``empty_strided``/``Tensor.new_empty`` it calls returns a NaN-filled tensor (a
  :class:`torch.overrides.TorchFunctionMode`), on the CPU as on the GPU, so an output it allocates
  and leaves partly unwritten fails deterministically.
* **Nondeterministic reference.** The reference runs twice on the first trial's inputs; when the two runs
  differ (float ``atomicAdd`` orders, a nondeterministic library call), it runs twice on every trial, and
  each output that differs gets an absolute tolerance of at least :data:`NOISE_FACTOR` times the largest
  difference of its two runs, capped at :data:`NOISE_CAP` (:func:`noise_atol`); the verdict's messages and
  :attr:`CorrectnessResult.reference_noise` say so. A deterministic reference (bitwise equal runs) keeps the
  strict tolerance. *Rationale:* a candidate cannot be asked to match a reference more closely than the
  reference matches itself; the cap keeps the check meaningful when the noise is large.
* **Which check caught it.** A comparison failure after at least one passing trial also names the
  check that exposed it (:data:`htam_core.verify.runtime_rules.RUNTIME_RULES`): ``"scaled-inputs"``
  (the first failing trial had scaled inputs), ``"second-input-set"`` (a further input set) or
  ``"fresh-inputs"`` (a later seed at the same magnitude: results cached or hard-wired).

Torch is imported lazily: this module runs inside worker processes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from htam_core.harness.trial import BASE_SEED, Trial, poison_
from htam_core.runtime.worker import classify_exception
from htam_core.verify.long_sum_rule import judge_long_sum

#: atol = rtol per dtype (KernelBench: fp32 1e-4, fp16/bf16 1e-2). Integers and bool are exact.
DEFAULT_TOLERANCES: dict[str, float] = {
    "float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2,
}
#: The float32 tolerance (atol and rtol) of a candidate whose only numeric change is the order of its float
#: additions (a tree, shuffles, lanes on columns: :attr:`htam_core.transforms.base.Candidate.reorders_only`). Two
#: orders of an fp32 sum of ``n`` terms each differ from the exact sum by up to about ``n * u * sum|x|`` (``u`` =
#: 2**-24, Higham, "Accuracy and Stability of Numerical Algorithms", ch. 4); for the ~10^4 terms of a row or
#: column of a real tensor that is ~6e-4 of the terms' magnitude, so the 1e-4 default refuses correct
#: reorderings (llm.c's bias gradient: 1 of 3072 sums of 8192 terms off by 2.5e-4). KernelBench checks at 1e-2.
REORDERED_SUM_FP32_TOL = 1e-3
N_SEEDS = 5
#: A nondeterministic reference's outputs are compared with atol >= NOISE_FACTOR x its self-difference: the
#: candidate's own rounding noise is of the same size as the reference's, and the scaled trials move it.
NOISE_FACTOR = 4.0
#: The largest absolute tolerance the self-difference rule gives (the fp16/bf16 default: never looser).
NOISE_CAP = 1e-2
#: What the verdict's note on a nondeterministic reference says (:func:`nondeterminism_note`).
NONDETERMINISTIC = "is nondeterministic (two runs on the same inputs differ"
#: Scale applied to floating inputs for trial i (i >= len: 1.0). Mild, so valid input ranges hold.
DEFAULT_SCALES: tuple[float, ...] = (1.0, 1.0, 1.0, 2.0, 0.5)

VerifiedOn = Literal["gpu", "interpreter", "compile-only"]
Status = Literal["correct", "incorrect", "unverified", "error"]


@dataclass
class CorrectnessResult:
    """Verdict of a correctness check.

    Attributes:
        correct: True only when every trial ran and matched (never True when unverified).
        status: ``"correct"``, ``"incorrect"``, ``"unverified"`` (compile-only: nothing ran) or
            ``"error"`` (the candidate or reference raised).
        verified_on: ``"gpu"``, ``"interpreter"`` (Triton on the CPU) or ``"compile-only"``.
        max_abs_err: largest absolute difference seen over every trial, or ``None`` when nothing ran.
        messages: what failed or what was checked, one line each.
        trials: trials that ran (seeds x input sets).
        refused_by: ids of the runtime rules that refused the candidate (``"unwritten-output"``,
            ``"non-finite"``, ``"shape"``, ``"mismatch"``, ``"input-mutated"``, ``"output-count"``).
        reference_noise: per output, the largest absolute difference between two runs of the reference on
            the same inputs (over the trials that probed it), when they differed; ``None`` for a
            deterministic reference (then no tolerance was widened).
    """

    correct: bool
    status: Status
    verified_on: VerifiedOn
    max_abs_err: float | None = None
    messages: list[str] = field(default_factory=list)
    trials: int = 0
    refused_by: list[str] = field(default_factory=list)
    reference_noise: list[float] | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"correct", "status", "verified_on", "max_abs_err", "messages", "trials", "refused_by",
        "reference_noise"}`` (``reference_noise``: per output, the largest difference between two runs of the
        reference on the same inputs, over the trials; ``None`` when the reference was deterministic)."""
        return {"correct": self.correct, "status": self.status, "verified_on": self.verified_on,
                "max_abs_err": self.max_abs_err, "messages": list(self.messages), "trials": self.trials,
                "refused_by": list(self.refused_by), "reference_noise": self.reference_noise}


def dtype_name(dtype: Any) -> str:
    """``torch.float32`` -> ``"float32"``."""
    return str(dtype).replace("torch.", "")


def tolerance_for(dtype: Any, atol: float | None = None, rtol: float | None = None,
                  fp32_tol: float | None = None, fp32_cap: float | None = None) -> tuple[float, float]:
    """``(atol, rtol)`` for an output of ``dtype``.

    Explicit ``atol``/``rtol`` win; else :data:`DEFAULT_TOLERANCES` (``fp32_tol`` overrides the
    fp32 default); integer and bool outputs are compared exactly. ``fp32_cap`` (the strict
    re-verification's 1e-5) bounds both tolerances of a float32 output from above, whatever they
    came from.
    """
    name = dtype_name(dtype)
    default = DEFAULT_TOLERANCES.get(name, 0.0)
    if name == "float32" and fp32_tol is not None:
        default = fp32_tol
    a, r = (default if atol is None else float(atol)), (default if rtol is None else float(rtol))
    if name == "float32" and fp32_cap is not None:
        a, r = min(a, fp32_cap), min(r, fp32_cap)
    return a, r


def poison_allocator(like: Sequence[Any]) -> None:
    """On CUDA, allocate NaN-filled blocks the size of each tensor in ``like`` and free them, so that
    the caching allocator hands poisoned memory to a following ``torch.empty`` of that size.
    No-op on the CPU (the system allocator gives no such guarantee)."""
    import torch

    blocks = [poison_(torch.empty_like(t)) for t in like if hasattr(t, "is_cuda") and t.is_cuda]
    if blocks:
        torch.cuda.synchronize()
    del blocks


def poisoned_allocations() -> Any:
    """A context manager under which ``torch.empty``, ``torch.empty_like``, ``torch.empty_strided`` and
    ``Tensor.new_empty`` return tensors filled by :func:`poison_` (NaN / the integer maximum).

    Used around the candidate's call only (never around timing). *Rationale:* KernelBench candidates
    allocate their outputs themselves; without this, a partly written ``torch.empty`` output can pass
    when the allocator hands back memory that already holds the answer (\"outputs left
    unwritten"). Works on the CPU (Triton interpreter) and on the GPU alike.
    """
    import torch
    from torch.overrides import TorchFunctionMode

    empties = {torch.empty, torch.empty_like, torch.empty_strided, torch.Tensor.new_empty}

    class _PoisonEmpty(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if func in empties and isinstance(out, torch.Tensor) and not out.is_meta:
                with torch.no_grad():
                    poison_(out)
            return out

    return _PoisonEmpty()


def snapshot(inputs: Sequence[Any], skip: set[int] | frozenset[int] = frozenset()) -> dict[int, Any]:
    """Clones of the tensor inputs (indices not in ``skip``), for :func:`mutated_inputs`."""
    import torch

    return {i: t.detach().clone() for i, t in enumerate(inputs) if i not in skip and isinstance(t, torch.Tensor)}


def mutated_inputs(inputs: Sequence[Any], snap: dict[int, Any]) -> list[int]:
    """Indices of inputs that differ from their snapshot (bitwise values; NaN equals NaN)."""
    import torch

    out = []
    for i, before in snap.items():
        now = inputs[i]
        if now.shape != before.shape or now.dtype != before.dtype:
            out.append(i)
        elif now.dtype.is_floating_point:
            if not torch.allclose(now, before, rtol=0.0, atol=0.0, equal_nan=True):
                out.append(i)
        elif not torch.equal(now, before):
            out.append(i)
    return out


def self_difference(first: Sequence[Any], second: Sequence[Any]) -> list[float]:
    """Per output, the largest absolute difference between two runs of the same kernel on the same inputs,
    over the elements finite in both (``0.0``: bitwise equal, or not a floating output, or shapes differ)."""
    import torch

    out: list[float] = []
    for a, b in zip(first, second, strict=False):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape or \
                not a.dtype.is_floating_point:
            out.append(0.0)
            continue
        af, bf = a.detach().to(torch.float64), b.detach().to(torch.float64).to(a.device)
        fin = torch.isfinite(af) & torch.isfinite(bf)
        out.append(float((af - bf)[fin].abs().max()) if bool(fin.any()) else 0.0)
    return out


def noise_atol(noise: Sequence[float]) -> list[float]:
    """Per output, the absolute tolerance floor a nondeterministic reference gives: ``min(NOISE_CAP,
    NOISE_FACTOR * noise)`` (``0.0`` for an output whose two runs were equal: its tolerance stays strict)."""
    return [min(NOISE_CAP, NOISE_FACTOR * n) if n > 0 else 0.0 for n in noise]


def compare_outputs(cand: Sequence[Any], ref: Sequence[Any], *, atol: float | None = None,
                    rtol: float | None = None, fp32_tol: float | None = None, fp32_cap: float | None = None,
                    atol_floor: Sequence[float] | None = None,
                    subject: str = "the candidate") -> tuple[bool, float | None, list[str], list[str]]:
    """Compare candidate outputs with reference outputs (tolerances: :func:`tolerance_for`; ``atol_floor``:
    per output, a lower bound of the absolute tolerance, from :func:`noise_atol`, applied after ``fp32_cap``;
    ``subject``: what ``cand`` came from, for the messages: ``"the candidate"`` or ``"the starting kernel"``).

    Returns:
        ``(ok, max_abs_err, messages, rule_ids)``; ``max_abs_err`` over the finite elements.
    """
    import torch

    msgs: list[str] = []
    rules: list[str] = []
    if len(cand) != len(ref):
        return False, None, [f"{subject} returned {len(cand)} output(s), the reference {len(ref)}"], ["output-count"]
    worst: float | None = None
    ok = True
    for k, (c, r) in enumerate(zip(cand, ref, strict=True)):
        if not isinstance(r, torch.Tensor):
            r = torch.as_tensor(r)
        if not isinstance(c, torch.Tensor):
            try:
                c = torch.as_tensor(c)
            except (TypeError, ValueError, RuntimeError):
                ok = False
                msgs.append(f"output {k}: {subject} returned {type(c).__name__}, not a tensor")
                rules.append("shape")
                continue
        if tuple(c.shape) != tuple(r.shape):
            ok = False
            msgs.append(f"output {k}: shape {tuple(c.shape)} but the reference has {tuple(r.shape)}")
            rules.append("shape")
            continue
        c = c.detach().to(device=r.device)
        a_tol, r_tol = tolerance_for(r.dtype, atol, rtol, fp32_tol, fp32_cap)
        if atol_floor is not None and k < len(atol_floor) and r.dtype.is_floating_point:
            a_tol = max(a_tol, atol_floor[k])
        cf = c.to(torch.float64) if (c.dtype.is_floating_point or r.dtype.is_floating_point) else c
        rf = r.detach().to(torch.float64) if cf.dtype == torch.float64 else r.detach().to(cf.dtype)
        ref_finite = torch.isfinite(rf) if rf.dtype.is_floating_point else torch.ones_like(rf, dtype=torch.bool)
        if rf.dtype.is_floating_point and not bool(ref_finite.all()):
            msgs.append(f"output {k}: the reference itself has {int((~ref_finite).sum())} NaN/Inf values; "
                        "they must match exactly (choose inputs the operation is defined on)")
        if cf.dtype.is_floating_point:
            bad = ref_finite & ~torch.isfinite(cf)
            n_bad = int(bad.sum())
            if n_bad:
                ok = False
                nan_n = int((bad & torch.isnan(cf)).sum())
                msgs.append(f"output {k}: {n_bad} of {cf.numel()} values are NaN/Inf where the reference is finite"
                            + (" (NaN is the poison value: those outputs were probably never written, or read "
                               "before being written (give such a buffer an init other than \"empty\"))"
                               if nan_n else ""))
                rules.append("unwritten-output" if nan_n else "non-finite")
                continue
            both = ref_finite
            diff = (cf - rf).abs()
            if both.any():
                err = float(diff[both].max())
                worst = err if worst is None else max(worst, err)
            close = torch.isclose(cf, rf, rtol=r_tol, atol=a_tol, equal_nan=True)
            if not bool(close.all()):
                ok = False
                n = int((~close).sum())
                nz = both & (rf != 0)
                rel = float((diff[nz] / rf[nz].abs()).max()) if nz.any() else math.nan
                msgs.append(f"output {k}: {n} of {cf.numel()} values differ beyond atol={a_tol:g} rtol={r_tol:g} "
                            f"(max abs error {float(diff[both].max()) if both.any() else math.nan:.3g}, "
                            f"max rel error {rel:.3g})")
                rules.append("mismatch")
        else:
            eq = cf == rf
            diff_n = int((~eq).sum())
            worst = max(worst or 0.0, 0.0 if diff_n == 0 else float((cf.to(torch.float64) - rf.to(torch.float64)).abs().max()))
            if diff_n:
                ok = False
                msgs.append(f"output {k}: {diff_n} of {cf.numel()} integer values differ (exact comparison)")
                rules.append("mismatch")
    return ok, worst, msgs, rules


def trial_seeds(n_seeds: int = N_SEEDS, base_seed: int = BASE_SEED) -> list[int]:
    """The per-trial seeds: drawn from a generator seeded with ``base_seed`` (KernelBench)."""
    import torch

    g = torch.Generator().manual_seed(base_seed)
    return [int(x) for x in torch.randint(0, 10**7, (n_seeds,), generator=g)]


def check_correctness(trial: Trial, *, verified_on: VerifiedOn, n_seeds: int = N_SEEDS, base_seed: int = BASE_SEED,
                      atol: float | None = None, rtol: float | None = None, fp32_tol: float | None = None,
                      scales: Sequence[float] = DEFAULT_SCALES, arg_names: Sequence[str] | None = None,
                      fp32_cap: float | None = None, poison_allocations: bool = True,
                      against: str = "the reference", subject: str = "the candidate") -> CorrectnessResult:
    """Run the candidate and the reference over ``n_seeds`` seeds and every input set; compare.

    The first input set runs ``n_seeds`` trials; every further set runs one trial (KernelBench
    runs one set; the extra sets catch caching across calls). Exceptions of the candidate or
    reference are caught and reported (status ``"error"``); CUDA faults are re-raised so that
    the worker is restarted (the context is unusable).

    Args:
        trial: the harness's input builder and runners.
        verified_on: where this runs (``"gpu"`` or ``"interpreter"``).
        n_seeds, base_seed: KernelBench's 5 and 42 by default.
        atol, rtol: explicit tolerances (else per dtype); ``fp32_tol`` overrides the fp32 default.
        scales: per-trial scale of floating inputs (:data:`DEFAULT_SCALES`).
        arg_names: names of the inputs, for messages.
        fp32_cap: upper bound of both tolerances of float32 outputs (strict re-verification: 1e-5).
        poison_allocations: run the candidate under :func:`poisoned_allocations`.
        against: what the reference is, for the messages: ``"the reference"``, or ``"the starting kernel"``
            under the oracle rule (no reference given: the kernel the candidate was derived from).
        subject: what is checked, for the messages: ``"the candidate"``, or ``"the starting kernel"`` when the
            kernel checked is the one an optimization starts from (never called a candidate).

    Returns:
        A :class:`CorrectnessResult`.
    """
    seeds = trial_seeds(n_seeds, base_seed)
    plan = [(s, 0, scales[i] if i < len(scales) else 1.0) for i, s in enumerate(seeds)]
    plan += [(base_seed + 1000 + k, k, 1.0) for k in range(1, trial.input_sets)]
    messages: list[str] = []
    rules: list[str] = []
    worst: float | None = None
    ran = 0
    ok_all = True
    probe = True  # run the reference twice: on the first trial, and on every trial once it was nondeterministic
    noise: list[float] | None = None
    floor: list[float] | None = None
    for seed, set_index, scale in plan:
        where = f"seed {seed}, input set {set_index}" + (f", scale {scale:g}" if scale != 1.0 else "")
        try:
            inputs = trial.make_inputs(seed, set_index, scale)
            ref_out = trial.run_reference(_clone_all(inputs))
            if probe:
                diff = self_difference(ref_out, trial.run_reference(_clone_all(inputs)))
                probe = any(d > 0 for d in diff)
                if probe:
                    noise = [max(a, b) for a, b in zip(noise or [0.0] * len(diff), diff, strict=False)]
                    floor = noise_atol(diff)
            snap = snapshot(inputs, trial.output_indices)
            poison_allocator([r for r in ref_out if hasattr(r, "is_cuda")])
            if poison_allocations:
                with poisoned_allocations():
                    cand_out = trial.run_candidate(inputs)
            else:
                cand_out = trial.run_candidate(inputs)
            _sync()
        except Exception as exc:  # noqa: BLE001 - the candidate's failure is the verdict
            kind, _ = classify_exception(exc)
            if kind == "cuda-fault":
                raise
            from htam_core.types.errors import exception_text

            return CorrectnessResult(False, "error", verified_on, worst,
                                     messages + [f"{where}: {exception_text(exc)}"[:2000]], ran, rules + ["raised"])
        ran += 1
        # an input found to be an output while running (a launcher returning the tensor it was given) is skipped
        changed = [i for i in mutated_inputs(inputs, snap) if i not in trial.output_indices]
        if changed:
            ok_all = False
            names = [arg_names[i] if arg_names and i < len(arg_names) else f"#{i}" for i in changed]
            messages.append(f"{where}: {subject} modified its input(s) {', '.join(names)} in place, and they are not "
                            "outputs the reference compares (list them in outputs to allow an in-place update)")
            rules.append("input-mutated")
            break
        ok, err, msgs, rids = _compare(trial, inputs, cand_out, ref_out, messages, atol=atol, rtol=rtol,
                                       fp32_tol=fp32_tol, fp32_cap=fp32_cap, atol_floor=floor, subject=subject)
        if err is not None:
            worst = err if worst is None else max(worst, err)
        if not ok:
            ok_all = False
            messages.extend(f"{where}: {m}" for m in msgs)
            rules.extend(r for r in rids if r not in rules)
            caught_by = _caught_by(ran - 1, set_index, scale)
            if caught_by:
                rules.append(caught_by)
                messages.append(f"{where}: the earlier trial(s) matched; {_CAUGHT_WHY[caught_by]}")
            break
    if noise is not None:
        messages.append(nondeterminism_note(noise, against))
    if ok_all:
        messages.append(f"matched {against} on {ran} trial(s) ({n_seeds} seeds from base {base_seed}, "
                        f"{trial.input_sets} input set(s)) on {verified_on}")
    return CorrectnessResult(ok_all, "correct" if ok_all else "incorrect", verified_on, worst, messages, ran,
                             sorted(set(rules)), noise)


def _compare(trial: Trial, inputs: list[Any], cand_out: Sequence[Any], ref_out: Sequence[Any], notes: list[str],
             **kw: Any) -> tuple[bool, float | None, list[str], list[str]]:
    """:func:`compare_outputs` of the candidate with the start, and, when only values of outputs the start fills
    with a long float32 sum differ (:attr:`Trial.long_sum_outputs`) and the start has a float64 twin
    (:attr:`Trial.run_reference64`), those outputs judged against the twin instead
    (:func:`htam_core.verify.long_sum_rule.judge_long_sum`: within the reordered-sum tolerance of it, or no farther
    from it than the start); the other outputs keep the first comparison. The verdict's line naming the float64
    reference is added to ``notes`` once. ``kw``: :func:`compare_outputs`'s tolerances and subject."""
    ok, err, msgs, rids = compare_outputs(cand_out, ref_out, **kw)
    flagged = [k for k in trial.long_sum_outputs if k < len(ref_out)] if len(cand_out) == len(ref_out) else []
    if ok or trial.run_reference64 is None or not flagged or set(rids) != {"mismatch"}:
        return ok, err, msgs, rids
    others = [k for k in range(len(ref_out)) if k not in flagged]
    floor = kw.pop("atol_floor", None)
    ok2, _, msgs2, rids2 = compare_outputs([cand_out[k] for k in others], [ref_out[k] for k in others], **kw,
                                           atol_floor=[floor[k] for k in others] if floor else None)
    ref64 = trial.run_reference64(_clone_all(inputs))
    tol = min(REORDERED_SUM_FP32_TOL, kw.get("fp32_cap") or REORDERED_SUM_FP32_TOL)
    verdicts = [judge_long_sum(cand_out[k], [ref_out[k]], ref64[k], tol=tol, index=k) for k in flagged]
    if not ok2 or not all(v.ok for v in verdicts):
        return False, err, msgs + [v.message for v in verdicts if not v.ok], rids
    notes.extend(v.message for v in verdicts if v.message not in notes)
    return True, err, msgs2, rids2


def nondeterminism_note(noise: Sequence[float], against: str = "the reference") -> str:
    """The one line saying that ``against`` is nondeterministic and which tolerances that widened."""
    parts = [f"output {k}: up to {n:.3g}, atol {a:.3g}" for k, (n, a) in enumerate(zip(noise, noise_atol(noise),
                                                                                        strict=True)) if n > 0]
    return (f"{against} {NONDETERMINISTIC}: {'; '.join(parts)}); those "
            f"outputs were compared with atol = min({NOISE_CAP:g}, {NOISE_FACTOR:g} x that difference), the "
            "others strictly")


_CAUGHT_WHY = {
    "scaled-inputs": "it fails once the inputs are scaled: a constant or magnitude-blind result "
                     "(loose tolerances at one magnitude)",
    "second-input-set": "it fails on another input set: hard-wired to the first sizes, or results cached "
                        "across calls",
    "fresh-inputs": "it fails on fresh inputs of the same magnitude: results cached across calls or "
                    "hard-wired to the first inputs",
}


def _caught_by(passed_before: int, set_index: int, scale: float) -> str | None:
    """The runtime rule that exposed a failure after ``passed_before`` passing trials, else ``None``."""
    if passed_before < 1:
        return None
    if set_index > 0:
        return "second-input-set"
    if scale != 1.0:
        return "scaled-inputs"
    return "fresh-inputs"


def _clone_all(inputs: Sequence[Any]) -> list[Any]:
    import torch

    return [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in inputs]


def _sync() -> None:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def unverified(reason: str, *, compiled: bool) -> CorrectnessResult:
    """The verdict when nothing could run (no GPU for CUDA): never ``correct``."""
    msg = ("compiled, but not run: no GPU here, so the result is unverified (not correct)" if compiled
           else "could not be compiled")
    return CorrectnessResult(False, "unverified" if compiled else "error", "compile-only", None, [f"{msg}: {reason}"])
