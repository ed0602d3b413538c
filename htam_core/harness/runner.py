"""Run a harness: build seeded inputs, launch the kernel, compare with the reference.

This module runs **inside a worker process** (:mod:`htam_core.runtime.worker`): it imports and
executes the user's kernel file. :func:`prepare` turns a harness into a :class:`~htam_core.harness.trial.Trial`
(inputs, reference, candidate) and a launcher; the verifier (:mod:`htam_core.verify.run`) and the timer
(:mod:`htam_core.measure`) run it in their worker targets.

* Triton runs on the GPU, or on the CPU under ``TRITON_INTERPRET=1`` (verdict ``"interpreter"``).
* Raw CUDA (``.cu`` with a spec) is compiled with NVRTC through CuPy (``RawModule``), the fast path
  (about 0.2 s per compile, measured on the project's machines); a file NVRTC cannot compile (host code, system headers) is
  compiled with ``nvcc -cubin`` and loaded the same way. With no GPU, CUDA is compiled only and
  the verdict is ``"unverified"``, never ``"correct"``.
* KernelBench files that call ``load_inline`` build into a ``TORCH_EXTENSIONS_DIR`` keyed by the
  source hash, so an unchanged file is built once.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import importlib.util
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from htam_core.harness.base import (
    Harness,
    HarnessError,
    attribute_path,
    cu_language,
    cuda_include_dirs,
    include_flags,
    origin_dirs,
)
from htam_core.harness.cu_launcher import host_launcher, launcher_types
from htam_core.harness.cu_main import find_nvcc
from htam_core.harness.cu_struct_launch import struct_args, struct_launcher
from htam_core.harness.device_occupancy import occupancy_functions
from htam_core.harness.foreign import launcher_module
from htam_core.harness.record import cpu_triton_driver
from htam_core.harness.reference64 import Reference64, reference64
from htam_core.harness.relaunch import relaunched
from htam_core.harness.roofline_bound import compulsory_bound
from htam_core.harness.spec import (
    is_function_reference,
    reference_reads_write_only_message,
    table_header,
    write_only_outputs_in_reference,
)
from htam_core.harness.trial import BASE_SEED, Trial, as_outputs, poison_
from htam_core.runtime.cache import cache_root, content_key, file_fingerprint
from htam_core.runtime.children import one_shot_kwargs
from htam_core.source.analysis.constants import to_bfloat16
from htam_core.source.analysis.includes import headers_digest
from htam_core.source.api import load
from htam_core.types.errors import exception_text
from htam_core.types.language import traits

_MODULES: dict[str, ModuleType] = {}
_CUDA_FUNCS: dict[tuple[str, str, str], Any] = {}

#: The builtins of harness expressions: a short list keeps them plain expressions. ``__import__`` must be there:
#: torch's C++ code imports modules through the calling frame's builtins (``torch.tensor([...])`` in a
#: reference fails with an internal assert without it). This is not a sandbox; expressions run in the worker.
_SAFE_BUILTINS = {n: __builtins__[n] if isinstance(__builtins__, dict) else getattr(__builtins__, n)
                  for n in ("abs", "min", "max", "int", "float", "round", "len", "range", "tuple", "list", "sum",
                            "pow", "divmod", "bool", "slice", "zip", "enumerate", "isinstance", "__import__")}


def cdiv(a: int, b: int) -> int:
    """Ceiling division, available in harness expressions as ``cdiv``."""
    return -(-int(a) // int(b))


def source_hash(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_module(path: str | os.PathLike, origin_dir: str | os.PathLike | None = None) -> ModuleType:
    """Import the user's file ``path`` (cached by content hash within this worker).

    The file's directory is put on ``sys.path`` so that siblings import, and so is ``origin_dir``, the
    folder of the original kernel file when ``path`` is a copy of it (an optimize candidate folder holds
    only the kernel file: its ``import refs`` finds ``refs.py`` next to the original). KernelBench files
    that call ``load_inline`` get ``TORCH_EXTENSIONS_DIR=<htam cache>/torch_extensions/<hash>``.

    Raises:
        HarnessError: ``path`` does not exist or cannot be imported as a module.
    """
    p = Path(path).resolve()
    if not p.is_file():
        raise HarnessError(f"{p} does not exist (looked for it next to the kernel file {Path(origin_dir or p.parent)}); "
                           "put the module there or fix the name")
    digest = source_hash(p)
    key = f"{p}:{digest}"
    if key in _MODULES:
        return _MODULES[key]
    for d in (origin_dir, *origin_dirs(p)):
        if d is not None and str(Path(d).resolve()) not in sys.path:
            sys.path.insert(0, str(Path(d).resolve()))
    text = p.read_text(encoding="utf-8", errors="replace")
    if "load_inline" in text:
        ext_dir = cache_root() / "torch_extensions" / digest[:16]
        ext_dir.mkdir(parents=True, exist_ok=True)
        os.environ["TORCH_EXTENSIONS_DIR"] = str(ext_dir)
    if os.environ.get("TRITON_INTERPRET") == "1":
        cpu_triton_driver()  # a module-level DEVICE = triton.runtime.driver.active.get_active_torch_device()
    name = f"htam_user_{re.sub(r'[^A-Za-z0-9_]', '_', p.stem)}_{digest[:10]}"
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise HarnessError(f"cannot import {p}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _MODULES[key] = module
    return module


def function_reference(reference: str, origin_dir: Path, where: str = "") -> Callable[..., Any]:
    """The function named by a ``"module:function"`` or ``"file.py:function"`` reference.

    A ``file.py`` resolves relative to ``origin_dir``, the folder of the ORIGINAL kernel file (never the
    candidate's folder, which holds only the kernel file), and a module name imports with that folder on
    ``sys.path``.

    Raises:
        HarnessError: the module or the function is missing (the message names both and the folder).
    """
    mod_name, _, fn_name = reference.rpartition(":")
    label = where or "reference"
    if mod_name.endswith(".py"):
        target = (origin_dir / mod_name).resolve()
        if not target.is_file():
            raise HarnessError(f"{label}: reference = {reference!r} names {target}, which does not exist; the file "
                               f"is looked for next to the kernel file, in {origin_dir}")
        ref_mod = load_module(target, origin_dir)
    else:
        if str(origin_dir) not in sys.path:
            sys.path.insert(0, str(origin_dir))
        try:
            ref_mod = importlib.import_module(mod_name)
        except ImportError as e:
            raise HarnessError(f"{label}: reference = {reference!r}: module {mod_name!r} cannot be imported "
                               f"({exception_text(e)}); put it next to the kernel file, in {origin_dir}") from e
    try:
        return attribute_path(ref_mod, fn_name)
    except AttributeError:
        raise HarnessError(f"{label}: reference = {reference!r}: {mod_name} has no function {fn_name!r}") from None


def device_quantities_here() -> dict[str, int]:
    """The device quantities of this worker's CUDA device, read at run time, by the names harness expressions use
    for them (``{"sm_count": 132}``; :mod:`~htam_core.source.analysis.device_queries`): a grid the host program
    sized from its device (``sms * 4``) is sized the same way on the device that runs it. Empty without a GPU."""
    import torch

    if not torch.cuda.is_available():
        return {}
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"sm_count": int(props.multi_processor_count)}


def _namespace(extra: dict[str, Any]) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F  # noqa: N812 - the conventional name in reference expressions

    ns: dict[str, Any] = {"__builtins__": _SAFE_BUILTINS, "torch": torch, "F": F, "math": math, "cdiv": cdiv}
    ns.update(device_quantities_here())
    import triton

    ns["triton"] = triton
    ns["tl"] = triton.language  # a dtype constexpr in kwargs: OUT_DTYPE = "tl.float16"
    ns.update(extra)
    return ns


def _eval(expr: Any, ns: dict[str, Any], where: str) -> Any:
    if not isinstance(expr, str):
        return expr
    try:
        return eval(compile(expr, where, "eval"), ns)  # noqa: S307 - harness expressions run in the worker
    except Exception as e:  # noqa: BLE001
        raise HarnessError(f"{where} = {expr!r} could not be evaluated: {exception_text(e)}") from e


def launch_kwargs(kwargs: dict[str, Any], ns: dict[str, Any]) -> dict[str, Any]:
    """A direct launch's ``kwargs`` with each string that is an expression over names of ``ns`` (the sizes, the
    inputs, ``triton``, ``tl``) or over none evaluated (``BLOCK = "triton.next_power_of_2(N)"``, ``"128 * 2"``,
    ``OUT_DTYPE = "tl.float16"``, ``"'silu'"``); other values, and strings that name anything else (a string
    constexpr such as ``"evict_last"`` or ``"silu"``), as they are.

    Raises:
        HarnessError: an expression over known names fails to evaluate (the message names the key).
    """
    out: dict[str, Any] = {}
    for k, v in kwargs.items():
        names: set[str] = set()
        if isinstance(v, str):
            try:
                names = {n.id for n in ast.walk(ast.parse(v, mode="eval")) if isinstance(n, ast.Name)}
            except SyntaxError:
                names = {"\0"}
        roots = {r.split(".")[0] for r in names}
        out[k] = _eval(v, ns, f"kwargs.{k}") if isinstance(v, str) and roots <= set(ns) else v
    return out


def device_and_mode(h: Harness) -> tuple[str | None, str]:
    """``(device, verified_on)`` for this worker: ``("cuda", "gpu")``, ``("cpu", "interpreter")`` for
    Triton under ``TRITON_INTERPRET=1`` (and plain PyTorch), or ``(None, "compile-only")``."""
    import torch

    if torch.cuda.is_available():
        return "cuda", "gpu"
    interp = os.environ.get("TRITON_INTERPRET") == "1"
    lang = traits(h.language)
    if lang.interprets and (interp or not lang.tiles):  # Triton under TRITON_INTERPRET=1; plain PyTorch always
        return "cpu", "interpreter"
    return None, "compile-only"


@dataclass
class Prepared:
    """A harness made runnable in this worker.

    Attributes:
        trial: the pieces :func:`check_correctness` needs.
        bind: ``inputs -> (() -> None)``: a launcher with every argument pre-converted, for timing
            (no poisoning, no conversion inside the timed call).
        arg_names: input names, for messages.
        size_sets: the size symbols of each input set.
        bytes_for, flops_for: ``(set_index, inputs) -> float | None`` from the harness's expressions
            (a KernelBench pair: the reference's compulsory bound, :mod:`htam_core.harness.roofline_bound`).
        device: ``"cuda"`` or ``"cpu"``.
        launcher_kind: how :attr:`bind`'s launcher launches, for the timer's method choice
            (:func:`htam_core.measure.method.may_capture`): ``"triton"``, ``"cupy"``, ``"python"`` or
            ``"cu-host-launcher"`` (``<<<...>>>`` on the legacy default stream).
    """

    trial: Trial
    bind: Callable[[list[Any]], Callable[[], Any]]
    arg_names: list[str]
    size_sets: list[dict[str, Any]]
    bytes_for: Callable[[int, list[Any]], float | None]
    flops_for: Callable[[int, list[Any]], float | None]
    device: str
    notes: list[str] = field(default_factory=list)
    launcher_kind: str | None = None


def _scale(t: Any, scale: float) -> Any:
    if scale != 1.0 and hasattr(t, "dtype") and t.dtype.is_floating_point:
        return t * scale
    return t


# -- spec harness ---------------------------------------------------------------------------------
def offsets_tensor(shape: list[int], low: int, high: int, gen: Any, device: str) -> Any:
    """An offsets array (``init = "offsets"``, CSR's ``row_ptr``): ``prod(shape)`` non-decreasing int64 values drawn
    uniformly from ``[low, high]`` and sorted, the first set to ``low`` and the last to ``high``, so that every pair
    of neighbours is one row's range of positions inside a buffer of ``high`` elements (rows of random lengths,
    some empty). Idea source: the CSR format's row pointers (Saad, "Iterative Methods for Sparse Linear Systems",
    sec. 3.4)."""
    import torch

    n = math.prod(shape)
    t = torch.randint(low, max(low, high) + 1, (n,), generator=gen, dtype=torch.int64, device=device).sort().values
    if n:
        t[0], t[-1] = low, max(low, high)
    return t.reshape(shape)


def _make_spec_inputs(h: Harness, sizes: dict[str, Any], seed: int, scale: float, device: str) -> list[Any]:
    """Build one input set. Random tensors come from a generator seeded with ``seed`` on ``device``
    (on the GPU: generating a 64M-element input there takes microseconds, not a CPU second).

    ``init = "empty"`` and ``"scratch"`` buffers start poisoned (:func:`poison_`); every other init gives
    the buffer a defined value, which in-out outputs (listed in ``outputs`` with such an init) start from
    (see :func:`split_outputs`)."""
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    ns = _namespace(dict(sizes))
    out: list[Any] = []
    for spec in h.inputs:
        dtype = getattr(torch, spec.dtype)
        if spec.is_scalar:
            v = _eval(spec.value, ns, f"inputs.{spec.name}.value")
            v = bool(v) if spec.dtype == "bool" else (float(v) if dtype.is_floating_point else int(v))
            ns[spec.name] = v
            out.append(v)
            continue
        shape = [int(_eval(d, ns, f"inputs.{spec.name}.shape")) for d in (spec.shape or [])]
        kw = {"device": device}
        if spec.init == "randn":
            t = (torch.randn(shape, generator=gen, **kw) * (spec.scale * scale)).to(dtype)
        elif spec.init == "rand":
            t = (spec.low + (spec.high - spec.low) * torch.rand(shape, generator=gen, **kw)) * (spec.scale * scale)
            t = t.to(dtype)
        elif spec.init == "randint":
            high = int(_eval(spec.high, ns, f"inputs.{spec.name}.high"))  # a size symbol: indices into that size
            t = torch.randint(int(spec.low), high, shape, generator=gen, dtype=torch.int64, **kw).to(dtype)
        elif spec.init == "zeros":
            t = torch.zeros(shape, dtype=dtype, **kw)
        elif spec.init == "ones":
            t = torch.ones(shape, dtype=dtype, **kw)
        elif spec.init == "offsets":
            high = int(_eval(spec.high, ns, f"inputs.{spec.name}.high"))
            t = offsets_tensor(shape, int(spec.low), high, gen, device).to(dtype)
        elif spec.init == "arange":
            t = torch.arange(math.prod(shape), **kw).reshape(shape).to(dtype)
        else:  # empty (an output buffer) or scratch (workspace): poisoned
            t = poison_(torch.empty(shape, dtype=dtype, **kw))
        ns[spec.name] = t
        out.append(t)
    return out


def _cuda_function(path: str, kernel: str, device_arch: str) -> Any:
    """Compile ``kernel`` of the ``.cu`` file with NVRTC (CuPy), or ``nvcc -cubin`` as a fallback; for a Python
    file, the CUDA string that holds the kernel (:func:`embedded_cuda`), as a cupy launcher of the file
    compiles it.

    Raises:
        HarnessError: a Python file holds no CUDA string defining ``kernel``.
    """
    import cupy

    digest = source_hash(path)
    key = (digest, kernel, device_arch)
    if key in _CUDA_FUNCS:
        return _CUDA_FUNCS[key]
    src = embedded_cuda(path, kernel) if path.endswith(".py") else \
        Path(path).read_text(encoding="utf-8", errors="replace")
    try:
        mod = cupy.RawModule(code=src, options=("-std=c++17", "-lineinfo", *include_flags(path)),
                             name_expressions=[kernel])
        fn = mod.get_function(kernel)
        _CUDA_MODULES[key] = (mod, None)
    except Exception:  # noqa: BLE001 - NVRTC rejects host code and system headers: use nvcc
        if not path.endswith(".py"):
            fn = _cubin_function(path, kernel, device_arch)
            _CUDA_MODULES[key] = _CUBIN_MODULES.pop(path, (None, None))
        else:
            with tempfile.TemporaryDirectory(prefix="htam-string-") as tmp:
                cu = Path(tmp) / f"{Path(path).stem}.cu"
                cu.write_text(src, encoding="utf-8")
                fn = _cubin_function(str(cu), kernel, device_arch)
    _CUDA_FUNCS[key] = fn
    return fn


def embedded_cuda(path: str, kernel: str) -> str:
    """The CUDA source string of the Python file ``path`` that defines ``kernel`` (a cupy ``RawKernel`` or
    ``RawModule`` source), decoded as Python reads it.

    Raises:
        HarnessError: no CUDA string of the file defines ``kernel``.
    """
    try:
        model = load(path)
        k = next(k for k in model.kernels if k.name == kernel and traits(k.language).embedded)
    except (OSError, ValueError, StopIteration):
        raise HarnessError(f"{Path(path).name} holds no CUDA string that defines {kernel}") from None
    return str(k.attributes.get("cuda_source") or "")


def mangled_entry(cubin: bytes, kernel: str) -> str:
    """The symbol of entry ``kernel`` in a cubin: ``kernel`` itself (``extern "C"``) or its Itanium
    mangled form (``_Z<len><name>...``, possibly inside namespaces), read from the ``.text.<symbol>``
    section names of the ELF string table.

    Raises:
        HarnessError: no entry of that name.
    """
    syms = [m.group(1).decode("utf-8", "replace") for m in re.finditer(rb"\.text\.([^\x00]+)", cubin)]
    token = f"{len(kernel)}{kernel}"
    for s in syms:
        if s == kernel:
            return s
    for s in syms:
        if s.startswith("_Z") and token in s:
            return s
    raise HarnessError(f"kernel {kernel!r} is not an entry of the compiled module (entries: {sorted(set(syms))})")


def cubin_for(path: str, arch: str) -> bytes:
    """``nvcc -cubin`` of the ``.cu`` file ``path`` for ``arch``, cached on disk by content, arch and nvcc
    (``<htam cache>/cubins/<hash>.cubin``, written atomically), so ``htam verify`` then ``htam profile`` of a
    ``main()`` program (which NVRTC cannot compile: host code) pay for nvcc once, not in every worker.

    Raises:
        HarnessError: nvcc is missing or the file does not compile (nvcc's errors are in the message).
    """
    nvcc = find_nvcc()
    if nvcc is None:
        raise HarnessError("NVRTC could not compile the file and nvcc was not found to try again")
    src = Path(path)
    includes = include_flags(src)
    text = src.read_text(encoding="utf-8", errors="replace")
    key = content_key(kind="cubin", source=text, arch=arch, nvcc=file_fingerprint(nvcc), include=includes,
                      headers=headers_digest(text, src, cuda_include_dirs(src)))
    out_dir = cache_root() / "cubins"
    cached = out_dir / f"{key[:32]}.cubin"
    if cached.is_file():
        return cached.read_bytes()
    with tempfile.TemporaryDirectory(prefix="htam-cubin-") as tmp:
        out = Path(tmp) / "k.cubin"
        proc = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-O3", "-lineinfo", *includes, *cu_language(src), path, "-o", str(out)],
                              capture_output=True, text=True, timeout=300, **one_shot_kwargs())
        if proc.returncode != 0:
            raise HarnessError(f"nvcc could not compile {Path(path).name}:\n{proc.stderr[-3000:]}")
        data = out.read_bytes()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp_file = cached.with_name(f"{cached.stem}.{os.getpid()}.tmp")
        tmp_file.write_bytes(data)
        os.replace(tmp_file, cached)
    except OSError:
        pass  # no cache: compiled again next time
    return data


def _cubin_function(path: str, kernel: str, arch: str) -> Any:
    import cupy

    data = cubin_for(path, arch)
    with tempfile.TemporaryDirectory(prefix="htam-cubin-") as tmp:
        out = Path(tmp) / "k.cubin"
        out.write_bytes(data)
        mod = cupy.RawModule(path=str(out))
        _CUBIN_MODULES[path] = (mod, data)
        return mod.get_function(mangled_entry(data, kernel))


#: ``(file hash, kernel, arch)`` -> the module :func:`_cuda_function` loaded and its cubin (``None`` from NVRTC).
_CUDA_MODULES: dict[tuple[str, str, str], tuple[Any, bytes | None]] = {}
_CUBIN_MODULES: dict[str, tuple[Any, bytes | None]] = {}


def variable_symbol(cubin: bytes, qualified: str) -> str:
    """The symbol of the ``__device__`` variable ``qualified`` (``"g_count"``, ``"ns::g_count"``) in a cubin: the
    name itself (a variable of the global namespace with external linkage), else the Itanium mangled form that
    names it (``_ZN2ns7g_countE``, ``_ZL7g_count`` of a ``static`` one), read from the ELF string table.

    Raises:
        HarnessError: no symbol of that name.
    """
    parts = qualified.split("::")
    syms = {m.decode("utf-8", "replace") for m in re.findall(rb"[\x21-\x7e]+", cubin)}
    if len(parts) == 1 and parts[0] in syms:
        return parts[0]
    tokens = "".join(f"{len(p)}{p}" for p in parts)
    found = sorted(s for s in syms if s.startswith("_Z") and not s.startswith(".") and (
        s in (f"_ZN{tokens}E", f"_ZL{tokens}", f"_ZN{tokens[:0]}L{tokens}E") or s.endswith(tokens) or
        s.endswith(f"{tokens}E")))
    if not found:
        raise HarnessError(f"the __device__ variable {qualified} is not a symbol of the compiled module")
    return found[0]


def symbol_copies(path: str, kernel: str, arch: str, symbols: dict[str, str]) -> dict[str, Any]:
    """Input name -> the device memory of the ``__device__`` variable it stands for (a CuPy ``MemoryPointer``,
    :attr:`Harness.symbols`), in the module :func:`_cuda_function` loaded for ``kernel`` (call that first).

    Raises:
        HarnessError: the module is not loaded or has no such variable.
    """
    mod, cubin = _CUDA_MODULES.get((source_hash(path), kernel, arch), (None, None))
    if mod is None:
        raise HarnessError(f"{Path(path).name}: the module of {kernel} is not loaded, so its __device__ variables "
                           "cannot be read")
    out = {}
    for name, qualified in symbols.items():
        try:
            out[name] = mod.get_global(variable_symbol(cubin, qualified) if cubin is not None else qualified)
        except HarnessError:
            raise
        except Exception as e:  # noqa: BLE001 - CuPy's lookup error: no such global
            raise HarnessError(f"{Path(path).name}: the __device__ variable {qualified} cannot be read from the "
                               f"compiled module ({type(e).__name__}: {e})") from None
    return out


def _np_scalar(dtype: str, v: Any) -> Any:
    """The launch argument of scalar input ``v`` of harness dtype ``dtype``: a numpy scalar of that width (a
    ``bfloat16``, which numpy lacks, as the 16 bits of its rounded value in a ``uint16``)."""
    import numpy as np

    if dtype == "bfloat16":
        return np.uint16(struct.unpack("<I", struct.pack("<f", to_bfloat16(v)))[0] >> 16)
    return {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int32": np.int32,
            "int64": np.int64, "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "bool": np.bool_,
            }.get(dtype, np.float32)(v)


def prepare_spec(h: Harness, device: str) -> Prepared:
    """Make a ``spec`` harness runnable on ``device``.

    Before every checked candidate call (:attr:`Trial.run_candidate`), write-only outputs (``init =
    "empty"``) are poisoned and in-out outputs (any other ``init``) are restored to the value they were
    generated with (a clone kept per input set); an expression reference sees those initial values, a
    ``module:function`` reference is called with the non-output inputs only. Timing (:attr:`Prepared.bind`)
    neither poisons nor restores: repeated calls on in-out buffers are fine for timing. The checked calls are
    :class:`_SpecCalls`; the launch of a file is :func:`_spec_bind`.

    Raises:
        HarnessError: the reference expression reads a write-only output (it would be NaN), or the
            launcher / kernel is missing.
    """
    poisoned_ref = write_only_outputs_in_reference(h.inputs, h.outputs, h.reference)
    if poisoned_ref:
        raise HarnessError(reference_reads_write_only_message(h.source or Path(h.path).name, poisoned_ref))
    origin = h.origin_dir()
    module = load_module(h.path, origin) if h.path.endswith(".py") else None
    calls = _SpecCalls(h, device)
    # the candidate launches with its own main()'s configuration (a retuned block size changes what runs);
    # the oracle (the starting kernel) keeps the one inferred
    kind, bind = _spec_bind(h, device, h.path, module, relaunched(h), calls.launch_env)
    calls.bind = bind
    notes: list[str] = []
    if h.uses_oracle and h.oracle_path:
        if not Path(h.oracle_path).is_file():
            raise HarnessError(f"the starting kernel {h.oracle_path} (the oracle of {h.kernel}) does not exist; "
                               "give a reference or verify with --against START_FILE")
        oracle_mod = load_module(h.oracle_path, origin) if h.oracle_path.endswith(".py") else None
        calls.oracle_bind = _spec_bind(h, device, h.oracle_path, oracle_mod,
                                       dataclasses.replace(h, launcher=h.oracle_launcher) if h.oracle_launcher else h,
                                       calls.launch_env)[1]
        notes.append(f"reference: the starting kernel ({Path(h.oracle_path).name})")
    calls.load_reference(origin)
    r64 = reference64(h, lambda h64, twin: _spec_bind(h64, device, twin, None, h64, calls.launch_env)[1],
                      calls.poison_idx, lambda: calls.latest["initial"]) if device == "cuda" else Reference64()
    notes += r64.notes
    trial = Trial(calls.make_inputs, calls.run_reference, calls.run_candidate, calls.guard_skip,
                  len(calls.sizes_list), r64.run, r64.outputs)
    return Prepared(trial, bind, calls.names, calls.sizes_list, calls.expr_for(h.bytes_expr),
                    calls.expr_for(h.flops_expr), device, notes=notes, launcher_kind=kind)


#: How a file's kernel is launched on a set of inputs: ``bind(inputs)`` gives the call to time.
_Bind = Callable[[list[Any]], Callable[[], Any]]


class _SpecCalls:
    """The checked calls of a ``spec`` harness on ``device`` (:func:`prepare_spec`): its inputs, made and
    tracked per set, the candidate's and the reference's calls with outputs poisoned and in-out buffers restored,
    and the byte/FLOP expressions.

    Attributes:
        bind: the candidate's launch; oracle_bind: the starting kernel's (the oracle rule), or ``None``.
        guard_skip: input indices the mutation guard skips: declared outputs, scratch buffers, and (found at run
            time) an input the launcher returns (a tensor the reference compares after the call is an output,
            even when it was given).
    """

    def __init__(self, h: Harness, device: str) -> None:
        self.h, self.device = h, device
        self.names = [i.name for i in h.inputs]
        self.out_idx = {self.names.index(o) for o in h.outputs}
        # write-only outputs (init = "empty") are poisoned before every checked call; in-out outputs (any other
        # init: the kernel may read them, C in C = alpha*A@B + beta*C) are restored to their initial value
        self.poison_idx, self.inout_idx = split_outputs(h)
        # scratch buffers (init = "scratch") are workspace the kernel may overwrite: neither outputs nor inputs
        self.scratch_idx = {i for i, spec in enumerate(h.inputs) if spec.init == "scratch"}
        self.sizes_list = h.sizes_for(interpreter=device == "cpu")
        # the most recent input set made: its set index, and clones of its in-out buffers as generated. The
        # reference gets a copy of the inputs (a different list), so it is looked up as "the latest set".
        self.latest: dict[str, Any] = {"set": 0, "initial": {}}
        self.guard_skip = self.out_idx | self.scratch_idx
        self.bind: _Bind | None = None
        self.oracle_bind: _Bind | None = None
        self.ref_fn: Callable[..., Any] | None = None
        self.ref_globals: dict[str, Any] = {}

    def env_of(self, inputs: list[Any], set_index: int = 0) -> dict[str, Any]:
        """The namespace expressions are read in: the set's sizes, the kwargs, the inputs by name."""
        env = dict(self.sizes_list[set_index])
        env.update(self.h.kwargs)
        env.update(zip(self.names, inputs, strict=True))
        return _namespace(env)

    def launch_env(self, inputs: list[Any]) -> dict[str, Any]:
        """:meth:`env_of` for the latest input set (a launch's grid, block and arguments)."""
        return self.env_of(inputs, int(self.latest["set"]))

    def make_inputs(self, seed: int, set_index: int, scale: float) -> list[Any]:
        """The inputs of set ``set_index`` (:func:`_make_spec_inputs`), remembered as the latest set with clones
        of its in-out buffers."""
        xs = _make_spec_inputs(self.h, self.sizes_list[set_index], seed, scale, self.device)
        self.latest.update(set=set_index, initial={i: xs[i].detach().clone() for i in self.inout_idx})
        return xs

    def restore_inout(self, inputs: list[Any]) -> None:
        """Copy the initial values back into the in-out buffers of ``inputs`` (made by the latest
        :meth:`make_inputs`)."""
        for i, initial in self.latest["initial"].items():
            inputs[i].copy_(initial)

    def run_with(self, launch: _Bind, inputs: list[Any]) -> list[Any]:
        """One checked call of ``launch``: write-only outputs poisoned, in-out ones restored; the outputs."""
        for i in self.poison_idx:
            poison_(inputs[i])
        self.restore_inout(inputs)
        value = launch(inputs)()
        if self.h.outputs:
            return [inputs[self.names.index(o)] for o in self.h.outputs]
        outs = as_outputs(value)
        self.guard_skip.update(returned_inputs(outs, inputs))
        return outs

    def run_candidate(self, inputs: list[Any]) -> list[Any]:
        """One checked call of the candidate."""
        assert self.bind is not None  # set by prepare_spec before the trial runs
        return self.run_with(self.bind, inputs)

    def load_reference(self, origin: Path) -> None:
        """Load a ``module:function`` reference, or the globals an expression reference reads.

        Raises:
            HarnessError: the reference's module or function cannot be loaded.
        """
        h = self.h
        if h.reference and is_function_reference(h.reference):
            self.ref_fn = function_reference(h.reference, origin, h.source)
        if h.ref_globals and h.reference and not self.ref_fn:
            self.ref_globals = {k: v for k, v in vars(load_module(h.ref_globals, origin)).items()
                                if not k.startswith("__")}

    def run_reference(self, inputs: list[Any]) -> list[Any]:
        """The expected outputs: the oracle's call, the reference function's, or the expression's.

        Raises:
            HarnessError: no reference and no starting kernel to compare with.
        """
        h = self.h
        if self.oracle_bind is not None:  # the oracle rule: the starting kernel, same inputs, poisoned the same way
            return self.run_with(self.oracle_bind, inputs)
        if self.ref_fn is not None:  # called with the non-output inputs (outputs, in-out ones included, excluded)
            return as_outputs(self.ref_fn(*[x for i, x in enumerate(inputs)
                                            if i not in self.out_idx | self.scratch_idx]))
        # an expression sees the initial value of in-out buffers, never what a candidate wrote into them
        inputs = list(inputs)
        for i, initial in self.latest["initial"].items():
            inputs[i] = initial.clone()
        if not h.reference:
            raise HarnessError(f"{h.source or Path(h.path).name}: no reference and no starting kernel to compare "
                               "with: give reference = \"<torch expression>\" or check against the start file "
                               "(htam verify CANDIDATE --against START_FILE)")
        ns = self.launch_env(inputs)
        for k, v in self.ref_globals.items():
            ns.setdefault(k, v)
        return as_outputs(_eval(h.reference, ns, "reference"))

    def expr_for(self, expr: str | None) -> Callable[[int, list[Any]], float | None]:
        """``f(set_index, inputs)``: the value of a ``bytes``/``flops`` expression, or ``None`` without one."""
        def f(set_index: int, inputs: list[Any]) -> float | None:
            if not expr:
                return None
            return float(_eval(expr, self.env_of(inputs, set_index), "bytes/flops"))
        return f


def _spec_bind(h: Harness, device: str, target: str, mod: ModuleType | None, launch_h: Harness,
               env: Callable[[list[Any]], dict[str, Any]]) -> tuple[str, Callable[[list[Any]], Callable[[], Any]]]:
    """How to launch the kernel of file ``target`` (the candidate, or the oracle: the starting kernel) of the
    ``spec`` harness ``h`` on ``device``: ``(launcher kind, bind)``, where ``bind(inputs)`` gives the call to time.
    ``launch_h`` gives the direct launch's grid, block and shared bytes; ``mod`` is ``target``'s module (``None``
    for a ``.cu`` file); ``env(inputs)`` is the namespace the grid, block and arguments are read in (the input
    set's sizes, the kwargs and the inputs by name). A direct launch resets the ``__device__`` variables of
    :attr:`Harness.symbols` before the kernel and reads them back after it (:func:`symbol_copies`).

    Raises:
        HarnessError: raw CUDA without a GPU, the launcher or kernel is missing from ``target``, or ``h`` has
            ``symbols`` but is launched another way.
    """
    import torch

    _check_symbols(h, launch_h, mod, target)
    if mod is None and h.grid is not None and struct_args(h):
        return "cu-host-launcher", _struct_bind(h, device, target, launch_h, env)
    if launch_h.launcher and mod is None:
        # a .cu file with an extern "C" host launcher: the launch configuration stays in the file
        if device != "cuda":
            raise HarnessError("raw CUDA kernels need a GPU to run")
        major, minor = torch.cuda.get_device_capability()
        return "cu-host-launcher", host_launcher(target, launch_h.launcher, f"sm_{major}{minor}",  # type: ignore[return-value]
                                                 *launcher_types(h.inputs))
    if h.launcher:
        host = launcher_module(h, mod) if h.launcher_path and mod is not None else mod
        try:
            fn = attribute_path(host, h.launcher)  # "Ops.launch": a static or class method
        except AttributeError:
            fn = None
        if fn is None:
            where = Path(h.launcher_path).name if h.launcher_path else Path(target).name
            raise HarnessError(f"{h.source}: {where} has no function {h.launcher!r}")
        return "python", lambda inputs: (lambda: fn(*inputs))
    if traits(h.language).tiles:
        try:
            kern = attribute_path(mod, h.kernel)  # "Ops.scale" reaches a kernel defined in a class
        except AttributeError:
            kern = None
        if kern is None:
            raise HarnessError(f"{h.source}: {Path(target).name} has no kernel {h.kernel!r}")

        def bind_triton(inputs: list[Any]) -> Callable[[], Any]:
            ns = env(inputs)
            kwargs = launch_kwargs(h.kwargs, ns)
            ns.update(kwargs)
            grid = _eval(h.grid, ns, "grid")
            args = [ns[a] for a in h.args]
            return lambda: kern[grid](*args, **kwargs)
        return "triton", bind_triton
    if device != "cuda":
        raise HarnessError("raw CUDA kernels need a GPU to run")
    major, minor = torch.cuda.get_device_capability()
    func = _cuda_function(target, h.kernel, f"sm_{major}{minor}")
    globs = symbol_copies(target, h.kernel, f"sm_{major}{minor}", h.symbols) if h.symbols else {}
    dtypes = {i.name: i.dtype for i in h.inputs}
    occupancy = occupancy_functions(func)  # blocks_per_sm(256, 0): the grid of main()'s occupancy API, for func

    def bind_cupy(inputs: list[Any]) -> Callable[[], Any]:
        import cupy

        ns = {**occupancy, **env(inputs)}
        grid = _dim3(_eval(launch_h.grid, ns, "grid"))
        block = _dim3(_eval(launch_h.block, ns, "block"))
        args = tuple(cupy.asarray(ns[a]) if isinstance(ns[a], torch.Tensor) else _np_scalar(dtypes[a], ns[a])
                     for a in h.args)

        held = {n: ns[n] for n in globs}  # the tensors a __device__ variable is reset from and read back into

        def launch() -> None:
            # torch's current stream at call time (a graph capture's side stream while capturing)
            with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream) as stream:
                _symbols_around(globs, held, stream, lambda: func(grid, block, args,
                                                                  shared_mem=launch_h.shared_bytes))
        return launch
    return "cupy", bind_cupy


