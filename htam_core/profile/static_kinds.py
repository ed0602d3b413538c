"""Static profilers, one per kernel language, created through :func:`create`.

A static profiler turns a kernel's source into the static part of a :class:`Profile` in two stages, the
editor's two profile stages on a machine without a GPU:

* :meth:`StaticProfiler.source_only`: what the source says, with no compile (milliseconds): the launch's
  threads per block and why, and, where the launch cannot fit, the reasons;
* :meth:`StaticProfiler.compiled`: the compiler's resources (registers, spills, stack, shared memory) and the
  theoretical occupancy they allow.

:mod:`htam_core.profile.api` orchestrates (harness lookup, roofline estimate, bottleneck class) and asks
:func:`create` for the profiler of ``kernel.language``; a new language registers its profiler with
:func:`register` rather than adding a branch there. The resource figures follow Nsight Compute's occupancy
calculator (:mod:`htam_core.profile.occupancy`).
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from htam_core.harness.base import Harness, origin_dirs, unscaled
from htam_core.harness.launch_values import recorded_constexprs, recorded_kernel_args, recorded_pointer_dtypes
from htam_core.profile import static_cuda as sc
from htam_core.profile.occupancy import arch_limits, theoretical_occupancy
from htam_core.profile.static_roofline import sizes_of
from htam_core.profile.static_triton import build_request, compile_triton_kernel
from htam_core.runtime.cache import CompileCache
from htam_core.source.analysis.smem_optin import shared_optins
from htam_core.source.workspace import find_launches
from htam_core.types.constexpr import constexpr_text
from htam_core.types.errors import ProfileError
from htam_core.types.profile import Profile


def cannot_launch(p: Profile, target: str, reasons: list[str]) -> None:
    """Mark ``p`` as a launch that cannot run on ``target``: ``extra["launch"] = {"fits": False, "reasons"}``, the
    first warning says so, and the theoretical occupancy stays ``None`` (a launch that never runs has none; the
    classifier reads ``extra["launch"]`` first, :func:`htam_core.profile.classify.classify`).

    Args:
        p: the profile to mark (changed in place).
        target: compute capability (``"sm_90"``).
        reasons: why the launch cannot run; nothing is marked when empty.
    """
    if not reasons:
        return
    p.theoretical_occupancy = None
    p.extra["launch"] = {"fits": False, "reasons": list(reasons), "target": target}
    p.warnings.insert(0, f"cannot launch on {target}: {'; '.join(reasons)}")


def occupancy(p: Profile, target: str, dynamic_shared: int = 0, launch_reasons: list[str] | None = None, *,
              shared_optin: bool = True) -> None:
    """Set the theoretical occupancy of ``p``'s launch (``p.theoretical_occupancy``, a fraction in [0, 1], and
    ``extra["occupancy"]``), or, when the launch cannot fit one block on an SM, no occupancy and the reasons
    (``launch_reasons``: those the caller found, such as a block over ``__launch_bounds__``) through
    :func:`cannot_launch`.

    Args:
        p: the profile, with ``registers`` (per thread), ``block_size`` (threads) and ``shared_bytes`` read.
        target: compute capability; an unknown one leaves a warning and no occupancy.
        dynamic_shared: dynamic shared memory of the launch, bytes.
        launch_reasons: reasons the caller already found that the launch cannot run.
        shared_optin: the kernel may use more than 48 KB of shared memory per block (the host opts it in, or the
            opt-in cannot be seen; see :func:`htam_core.profile.occupancy.theoretical_occupancy`).
    """
    reasons = list(launch_reasons or [])
    if p.registers is None or p.block_size is None:
        cannot_launch(p, target, reasons)
        return
    try:
        arch_limits(target)
    except ValueError as exc:
        p.warnings.append(f"theoretical occupancy not computed: {exc}")
        return
    occ = theoretical_occupancy(p.registers, p.block_size, p.shared_bytes or 0,
                                dynamic_shared_bytes=dynamic_shared, target=target, shared_optin=shared_optin)
    p.extra["occupancy"] = occ.to_json()
    reasons = occ.cannot_launch + reasons
    if reasons:
        cannot_launch(p, target, reasons)
        return
    p.theoretical_occupancy = round(occ.occupancy, 4)


def threads_over(source: str, kernel: Any, offset: int, path: Any, block: int | None, target: str, *,
                 compiled: bool = False) -> list[str]:
    """Why a CUDA launch of ``block`` threads per block cannot run, read from the source: more threads than the
    kernel's ``__launch_bounds__`` (:func:`htam_core.profile.static_cuda.resolve_launch_bounds`), and, before a
    compile (``compiled=False``; the compiled profile's occupancy checks it with the registers), more than the
    target allows per block. Empty when it fits or ``block`` is unknown.

    Args:
        source: the CUDA text the kernel is in; ``offset`` is the kernel's text's byte offset in the file.
        kernel: the source-model kernel; ``path`` its file (for included headers).
        block: threads per block of the launch, or ``None`` when unknown.
        target: compute capability.
        compiled: the caller compiled the kernel (its occupancy checks the per-block limit).
    """
    if block is None:
        return []
    out = []
    if not compiled:
        try:
            most = arch_limits(target).max_threads_per_block
        except ValueError:
            most = None
        if most is not None and block > most:
            out.append(f"{block} threads per block > {most}, the most a block can have on {target}")
    bound = sc.resolve_launch_bounds(source, kernel, offset, path)
    if bound is not None and block > bound:
        out.append(f"a block of {block} threads > __launch_bounds__({bound}), the most the kernel was compiled for")
    return out


def harness_label(h: Harness | None) -> str:
    """Where a constexpr value read from harness ``h`` came from, for ``extra["constexprs"][name]["source"]``:
    the harness and the size set its launch values were evaluated over (its first)."""
    if h is None:
        return "harness"
    sizes = ", ".join(f"{k}={v}" for k, v in sizes_of(h).items())
    parts = [p for p in (h.source.split(";")[0] if h.source else "", f"size set {sizes}" if sizes else "") if p]
    return f"harness ({'; '.join(parts)})" if parts else "harness"



def block_size(source: str, kernel: Any, offset: int, model: Any) -> tuple[int | None, str, list[str]]:
    """Threads per block of ``kernel``'s launch: :func:`static_cuda.resolve_block_size` on its own unit, else the
    first launch in another file of the workspace whose block is a constant (:func:`find_launches`: a ``main()``
    in ``main.cu``, a ``.cpp`` host, a ``load_inline`` string). Returns ``(threads or None, where from,
    warnings)``; the "block size unknown" warning stays only when neither gives it."""
    block, why, warns = sc.resolve_block_size(source, kernel, offset, model.path)
    if block is not None or not getattr(model, "path", None):
        return block, why, warns
    try:
        launches = find_launches(model, kernel)
    except Exception:  # noqa: BLE001 - the workspace search is best effort: the profile says the size is unknown
        return block, why, warns
    for la in launches:
        if la.block_value and all(v > 0 for v in la.block_value):
            n = math.prod(la.block_value)
            return n, f"launch in {Path(la.path).name} line {la.line}: block {la.block} = {n}", \
                [w for w in warns if not w.startswith("block size unknown")]
    return block, why, warns

def dynamic_shared(p: Profile, model: Any, kernel: Any, source: str, offset: int) -> tuple[int | None, bool]:
    """Read the dynamic shared memory of ``kernel``'s launch in its file and whether the host opts the kernel in
    to more than 48 KB per block; record both in ``p.extra`` (``"dynamic_shared_bytes"``, and ``"dynamic_shared"``:
    ``{"bytes", "line", "expr"}`` of the launch it was read at, ``"shared_optin"``: the opt-in lines).

    The 48 KB default applies only where the launch is in view (a launch site in this file, whose host code is
    searched, :func:`htam_core.source.analysis.smem_optin.shared_optins`); a kernel launched elsewhere is read as
    opted in, so no launch is called impossible on what this file cannot show.

    Returns:
        ``(dynamic bytes or None when not a constant, opted in)``.
    """
    dyn, site = sc.dynamic_smem_site(source, kernel, offset)
    if dyn is None and site is not None:
        p.warnings.append("dynamic shared memory of the launch is not a constant; occupancy counts static only")
    p.extra["dynamic_shared_bytes"] = dyn
    if site is None:
        return dyn, True
    p.extra["dynamic_shared"] = {"bytes": dyn, "line": site.line, "expr": (site.config or {}).get("smem") or "0"}
    embedded = kernel.language != "cuda"
    first = model.text.encode("utf-8")[:offset].count(b"\n") + 1
    found = shared_optins(model.text, kernel.name, [k.name for k in model.kernels], python=embedded,
                          cuda_text=source if embedded else None, cuda_first_line=first)
    p.extra["shared_optin"] = [{"line": o.line, "text": " ".join(o.text.split()), "value": o.value,
                                "byte": o.byte, "cuda": o.cuda} for o in found]
    return dyn, bool(found)


def over_optin(p: Profile, source: str, dyn: int | None) -> list[str]:
    """Why the launch cannot run because it asks for more dynamic shared memory than the host opted the kernel in
    to: each C opt-in of ``p.extra["shared_optin"]`` (:func:`dynamic_shared`) whose bytes are a constant of
    ``source`` (``cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024)``) below
    ``dyn``; the launch fails (``cudaErrorInvalidValue``). An opt-in whose bytes are not a constant, or in
    Python, is not checked. Empty when none is over."""
    if not dyn:
        return []
    out = []
    for o in p.extra.get("shared_optin") or []:
        v = sc.eval_const_expr(source, o["value"], o["byte"]) if o.get("cuda") and o.get("value") else None
        if v is not None and dyn > v:
            out.append(f"the launch's {dyn:,} B of dynamic shared memory > the {v:,} B the host opts the kernel in "
                       f"to (line {o['line']}: {o['text']})")
    return out[:1]


class StaticProfiler(ABC):
    """The static profile of the kernels of one or more languages (``Kernel.language`` values).

    Subclasses set :attr:`languages` and are registered with :func:`register`; callers get one with
    :func:`create`.
    """

    #: the ``Kernel.language`` values this profiler reads
    languages: ClassVar[tuple[str, ...]] = ()
    #: whether the source-only stage needs the kernel's harness (its recorded launch values)
    source_reads_harness: ClassVar[bool] = False

    @abstractmethod
    def compiled(self, model: Any, kernel: Any, target: str, cache: CompileCache, *,
                 constexprs: dict[str, Any] | None, harness: Harness | None) -> Profile:
        """Compile ``kernel`` of ``model`` for ``target`` (``"sm_90"``, normalized) and return a ``mode="static"``
        :class:`Profile` with its resources and theoretical occupancy.

        Raises:
            ProfileError: the compile failed or produced no entry for the kernel.
        """

    @abstractmethod
    def source_only(self, p: Profile, model: Any, kernel: Any, target: str, harness: Harness | None) -> None:
        """Fill ``p`` (a ``mode="static"`` profile) with what the source alone says: the launch's threads per
        block and its source, and the reasons a launch cannot run. No compile.

        Raises:
            ProfileError: the kernel's source cannot be read.
        """


_PROFILERS: dict[str, type[StaticProfiler]] = {}


def register(cls: type[StaticProfiler]) -> type[StaticProfiler]:
    """Class decorator: make ``cls`` the static profiler of each language in ``cls.languages``.

    Raises:
        ValueError: ``cls`` names no language, or a language already has a profiler.
    """
    if not cls.languages:
        raise ValueError(f"{cls.__name__} names no language")
    for lang in cls.languages:
        if lang in _PROFILERS:
            raise ValueError(f"language {lang!r} already has a static profiler ({_PROFILERS[lang].__name__})")
        _PROFILERS[lang] = cls
    return cls


def create(language: str) -> StaticProfiler:
    """The static profiler of ``language`` (``"cuda"``, ``"cuda-in-python"``, ``"triton"``).

    Raises:
        ProfileError: no profiler is registered for ``language``.
    """
    try:
        return _PROFILERS[language]()
    except KeyError:
        raise ProfileError(f"language {language!r} cannot be profiled statically (profiled: "
                           f"{', '.join(sorted(_PROFILERS))})") from None


def languages() -> tuple[str, ...]:
    """The languages that have a static profiler, sorted."""
    return tuple(sorted(_PROFILERS))


@register
class CudaProfiler(StaticProfiler):
    """CUDA C++ kernels: nvcc's resource usage (``--resource-usage``) of the file, per instantiation."""

    languages = ("cuda",)

    def cuda_text(self, model: Any, kernel: Any, *, strict: bool = True) -> tuple[str, int, int]:
        """The CUDA text holding ``kernel``, its byte offset in the file and its first line (1-based)."""
        return model.text, 0, 1

    def compiled(self, model: Any, kernel: Any, target: str, cache: CompileCache, *,
                 constexprs: dict[str, Any] | None, harness: Harness | None) -> Profile:
        source, offset, first_line = self.cuda_text(model, kernel)
        name = str(model.path or "<text>")
        p = Profile(kernel=kernel.name, mode="static", device=f"{target} (static)")
        if sc.includes_torch(source):
            try:
                res = sc.compile_cuda(sc.strip_host_code(source), target=target, source_name=name,
                                      first_line=first_line, mode="kernel-only", cache=cache)
                if not sc.match_entries(res.entries, kernel.name):
                    raise ProfileError("kernel not instantiated without host code")
            except ProfileError:
                res = sc.compile_cuda(source, target=target, source_name=name, first_line=first_line,
                                      include_dirs=sc.torch_include_dirs(), extra_flags=["-std=c++17"],
                                      mode="torch", cache=cache)
        else:
            res = sc.compile_cuda(source, target=target, source_name=name, first_line=first_line, cache=cache)
        entries = sc.match_entries(res.entries, kernel.name, kernel)
        if not entries:
            res, entries = _instantiated_elsewhere(res, source, model, kernel, target, name, first_line, cache)
        if not entries:
            names = ", ".join(sorted({e.base_name for e in res.entries})) or "none"
            raise ProfileError(f"nvcc produced no entry for kernel {kernel.name} in {name} (entries: {names}); "
                               "a template kernel must be instantiated (launched or explicitly instantiated)")
        p.registers = max(e.registers for e in entries)
        p.spill_bytes = max(e.spill_bytes for e in entries)
        p.shared_bytes = max(e.shared_bytes for e in entries)
        p.stack_bytes = max(e.stack_bytes for e in entries)
        p.extra["instantiations"] = [
            {"name": e.demangled, "registers": e.registers, "spill_store_bytes": e.spill_store_bytes,
             "spill_load_bytes": e.spill_load_bytes, "stack_bytes": e.stack_bytes, "shared_bytes": e.shared_bytes,
             "cmem_bytes": e.cmem_bytes} for e in entries]
        if len(entries) > 1:
            p.warnings.append(f"{len(entries)} instantiations of {kernel.name}: reporting the maximum of each resource")
        p.extra["compile"] = {"tool": "nvcc", "mode": res.mode, "cached": res.cached,
                              "seconds": round(res.seconds, 3), "target": target}
        block, why, warns = block_size(source, kernel, offset, model)
        p.block_size = block
        p.extra["block_size_source"] = why
        p.warnings.extend(warns)
        dyn, optin = dynamic_shared(p, model, kernel, source, offset)
        occupancy(p, target, dyn or 0, threads_over(source, kernel, offset, model.path, block, target,
                                                     compiled=True) + over_optin(p, source, dyn), shared_optin=optin)
        return p

    def source_only(self, p: Profile, model: Any, kernel: Any, target: str, harness: Harness | None) -> None:
        source, offset, _ = self.cuda_text(model, kernel, strict=False)
        block, why, warns = block_size(source, kernel, offset, model)
        p.block_size = block
        p.extra["block_size_source"] = why
        p.warnings.extend(warns)
        occupancy(p, target, 0, threads_over(source, kernel, offset, model.path, block, target))


