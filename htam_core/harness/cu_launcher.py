"""Call an ``extern "C"`` host launcher of a ``.cu`` file: the launch configuration stays in the user's code.

A spec harness may name ``launcher = "launch_transpose"`` for a ``.cu`` file. The file is then built with
``nvcc -shared -Xcompiler -fPIC`` into a shared library (cached by content hash), loaded with :mod:`ctypes`,
and the launcher is called with the harness inputs in order: tensors as device pointers, scalars as C values
of their spec dtype. Because the ``<<<grid, block>>>`` launch lives in the file, transforms that retune the
block size or the grid (``cuda.block_size``, ``cuda.transpose_smem_tile``, ``cuda.smem_tiling_matmul``) act
on what is actually run. The launcher should launch on the default stream (torch's current stream unless a
caller changed it), so CUDA-event timing covers it.

Runs **inside a worker process** (needs nvcc and a GPU). Idea source: the usual ctypes + ``nvcc -shared``
pattern for calling CUDA host code from Python.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from htam_core.harness.base import HarnessError, cu_language, cuda_include_dirs, include_flags
from htam_core.harness.cu_eval import Program, _declared_names, _walk, param_declarations, param_names
from htam_core.harness.cu_main import find_nvcc
from htam_core.runtime.cache import cache_root, content_key
from htam_core.runtime.children import one_shot_kwargs
from htam_core.source.analysis.includes import headers_digest, local_headers
from htam_core.source.parsing import node_text

_CTYPES: dict[str, Any] = {
    "float32": ctypes.c_float, "float64": ctypes.c_double, "int32": ctypes.c_int, "int64": ctypes.c_longlong,
    "int16": ctypes.c_short, "int8": ctypes.c_byte, "uint8": ctypes.c_ubyte, "bool": ctypes.c_bool,
}
_LIBS: dict[str, Any] = {}
#: The exported name of a generated shim (:func:`write_shim`).
SHIM_NAME = "htam_shim_launch"
_C_TYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long", "int16": "short",
            "int8": "signed char", "uint8": "unsigned char", "bool": "bool", "float16": "float", "bfloat16": "float"}


def _symbol(lib_path: Path, name: str) -> Any:
    lib = _LIBS.get(str(lib_path))
    if lib is None:
        lib = _LIBS[str(lib_path)] = ctypes.CDLL(str(lib_path))
    return getattr(lib, name, None)


def host_definition(defs: Sequence[Any], n_inputs: int) -> Any:
    """The host definition the shim calls among the functions named like the launcher: never a
    ``__global__`` kernel (llm.c names a kernel and its host launcher alike, ``gelu_backward1``, overloaded
    by arity), and, among host overloads, the first whose parameters (streams aside, defaulted ones
    optional) take ``n_inputs`` arguments; the first host one when none fits exactly."""
    host = [d for d in defs if "__global__" not in definition_head(d)]
    for d in host:
        decls = [p for p in param_declarations(d) if "cudaStream_t" not in _text(p)]
        required = sum(1 for p in decls if p.type != "optional_parameter_declaration")
        if required <= n_inputs <= len(decls):
            return d
    return host[0] if host else None


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


def definition_head(fn: Any) -> str:
    """A definition's text up to its body (its specifiers and declarator, with a template header above it)."""
    body = fn.child_by_field_name("body")
    head = _text(fn)[: (body.start_byte - fn.start_byte) if body is not None else None]
    parent = fn.parent
    return (_text(parent)[: fn.start_byte - parent.start_byte] if parent is not None and
            parent.type == "template_declaration" else "") + head


def template_params(fn: Any) -> set[str]:
    """Names of the template parameters of a definition (``template <typename T>`` gives ``{"T"}``)."""
    parent = fn.parent
    if parent is None or parent.type != "template_declaration":
        return set()
    params = parent.child_by_field_name("parameters")
    head = _text(params) if params is not None else ""
    return set(re.findall(r"\b(?:typename|class)\s+(\w+)", head))