def _check_symbols(h: Harness, launch_h: Harness, mod: ModuleType | None, target: str) -> None:
    """Refuse a harness with :attr:`Harness.symbols` that is not launched directly from a ``.cu`` file.

    Raises:
        HarnessError: ``h`` has symbols and runs through a launcher, a struct shim or a Python file's string.
    """
    if h.symbols and (launch_h.launcher or h.launcher or target.endswith(".py") or
                      (mod is None and h.grid is not None and struct_args(h))):
        raise HarnessError(f"{h.source}: the __device__ variable(s) {', '.join(h.symbols.values())} are read back "
                           "only around a direct launch of a .cu kernel (grid, block, args), not through a launcher "
                           "or a struct shim")


def _symbols_around(globs: dict[str, Any], held: dict[str, Any], stream: Any, call: Callable[[], Any]) -> None:
    """Run ``call`` (the kernel's launch) between the copies of the ``__device__`` variables ``globs`` (input name ->
    its device memory): each tensor of ``held`` into its variable before, as ``cudaMemcpyToSymbol`` does, and the
    variable back into the tensor after, as ``cudaMemcpyFromSymbol`` does, on ``stream``."""
    import cupy

    for n, mem in globs.items():
        mem.copy_from_device_async(cupy.asarray(held[n]).data, held[n].nbytes, stream)
    call()
    for n, mem in globs.items():
        cupy.asarray(held[n]).data.copy_from_device_async(mem, held[n].nbytes, stream)


