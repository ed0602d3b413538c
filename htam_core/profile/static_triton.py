"""Static resource usage of Triton kernels: an AOT compile for a ``GPUTarget``, no GPU needed.

The caller side: it builds the compile request from the source model (signature
from the parameters, constexpr values and ``num_warps``/``num_stages`` from the launch site's
literal keyword arguments), looks it up in the compile cache, and otherwise runs
:func:`htam_core.profile.triton_aot.compile_kernel` in a worker process (the user's module is
imported there, never here).

Signature rules (documented assumptions, recorded in the profile's ``extra["signature"]``):

* pointer parameters (``Param.is_pointer``), from the best source available: the dtype the kernel's harness
  records for the tensor it passes (``recorded_pointers``: :func:`htam_core.harness.launch_values.recorded_pointer_dtypes`),
  else the type the kernel's code shows (``used_pointers``: a loaded value used as an index or an integer,
  :attr:`htam_core.source.analysis.facts.TritonFacts.pointer_types`, ``"*i64"``), else ``"*fp32"``; the request's
  ``pointer_sources`` says which (``"harness"``, ``"use: ..."``, ``"guessed"``); ``signature=`` overrides per name;
* a scalar whose default or launch-site argument is a float literal, or whose name is a usual
  float scalar (:data:`FLOAT_SCALAR_NAMES`) -> ``"fp32"``;
* every other scalar -> ``"i32"``.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from htam_core.harness.launch_values import TRITON_POINTER_TYPES
from htam_core.runtime.cache import CompileCache, content_key, package_version
from htam_core.runtime.worker import run_in_worker
from htam_core.source.analysis import analyze
from htam_core.source.analysis.constants import python_constants
from htam_core.source.analysis.constants import python_literal as _literal
from htam_core.types.constexpr import UNKNOWN, read_constexpr
from htam_core.types.errors import ProfileError

#: Scalar parameter names read as ``fp32`` (epsilons, scales, learning rates ...).
FLOAT_SCALAR_NAMES = frozenset({"eps", "epsilon", "alpha", "beta", "gamma", "scale", "sm_scale", "temperature",
                                "lr", "momentum", "weight_decay", "p", "dropout_p", "negative_slope", "theta"})

#: Wall-clock limit of one AOT compile in the worker, seconds (cold worker: import torch + triton).
AOT_TIMEOUT_S = 180.0


def _is_float_literal(text: str | None) -> bool:
    return isinstance(_literal(text), float)


def build_request(kernel: Any, *, constexprs: dict[str, Any] | None = None,
                  signature: dict[str, str] | None = None, text: str | None = None,
                  recorded: dict[str, Any] | None = None, recorded_from: str = "harness",
                  recorded_pointers: dict[str, str] | None = None,
                  used_pointers: dict[str, tuple[str, str]] | None = None) -> dict[str, Any]:
    """The AOT request for ``kernel`` (a :class:`htam_core.source.model.Kernel` of language triton).

    Args:
        kernel: the kernel model.
        constexprs: user overrides of constexpr values (win over the harness and the launch site).
        recorded: the constexpr values the kernel's harness launches it with
            (:func:`htam_core.harness.launch_values.recorded_constexprs`); they win over the launch site,
            since the harness's launch is the one that runs. ``recorded_from`` names the harness in ``sources``.
        signature: user overrides of parameter types (``{"x_ptr": "*fp16"}``).
        text: the file's text; when given, a launch-site value that is a plain name bound to a
            literal in the launching function (``BLOCK_SIZE = 64``) resolves to that literal.
        recorded_pointers: the torch dtype name the harness passes for each pointer parameter (``{"idx_ptr":
            "int64"}``); they win over ``used_pointers``.
        used_pointers: the Triton element type the kernel's code shows for a pointer parameter, and why
            (``{"idx_ptr": ("int64", "a value loaded through it is used in an address, line 9")}``).

    Returns:
        ``{"signature", "constexprs", "num_warps", "num_stages", "sources", "runtime_args"}`` where
        ``sources`` says where each value came from and ``runtime_args`` holds the literal values of the
        other scalar arguments at the launch site (for heuristics that read them); ``pointer_sources`` says
        where each pointer's element type came from.
    """
    site = kernel.launch_sites[0] if getattr(kernel, "launch_sites", None) else None
    config = dict(site.config) if site is not None else {}
    args = list(site.args) if site is not None else []
    sig: dict[str, str] = {}
    consts: dict[str, Any] = {}
    sources: dict[str, str] = {}
    names: dict[str, Any] = {}
    if text is not None and site is not None:
        names = python_constants(text, site.span.start if site.span is not None else None, any_literal=True)

    def value_of(expr: str | None) -> Any:  # a number: a literal or a name bound to one
        v = _literal(expr)
        if v is None and expr is not None and expr.strip().isidentifier():
            v = names.get(expr.strip())
        return v if isinstance(v, bool | int | float) else None

    runtime: dict[str, Any] = {}
    for i, p in enumerate(kernel.params):
        if not p.is_constexpr and not p.is_pointer:
            v = value_of(config.get(p.name, args[i] if i < len(args) else None))
            if v is not None:
                runtime[p.name] = v
        if p.is_constexpr:
            expr = config.get(p.name)
            if expr is None and i < len(args):
                expr = args[i]
            v = _site_constexpr(expr, names)
            if v is not UNKNOWN:
                consts[p.name] = v
                sources[p.name] = f"launch site line {site.line}" if site is not None else "launch site"
            continue
        sig[p.name] = _param_type(p, args[i] if i < len(args) else None)
    pointer_sources = _pointer_types(kernel, sig, recorded_pointers or {}, used_pointers or {})
    recorded = dict(recorded or {})
    options = {opt: recorded.pop(opt) for opt in ("num_warps", "num_stages") if opt in recorded}
    for k, v in recorded.items():
        consts[k] = v
        sources[k] = recorded_from
    for k, v in (constexprs or {}).items():
        consts[k] = v
        sources[k] = "user"
    for k, v in (signature or {}).items():
        sig[k] = v
        if k in pointer_sources:
            pointer_sources[k] = "user"
    out: dict[str, Any] = {"signature": sig, "constexprs": consts, "num_warps": None, "num_stages": None,
                           "sources": sources, "runtime_args": runtime, "pointer_sources": pointer_sources}
    for opt in ("num_warps", "num_stages"):
        v = options.get(opt, value_of(config.get(opt)))
        if isinstance(v, int) and not isinstance(v, bool):
            out[opt] = v
    return out


def _site_constexpr(expr: str | None, names: dict[str, Any]) -> Any:
    """A constexpr's value at the launch site: any literal a constexpr takes (``128``, ``"silu"``, ``None``,
    ``tl.float16``: :func:`htam_core.types.constexpr.read_constexpr`), or a name bound to one before the launch
    (``names``: :func:`~htam_core.source.analysis.constants.python_constants`), else
    :data:`~htam_core.types.constexpr.UNKNOWN`."""
    v = read_constexpr(expr)
    if v is UNKNOWN and expr is not None and expr.strip() in names:
        return names[expr.strip()]
    return v


def _param_type(p: Any, arg: str | None) -> str:
    """The first guess of a non-constexpr parameter's signature type (``arg``: the launch site's positional
    argument for it): ``*fp32`` for a pointer (:func:`_pointer_types` refines it), ``fp32`` for a float scalar,
    else ``i32``."""
    if p.is_pointer:
        return "*fp32"
    if _is_float_literal(p.default) or p.name.lower() in FLOAT_SCALAR_NAMES or _is_float_literal(arg):
        return "fp32"
    return "i32"


def _pointer_types(kernel: Any, sig: dict[str, str], recorded: dict[str, str],
                   used: dict[str, tuple[str, str]]) -> dict[str, str]:
    """Set the element type of each pointer of ``sig`` from the harness (``recorded``, torch dtype names), else
    from the code's use (``used``), else leave the ``*fp32`` guess; return where each came from."""
    out: dict[str, str] = {}
    for p in kernel.params:
        if p.name not in sig or not p.is_pointer:
            continue
        if recorded.get(p.name) in TRITON_POINTER_TYPES:
            sig[p.name] = "*" + TRITON_POINTER_TYPES[recorded[p.name]]
            out[p.name] = "harness"
        elif p.name in used and used[p.name][0] in TRITON_POINTER_TYPES:
            sig[p.name] = "*" + TRITON_POINTER_TYPES[used[p.name][0]]
            out[p.name] = f"use: {used[p.name][1]}"
        else:
            out[p.name] = "guessed"
    return out


