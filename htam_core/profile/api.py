"""Profile one kernel: on the GPU when there is one, else statically.

``profile_kernel(path, name)`` loads the source model, then

* **GPU** (a GPU is present and ``static`` is not ``True``): :func:`profile_on_gpu` takes the static
  profile below (registers, spills, shared memory, occupancy), has :func:`htam_core.measure.gpu.measure_on_gpu`
  verify, time and count the kernel in the GPU's worker, and classifies the bottleneck;
* **static**: :func:`static_profile` compiles the kernel for ``target`` (nvcc for CUDA, Triton's
  AOT compiler for Triton), reads registers, spills, stack and shared memory, computes the
  theoretical occupancy for the launch's block size and classifies the bottleneck. Every measured
  field stays ``None``.
"""

from __future__ import annotations

import os
import shutil
import warnings as _warnings
from collections.abc import Callable
from typing import Any

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.find import find_harness
from htam_core.harness.launch_values import recorded_kernel_args
from htam_core.measure.gpu import measure_on_gpu
from htam_core.profile import static_cuda as sc
from htam_core.profile.classify import classify
from htam_core.profile.static_kinds import create as create_profiler
from htam_core.profile.static_roofline import (
    estimate_work,
    kernel_harness_noted,
    sizes_of,
)
from htam_core.runtime.cache import CompileCache
from htam_core.source import SourceError, incomplete_reason, load, without_incomplete
from htam_core.types.errors import ProfileError
from htam_core.types.profile import Profile


def gpu_available() -> bool:
    """A usable NVIDIA GPU: ``nvidia-smi`` on PATH and ``torch.cuda.is_available()`` (see :func:`no_gpu_reason`)."""
    return no_gpu_reason() is None


def no_gpu_reason() -> str | None:
    """Why there is no usable NVIDIA GPU, in a few words (``"nvidia-smi is not on PATH"``,
    ``"torch is a CPU build"``, ``"torch.cuda.is_available() is False"``), or ``None`` when there is one.

    ``nvidia-smi`` is checked first so that machines without a GPU never pay for ``import torch``.
    """
    if shutil.which("nvidia-smi") is None:
        return "nvidia-smi is not on PATH"
    import torch

    if getattr(torch.version, "cuda", None) is None:
        return f"torch {torch.__version__} is a CPU build"
    try:
        return None if torch.cuda.is_available() else "torch.cuda.is_available() is False"
    except Exception as exc:  # noqa: BLE001 - a broken driver means no GPU
        return f"torch.cuda failed: {type(exc).__name__}: {exc}"


#: Default of ``static_profile(harness=...)``: find the kernel's harness (the caller did not).
LOOK_UP = object()


def static_profile(model: Any, kernel: Any, target: str = "sm_90", *, constexprs: dict[str, Any] | None = None,
                   cache: CompileCache | None = None, sizes: dict[str, Any] | None = None,
                   harness: Harness | None | object = LOOK_UP) -> Profile:
    """Static profile of ``kernel`` (a :class:`htam_core.source.model.Kernel` of ``model``).

    Args:
        model: the :class:`htam_core.source.model.SourceModel` the kernel belongs to.
        kernel: the kernel, or its name.
        target: compute capability (``"sm_80"``, ``"sm_86"``, ``"sm_89"``, ``"sm_90"``).
        constexprs: Triton constexpr overrides (``{"BLOCK_SIZE": 1024}``).
        cache: compile cache; default :class:`CompileCache` under ``$HTAM_CACHE_DIR``.
        harness: the kernel's harness when the caller has it (``None``: it has none), whose recorded launch
            configuration the Triton compile uses (:func:`htam_core.harness.launch_values.recorded_constexprs`);
            default :data:`LOOK_UP`: found here (:func:`htam_core.harness.find_harness`).
        sizes: harness size symbols for loop trip counts (``{"N": 4096}``); default: the first size set
            of the kernel's ``htam.toml`` harness, when there is one.

    Returns:
        A ``mode="static"`` :class:`Profile`: registers, spills, stack and shared bytes, block size,
        theoretical occupancy, the static roofline estimate (``extra["static_roofline"]``) and the
        bottleneck; measured fields ``None``.

    Raises:
        ProfileError: unknown kernel, unsupported language, compile failure, missing tool.
    """
    if isinstance(kernel, str):
        try:
            kernel = model.kernel(kernel)
        except KeyError as exc:
            raise ProfileError(str(exc.args[0]) if exc.args else str(exc)) from exc
    cache = cache if cache is not None else CompileCache()
    model, kernel, blanked = without_incomplete(model, kernel)  # half-typed kernels do not block a compile
    harness, harness_note = _harness_of(model, kernel, harness)
    profiler = create_profiler(kernel.language)
    p = profiler.compiled(model, kernel, sc.normalize_target(target), cache, constexprs=constexprs, harness=harness)
    if getattr(kernel, "incomplete", False):
        p.warnings.append(f"kernel {kernel.name} is incomplete in the source (still being typed)")
    if blanked:
        p.warnings.append("compiled without the half-typed kernel(s) " + ", ".join(
            f"{k.name} (lines {k.start_line}-{k.end_line})" for k in blanked))
    if getattr(model, "stale", False):
        p.warnings.append("the source did not parse; the kernel comes from the last good parse")
    p.warnings.append("static profile: no GPU measurement (time, SOL, bandwidth and achieved occupancy are null)")
    args = None
    if sizes is None:
        sizes, args = sizes_of(harness), recorded_kernel_args(harness, model.text, kernel)
        if harness_note:
            p.warnings.insert(0, harness_note)
    _roofline(p, model, kernel, sizes, args)
    p.bottleneck = classify(p, getattr(kernel, "features", None), target=p.device.split()[0])
    return p