def _struct_bind(h: Harness, device: str, target: str, launch_h: Harness,
                 env: Callable[[list[Any]], dict[str, Any]]) -> _Bind:
    """The launch of a ``.cu`` kernel taking a struct by value, built from its field inputs by a generated shim
    (:mod:`htam_core.harness.cu_struct_launch`); grid and block as :func:`_spec_bind` reads them.

    Raises:
        HarnessError: no GPU, or the shim cannot be made or built.
    """
    import torch

    if device != "cuda":
        raise HarnessError("raw CUDA kernels need a GPU to run")
    major, minor = torch.cuda.get_device_capability()
    binder = struct_launcher(target, h, f"sm_{major}{minor}")

    def bind(inputs: list[Any]) -> Callable[[], Any]:
        ns = env(inputs)
        return binder(ns, _dim3(_eval(launch_h.grid, ns, "grid")), _dim3(_eval(launch_h.block, ns, "block")),
                      int(launch_h.shared_bytes or 0))
    return bind


def returned_inputs(outs: list[Any], inputs: list[Any]) -> set[int]:
    """Indices of ``inputs`` that a launcher returned as outputs (``return y`` after updating ``y`` in place,
    ``return out`` of an ``out=`` argument): the same tensor object, or a view of all of its memory
    (``y.view(-1)``: the same first element and as many elements). Such an input is an output the reference compares, so the input-mutation guard skips it.

    Args:
        outs: the launcher's outputs (:func:`~htam_core.harness.trial.as_outputs` of its return value).
        inputs: the arguments it was called with.
    """
    import torch

    found: set[int] = set()
    for o in outs:
        if not isinstance(o, torch.Tensor):
            continue
        for i, x in enumerate(inputs):
            if x is o or (isinstance(x, torch.Tensor) and x.numel() and x.device == o.device
                          and x.data_ptr() == o.data_ptr() and x.numel() == o.numel()):
                found.add(i)
    return found


