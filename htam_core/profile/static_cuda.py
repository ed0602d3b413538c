"""Static resource usage of CUDA kernels: ``nvcc -cubin -Xptxas -v`` with no GPU.

The kernel's translation unit (a ``.cu`` file, or CUDA held in a Python string) is
compiled for one target (``sm_90`` by default) with ``nvcc -arch=sm_XX -cubin -Xptxas -v``;
ptxas then reports, per entry function, the registers per thread, spill stores and loads, the
stack frame, static shared memory (``smem``) and constant banks (``cmem[N]``). Entries are
demangled (``c++filt``) and matched to the kernel by its unqualified name; a template kernel
matches every instantiation in the unit, and the profile reports the maximum of each resource
and lists the instantiations.

CUDA in Python strings that include ``torch/extension.h`` is first compiled *kernel-only*: the
torch/pybind includes and the host functions are blanked out (line numbers kept), so the device
code, and so ptxas's report, is unchanged while the compile takes a fraction of a second instead
of ~45 s of torch headers. When that reduced unit does not compile (the kernel needs a torch
header), the full unit is compiled with torch's include paths. Results are cached by content
hash (:mod:`htam_core.runtime.cache`).

The block size for occupancy comes from the launch site's block expression when it evaluates to
a constant (``dim3(16, 16)``, ``256``, ``THREADS`` from ``#define THREADS 256``, ``kBlock`` from
``constexpr int kBlock = 128;`` in the launching function), else from ``__launch_bounds__``'s
first argument, else it is unknown. Expressions are read with tree-sitter, never with regexes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import util as importlib_util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htam_core.harness.base import cuda_include_dirs, origin_dirs
from htam_core.runtime.cache import CompileCache, content_key, file_fingerprint
from htam_core.runtime.children import one_shot_kwargs
from htam_core.runtime.toolchain import find_nvcc
from htam_core.source.analysis.api_launch import api_launch_calls
from htam_core.source.analysis.constants import ConstEnv
from htam_core.source.analysis.includes import headers_digest
from htam_core.source.analysis.kernel_names import normal_type
from htam_core.source.analysis.launch import dims_of, launch_calls
from htam_core.types.errors import ProfileError

if TYPE_CHECKING:
    from tree_sitter import Node

    from htam_core.source.model import Kernel

#: Wall-clock limit of one nvcc run, seconds (a full torch/extension.h unit takes ~45 s here).
NVCC_TIMEOUT_S = 180.0


# -- ptxas -v --------------------------------------------------------------------------------------
_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_RE_PROPS = re.compile(r"Function properties for (\S+)")
_RE_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_USED = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")
_RE_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")
_RE_BARRIERS = re.compile(r"used (\d+) barriers")


@dataclass
class PtxasEntry:
    """ptxas's report for one entry function (kernel).

    Attributes:
        mangled: the symbol as ptxas prints it.
        demangled: the C++ name (``void mlp::f<float, 128>(const float*, int)``), or the symbol.
        arch: the SASS target ptxas compiled for (``"sm_90"``, ``"sm_90a"``).
        registers: registers per thread.
        spill_store_bytes, spill_load_bytes: spill traffic per thread, bytes.
        stack_bytes: stack frame per thread, bytes.
        shared_bytes: static shared memory per block, bytes.
        cmem_bytes: constant memory per bank (``{"0": 380}``), bytes; empty when not printed.
        barriers: named barriers used.
    """

    mangled: str
    demangled: str = ""
    arch: str = ""
    registers: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    stack_bytes: int = 0
    shared_bytes: int = 0
    cmem_bytes: dict[str, int] = field(default_factory=dict)
    barriers: int = 0

    @property
    def spill_bytes(self) -> int:
        """Spill stores plus spill loads, bytes."""
        return self.spill_store_bytes + self.spill_load_bytes

    @property
    def base_name(self) -> str:
        """The unqualified function name (``bias_gelu_fwd``), see :func:`entry_base_name`."""
        return entry_base_name(self.demangled or self.mangled)


def parse_ptxas_verbose(log: str) -> list[PtxasEntry]:
    """Parse the ``ptxas -v`` (``-Xptxas -v``) log into one :class:`PtxasEntry` per entry function.

    Works for nvcc's ptxas and Triton's bundled ``ptxas``/``ptxas-blackwell`` (lines may carry any
    ``ptxas...info`` prefix). Entries appear in the order ptxas compiled them.
    """
    entries: list[PtxasEntry] = []
    by_name: dict[str, PtxasEntry] = {}
    current: PtxasEntry | None = None
    for line in log.splitlines():
        m = _RE_ENTRY.search(line)
        if m:
            current = PtxasEntry(mangled=m.group(1), arch=m.group(2))
            entries.append(current)
            by_name[current.mangled] = current
            continue
        m = _RE_PROPS.search(line)
        if m:
            current = by_name.get(m.group(1), current)
            continue
        if current is None:
            continue
        m = _RE_FRAME.search(line)
        if m:
            current.stack_bytes, current.spill_store_bytes, current.spill_load_bytes = map(int, m.groups())
            continue
        m = _RE_USED.search(line)
        if m:
            current.registers = int(m.group(1))
            if sm := _RE_SMEM.search(line):
                current.shared_bytes = int(sm.group(1))
            for cm in _RE_CMEM.finditer(line):
                current.cmem_bytes[cm.group(2)] = int(cm.group(1))
            if b := _RE_BARRIERS.search(line):
                current.barriers = int(b.group(1))
    return entries


def demangle(names: list[str]) -> dict[str, str]:
    """Demangle Itanium C++ symbols with ``c++filt`` (one process for all names).

    Returns ``{symbol: demangled}``; names that are not mangled, or every name when ``c++filt``
    is missing, map to themselves.
    """
    out = {n: n for n in names}
    mangled = [n for n in names if n.startswith("_Z")]
    tool = shutil.which("c++filt")
    if not mangled or tool is None:
        return out
    try:
        proc = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True, text=True,
                              timeout=30, **one_shot_kwargs())
    except (OSError, subprocess.SubprocessError):
        return out
    lines = proc.stdout.splitlines()
    if proc.returncode == 0 and len(lines) == len(mangled):
        out.update(dict(zip(mangled, lines, strict=True)))
    return out


def entry_base_name(name: str) -> str:
    """Unqualified function name of a demangled symbol.

    ``void mlp::bias_gelu_fwd<float, 128, 4>(const float*, int)`` -> ``bias_gelu_fwd``;
    ``vadd_kernel`` -> ``vadd_kernel``. Template arguments and parameter lists are skipped by
    bracket depth, so commas and ``::`` inside them do not confuse it.
    """
    # cut at the parameter list: the first '(' at template depth 0
    depth = 0
    end = len(name)
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0 and i > 0:
            end = i
            break
    head = name[:end]
    # drop trailing template arguments
    if head.endswith(">"):
        depth = 0
        for i in range(len(head) - 1, -1, -1):
            if head[i] == ">":
                depth += 1
            elif head[i] == "<":
                depth -= 1
                if depth == 0:
                    head = head[:i]
                    break
    head = head.split("::")[-1]
    return head.split()[-1] if head.split() else head


# -- nvcc ------------------------------------------------------------------------------------------
def normalize_target(target: str) -> str:
    """``"sm_90"``, ``"90"``, ``"sm90"``, ``"cuda:90"`` -> ``"sm_90"`` (suffixes ``a``/``f`` kept).

    Raises:
        ProfileError: not of that form.
    """
    t = str(target).strip().lower().removeprefix("cuda:").removeprefix("sm_").removeprefix("sm")
    if not re.fullmatch(r"\d{2,3}[af]?", t):
        raise ProfileError(f"bad target {target!r}: use a compute capability such as sm_80, sm_86, sm_89 or sm_90")
    return f"sm_{t}"


@dataclass
class CudaCompileResult:
    """The outcome of one nvcc compile.

    Attributes:
        entries: every entry function ptxas reported.
        command: the nvcc command line (temp paths included).
        log: ptxas's and nvcc's output.
        cached: the result came from the cache (nvcc did not run).
        seconds: wall time of the nvcc run (0 when cached).
        mode: ``"file"``, ``"kernel-only"`` (host code and torch headers blanked) or ``"torch"``
            (full unit with torch's include paths).
    """

    entries: list[PtxasEntry]
    command: list[str]
    log: str
    cached: bool = False
    seconds: float = 0.0
    mode: str = "file"

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form (for the cache)."""
        return {"entries": [asdict(e) for e in self.entries], "command": self.command, "log": self.log,
                "mode": self.mode, "seconds": self.seconds}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CudaCompileResult:
        """Inverse of :meth:`to_json`; marks the result ``cached``."""
        return cls(entries=[PtxasEntry(**e) for e in d["entries"]], command=list(d["command"]), log=d["log"],
                   cached=True, seconds=0.0, mode=d.get("mode", "file"))


def _error_lines(log: str, limit: int = 20) -> list[str]:
    lines = [ln.rstrip() for ln in log.splitlines()
             if re.search(r"\berror\b", ln) and "errors detected" not in ln]
    return lines[:limit]


def instantiation_text(name: str, arg_lists: Sequence[Sequence[str]]) -> str:
    """Text that instantiates template kernel ``name`` with each of ``arg_lists`` (``[("64",)]``) when appended to
    the translation unit that defines it: one ``static`` pointer per list taking the specialization's address
    (``(const void *)&name<64>``), which makes nvcc emit it as a launch would (C++17 [temp.inst] 4: a function
    template specialization whose definition is required, its address taken, is implicitly instantiated), with no
    need to spell its parameter types as an explicit instantiation would. For a compiled copy only."""
    lines = ["", "// htam: the instantiations this kernel's launches in other files use (static profile only)"]
    for k, args in enumerate(arg_lists):
        lines.append(f"[[maybe_unused]] static const void *const htam_instantiation_{k} = "
                     f"(const void *)&{name}<{', '.join(args)}>;")
    return "\n".join(lines) + "\n"


def compile_cuda(
    source: str,
    *,
    target: str = "sm_90",
    source_name: str = "kernel.cu",
    first_line: int = 1,
    include_dirs: list[str] | None = None,
    extra_flags: list[str] | None = None,
    mode: str = "file",
    cache: CompileCache | None = None,
    timeout_s: float = NVCC_TIMEOUT_S,
) -> CudaCompileResult:
    """Compile CUDA ``source`` to a cubin with ``nvcc -arch=<target> -cubin -Xptxas -v``.

    The text is written to a private temp file that starts with ``#line first_line "source_name"``,
    so every diagnostic names the user's file and line. nvcc runs in a separate process with a
    timeout (``subprocess``; nvcc never runs user code).

    Args:
        source: the translation unit's text.
        target: compute capability (``"sm_90"``).
        source_name: path reported in diagnostics (the user's file).
        first_line: 1-based line of ``source``'s first line in that file (CUDA in a Python string).
        include_dirs: ``-I`` directories (the file's own directory is added first).
        extra_flags: more nvcc flags (``-std=c++17``, ``-DNAME=1``).
        mode: recorded in the result (see :class:`CudaCompileResult`).
        cache: compile cache; ``None`` uses the default cache.
        timeout_s: wall-clock limit in seconds.

    Returns:
        A :class:`CudaCompileResult`.

    Raises:
        ProfileError: nvcc missing, timed out, or the unit does not compile (``details`` holds
            nvcc's error lines).
    """
    target = normalize_target(target)
    nvcc = find_nvcc()
    if nvcc is None:
        raise ProfileError("nvcc not found: install the CUDA toolkit or put its bin/ directory on PATH "
                           "(or set CUDA_HOME)")
    cache = cache if cache is not None else CompileCache()
    # a file's own folder and the include folders it needs; an in-memory name ("kernel.cu") gets its folder only
    incs = [str(d) for d in (cuda_include_dirs(source_name, source) if Path(source_name).is_file()
                             else origin_dirs(source_name))] if source_name else []
    incs += list(include_dirs or [])
    flags = [f"-arch={target}", "-cubin", "-Xptxas", "-v", *(extra_flags or [])]
    # the key holds the text, the contents of the local headers it includes, the flags and the tool, not the
    # folder: every candidate of a run lives in its own folder, and a kernel version compiled by the CLI, the
    # editor or an earlier run is the same compile (a hit's log and command name the file compiled first)
    key = content_key(kind="nvcc", source=source, source_name=Path(source_name).name if source_name else None,
                      first_line=first_line, flags=flags, includes=list(include_dirs or []),
                      nvcc=file_fingerprint(nvcc), headers=headers_digest(source, source_name, incs))
    hit = cache.get(key)
    if hit is not None:
        return CudaCompileResult.from_json(hit)

    with tempfile.TemporaryDirectory(prefix="htam-nvcc-") as tmp:
        src = Path(tmp) / "unit.cu"
        quoted = str(source_name).replace("\\", "\\\\").replace('"', '\\"')
        src.write_text(f'#line {first_line} "{quoted}"\n{source}', encoding="utf-8")
        cmd = [nvcc, *flags, *[f"-I{d}" for d in incs], "-o", str(Path(tmp) / "unit.cubin"), str(src)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=tmp,
                                  **one_shot_kwargs())
        except subprocess.TimeoutExpired as exc:
            raise ProfileError(f"nvcc took longer than {timeout_s:.0f} s on {source_name}; "
                               "simplify the unit or raise the timeout") from exc
        seconds = time.perf_counter() - t0
    log = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode != 0:
        errors = _error_lines(log) or log.strip().splitlines()[-10:]
        first = errors[0].strip() if errors else "unknown error"
        raise ProfileError(f"{source_name} does not compile for {target} (nvcc, {len(errors)} error line(s)); "
                           f"fix the first error: {first}", errors)
    entries = parse_ptxas_verbose(log)
    names = demangle([e.mangled for e in entries])
    for e in entries:
        e.demangled = names.get(e.mangled, e.mangled)
    result = CudaCompileResult(entries=entries, command=cmd, log=log, seconds=seconds, mode=mode)
    cache.put(key, result.to_json())
    return result


def match_entries(entries: list[PtxasEntry], kernel_name: str, kernel: Kernel | None = None) -> list[PtxasEntry]:
    """The entries whose unqualified name is ``kernel_name`` (all instantiations of a template); given the
    ``kernel``, only those of its qualified name (``f64::scale``, not ``f32::scale``) and, for an overload, its
    parameter types, when the demangled names tell (else every entry of the name)."""
    found = [e for e in entries if e.base_name == kernel_name]
    if kernel is None or len(found) < 2:
        return found
    qualified = kernel.qualified_name or kernel.name
    same = [e for e in found if _entry_qualified(e.demangled or e.mangled) == qualified] or found
    if kernel.attributes.get("overload"):
        want = [normal_type(p.type) for p in kernel.params]
        same = [e for e in same if _entry_params(e.demangled or e.mangled) == want] or same
    return same


def _entry_head_end(name: str) -> int:
    """Where the parameter list of the demangled ``name`` starts (its length when it has none)."""
    depth = 0
    for i, ch in enumerate(name):
        depth += (ch == "<") - (ch == ">")
        if ch == "(" and depth == 0 and i > 0 and not name.startswith("(anonymous", i):
            return i
    return len(name)


def _entry_qualified(name: str) -> str:
    """The qualified name of a demangled symbol as :attr:`Kernel.qualified_name` writes it: no return type, template
    arguments or anonymous namespaces (``void (anonymous namespace)::k<4>(float*)`` -> ``k``)."""
    head = name[: _entry_head_end(name)].replace("(anonymous namespace)::", "")
    while "<" in head:
        head = re.sub(r"<[^<>]*>", "", head)
    return head.split()[-1] if head.split() else head


def _entry_params(name: str) -> list[str | None]:
    """The parameter types of a demangled symbol, normalized (:func:`normal_type`)."""
    start = _entry_head_end(name)
    inner = name[start + 1 : name.rfind(")")] if start < len(name) else ""
    return [normal_type(t) for t in inner.split(",")] if inner.strip() else []


# -- torch extensions ------------------------------------------------------------------------------
_TORCH_INCLUDE_PREFIXES = ("torch/", "ATen/", "c10/", "pybind11/", "Python.h", "caffe2/")


def torch_include_dirs() -> list[str]:
    """Include directories for ``#include <torch/extension.h>``, without importing torch.

    The same directories as ``torch.utils.cpp_extension.include_paths()`` (``torch/include`` and
    ``torch/include/torch/csrc/api/include``), plus Python's headers (pybind11 needs ``Python.h``)
    and, when the installed torch is a CPU wheel that lacks ``c10/cuda/impl/cuda_cmake_macros.h``,
    a stand-in directory providing that header (it only defines build macros).

    Raises:
        ProfileError: torch is not installed.
    """
    spec = importlib_util.find_spec("torch")
    if spec is None or not spec.origin:
        raise ProfileError("this CUDA source includes torch headers but torch is not installed: "
                           "pip install torch")
    root = Path(spec.origin).parent / "include"
    dirs = [str(root), str(root / "torch" / "csrc" / "api" / "include")]
    py_inc = sysconfig.get_paths().get("include")
    if py_inc:
        dirs.append(py_inc)
    if not (root / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").exists():
        dirs.append(_standin_include_dir())
    return dirs


@lru_cache(maxsize=1)
def _standin_include_dir() -> str:
    d = Path(tempfile.gettempdir()) / f"htam-torch-standin-{os.getuid() if hasattr(os, 'getuid') else 0}"
    h = d / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    h.parent.mkdir(parents=True, exist_ok=True)
    if not h.exists():
        h.write_text("#pragma once\n// stand-in written by htam: a CPU torch wheel lacks this generated header\n",
                     encoding="utf-8")
    return str(d)


@lru_cache(maxsize=16)
def _parse(text: str, dim3_braces: bool = False) -> tuple[bytes, Node]:
    """Parse CUDA ``text``; ``dim3_braces`` reads ``dim3 g(a, b)`` as a construction (for constants, see
    :func:`htam_core.source.analysis.syntax.parse_cuda`), else the plain tree (for blanking host code)."""
    # imported lazily: the ptxas parser above is also used in Triton AOT workers, which need no tree-sitter
    from htam_core.source.analysis.syntax import parse, parse_cuda

    data = text.encode("utf-8")
    return data, (parse_cuda(data) if dim3_braces else parse(data, "cuda")).root_node


def _is_device_function(fn: Node) -> bool:
    return any(c.type in ("__global__", "__device__") for c in fn.children)


def includes_torch(source: str) -> bool:
    """``source`` includes a torch/ATen/c10/pybind11 header (read with tree-sitter)."""
    data, root = _parse(source)
    return any(_include_path(n, data).startswith(_TORCH_INCLUDE_PREFIXES) for n in _walk_includes(root))


def _walk_includes(node: Node) -> list[Node]:
    out = []
    for c in node.children:
        if c.type == "preproc_include":
            out.append(c)
        elif c.type in ("namespace_definition", "declaration_list", "linkage_specification",
                        "preproc_if", "preproc_ifdef", "preproc_else"):
            out.extend(_walk_includes(c))
    return out


def _include_path(node: Node, data: bytes) -> str:
    p = node.child_by_field_name("path")
    if p is None:
        return ""
    return data[p.start_byte:p.end_byte].decode("utf-8", "replace").strip("<>\"")


def strip_host_code(source: str) -> str:
    """Blank out torch/pybind includes and host-only functions, keeping every line in place.

    Host functions are function definitions (also inside templates, namespaces and
    ``extern "C"``) that carry neither ``__global__`` nor ``__device__``; ``PYBIND11_MODULE`` blocks
    parse as such. Device code is untouched, so ptxas's report for the kernels is the same as for
    the full unit.
    """
    data, root = _parse(source)
    spans: list[tuple[int, int]] = []

    def visit(node: Node) -> None:
        for c in node.children:
            if c.type == "preproc_include" and _include_path(c, data).startswith(_TORCH_INCLUDE_PREFIXES):
                spans.append((c.start_byte, c.end_byte))
            elif c.type == "function_definition" and not _is_device_function(c):
                spans.append((c.start_byte, c.end_byte))
            elif c.type == "template_declaration":
                fn = next((x for x in c.children if x.type == "function_definition"), None)
                if fn is not None and not _is_device_function(fn):
                    spans.append((c.start_byte, c.end_byte))
            elif c.type == "declaration" and re.search(rb"\b(torch|at|c10|py)::", data[c.start_byte:c.end_byte]):
                spans.append((c.start_byte, c.end_byte))
            elif c.type in ("namespace_definition", "declaration_list", "linkage_specification"):
                visit(c)

    visit(root)
    out = bytearray(data)
    for s, e in spans:
        for i in range(s, e):
            if out[i] not in (0x0A, 0x0D):
                out[i] = 0x20
    return out.decode("utf-8", "replace")


# -- constant expressions (block size, dynamic shared memory) ---------------------------------------
def eval_const_expr(source: str, expr: str, at_byte: int | None = None, path: str | None = None) -> int | None:
    """Evaluate the C/C++ integer expression ``expr`` as seen at byte ``at_byte`` of ``source``.

    The evaluator is :class:`htam_core.source.analysis.constants.ConstEnv` (``#define``s, file and
    namespace constants, declarations in the enclosing function, ``sizeof``, ``dim3`` products, and the
    local ``#include "..."`` headers of the file ``path``). Returns ``None`` when any part is not a
    compile-time integer here.
    """
    data, root = _parse(source, dim3_braces=True)
    v = ConstEnv(data, root, path=path).value_of_text(expr, at_byte)
    return v if isinstance(v, int) else None


def _site_value(source: str, kernel: Any, site: Any, offset: int, key: str, path: str | None = None) -> int | None:
    """Value of launch-config ``key`` (``"block"``: threads per block, ``"smem"``) at ``site``, or ``None``."""
    data, root = _parse(source, dim3_braces=True)
    env = ConstEnv(data, root, path=path)
    at = site.span.start - offset if site.span is not None else None
    if at is not None and not 0 <= at < len(data):
        at = None
    pos = {"block": 1, "smem": 2}[key]
    name = getattr(kernel, "name", None)
    for lc in launch_calls(root, data, name) + api_launch_calls(root, data, name):
        if at is None or not lc.call.start_byte <= at < lc.call.end_byte:
            continue
        if len(lc.config) <= pos:
            return 0 if key == "smem" else None
        if key == "smem":
            c = env.const(lc.config[pos], lc.host)
            return c.value if c is not None else None
        total = 1
        for d in dims_of(env, lc.config[pos], lc.host):
            c = env.const(d, lc.host)
            if c is None:
                return None
            total *= c.value
        return total
    expr = (site.config or {}).get(key) or ("0" if key == "smem" else None)
    v = env.value_of_text(expr, at) if expr else None
    return v if isinstance(v, int) else None


def resolve_block_size(source: str, kernel: Any, offset: int = 0,
                       path: str | None = None) -> tuple[int | None, str, list[str]]:
    """Threads per block for the kernel's launch, statically.

    Args:
        source: the CUDA unit's text.
        kernel: a :class:`htam_core.source.model.Kernel` (launch sites, ``launch_bounds``).
        offset: byte offset of ``source`` in the model's file (CUDA in a Python string), subtracted
            from launch-site spans.
        path: the file ``source`` comes from: its local ``#include "..."`` headers are read for constants.

    Returns:
        ``(block_size or None, where it came from, warnings)``. Sources, in order: the first launch
        site whose block is constant (``dim3`` components followed through variables), then
        ``__launch_bounds__``'s first argument.
    """
    warnings: list[str] = []
    seen: list[tuple[int, str]] = []
    for site in getattr(kernel, "launch_sites", []) or []:
        expr = (site.config or {}).get("block")
        if not expr:
            continue
        val = _site_value(source, kernel, site, offset, "block", path)
        if val is not None and val > 0:
            seen.append((val, f"launch site line {site.line}: block {expr} = {val}"))
    if seen:
        values = sorted({v for v, _ in seen})
        if len(values) > 1:
            warnings.append(f"launch sites use different block sizes {values}; occupancy uses {seen[0][0]}")
        return seen[0][0], seen[0][1], warnings
    lb = (getattr(kernel, "attributes", None) or {}).get("launch_bounds")
    val = resolve_launch_bounds(source, kernel, offset, path)
    if val:
        return val, f"__launch_bounds__({_first_arg(str(lb))}) = {val}", warnings
    warnings.append("block size unknown: no launch site with a constant block expression and no constant "
                    "__launch_bounds__; theoretical occupancy not computed")
    return None, "unknown", warnings


def resolve_launch_bounds(source: str, kernel: Any, offset: int = 0, path: str | None = None) -> int | None:
    """The most threads per block a kernel was compiled for: ``__launch_bounds__``'s first argument evaluated
    as a constant (``__launch_bounds__(THREADS, 2)`` with ``#define THREADS 256`` -> 256), else ``None``.

    A launch with more threads per block fails (CUDA C++ Programming Guide, "Launch Bounds": "the kernel will
    fail to launch if it is launched with more threads per block than maxThreadsPerBlock"). Arguments as for
    :func:`resolve_block_size`.
    """
    lb = (getattr(kernel, "attributes", None) or {}).get("launch_bounds")
    if not lb:
        return None
    first = _first_arg(str(lb))
    at = kernel.span.start - offset if getattr(kernel, "span", None) is not None else None
    val = eval_const_expr(source, first, at, path) if first else None
    return val if isinstance(val, int) and val > 0 else None


def _first_arg(launch_bounds: str) -> str:
    s = launch_bounds.strip()
    if s.startswith("__launch_bounds__"):
        s = s[len("__launch_bounds__"):].strip()
    if s.startswith("(") and s.endswith(")"):
        s = s[1:-1]
    depth = 0
    for i, ch in enumerate(s):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == "," and depth == 0:
            return s[:i].strip()
    return s.strip()


def resolve_dynamic_smem(source: str, kernel: Any, offset: int = 0) -> int | None:
    """Dynamic shared memory bytes of the first launch site whose ``smem`` expression is constant
    (``0`` when omitted), or ``None``."""
    return dynamic_smem_site(source, kernel, offset)[0]


def dynamic_smem_site(source: str, kernel: Any, offset: int = 0) -> tuple[int | None, Any]:
    """:func:`resolve_dynamic_smem` and the launch site it was read at (its ``line`` and ``config["smem"]``):
    ``(bytes, site)``; ``(None, first site)`` when no site's expression is a constant, ``(None, None)`` with no
    launch site."""
    sites = getattr(kernel, "launch_sites", []) or []
    for site in sites:
        val = _site_value(source, kernel, site, offset, "smem")
        if val is not None:
            return val, site
    return None, (sites[0] if sites else None)