def _instantiated_elsewhere(res: sc.CudaCompileResult, source: str, model: Any, kernel: Any, target: str,
                            name: str, first_line: int, cache: CompileCache) -> tuple[sc.CudaCompileResult, list[Any]]:
    """``(result, entries)`` of a template kernel that its own file does not instantiate (a header's
    ``template <int N> __global__ void k``), compiled again with the instantiations its launches in other files
    use (``k<64><<<...>>>`` in ``launch.cu``: :func:`~htam_core.source.workspace.find_launches`) made in the
    compiled copy (:func:`~htam_core.profile.static_cuda.instantiation_text`); ``(res, [])`` as given when it is
    no template, no launch names its template arguments, or that copy does not compile (an argument named only
    in the launcher's scope) or still has no entry. The user's file is not changed."""
    args = _launch_template_args(model, kernel)
    if not args:
        return res, []
    try:
        again = sc.compile_cuda(source + sc.instantiation_text(kernel.name, args), target=target, source_name=name,
                                first_line=first_line, cache=cache)
    except ProfileError:
        return res, []
    entries = sc.match_entries(again.entries, kernel.name, kernel)
    return (again, entries) if entries else (res, [])


def _launch_template_args(model: Any, kernel: Any) -> list[tuple[str, ...]]:
    """The distinct template argument lists (as written) of template kernel ``kernel``'s ``<<<>>>`` launches in
    the workspace of ``model``'s file, or, for a candidate of the optimize loop (a copy under
    ``<candidates>/<label>/``), of the original file's folder (:func:`~htam_core.harness.base.origin_dirs`): the
    copy's launchers stay beside the original. ``[]`` for a kernel that is no template or has no path."""
    if not kernel.attributes.get("template_params") or not model.path:
        return []
    for folder in origin_dirs(model.path):
        where = model if folder == Path(model.path).resolve().parent else \
            dataclasses.replace(model, path=str(folder / Path(model.path).name))
        args = sorted({la.template_args for la in find_launches(where, kernel)
                       if la.style in ("cuda", "macro") and la.template_args})
        if args:
            return args
    return []


