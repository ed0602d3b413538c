"""Child side of the Triton static profile: AOT-compile one ``@triton.jit`` kernel, no GPU needed.

This module imports the user's Python file, so it only ever runs in a worker process
(:func:`htam_core.runtime.worker.run_in_worker` target ``htam_core.profile.triton_aot:compile_kernel``)
or as ``python -m htam_core.profile.triton_aot`` with a JSON request on stdin and the JSON result
on stdout; never in the caller's process.

Steps:

1. import the file under a unique module name and find the kernel; unwrap ``@triton.autotune``
   (``Autotuner``) and ``@triton.heuristics`` (``Heuristics``) down to the ``JITFunction``;
2. resolve every ``tl.constexpr`` parameter, recording where each value came from: the request
   (launch-site literal or user override), the parameter's default, the first autotune config,
   a heuristic evaluated on the values known so far (constexprs, launch-site literals of the other
   arguments), else a documented fallback (a warning); ``num_warps``/``num_stages`` likewise (a heuristic
   that sets them, the request, the first autotune config, Triton's defaults 4/3), never a made-up 0;
3. ``triton.compile(ASTSource(...), target=GPUTarget("cuda", arch, 32))``; pointer parameters get
   Triton's runtime specialization ``tt.divisibility=16`` (torch allocations are 16-byte aligned);
4. run Triton's bundled ``ptxas -v`` on the PTX for registers, spills and stack (CUDA 13's own ptxas
   rejects Triton's newer PTX); shared memory comes from the compiled metadata (``shared``).

Works with Triton 3.6 (the GPU machine) and 3.9: ``get_ptxas`` takes the arch from 3.4 on; the
older no-argument form is tried when that fails.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from htam_core.harness.base import attribute_path, origin_dirs
from htam_core.harness.record import cpu_triton_driver
from htam_core.profile.static_cuda import PtxasEntry, parse_ptxas_verbose
from htam_core.runtime.children import one_shot_kwargs
from htam_core.types.constexpr import from_triton, to_triton

#: Constexpr value used when nothing else determines it. Sizes (names containing BLOCK, SIZE,
#: TILE, or B followed by one letter such as BM/BN/BK) get a typical power-of-two tile, flags 0.
FALLBACK_SIZE = 1024
_SIZE_NAME = re.compile(r"(BLOCK|SIZE|TILE|GROUP|^B[A-Z]$|^X?BLOCK)", re.IGNORECASE)


def _load_module(path: str) -> Any:
    p = Path(path).resolve()
    text = p.read_bytes()
    name = f"_htam_aot_{p.stem}_{hashlib.sha1(str(p).encode() + text).hexdigest()[:12]}"
    if name in sys.modules:
        return sys.modules[name]
    for d in origin_dirs(p):  # a candidate's sibling modules live next to the original file
        if str(d) not in sys.path:
            sys.path.insert(0, str(d))
    cpu_triton_driver()  # a module-level DEVICE = triton.runtime.driver.active... without a GPU
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {p}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def _unwrap(obj: Any) -> tuple[Any, list[Any], dict[str, Any]]:
    """(JITFunction, autotune configs, heuristics) of a possibly decorated kernel."""
    import triton

    configs: list[Any] = []
    heuristics: dict[str, Any] = {}
    seen = 0
    while not isinstance(obj, triton.runtime.jit.JITFunction):
        seen += 1
        if seen > 10 or not hasattr(obj, "fn"):
            raise TypeError(f"{obj!r} is not a @triton.jit kernel")
        if hasattr(obj, "configs") and not configs:
            configs = list(obj.configs)
        if isinstance(getattr(obj, "values", None), dict):
            heuristics.update(obj.values)
        obj = obj.fn
    return obj, configs, heuristics


def _fallback(name: str) -> int:
    return FALLBACK_SIZE if _SIZE_NAME.search(name) else 0


def _known_constexprs(params: list[Any], requested: dict[str, Any], first_cfg: Any) -> dict[str, dict[str, Any]]:
    """``{name: {"value", "source"}}`` of the constexprs known before the heuristics run: the request's (in HTAM's
    JSON form, :func:`htam_core.types.constexpr.to_triton` makes a dtype marker ``tl.float16``), else the
    parameter's default, else the first autotune config's.

    Raises:
        ValueError: a dtype marker names no dtype of this Triton.
    """
    resolved = {name: {"value": to_triton(v), "source": "request"} for name, v in requested.items()}
    for p in params:
        if not p.is_constexpr or p.name in resolved:
            continue
        if p.has_default:
            resolved[p.name] = {"value": p.default, "source": "default"}
        elif first_cfg is not None and p.name in first_cfg.kwargs:
            resolved[p.name] = {"value": first_cfg.kwargs[p.name], "source": "autotune config 0"}
    return resolved


def _guess_the_rest(params: list[Any], resolved: dict[str, dict[str, Any]],
                    switches: dict[str, list[str]]) -> list[str]:
    """Give every constexpr still without a value the fallback (:data:`FALLBACK_SIZE` for a size name, else 0) in
    ``resolved``; return one warning line per guess, naming the constexpr, the strings the kernel compares it with
    (``switches``: none of those branches is compiled) and how to set it."""
    out: list[str] = []
    for p in params:
        if p.is_constexpr and p.name not in resolved:
            resolved[p.name] = {"value": _fallback(p.name), "source": "fallback"}
            values = switches.get(p.name) or []
            takes = (f"the kernel compares it with {', '.join(map(repr, values))}: "
                     f"`htam profile --constexpr {p.name}={values[0]}`" if values else
                     f"`htam profile --constexpr {p.name}=VALUE`")
            out.append(f"constexpr {p.name}: not a literal at the launch site and no default, autotune "
                       f"config or heuristic; compiled with {p.name}={resolved[p.name]['value']} (assumed; "
                       f"{takes} sets it: a number, True/False/None, a string or a dtype such as tl.float16; "
                       "or pass it as a literal at the launch site)")
    return out


#: Launch options a ``@triton.heuristics`` may set besides constexprs; they are compile options, not arguments.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
#: Triton's defaults for the options when nothing sets them.
_OPTION_DEFAULTS = {"num_warps": 4, "num_stages": 3}


def _option_default(name: str, first_cfg: Any) -> int | None:
    """An option's value from the first autotune config, else Triton's default."""
    v = getattr(first_cfg, name, None) if first_cfg is not None else None
    return v if v else _OPTION_DEFAULTS.get(name)


def _ptxas_path(arch: int) -> str:
    from triton.backends.nvidia import compiler as nv

    try:
        tool = nv.get_ptxas(arch)
    except TypeError:  # older Triton: get_ptxas() without the arch
        tool = nv.get_ptxas()
    return tool.path


def _compile_capturing_ptxas_log(triton: Any, src: Any, target: Any, options: Any) -> tuple[Any, str]:
    """``triton.compile`` with Triton's own ``ptxas -v`` log captured.

    Triton already runs ptxas with ``-v`` while making the cubin and prints that log when
    ``knobs.nvidia.dump_ptxas_log`` is set; ``knobs.compilation.always_compile`` makes sure the
    cubin is really built (not read from Triton's cache), so the log describes the exact binary.
    """
    from triton import knobs

    saved = []
    for group, name in ((getattr(knobs, "nvidia", None), "dump_ptxas_log"),
                        (getattr(knobs, "compilation", None), "always_compile")):
        if group is not None and hasattr(group, name):
            saved.append((group, name, getattr(group, name)))
            setattr(group, name, True)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            compiled = triton.compile(src, target=target, options=options.__dict__)
    finally:
        for group, name, value in saved:
            setattr(group, name, value)
    return compiled, buf.getvalue()


def _resources_from_cubin(cubin: bytes, ptx: str, ptxas: str, gpu_name: str) -> list[Any]:
    cuobjdump = str(Path(ptxas).with_name("cuobjdump"))
    with tempfile.TemporaryDirectory(prefix="htam-cubin-") as tmp:
        cub = Path(tmp) / "kernel.cubin"
        cub.write_bytes(cubin)
        dump = subprocess.run([cuobjdump, "--dump-resource-usage", str(cub)], capture_output=True, text=True,
                              timeout=60, **one_shot_kwargs())
        ptx_file = Path(tmp) / "kernel.ptx"
        ptx_file.write_text(ptx, encoding="utf-8")
        rerun = subprocess.run([ptxas, "-v", f"--gpu-name={gpu_name}", str(ptx_file), "-o", str(Path(tmp) / "k.o")],
                               capture_output=True, text=True, timeout=120, **one_shot_kwargs())
    spills = parse_ptxas_verbose(rerun.stdout + rerun.stderr)
    m = re.search(r"Function (\S+?):\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:(\d+)", dump.stdout)
    if not m:
        return spills
    e = PtxasEntry(mangled=m.group(1), demangled=m.group(1), arch=gpu_name, registers=int(m.group(2)),
                   stack_bytes=int(m.group(3)), shared_bytes=int(m.group(4)))
    if spills:
        e.spill_store_bytes, e.spill_load_bytes = spills[0].spill_store_bytes, spills[0].spill_load_bytes
    return [e]


def compile_kernel(path: str, kernel: str, signature: dict[str, str], constexprs: dict[str, Any] | None = None,
                   num_warps: int | None = None, num_stages: int | None = None, arch: int = 90,
                   pointer_divisibility: bool = True, sys_path: list[str] | None = None,
                   runtime_args: dict[str, Any] | None = None, switches: dict[str, list[str]] | None = None,
                   ) -> dict[str, Any]:
    """AOT-compile ``kernel`` from the file ``path`` for ``sm_<arch>`` and report its resources.

    Args:
        path: the Python file that defines the kernel (imported here: run only in a worker).
        kernel: the kernel's qualified name in that module (``"scale"``, ``"Ops.scale"``).
        signature: Triton type of every non-constexpr parameter (``{"x_ptr": "*fp32", "n": "i32"}``);
            parameters missing here default to ``"i32"``.
        constexprs: known constexpr values (launch-site literals, user overrides).
        num_warps, num_stages: from the launch site, or ``None``.
        arch: compute capability as an int (80, 86, 89, 90).
        pointer_divisibility: give pointer parameters ``tt.divisibility=16``.
        sys_path: directories to put on ``sys.path`` first (the original file's directory when
            ``path`` is a temporary copy of an unsaved buffer).
        runtime_args: values of non-constexpr arguments known from the launch site (``{"n_cols": 4096}``),
            for heuristics that read them. switches: the strings each constexpr is compared with (named when guessed).

    Returns:
        ``{"registers", "spill_store_bytes", "spill_load_bytes", "stack_bytes", "shared_bytes",
        "ptxas_shared_bytes", "num_warps", "num_stages", "constexprs": {name: {"value", "source"}},
        "signature", "warnings", "triton_version", "ptxas", "ptxas_log", "compile_s", "name"}``.

    Raises:
        Whatever the import or Triton's compiler raises (the worker reports it as a failure).
    """
    import triton
    from triton.backends.compiler import GPUTarget

    t0 = time.perf_counter()
    warnings: list[str] = []
    sys.path[:0] = [d for d in sys_path or [] if d not in sys.path]
    mod = _load_module(path)
    try:
        obj = attribute_path(mod, kernel)  # a qualified name: "Ops.scale", or the alias of triton.jit(fn)
    except AttributeError:
        raise AttributeError(f"{path} defines no kernel reachable as {kernel!r} from the module") from None
    jit, configs, heuristics = _unwrap(obj)
    params = list(jit.params)
    first_cfg = configs[0] if configs else None
    resolved = _known_constexprs(params, constexprs or {}, first_cfg)
    runtime = dict(runtime_args or {})
    options: dict[str, Any] = {"num_warps": num_warps, "num_stages": num_stages}
    option_sources: dict[str, str] = {k: "request" for k, v in options.items() if v is not None}
    for name, fn in heuristics.items():
        if name in resolved and resolved[name]["source"] == "request":
            continue
        # Triton's Heuristics calls each function with every argument by name plus the launch keywords,
        # and later heuristics see the values of earlier ones
        known = {**runtime, **{k: v for k, v in options.items() if v is not None},
                 **{k: v["value"] for k, v in resolved.items()}}
        try:
            value = fn(known)
        except Exception as exc:  # noqa: BLE001 - a heuristic may need runtime arguments
            why = f"{type(exc).__name__}: {exc}"
            if name in LAUNCH_OPTIONS:
                if name in options and options[name] is None:
                    options[name] = _option_default(name, first_cfg)
                    option_sources[name] = "autotune config 0" if first_cfg is not None and getattr(
                        first_cfg, name, None) else "Triton's default"
                warnings.append(f"{name} is set by @triton.heuristics, which needs runtime arguments ({why}); "
                                f"compiled with {name}={options.get(name)} ({option_sources.get(name, 'request')}); "
                                f"the run may use another value")
            elif name not in resolved:
                resolved[name] = {"value": _fallback(name), "source": "fallback"}
                warnings.append(f"constexpr {name}: heuristic needs runtime arguments ({why}); "
                                f"compiled with {name}={resolved[name]['value']} (assumed)")
            continue
        if name in LAUNCH_OPTIONS:
            options[name] = value
            option_sources[name] = "heuristic"
        else:
            resolved[name] = {"value": value, "source": "heuristic"}
    warnings.extend(_guess_the_rest(params, resolved, switches or {}))
    for opt in ("num_warps", "num_stages"):
        if options[opt] is None:
            options[opt] = _option_default(opt, first_cfg)
            option_sources[opt] = "autotune config 0" if first_cfg is not None and getattr(
                first_cfg, opt, None) else "Triton's default"
    num_warps, num_stages = int(options["num_warps"]), int(options["num_stages"])

    sig: dict[str, str] = {}
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    const_values: dict[str, Any] = {}
    for p in params:
        if p.is_constexpr or p.name in (constexprs or {}):
            sig[p.name] = "constexpr"
            const_values[p.name] = resolved.get(p.name, {"value": None})["value"]
        else:
            ty = signature.get(p.name, "i32")
            sig[p.name] = ty
            if pointer_divisibility and ty.startswith("*"):
                attrs[(p.num,)] = [["tt.divisibility", 16]]
    target = GPUTarget("cuda", int(arch), 32)
    backend = triton.compiler.make_backend(target)
    extra_opts = {k: options[k] for k in ("num_ctas", "maxnreg") if options.get(k) is not None}
    options = backend.parse_options({"num_warps": num_warps, "num_stages": num_stages, **extra_opts})
    try:
        src = triton.compiler.ASTSource(fn=jit, signature=sig, constexprs=const_values, attrs=attrs)
        compiled, log = _compile_capturing_ptxas_log(triton, src, target, options)
    except (TypeError, KeyError, AttributeError) as exc:
        if not attrs:
            raise
        warnings.append(f"compiled without pointer alignment hints ({type(exc).__name__}: {exc})")
        src = triton.compiler.ASTSource(fn=jit, signature=sig, constexprs=const_values)
        compiled, log = _compile_capturing_ptxas_log(triton, src, target, options)
    md = compiled.metadata
    ptx = compiled.asm["ptx"]
    m = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.MULTILINE)
    gpu_name = m.group(1) if m else f"sm_{arch}"
    ptxas = _ptxas_path(int(arch))
    entries = parse_ptxas_verbose(log)
    resource_source = "ptxas -v log of Triton's own compile"
    if not entries:
        # Triton without TRITON_DUMP_PTXAS_LOG: read the cubin Triton produced with cuobjdump
        # (registers, stack, shared) and re-run ptxas -v on the PTX for spills.
        entries = _resources_from_cubin(compiled.asm["cubin"], ptx, ptxas, gpu_name)
        resource_source = "cuobjdump --dump-resource-usage on Triton's cubin; spills from ptxas -v on the PTX"
        warnings.append("spill bytes come from a separate ptxas -v run on the PTX (Triton's own log unavailable)")
    if not entries:
        raise RuntimeError("no resource usage could be read for the compiled kernel")
    e = entries[0]
    return {
        "name": getattr(md, "name", kernel),
        "registers": e.registers,
        "spill_store_bytes": e.spill_store_bytes,
        "spill_load_bytes": e.spill_load_bytes,
        "stack_bytes": e.stack_bytes,
        "shared_bytes": int(getattr(md, "shared", 0) or 0),
        "ptxas_shared_bytes": e.shared_bytes,
        "num_warps": int(getattr(md, "num_warps", num_warps)),
        "num_stages": int(getattr(md, "num_stages", num_stages)),
        "option_sources": option_sources,
        "constexprs": {k: {"value": from_triton(v["value"]), "source": v["source"]} for k, v in resolved.items()},
        "signature": {k: v for k, v in sig.items()},
        "warnings": warnings,
        "triton_version": triton.__version__,
        "ptxas": ptxas,
        "ptxas_target": gpu_name,
        "resource_source": resource_source,
        "ptxas_log": log,
        "compile_s": time.perf_counter() - t0,
    }


def main() -> int:
    """``python -m htam_core.profile.triton_aot``: JSON request on stdin -> JSON on stdout.

    The request holds :func:`compile_kernel`'s keyword arguments. The reply is
    ``{"ok": true, "value": {...}}`` or ``{"ok": false, "error": "Type: message"}``.
    """
    req = json.load(sys.stdin)
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # user code may print; keep the channel clean
    try:
        value = compile_kernel(**req)
        reply: dict[str, Any] = {"ok": True, "value": value}
    except BaseException as exc:  # noqa: BLE001 - reported to the caller
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout = real_stdout
    json.dump(reply, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