#: Callee prefixes of the runtime and library calls main() may set up state with (device, handles).
_SETUP_PREFIXES = ("cuda", "cublas", "cublasLt", "curand", "cufft")
#: Runtime calls that move or free buffers: the harness makes its own, so these are never replayed.
_BUFFER_CALLS = ("cudaMalloc", "cudaMemcpy", "cudaMemset", "cudaFree", "cudaHostAlloc", "cudaMallocHost")
_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def main_setup_calls(prog: Any) -> list[str]:
    """The statements of ``main()`` that set up host state before its first launch, to replay in a shim.

    A launcher called through a shim never runs ``main()``, so state that ``main()`` sets before launching
    is missing: llm.c's ``setup_main()`` fills ``cuda_num_SMs`` (a grid of ``cuda_num_SMs`` blocks is then 0)
    and creates the cuBLAS handle; ``cudaGetDeviceProperties(&deviceProp, 0)`` fills a global;
    ``cublas_compute_type = enable_tf32 ? ... : ...`` sets the compute type a cuBLASLt call reads.

    ``main()`` is read from the top until the first statement that is neither a declaration nor an
    expression statement, holds a ``<<<`` launch, or calls a host function of the file with arguments (the
    launch path, or the inputs being made). A statement is kept when every call in it is to the CUDA runtime
    or a CUDA library (``cuda*``, ``cublas*``, ...; one that allocates, copies, sets or frees a buffer only
    when the buffer is a global of the file, such as a cuBLASLt workspace: the harness makes the inputs), a
    macro of the file (an error-check wrapper) or a host function of
    the file taking no arguments, and every identifier is a global of the file, a macro, a constant in upper
    case (a library enum such as ``CUBLAS_COMPUTE_32F``) or a local declared by a kept statement. Kept
    declarations are replayed too (they become locals of the setup function).
    """
    mains = prog.functions.get("main") or []
    body = mains[0].child_by_field_name("body") if mains else None
    if body is None:
        return []
    local: set[str] = set()
    out: list[str] = []
    for stmt in body.named_children:
        if stmt.type == "comment":
            continue
        text = node_text(stmt)
        if stmt.type not in ("declaration", "expression_statement") or "<<<" in text:
            break
        declared = set(_declared_names(stmt)) if stmt.type == "declaration" else set()
        ok, launch_path = True, False
        for n in _walk(stmt):
            if n.type == "call_expression":
                fn = n.child_by_field_name("function")
                callee = node_text(fn) if fn is not None else ""
                args = n.child_by_field_name("arguments")
                nargs = len([a for a in (args.named_children if args is not None else []) if a.type != "comment"])
                defs = prog.functions.get(callee) or []
                first = args.named_children[0] if args is not None and args.named_children else None
                if defs and nargs and callee not in prog.macros:
                    launch_path = True
                elif callee.startswith(_BUFFER_CALLS):
                    # a buffer of the file's own state (a library workspace global) is set up; inputs are not
                    target = node_text(first).lstrip("&( ").rstrip(") ") if first is not None else ""
                    ok = ok and target in prog.globals.values
                elif not (
                        callee.startswith(_SETUP_PREFIXES) or callee in prog.macros or
                        (defs and nargs == 0 and not param_names(defs[0]))):
                    ok = False
            elif n.type == "identifier":
                parent = n.parent
                if parent is not None and parent.type == "call_expression" and \
                        parent.child_by_field_name("function") == n:
                    continue
                name = node_text(n)
                if name not in declared and name not in local and name not in prog.globals.values and \
                        name not in prog.macros and not _CONSTANT_NAME.fullmatch(name):
                    ok = False
        if launch_path:
            break
        if ok:
            out.append(text)
            local |= declared
    return out