@register
class CudaInPythonProfiler(CudaProfiler):
    """CUDA kernels in a Python string (cupy ``RawKernel``, ``load_inline``): the string compiled as a ``.cu``."""

    languages = ("cuda-in-python",)

    def cuda_text(self, model: Any, kernel: Any, *, strict: bool = True) -> tuple[str, int, int]:
        """The kernel's CUDA string, its byte offset in the Python file and the file line it starts on.

        Raises:
            ProfileError: ``strict`` and the string was not found (``strict=False`` gives an empty text).
        """
        source = kernel.attributes.get("cuda_source")
        if not source and strict:
            raise ProfileError(f"kernel {kernel.name}: its CUDA string was not found in {model.path}")
        offset = int(kernel.attributes.get("cuda_source_offset") or 0)
        first_line = model.text.encode("utf-8")[:offset].count(b"\n") + 1
        return source or "", offset, first_line


def _compile_at_harness_sizes(model: Any, kernel: Any, target: str, cache: CompileCache,
                              constexprs: dict[str, Any] | None,
                              harness: Harness | None) -> tuple[dict[str, Any], str | None]:
    """Compile Triton ``kernel`` with the constexprs its harness's first size set gives; when that compile times
    out and the set is one inference scaled up (:func:`~htam_core.harness.base.unscaled`), compile again at the
    largest recorded size, saying so: a size that sets a ``tl.static_range`` count unrolls far more at the scaled
    size than the program was written for. Returns the compile result and that warning (``None`` when not
    retried).

    Raises:
        ProfileError: the compile failed (and the retry, if any, failed too; its message says the set was
            scaled)."""
    def compile_with(h: Harness | None) -> dict[str, Any]:
        return compile_triton_kernel(model, kernel, target=target, constexprs=constexprs, cache=cache,
                                     recorded=recorded_constexprs(h, model.text, kernel),
                                     recorded_from=harness_label(h),
                                     recorded_pointers=recorded_pointer_dtypes(h, model.text, kernel),
                                     recorded_args=recorded_kernel_args(h, model.text, kernel))
    try:
        return compile_with(harness), None
    except ProfileError as exc:
        small = unscaled(harness) if harness is not None and "(timeout)" in exc.message else None
        if small is None:
            raise
        said = (f"the compile at the scaled-up timed set ({harness.sizes[0]}) timed out; the set was scaled by htam "
                f"from the largest recorded call, so {kernel.name} was compiled again at that size ({small.sizes[0]})")
        try:
            return compile_with(small), said
        except ProfileError as again:
            raise ProfileError(f"{exc.message}; {said}, which failed too: {again.message}") from again