def source_profile(model: Any, kernel: Any, target: str = "sm_90", *, sizes: dict[str, Any] | None = None,
                   harness: Harness | None | object = LOOK_UP) -> Profile:
    """Source-only static profile of ``kernel``: what the source says, with no compile (milliseconds).

    The editor's first profile stage on a machine without a GPU: the kernel's facts (its feature model), the
    static roofline estimate (:mod:`htam_core.profile.static_roofline`), the launch configuration (threads per
    block of a CUDA launch; ``num_warps`` of a Triton launch site, Triton's default 4 when it gives none) and
    the bottleneck those allow. Registers, spills, shared memory and occupancy need the compiler and stay
    ``None``; :func:`static_profile` (the next stage) fills them in.

    Args:
        model, kernel, target, sizes, harness: as for :func:`static_profile`.

    Returns:
        A ``mode="static"`` :class:`Profile` with ``device="<target> (source only)"`` and
        ``extra["stage"] = "source"``.

    Raises:
        ProfileError: unknown kernel or a language that cannot be profiled.
    """
    if isinstance(kernel, str):
        try:
            kernel = model.kernel(kernel)
        except KeyError as exc:
            raise ProfileError(str(exc.args[0]) if exc.args else str(exc)) from exc
    target = sc.normalize_target(target)
    p = Profile(kernel=kernel.name, mode="static", device=f"{target} (source only)")
    p.extra["stage"] = "source"
    profiler = create_profiler(kernel.language)
    args = None
    if profiler.source_reads_harness:
        harness, note = _harness_of(model, kernel, harness)
        if sizes is None:
            sizes, args = sizes_of(harness), recorded_kernel_args(harness, model.text, kernel)
            if note:
                p.warnings.insert(0, note)
    profiler.source_only(p, model, kernel, target, harness if isinstance(harness, Harness) else None)
    p.warnings.append("source-only profile: not compiled yet (registers, spills, shared memory and occupancy follow "
                      "from the compile)")
    _roofline(p, model, kernel, sizes, args)
    p.bottleneck = classify(p, getattr(kernel, "features", None), target=target)
    return p


def _harness_of(model: Any, kernel: Any, given: Harness | None | object) -> tuple[Harness | None, str | None]:
    """The harness a static profile reads (``given``, or found when it is :data:`LOOK_UP`) and the note saying
    why a broken one was not used."""
    if given is LOOK_UP:
        return kernel_harness_noted(getattr(model, "path", None), kernel.name, model)
    return (given if isinstance(given, Harness) and given.traits.launches else None), None


def _roofline(p: Profile, model: Any, kernel: Any, sizes: dict[str, Any] | None,
              kernel_args: dict[str, Any] | None = None) -> None:
    """Attach the static roofline estimate (``extra["static_roofline"]``) the classifier reads; ``kernel_args``:
    the kernel's scalar arguments as the harness's launcher passes them (:func:`recorded_kernel_args`)."""
    if getattr(kernel, "features", None) is None:
        return
    try:
        est = estimate_work(model, kernel, constexprs=p.extra.get("constexprs") or {}, sizes=sizes,
                            kernel_args=kernel_args)
    except (ValueError, TypeError, ArithmeticError, RecursionError, AttributeError) as exc:
        p.warnings.append(f"static roofline estimate not made ({type(exc).__name__}: {exc})")
        return
    if est is not None:
        p.extra["static_roofline"] = est


def _static_or_none(model: Any, kernel: Any, target: str) -> Profile | None:
    if model is None or kernel is None:
        return None
    try:
        return static_profile(model, kernel, target)
    except Exception:  # noqa: BLE001 - static data is a complement; its failure leaves fields None
        return None


def _load_or_none(path: str) -> Any:
    try:
        return load(path)
    except Exception:  # noqa: BLE001 - without a model the GPU profile still measures; fields stay None
        return None