def shim_source(path: str | Path, launcher: str, dtypes: Sequence[str | None],
                pointees: Sequence[str | None] | None = None) -> str:
    """The C++ of an ``extern "C"`` shim that calls the C++ host function ``launcher`` of ``path``.

    The shim includes the ``.cu`` file and calls ``launcher`` (``run_sgemm``, ``mlp::launch<float>``) by name,
    so C++ resolves overloads, namespaces, template arguments and default arguments. Pointers arrive as
    ``void*`` and convert to whatever pointer type the parameter has; a pointer parameter whose type names a
    template parameter of the launcher (``template <class T> void f(const T* x)``) gets a pointer of the
    input's own element type instead (``pointees``), since C++ deduces ``T`` from the argument, never through
    a conversion. A ``cudaStream_t`` parameter gets the default stream; trailing parameters beyond the inputs
    keep their defaults. When a ``__global__`` kernel has the launcher's name (a kernel and its launcher
    overloaded by arity), the host overload that takes the inputs is the one called. The state ``main()``
    sets up before launching (:func:`main_setup_calls`: ``setup_main();``, ``cudaGetDeviceProperties``)
    is set up once, on the shim's first call, which is never timed alone (timing warms up first).

    Args:
        path: the ``.cu`` file.
        launcher: the host function's name as the harness gives it.
        dtypes: per input, the spec dtype of a scalar, or ``None`` for a tensor.
        pointees: per input, a tensor's element dtype (``"float32"``), ``None`` for a scalar; ``None``: not
            known (template deduction through a pointer then fails to compile, as it did before).

    Raises:
        HarnessError: no host definition of ``launcher`` in the file.
    """
    src = Path(path).resolve()
    text = src.read_text(encoding="utf-8", errors="replace")
    short = re.sub(r"<.*>$", "", launcher).split("::")[-1].strip()
    prog = Program(text)
    fn = host_definition(prog.functions.get(short) or [], len(dtypes))
    if fn is None:
        raise HarnessError(f"{src.name} defines no host function {short!r} (the launcher {launcher!r})")
    tparams = template_params(fn) if "<" not in launcher else set()
    params, args, k = [], [], 0
    for decl in param_declarations(fn):
        ptext = _text(decl)
        if "cudaStream_t" in ptext:
            args.append("(cudaStream_t)0")
            continue
        if k >= len(dtypes):
            break
        d = dtypes[k]
        elem = pointees[k] if pointees is not None and k < len(pointees) else None
        params.append(f"void* a{k}" if d is None else f"{_C_TYPES.get(d, 'float')} a{k}")
        typed = d is None and elem in _C_TYPES and elem not in ("float16", "bfloat16") and \
            bool(tparams & set(re.findall(r"\w+", ptext.split("*")[0])))
        args.append(f"static_cast<{_C_TYPES[elem]}*>(a{k})" if typed else f"HtamAnyPtr{{a{k}}}" if d is None
                    else f"a{k}")
        k += 1
    for j in range(k, len(dtypes)):  # inputs beyond the launcher's parameters: accepted, not passed
        params.append(f"void* a{j}" if dtypes[j] is None else f"{_C_TYPES.get(dtypes[j] or '', 'float')} a{j}")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    setup = main_setup_calls(prog)
    once = ("static bool htam_setup_done = false;\n"
            f"static void htam_setup() {{ if (htam_setup_done) return; htam_setup_done = true; {' '.join(setup)} }}\n"
            if setup else "")
    return (f"// htam shim for {launcher} of {src.name} (source {digest})\n#include \"{src}\"\n"
            "struct HtamAnyPtr { void* p; template <class T> operator T*() const { return static_cast<T*>(p); } };\n"
            f"{once}extern \"C\" void {SHIM_NAME}({', '.join(params)}) {{ {'htam_setup(); ' if setup else ''}"
            f"{launcher}({', '.join(args)}); }}\n")