def guessed_pointers_note(kernel_name: str, signature: dict[str, str], pointer_sources: dict[str, str],
                          error: str) -> str | None:
    """The one line that says a failed compile ran with pointer types no harness gave (named with their types),
    or ``None`` when every pointer type came from the harness or the user, or Triton's ``error`` is no type error
    (a ``tl.static_assert`` of the kernel that failed is none).

    Args:
        kernel_name: the kernel.
        signature: the compile's signature (``{"x_ptr": "*fp32"}``).
        pointer_sources: where each pointer's type came from (:func:`build_request`'s ``pointer_sources``).
        error: Triton's error message.
    """
    guessed = [f"{n} {signature.get(n, '?')}" + (" (from its use)" if src.startswith("use:") else "")
               for n, src in pointer_sources.items() if src == "guessed" or src.startswith("use:")]
    if not guessed or not _TYPE_ERROR.search(error) or "CompileTimeAssertionFailure" in error:
        return None  # a failed tl.static_assert of the kernel is about its constexprs, not a pointer type
    why = " ".join(error.rsplit("^", 1)[-1].split())[:240]
    return (f"Triton could not compile {kernel_name} with the pointer element types htam guessed "
            f"({', '.join(guessed)}; no harness records the tensors' dtypes): {why}. A harness gives the real "
            "types: an htam.toml table whose inputs name their dtype, or a __main__ that calls the launcher")