def profile_on_gpu(path: str | os.PathLike | None = None, kernel_name: str | None = None,
                   harness: Harness | None = None, gpu_index: int = 0, *, model: Any = None, kernel: Any = None,
                   use_ncu: bool = True, trials: int = 100, timeout_s: float = 600.0, target: str = "sm_90",
                   static: Callable[[], Profile | None] | None = None) -> Profile:
    """Profile one kernel on GPU ``gpu_index``: static resources, then measurement, then the bottleneck class.

    Args:
        path: the kernel's file.
        kernel_name: the kernel's name (or give ``kernel``, a source-model Kernel).
        harness: how to run it; found with :func:`htam_core.harness.find_harness` when ``None``.
        gpu_index: which GPU (its persistent worker is ``"gpu<i>"``).
        model, kernel: the source model and kernel, for static resources and classification (loaded from
            ``path`` when not given).
        use_ncu: collect ncu counters when ``ncu`` is on PATH.
        trials: timed trials per input set.
        timeout_s: limit for each worker call, seconds.
        target: static target for registers/spills.
        static: a callable that returns the static profile (or ``None``), e.g. the result of a compile already
            running on another thread; it is called after the GPU measurement, so the two overlap. Default: the
            static profile is compiled here, before the measurement.

    Returns:
        A ``mode="gpu"`` profile (:func:`htam_core.measure.gpu.measure_on_gpu`) with its bottleneck class
        (:func:`htam_core.profile.classify.classify`). Without a harness: the static profile with the harness
        error in ``warnings`` (nothing is measured, nothing guessed).

    Raises:
        ProfileError: no path or kernel name; or the kernel faulted, hung, ran out of memory or crashed the
            worker (the message names which); the worker is restarted, so the next profile works.
    """
    if path is None:
        raise ProfileError("profile_on_gpu needs the kernel's file path")
    path = str(path)
    name = kernel_name or (kernel.name if kernel is not None else None)
    if name is None:
        raise ProfileError("profile_on_gpu needs a kernel name")
    if model is None:
        model = _load_or_none(path)
    if kernel is None and model is not None:
        try:
            kernel = model.kernel(name)
        except KeyError:
            kernel = None
    static_of: Callable[[], Profile | None] | Profile | None = static if static is not None else \
        _static_or_none(model, kernel, target)
    if harness is None:
        try:
            harness = find_harness(path, name, model)
        except HarnessError as e:
            p = (static_of() if callable(static_of) else static_of) or Profile(kernel=name)
            p.warnings.insert(0, f"not measured on the GPU: {e}")
            return p
    p = measure_on_gpu(path, name, harness, gpu_index, kernel=kernel, static=static_of, use_ncu=use_ncu,
                       trials=trials, timeout_s=timeout_s)
    if harness.inference:  # {"cached": true, ...}: the recording of an earlier command (verify) was reused
        p.extra["harness_inference"] = dict(harness.inference)
    p.bottleneck = classify(p, kernel.features if kernel is not None else None, target=target)
    return p


def profile_kernel(path: str | os.PathLike[str], kernel_name: str, *, static: bool | None = None,
                   target: str = "sm_90", gpu_index: int = 0, constexprs: dict[str, Any] | None = None,
                   cache: CompileCache | None = None, use_ncu: bool = True) -> Profile:
    """Profile the kernel ``kernel_name`` of the file ``path``.

    Args:
        path: a ``.cu``/``.cuh`` or ``.py`` file.
        kernel_name: the kernel's name (``htam kernels FILE`` lists them).
        static: ``True`` forces the static profile; ``False`` asks for the GPU (falls back to static
            with a warning when there is none); ``None`` picks the GPU when one is available.
        target: compute capability for the static profile.
        gpu_index: which GPU to measure on.
        constexprs: Triton constexpr overrides for the static compile.
        cache: compile cache.
        use_ncu: on a GPU, also collect Nsight Compute counters (``False``: the timer only, stage 1 of the
            two-stage profile; SOL and achieved occupancy stay ``None``).

    Returns:
        A :class:`Profile`.

    Raises:
        ProfileError: missing file, unsupported file, unknown kernel, compile failure.
    """
    if not os.path.isfile(path):
        raise ProfileError(f"no such file: {path}")
    try:
        model = load(path)
    except SourceError as exc:
        raise ProfileError(str(exc)) from exc
    try:
        kernel = model.kernel(kernel_name)
    except KeyError as exc:
        raise ProfileError(str(exc.args[0]) if exc.args else str(exc)) from exc
    if (why := incomplete_reason(kernel, "it is profiled")) is not None:
        raise ProfileError(why)  # the line htam suggest / optimize give, not the compiler's SyntaxError
    fallback_note = None
    if static is not True:
        if gpu_available():
            return profile_on_gpu(path=str(path), kernel_name=kernel_name, gpu_index=gpu_index, model=model,
                                  kernel=kernel, target=target, use_ncu=use_ncu)
        if static is False:
            fallback_note = "no GPU found (nvidia-smi/torch.cuda); static profile instead"
    p = static_profile(model, kernel, target, constexprs=constexprs, cache=cache)
    if fallback_note:
        p.warnings.insert(0, fallback_note)
        _warnings.warn(fallback_note, RuntimeWarning, stacklevel=2)
    return p