@register
class TritonProfiler(StaticProfiler):
    """Triton kernels: Triton's ahead-of-time compile for the target, its ptxas resource report."""

    languages = ("triton",)
    source_reads_harness = True

    def compiled(self, model: Any, kernel: Any, target: str, cache: CompileCache, *,
                 constexprs: dict[str, Any] | None, harness: Harness | None) -> Profile:
        v, retried = _compile_at_harness_sizes(model, kernel, target, cache, constexprs, harness)
        p = Profile(kernel=kernel.name, mode="static", device=f"{target} (static)")
        if retried:
            p.warnings.append(retried)
        p.registers = int(v["registers"])
        p.spill_bytes = int(v["spill_store_bytes"]) + int(v["spill_load_bytes"])
        p.shared_bytes = int(v["shared_bytes"])
        p.stack_bytes = int(v["stack_bytes"])
        p.block_size = int(v["num_warps"]) * 32
        p.warnings.extend(v.get("warnings", []))
        p.warnings.extend(f"constexpr {n}={constexpr_text(c['value'])}: the value the {c['source']} launches it with "
                          f"(`htam profile --constexpr {n}=VALUE` sets another)"
                          for n, c in (v.get("constexprs") or {}).items()
                          if isinstance(c, dict) and str(c.get("source", "")).startswith("harness"))
        p.extra.update({
            "constexprs": v.get("constexprs", {}), "num_warps": v["num_warps"], "num_stages": v["num_stages"],
            "signature": v.get("signature", {}), "pointer_sources": v.get("pointer_sources", {}),
            "spill_store_bytes": v["spill_store_bytes"],
            "spill_load_bytes": v["spill_load_bytes"], "block_size_source": f"num_warps={v['num_warps']} x 32"
            + (f" ({src})" if (src := (v.get("option_sources") or {}).get("num_warps")) else ""),
            "compile": {"tool": "triton-aot", "triton_version": v.get("triton_version"), "ptxas": v.get("ptxas"),
                        "ptxas_target": v.get("ptxas_target"), "resources_from": v.get("resource_source"),
                        "cached": bool(v.get("cached")),
                        "seconds": round(float(v.get("compile_s", 0.0)), 3), "target": target},
        })
        occupancy(p, target)
        return p

    def source_only(self, p: Profile, model: Any, kernel: Any, target: str, harness: Harness | None) -> None:
        req = build_request(kernel, text=model.text, recorded=recorded_constexprs(harness, model.text, kernel),
                            recorded_from=harness_label(harness))
        warps = req["num_warps"]
        p.block_size = int(warps or 4) * 32
        p.extra.update({"constexprs": req["constexprs"], "num_warps": warps, "num_stages": req["num_stages"],
                        "block_size_source": f"num_warps={warps} x 32 (launch site)" if warps else
                        "num_warps=4 x 32 (Triton's default; the launch site gives none)"})