def write_shim(path: str | Path, launcher: str, dtypes: Sequence[str | None],
               pointees: Sequence[str | None] | None = None) -> Path:
    """Write :func:`shim_source` under ``<htam cache>/cu_shims/`` (named by its content) and return the path."""
    text = shim_source(path, launcher, dtypes, pointees)
    out = cache_root() / "cu_shims"
    out.mkdir(parents=True, exist_ok=True)
    shim = out / f"shim-{hashlib.sha256(text.encode()).hexdigest()[:20]}.cu"
    if not shim.is_file():
        shim.write_text(text, encoding="utf-8")
    return shim


_LIBRARY_HEADERS = {"cublas_v2.h": "-lcublas", "cublas.h": "-lcublas", "cublasLt.h": "-lcublasLt",
                    "curand.h": "-lcurand", "cufft.h": "-lcufft"}
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.M)


def library_flags(path: str | Path, depth: int = 3) -> list[str]:
    """The ``-l`` flags a ``.cu`` file needs at link time: one per CUDA library whose header it includes,
    directly or through the local ``#include "..."`` headers beside it (``depth`` levels), e.g.
    ``#include <cublas_v2.h>`` in a shared ``common.h`` needs ``-lcublas`` (the file's own build notes
    say ``nvcc -lcublas -lcublasLt``). A header that cannot be read is skipped."""
    flags: list[str] = []
    seen: set[Path] = set()
    todo = [(Path(path), 0)]
    while todo:
        p, d = todo.pop()
        if p in seen or d > depth:
            continue
        seen.add(p)
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for quote, name in _INCLUDE.findall(text):
            flag = _LIBRARY_HEADERS.get(Path(name).name)
            if flag and flag not in flags:
                flags.append(flag)
            if quote == '"':
                todo.append(((p.parent / name), d + 1))
    return flags


def build_shared_library(path: str | Path, arch: str) -> Path:
    """Build ``path`` into ``<htam cache>/cu_launchers/<hash>.so`` (cached by content, arch and nvcc).

    Raises:
        HarnessError: nvcc is missing or the file does not compile (nvcc's errors are in the message).
    """
    nvcc = find_nvcc()
    if nvcc is None:
        raise HarnessError("a .cu host launcher needs nvcc to build a shared library, and nvcc was not found")
    src = Path(path)
    text = src.read_text(encoding="utf-8", errors="replace")
    key = content_key(source=text, arch=arch, nvcc=nvcc, include=include_flags(src),
                      headers=headers_digest(text, src, cuda_include_dirs(src)))
    out_dir = cache_root() / "cu_launchers"
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / f"{key[:24]}.so"
    if lib.is_file():
        return lib
    tmp = lib.with_name(f"{lib.stem}.{os.getpid()}.tmp.so")  # one per process: pool workers may race
    proc = subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3", "-lineinfo", f"-arch={arch}",
                           "-std=c++17", *include_flags(src), *cu_language(src), str(src), "-o", str(tmp),
                           *library_flags(src)],
                          capture_output=True, text=True, timeout=300, **one_shot_kwargs())
    if proc.returncode != 0:
        raise HarnessError(f"nvcc could not build {src.name} as a shared library:\n{proc.stderr[-3000:]}")
    tmp.replace(lib)
    return lib


def _declares_extern_c(path: str | Path) -> bool:
    """The file or one of its local headers says ``extern "C"``: only then can a plain name be an unmangled
    symbol of the library (otherwise the shim is the only way in, and building the file alone first would
    only double the build time)."""
    try:
        src = Path(path).read_bytes()
    except OSError:
        return True  # let the build say what is wrong
    pattern = re.compile(rb'extern\s*"C"')
    return bool(pattern.search(src)) or any(pattern.search(h.src) for h in local_headers(src, Path(path)))


