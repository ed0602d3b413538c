"""Measure one kernel on the GPU: verify, time, read ncu counters, place it on the roofline.

:func:`measure_on_gpu` fills the measured fields of a ``mode="gpu"`` :class:`~htam_core.types.profile.Profile`;
:func:`htam_core.profile.api.profile_on_gpu` (one layer up) adds the static resources and the bottleneck class.
Everything that touches kernel code runs in the persistent worker of that GPU (``pool_key="gpu<i>"``), so a
faulting or hanging kernel costs only the worker: the caller gets a
:class:`~htam_core.types.errors.ProfileError` naming the failure, and the next profile starts a fresh worker.

Steps of :func:`measure_on_gpu`:
1. worker: verify against the reference (KernelBench semantics) and time every input set
   (:mod:`htam_core.measure.timer`: CUDA-graph replay or events with an asynchronous L2 flush, checked
   against CUPTI; a timer that disagrees with CUPTI by more than 10 % and 4 µs is refused); a ``.cu`` program
   with ``main()`` is built and its durations come from ncu;
2. worker: ncu counters when ``ncu`` is on PATH (:mod:`htam_core.measure.ncu`);
3. measured peaks of the device (:mod:`htam_core.measure.peaks`, cached) -> bandwidth, FLOP/s and
   roofline fraction from the harness's ``bytes``/``flops``.

Torch is imported lazily, inside the worker targets, for start-up speed: the caller's process never needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from htam_core.harness.base import Harness
from htam_core.harness.cu_main import build_program
from htam_core.harness.runner import prepare
from htam_core.harness.trial import BASE_SEED
from htam_core.measure.ncu import find_ncu, run_ncu
from htam_core.measure.peaks import get_peaks, roofline_fraction
from htam_core.measure.timer import time_launcher
from htam_core.runtime.worker import WorkerPool, WorkerResult, get_pool, run_in_worker
from htam_core.types.errors import ProfileError
from htam_core.types.profile import Profile, TimeStats
from htam_core.verify.correctness import check_correctness

#: Modules a GPU worker imports as soon as it starts (:func:`htam_core.runtime.worker.warm_up`).
GPU_WARM_IMPORTS: tuple[str, ...] = ("torch",)


def pool_config(gpu_index: int) -> dict[str, Any]:
    """Worker options of the persistent pool of GPU ``gpu_index`` (same isolation as the verifier's): a new worker
    imports :data:`GPU_WARM_IMPORTS` (and creates its CUDA context) at once, and a worker killed by a call is
    replaced at once, in the background."""
    return {"interpret": False, "gpu_index": gpu_index, "warm_imports": list(GPU_WARM_IMPORTS), "keep_warm": True}


def prestart_gpu_worker(gpu_index: int = 0) -> WorkerPool:
    """Start the persistent worker of GPU ``gpu_index`` (``"gpu<i>"``) in the background, torch imported, so
    that the first profile, verification or timing finds it ready; returns its pool. Called when ``htam
    optimize`` begins and when the language server finds a GPU. Never waits and never raises for a worker that
    cannot start (the first call reports that)."""
    pool = get_pool(f"gpu{gpu_index}", **pool_config(gpu_index))
    pool.prestart_in_background()
    return pool


def _call(target: str, kwargs: dict[str, Any], gpu_index: int, timeout_s: float) -> WorkerResult:
    return run_in_worker(target, kwargs, timeout_s=timeout_s, pool_key=f"gpu{gpu_index}", **pool_config(gpu_index))


def _raise_for(r: WorkerResult, what: str) -> Any:
    if r.ok:
        return r.value
    e = r.error
    assert e is not None
    hint = {"cuda-fault": "the kernel faulted (illegal or misaligned address, launch failure); run it under "
                          "compute-sanitizer to find the access",
            "timeout": "the kernel did not finish in time (a hang or a far too large problem)",
            "oom": "out of memory: shrink the harness sizes",
            "crash": "the worker process died"}.get(e.kind, "")
    details = (e.traceback or "").splitlines()[-12:]
    raise ProfileError(f"{what} failed: {e.kind}: {e.message}" + (f" ({hint})" if hint else ""), details)


# -- worker targets ---------------------------------------------------------------------------------
def measure_harness(harness: dict[str, Any], trials: int = 100, verify: bool = True,
                    n_seeds: int = 5) -> dict[str, Any]:
    """Worker target: verify, then time the harness's kernel on every input set.

    Returns:
        ``{"device", "correctness", "sets": [{"set", "sizes", "time", "bytes", "flops"}], "phases"}`` with
        times in ms (see :class:`htam_core.measure.timer.Timing`); ``phases`` holds the wall seconds of this
        call's parts: ``compile`` (loading the harness and building its launcher), ``verify`` (correctness over
        seeds, which also runs the kernel's first, JIT-compiling launch) and ``time`` (the timer on every set).
    """
    import time

    import torch

    t0 = time.monotonic()
    h = Harness.from_json(harness)
    p = prepare(h, "cuda")
    t1 = time.monotonic()
    correctness = None
    if verify:
        # the starting kernel (its own oracle) is never called "the candidate" in the messages
        is_start = bool(h.oracle_path) and Path(h.oracle_path or "").resolve() == Path(h.path).resolve()
        correctness = check_correctness(p.trial, verified_on="gpu", n_seeds=n_seeds, atol=h.atol, rtol=h.rtol,
                                        fp32_tol=h.fp32_tol, arg_names=p.arg_names, against=h.checked_against,
                                        subject="the starting kernel" if is_start else "the candidate").to_json()
    t2 = time.monotonic()
    sets = []
    for s in range(p.trial.input_sets):
        inputs = p.trial.make_inputs(BASE_SEED, s, 1.0)
        t = time_launcher(p.bind(inputs), trials=trials, launcher_kind=p.launcher_kind)
        sets.append({"set": s, "sizes": p.size_sets[s] if s < len(p.size_sets) else {}, "time": t.to_json(),
                     "bytes": p.bytes_for(s, inputs), "flops": p.flops_for(s, inputs),
                     "dtype": _main_dtype(inputs)})
        del inputs
    torch.cuda.synchronize()
    t3 = time.monotonic()
    return {"device": torch.cuda.get_device_name(), "correctness": correctness, "sets": sets,
            "phases": {"compile": t1 - t0, "verify": t2 - t1, "time": t3 - t2}}


def _set_json(s: dict[str, Any]) -> dict[str, Any]:
    """One input set of ``extra["timing"]["per_set"]``: the timer's statistics next to CUPTI's device time."""
    t = s["time"]
    return {"sizes": s["sizes"], "min": t["min"], "median": t["median"], "max": t["max"], "bytes": s["bytes"],
            "flops": s["flops"], "method": t["method"], "spread": t.get("spread"), "cupti_ms": t.get("cupti_ms"),
            "agreement": t.get("agreement"), "refused": t.get("refused"), "launch_bound": t.get("launch_bound"),
            "cupti_events_ms": t.get("cupti_events_ms"), "profiler_slowdown": t.get("profiler_slowdown")}


def _main_dtype(inputs: list[Any]) -> str | None:
    for x in inputs:
        if hasattr(x, "dtype") and x.dtype.is_floating_point:
            return str(x.dtype).replace("torch.", "")
    return None


def measure_program(path: str, kernel: str, args: list[str], launch_count: int = 10,
                    timeout_s: float = 300.0) -> dict[str, Any]:
    """Worker target: build the ``.cu`` program with nvcc (cached) and run it under ncu filtered to
    ``kernel``. Returns :func:`htam_core.measure.ncu.run_ncu`'s summary plus ``device``."""
    import torch

    major, minor = torch.cuda.get_device_capability()
    exe = build_program(path, arch=f"sm_{major}{minor}")
    s = run_ncu([str(exe), *args], kernel, launch_count=launch_count, timeout_s=timeout_s, cwd=str(Path(path).parent))
    s["device"] = torch.cuda.get_device_name()
    return s


# -- caller side ------------------------------------------------------------------------------------
def _apply_ncu(p: Profile, s: dict[str, Any]) -> None:
    if s.get("sol_memory_pct") is not None or s.get("sol_compute_pct") is not None:
        p.sol = {"memory_pct": s.get("sol_memory_pct"), "compute_pct": s.get("sol_compute_pct")}
        p.extra["sol_source"] = "ncu SpeedOfLight section"
    p.achieved_occupancy = s.get("achieved_occupancy")
    if s.get("registers") is not None:
        p.registers = int(s["registers"])
    if p.theoretical_occupancy is None and s.get("theoretical_occupancy") is not None:
        p.theoretical_occupancy = s["theoretical_occupancy"]
    if p.bandwidth_bytes_per_s is None and s.get("dram_bytes_per_s") is not None:
        p.bandwidth_bytes_per_s = s["dram_bytes_per_s"]
        p.extra["bandwidth_source"] = "ncu MemoryWorkloadAnalysis Memory Throughput"
    p.ncu_rules = [{"rule": r["rule"], "message": r["message"], "estimated_speedup_pct": r["estimated_speedup_pct"],
                    "type": r["type"], "section": r["section"]} for r in s.get("rules", [])]
    p.extra["ncu"] = {k: v for k, v in s.items() if k != "per_launch"}


def _peaks(gpu_index: int, timeout_s: float) -> Any:
    ident = _raise_for(_call("htam_core.measure.peaks:device_identity", {}, gpu_index, 120), "device query")
    return get_peaks(ident["device"], ident["uuid"],
                     lambda: _raise_for(_call("htam_core.measure.peaks:measure_peaks", {}, gpu_index, timeout_s),
                                        "peak measurement"))


def compute_dtype(dtype: str | None, kernel: Any) -> str | None:
    """The dtype whose FLOP/s peak bounds ``kernel``: ``"tf32"`` for a Triton kernel that calls ``tl.dot`` on
    float32 inputs (Triton's default ``input_precision`` for fp32 dots on NVIDIA GPUs is TF32, on tensor
    cores), else ``dtype`` (the first floating-point input's dtype) unchanged."""
    if dtype == "float32" and kernel is not None and getattr(kernel, "language", None) == "triton" \
            and getattr(kernel.features, "uses_dot", False):
        return "tf32"
    return dtype


#: Where ``Profile.sol`` comes from when ncu did not run (ncu's SpeedOfLight values replace it when it does).
ROOFLINE_SOL_SOURCE = ("roofline estimate: the harness's fewest bytes and FLOPs per call over the measured time, "
                       "as a percentage of the measured DRAM and FLOP/s peaks (a lower bound of ncu's SOL)")


def roofline_sol(time_s: float, bytes_moved: float | None, flops: float | None, peaks: Any,
                 dtype: str | None = None) -> dict[str, float] | None:
    """Speed-of-light percentages estimated from the roofline bound, for a profile taken without ncu.

    ``memory_pct`` = (fewest DRAM bytes / time) / peak DRAM bytes/s x 100 and ``compute_pct`` =
    (FLOPs / time) / peak FLOP/s (for ``dtype``) x 100. Because the bytes are the *fewest* a correct kernel
    must move, these are lower bounds of the SOL percentages that Nsight Compute's SpeedOfLight section
    reports; they feed the same SOLBottleneck rule in :func:`htam_core.profile.classify.classify`, so a
    memory-bound kernel reaching a quarter of peak bandwidth is read as latency-bound, as ncu would.

    Args:
        time_s: median time of one call, seconds (> 0).
        bytes_moved, flops: the harness's roofline bound for one call (``None``/0 when not given).
        peaks: :class:`htam_core.measure.peaks.Peaks` of the device.
        dtype: compute dtype (selects the FLOP/s peak).

    Returns:
        ``{"memory_pct", "compute_pct"}`` (a side without a bound is 0.0), or ``None`` when neither bound is
        given or the time is not positive.
    """
    if time_s <= 0 or not (bytes_moved or flops):
        return None
    mem = 100.0 * (bytes_moved or 0.0) / time_s / peaks.dram_bytes_per_s
    comp = 100.0 * (flops or 0.0) / time_s / peaks.flops_for(dtype)
    return {"memory_pct": mem, "compute_pct": comp}


def measure_on_gpu(path: str, name: str, harness: Harness, gpu_index: int = 0, *, kernel: Any = None,
                   static: Profile | Callable[[], Profile | None] | None = None, use_ncu: bool = True,
                   trials: int = 100, timeout_s: float = 600.0) -> Profile:
    """Measure one kernel on GPU ``gpu_index`` and return a ``mode="gpu"`` :class:`Profile` without a bottleneck.

    Args:
        path: the kernel's file.
        name: the kernel's name.
        harness: how to run it (:func:`htam_core.harness.find_harness`).
        gpu_index: which GPU (its persistent worker is ``"gpu<i>"``).
        kernel: the source-model Kernel, when known (a Triton ``tl.dot`` on fp32 is bounded by the TF32 peak).
        static: the static profile, when one was made: its registers, spills, shared memory, occupancy, block
            size and stack are copied first (ncu's values, when it runs, take precedence where it measures them).
            A callable returning it (or ``None``) is called after the GPU worker's measurement, so a static
            compile still running on another thread overlaps the verification and timing.
        use_ncu: collect ncu counters when ``ncu`` is on PATH.
        trials: timed trials per input set.
        timeout_s: limit for each worker call, seconds.

    Returns:
        The measured profile, ``bottleneck`` left ``unknown`` (the classifier, one layer up, sets it). A kernel
        that fails verification is still timed; ``warnings`` says it is incorrect and ``extra["correctness"]``
        holds the verdict.

    Raises:
        ProfileError: the kernel faulted, hung, ran out of memory or crashed the worker (the message names
            which); the worker is restarted, so the next profile works.
    """
    p = Profile(kernel=name, mode="gpu", harness=harness.label())
    # for the hover and the report: where the harness came from, and what a passing check means
    p.extra["harness_source"] = harness.description()
    p.extra["checked_against"] = harness.checked_against

    def apply_static() -> None:
        st = static() if callable(static) else static
        if st is not None:
            for f in ("registers", "spill_bytes", "shared_bytes", "theoretical_occupancy", "block_size",
                      "stack_bytes"):
                setattr(p, f, getattr(st, f))
            p.extra["static"] = {"device": st.device, **{k: v for k, v in st.extra.items() if k != "ncu"}}

    have_ncu = use_ncu and find_ncu() is not None
    if harness.traits.whole_program:
        apply_static()
        s = _raise_for(_call("htam_core.measure.gpu:measure_program",
                             {"path": harness.path, "kernel": name, "args": harness.program_args}, gpu_index,
                             timeout_s), f"running {Path(path).name} under ncu")
        p.device = s.pop("device", "GPU")
        st = s.get("duration_ms_stats")
        p.time_ms = TimeStats(**st) if st else None
        p.extra["timing"] = {"method": "ncu gpu__time_duration", "launches": s.get("launches")}
        p.warnings.append("a .cu program with main() is not checked for correctness (no reference)")
        p.warnings.extend(harness.notes)  # why no harness was inferred from main()
        _apply_ncu(p, s)
    else:
        m = _raise_for(_call("htam_core.measure.gpu:measure_harness", {"harness": harness.to_json(),
                                                                       "trials": trials}, gpu_index, timeout_s),
                       f"timing {name}")
        apply_static()  # before ncu's values, as for a program; nothing above reads the static fields
        p.device = m["device"]
        first = m["sets"][0]
        t = first["time"]
        refused = [s["time"]["refused"] for s in m["sets"] if s["time"].get("refused")]
        p.time_ms = None if refused else TimeStats(t["min"], t["median"], t["max"])
        p.extra["timing"] = {"method": t["method"], "method_reason": t.get("method_reason", ""),
                             "trials": t["trials"], "l2_flush": t.get("l2_flush", True),
                             "cupti_ms": t.get("cupti_ms"), "agreement": t.get("agreement"),
                             "refused": refused[0] if refused else None,
                             "per_set": [_set_json(s) for s in m["sets"]]}
        p.warnings.extend(t.get("warnings", []))
        p.warnings[:0] = refused
        corr = m.get("correctness")
        p.extra["correctness"] = corr
        p.extra["phases"] = m.get("phases") or {}
        if corr is not None and not corr["correct"]:
            p.warnings.insert(0, "the kernel does not match its reference: " + "; ".join(corr["messages"][:3]))
        secs = t["median"] / 1000.0
        # a refused time is not a measurement: no bandwidth, FLOP/s or roofline from it
        if not refused and first["bytes"]:
            p.bandwidth_bytes_per_s = first["bytes"] / secs
        if not refused and first["flops"]:
            p.flops_per_s = first["flops"] / secs
        if not refused and (first["bytes"] or first["flops"]):
            try:
                pk = _peaks(gpu_index, timeout_s)
                dtype = compute_dtype(first.get("dtype"), kernel)
                p.roofline_fraction = roofline_fraction(secs, bytes_moved=first["bytes"], flops=first["flops"],
                                                        peaks=pk, dtype=dtype)
                p.extra["peaks"] = {"dram_bytes_per_s": pk.dram_bytes_per_s, "fp32_flops_per_s": pk.fp32_flops_per_s,
                                    "tf32_flops_per_s": pk.tf32_flops_per_s, "bf16_flops_per_s": pk.bf16_flops_per_s,
                                    "measured_at": pk.measured_at, "compute_dtype": dtype}
                p.sol = roofline_sol(secs, first["bytes"], first["flops"], pk, dtype)
                p.extra["sol_source"] = ROOFLINE_SOL_SOURCE
            except ProfileError as e:
                p.warnings.append(f"roofline not computed: {e.message}")
        elif not refused:
            p.warnings.append("bandwidth and roofline not computed: the harness gives no bytes/flops expressions")
        if have_ncu:
            r = _call("htam_core.measure.ncu:ncu_harness_target", {"harness": harness.to_json()}, gpu_index, timeout_s)
            if r.ok:
                _apply_ncu(p, r.value)
            else:
                p.warnings.append(f"ncu counters not collected: {r.error.message if r.error else 'unknown'}")
    if use_ncu and not have_ncu:
        p.warnings.append("ncu not found on PATH: no counters (sol, achieved occupancy) were collected")
    elif not use_ncu:
        p.extra["ncu"] = None  # not requested: sol and achieved occupancy stay unmeasured
    return p