def split_outputs(h: Harness) -> tuple[set[int], set[int]]:
    """``(write_only, in_out)``: indices of the inputs listed in ``h.outputs``, split by their ``init``.

    An output with ``init = "empty"`` (or ``"scratch"``) is write-only: it is poisoned (NaN / the integer
    maximum) before every checked candidate call, so an unwritten element never passes. An output with any
    other ``init`` (``zeros``, ``ones``, ``randn``, ...) is an in-out buffer the kernel may read (``C`` in
    ``C = alpha*A@B + beta*C``, or ``out += x``): it is restored to its initial value before every checked
    call, and an expression reference sees that initial value.
    """
    names = [i.name for i in h.inputs]
    write_only: set[int] = set()
    in_out: set[int] = set()
    for o in h.outputs:
        i = names.index(o)
        (write_only if h.inputs[i].init in ("empty", "scratch", None) else in_out).add(i)
    return write_only, in_out


def _dim3(v: Any) -> tuple[int, ...]:
    if isinstance(v, int | float):
        return (int(v),)
    return tuple(int(x) for x in v)


# -- KernelBench ----------------------------------------------------------------------------------
def prepare_kernelbench(h: Harness, device: str) -> Prepared:
    """Make a KernelBench pair runnable: ``Model`` and ``ModelNew`` built from ``get_init_inputs()``
    after seeding with 42 (each), inputs from ``get_inputs()`` seeded per trial (KernelBench)."""
    import torch

    ref_mod = load_module(h.reference_path or h.path)
    cand_mod = load_module(h.path)
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(ref_mod, need):
            raise HarnessError(f"the KernelBench reference {h.reference_path} has no {need}")
    if not hasattr(cand_mod, "ModelNew"):
        raise HarnessError(f"{Path(h.path).name} has no class ModelNew")

    def to_dev(x: Any) -> Any:
        return x.to(device) if isinstance(x, torch.Tensor) else x

    init = [to_dev(x) for x in ref_mod.get_init_inputs()]
    torch.manual_seed(BASE_SEED)
    model = ref_mod.Model(*init).to(device)
    torch.manual_seed(BASE_SEED)
    model_new = cand_mod.ModelNew(*init).to(device)

    def make_inputs(seed: int, set_index: int, scale: float) -> list[Any]:
        torch.manual_seed(seed)
        # tensors are created on the device itself (seeded the same way for reference and candidate):
        # level-1 problems have 6-8 GB inputs, which take seconds to draw on the CPU and copy over
        with torch.device(device):
            xs = ref_mod.get_inputs()
        return [to_dev(_scale(x, scale)) for x in xs]

    def run_reference(inputs: list[Any]) -> list[Any]:
        with torch.no_grad():
            return as_outputs(model(*inputs))

    def run_candidate(inputs: list[Any]) -> list[Any]:
        with torch.no_grad():
            return as_outputs(model_new(*inputs))

    def bind(inputs: list[Any]) -> Callable[[], Any]:
        def call() -> Any:
            with torch.no_grad():
                return model_new(*inputs)
        return call

    bound: list[tuple[float, float] | None] = []

    def roofline(set_index: int, inputs: list[Any]) -> tuple[float, float] | None:
        # the problem gives no bytes/FLOPs: the reference's compulsory traffic and counted FLOPs, once
        if not bound:
            try:
                bound.append(compulsory_bound(model, inputs))
            except Exception:  # noqa: BLE001 - an unknown bound leaves the roofline "not computed"
                bound.append(None)
        return bound[0]

    def bytes_for(set_index: int, inputs: list[Any]) -> float | None:
        b = roofline(set_index, inputs)
        return b[0] if b else None

    def flops_for(set_index: int, inputs: list[Any]) -> float | None:
        b = roofline(set_index, inputs)
        return b[1] if b and b[1] > 0 else None

    probe = make_inputs(BASE_SEED, 0, 1.0)
    names = [f"input{i}" for i in range(len(probe))]
    trial = Trial(make_inputs, run_reference, run_candidate, set(), 1)
    p = Prepared(trial, bind, names, [{}], bytes_for, flops_for, device, launcher_kind="python")
    p.reference_call = lambda inputs: (lambda: model(*inputs))  # type: ignore[attr-defined]
    p.reference_model = model  # type: ignore[attr-defined]  # the eager Model, for the torch.compile anchors
    return p


#: How each harness kind is made runnable (the registry of kinds that run in a worker). An inferred harness is
#: a spec harness whose values came from a recorded run of the file (:mod:`htam_core.harness.infer_py`).
PREPARERS: dict[str, Callable[[Harness, str], Prepared]] = {
    "spec": prepare_spec, "inferred": prepare_spec, "kernelbench": prepare_kernelbench,
}


def register_kind(kind: str, prepare_fn: Callable[[Harness, str], Prepared]) -> None:
    """Add a harness kind to :data:`PREPARERS` (another discovery step builds harnesses of that kind)."""
    PREPARERS[kind] = prepare_fn


def prepare(h: Harness, device: str) -> Prepared:
    """Make ``h`` runnable on ``device`` (``"cuda"`` or ``"cpu"``).

    Raises:
        HarnessError: the harness cannot be run (a ``.cu`` program with ``main()`` has no callable).
    """
    prep = PREPARERS.get(h.kind)
    if prep is not None:
        return prep(h, device)
    raise HarnessError(f"{Path(h.path).name}: a .cu program with main() is run as a whole under ncu; it has no "
                       f"reference to check against. Add a {table_header(h.kernel)} table to htam.toml to verify it")