#: Triton errors that a wrong pointer element type can cause.
_TYPE_ERROR = re.compile(r"pointer<|invalid operands|incompatible|dtype|fp32|float32|fp16|int64|type", re.I)


def target_arch(target: str) -> int:
    """``"sm_90"``/``"sm_90a"``/``"90"`` -> ``90``.

    Raises:
        ProfileError: not a compute capability.
    """
    m = re.fullmatch(r"(?:cuda:)?(?:sm_?)?(\d{2,3})[af]?", str(target).strip().lower())
    if not m:
        raise ProfileError(f"bad target {target!r}: use a compute capability such as sm_80 or sm_90")
    return int(m.group(1))


def aot_workers() -> int:
    """How many Triton AOT workers compile at once: a quarter of the CPU cores, 1 to 4 (each worker holds an
    imported Triton, a few hundred MB), so that the optimize loop's compiles of the next candidates run in
    parallel on a many-core machine and stay one at a time on a small one."""
    return max(1, min(4, (os.cpu_count() or 1) // 4))


_SLOTS: queue.LifoQueue[int] | None = None
_SLOTS_LOCK = threading.Lock()


def _slots() -> queue.LifoQueue[int]:
    global _SLOTS
    with _SLOTS_LOCK:
        if _SLOTS is None:
            _SLOTS = queue.LifoQueue()
            for i in reversed(range(aot_workers())):
                _SLOTS.put(i)  # LIFO: slot 0 (the long-lived "triton-aot" worker) is taken first
        return _SLOTS


def aot_pool_key(slot: int) -> str:
    """The worker of AOT slot ``slot``: ``"triton-aot"`` for 0 (the one the editor and the CLI keep warm), then
    ``"triton-aot-1"`` ..."""
    return "triton-aot" if slot == 0 else f"triton-aot-{slot}"


def _run_compile(kwargs: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    slots = _slots()
    slot = slots.get()  # waits while every AOT worker is busy
    try:
        res = run_in_worker("htam_core.profile.triton_aot:compile_kernel", kwargs, timeout_s=timeout_s,
                            pool_key=aot_pool_key(slot), interpret=False)
    finally:
        slots.put(slot)
    if res.ok:
        return dict(res.value)
    err = res.error
    kind = getattr(err, "kind", "error")
    msg = getattr(err, "message", str(err))
    raise ProfileError(f"Triton could not compile {kwargs['kernel']} ({kind}): {msg}",
                       _tail_lines(getattr(err, "traceback", None)))


def _tail_lines(text: str | None, n: int = 15) -> list[str]:
    return [ln for ln in (text or "").strip().splitlines()[-n:] if ln.strip()]


def _label_sources(value: dict[str, Any], sources: dict[str, str]) -> None:
    """Name where each requested constexpr value came from in a compile result (also a cached one, whose
    values may have come from elsewhere in an earlier run)."""
    for name, src in sources.items():
        if name in value.get("constexprs", {}):
            value["constexprs"][name]["source"] = src


def compile_triton_kernel(model: Any, kernel: Any, *, target: str = "sm_90", constexprs: dict[str, Any] | None = None,
                          signature: dict[str, str] | None = None, cache: CompileCache | None = None,
                          timeout_s: float = AOT_TIMEOUT_S, recorded: dict[str, Any] | None = None,
                          recorded_from: str = "harness",
                          recorded_pointers: dict[str, str] | None = None,
                          recorded_args: dict[str, Any] | None = None) -> dict[str, Any]:
    """AOT-compile a Triton kernel of ``model`` and return :func:`triton_aot.compile_kernel`'s result.

    The file on disk is used when it holds ``model.text``; otherwise (an unsaved editor buffer) the
    text is written to a temporary copy, with the original directory on the worker's ``sys.path``.
    The result carries ``"cached": True`` when it came from the cache, and ``"pointer_sources"`` (where each
    pointer's element type came from: ``recorded_pointers``, the harness's dtypes, win over the kernel's use
    of its loaded values, :attr:`~htam_core.source.analysis.facts.TritonFacts.pointer_types`).
    ``recorded_args``: the harness's values of the kernel's scalar arguments, for heuristics that read them.

    Raises:
        ProfileError: the model has neither a path nor text, or the compile failed (the message
            carries Triton's error, or, when a guessed pointer type may be the cause, says so in one line:
            :func:`guessed_pointers_note`).
    """
    arch = target_arch(target)
    req = build_request(kernel, constexprs=constexprs, signature=signature, text=model.text, recorded=recorded,
                        recorded_from=recorded_from, recorded_pointers=recorded_pointers,
                        used_pointers=used_pointer_types(model, kernel))
    # the harness's values of the scalar arguments (N of the launcher's `M, N = x.shape`): a @triton.heuristics
    # that reads them (NUM_TILES = cdiv(N, BLOCK_N)) gets the real count, not a fallback unrolled 1024 times
    req["runtime_args"] = {**{k: v for k, v in (recorded_args or {}).items()
                              if isinstance(v, bool | int | float)}, **req["runtime_args"]}
    cache = cache if cache is not None else CompileCache()
    qualname = getattr(kernel, "qualified_name", None) or kernel.name  # "Ops.scale": reached from the module
    key = content_key(kind="triton-aot", text=model.text, path=str(model.path), kernel=qualname,
                      signature=req["signature"], constexprs=req["constexprs"], num_warps=req["num_warps"],
                      num_stages=req["num_stages"], runtime_args=req["runtime_args"], arch=arch,
                      triton=package_version("triton"))
    hit = cache.get(key)
    if hit is not None:
        _label_sources(hit, req["sources"])
        hit["cached"] = True
        hit["pointer_sources"] = req["pointer_sources"]
        return hit
    path = Path(model.path) if model.path else None
    tmpdir = None
    sys_path: list[str] = []
    try:
        on_disk = path.read_text(encoding="utf-8") if path is not None and path.is_file() else None
        if on_disk != model.text:
            tmpdir = tempfile.mkdtemp(prefix="htam-triton-")
            stem = path.stem if path is not None else "kernel"
            copy = Path(tmpdir) / f"{stem}.py"
            copy.write_text(model.text, encoding="utf-8")
            if path is not None:
                sys_path.append(str(path.resolve().parent))
            path = copy
        kwargs = {"path": str(path.resolve()), "kernel": qualname, "signature": req["signature"],
                  "constexprs": req["constexprs"], "num_warps": req["num_warps"],
                  "num_stages": req["num_stages"], "arch": arch, "sys_path": sys_path,
                  "runtime_args": req["runtime_args"], "switches": switch_values(model, kernel)}
        value = _compile_or_note(kwargs, timeout_s, req)
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
    _label_sources(value, req["sources"])
    value["cached"] = False
    cache.put(key, value)
    return {**value, "pointer_sources": req["pointer_sources"]}


def _compile_or_note(kwargs: dict[str, Any], timeout_s: float, req: dict[str, Any]) -> dict[str, Any]:
    """:func:`_run_compile`, whose failure says so in one line when the pointer types were guessed."""
    try:
        return _run_compile(kwargs, timeout_s)
    except ProfileError as exc:
        note = guessed_pointers_note(kwargs["kernel"], req["signature"], req["pointer_sources"], exc.message)
        if note is None:
            raise
        raise ProfileError(note) from exc


def used_pointer_types(model: Any, kernel: Any) -> dict[str, tuple[str, str]]:
    """``{param: (dtype, why)}`` for the pointers of Triton ``kernel`` whose element type its code shows (the
    analysis layer's :attr:`~htam_core.source.analysis.facts.TritonFacts.pointer_types`); ``{}`` when the model
    has no text or the analysis says nothing."""
    if not getattr(model, "text", None) or getattr(kernel, "name_span", None) is None:
        return {}
    tf = analyze(model, kernel).triton
    return {t.name: (t.dtype, f"{t.why}, line {t.line}") for t in (tf.pointer_types if tf is not None else ())}


def switch_values(model: Any, kernel: Any) -> dict[str, list[str]]:
    """``{constexpr: [string, ...]}``: the strings each constexpr of Triton ``kernel`` is compared with (the
    analysis layer's :attr:`~htam_core.source.analysis.facts.TritonFacts.switch_values`), so that a guessed
    string switch's warning names the values it takes; ``{}`` when the model has no text or there are none."""
    if not getattr(model, "text", None) or getattr(kernel, "name_span", None) is None:
        return {}
    tf = analyze(model, kernel).triton
    return {name: list(values) for name, values in (tf.switch_values if tf is not None else ())}