def launcher_library(path: str | Path, launcher: str, arch: str, dtypes: Sequence[str | None],
                     pointees: Sequence[str | None] | None = None, *, load: bool = True) -> tuple[Path, str]:
    """Build the shared library through which ``launcher`` of ``path`` is called: ``(library, symbol)``.

    An ``extern "C"`` function is called directly (looked for only when the file or a local header says
    ``extern "C"``: the file is built and loaded with :mod:`ctypes` to see whether it exports the name); any
    other name (a C++ function, ``ns::f``, ``f<g>``) is called through the generated shim
    (:func:`write_shim`, exported as :data:`SHIM_NAME`). ``load=False`` (a compile-only check, no GPU needed)
    never loads anything: an ``extern "C"`` file is still built, and the shim is built too.

    Raises:
        HarnessError: nvcc is missing, the file or the shim does not compile, or no host function of that name.
    """
    if re.fullmatch(r"[A-Za-z_]\w*", launcher) and _declares_extern_c(path):
        lib = build_shared_library(path, arch)
        if load and _symbol(lib, launcher) is not None:
            return lib, launcher
    shim = write_shim(path, launcher, dtypes, pointees)
    return build_shared_library(shim, arch), SHIM_NAME


def launcher_types(inputs: Sequence[Any]) -> tuple[list[str | None], list[str | None]]:
    """``(dtypes, pointees)`` of a harness's inputs (:class:`~htam_core.harness.base.InputSpec`) as
    :func:`host_launcher` takes them: a scalar's dtype (``None`` for a tensor), a tensor's element dtype
    (``None`` for a scalar)."""
    return ([i.dtype if i.is_scalar else None for i in inputs], [None if i.is_scalar else i.dtype for i in inputs])


def host_launcher(path: str | Path, launcher: str, arch: str, dtypes: Sequence[str | None],
                  pointees: Sequence[str | None] | None = None) -> Callable[[Sequence[Any]], Callable[[], None]]:
    """A binder for the host function ``launcher`` of the ``.cu`` file ``path``.

    An ``extern "C"`` function is called directly (only looked for when the file or a local header says
    ``extern "C"``); a C++ one (a mangled name, ``ns::f``, ``f<float>``) is called
    through a generated ``extern "C"`` shim that includes the file (:func:`shim_source`): the C++ compiler then
    resolves the name, rather than htam guessing a mangled symbol.

    Args:
        path: the ``.cu`` file.
        launcher: name of a host function taking the harness inputs in order.
        arch: ``sm_90`` etc.
        dtypes: per input, the spec dtype of a scalar, or ``None`` for a tensor (passed as ``void*``).
        pointees: per input, a tensor's element dtype (``None`` for a scalar), for a templated launcher's
            pointer parameters (:func:`shim_source`).

    Returns:
        ``bind(inputs) -> launch()``: arguments are converted once, ``launch`` only calls the function.

    Raises:
        HarnessError: build failure (of the file or of the shim), or no host function of that name.
    """
    lib, name = launcher_library(path, launcher, arch, dtypes, pointees)
    fn = _symbol(lib, name)
    if fn is None:
        raise HarnessError(f"{Path(path).name}: the extern \"C\" shim for {launcher!r} built but exports no "
                           f"{SHIM_NAME}")
    argtypes = [ctypes.c_void_p if d is None else _CTYPES.get(d, ctypes.c_float) for d in dtypes]
    fn.argtypes = argtypes
    fn.restype = None

    def bind(inputs: Sequence[Any]) -> Callable[[], None]:
        args = [ctypes.c_void_p(x.data_ptr()) if t is ctypes.c_void_p else t(x) for x, t in zip(inputs, argtypes,
                                                                                                  strict=True)]
        keep = list(inputs)  # the tensors must outlive the raw pointers in args (a graph capture empties
        # torch's allocator cache, so a freed tensor's memory would be unmapped under the launcher)

        def launch() -> None:
            fn(*args)
        launch.inputs = keep  # type: ignore[attr-defined]
        return launch

    return bind
