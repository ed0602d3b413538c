"""External kernels: llm.c's ``dev/cuda`` kernel progressions as optimization starts with expert anchors.

Each llm.c file holds several versions of one operation (``..._kernel1`` naive, later ones written by the
llm.c authors), a host launcher per version (``gelu_forward1(...)``), a dispatch that switches on
``kernel_num`` (``gelu_forward(kernel_num, ...)``) and a ``main()`` that allocates, fills and benchmarks.
This module reads such a folder (never copying it into the project) and builds, for each version, a **work
copy** outside the repository from which the project's zero-config CUDA inference
(:func:`htam_core.harness.infer_cuda.infer_cuda_harness`) reads the harness:

* the shared ``common.h`` is inlined, so the host evaluator sees ``ceil_div`` and the allocation helpers;
* ``ENABLE_BF16``/``ENABLE_FP16`` are dropped, so ``floatX`` is ``float`` (the fp32 build of the file);
* ``int kernel_num = ...`` in ``main()`` is set to the version, so main's dispatch reaches that version's
  launcher (a ``switch`` case, followed by the inference through up to two host functions).

The naive version is the oracle of the optimize run (the inferred harness has no reference). Families
loaders call :func:`discover` and :func:`build_harness`; ``bench/bench_llmc.py`` is the benchmark.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.cu_eval import Program, base_type, function_name, param_declarations
from htam_core.harness.cu_main import find_nvcc
from htam_core.harness.infer_cuda import infer_cuda_harness
from htam_core.runtime.children import one_shot_kwargs
from htam_core.source.analysis.launch import launch_calls
from htam_core.source.api import parse_text

#: The default block size list is replaced by this one value in a work copy when a block size is forced.
_BLOCK_LIST = re.compile(r"int\s+block_sizes\s*\[\s*\]\s*=\s*\{[^}]*\}\s*;")
_KERNEL_NUM = re.compile(r"\bint\s+kernel_num\s*=\s*\d+\s*;")
_FP_DEFINES = re.compile(r"^[ \t]*#[ \t]*define[ \t]+ENABLE_(BF16|FP16)\b.*$", re.M)
_COMMON_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"common\.h"[ \t]*$', re.M)
#: ``case N: [#if... lines] [return] launcherN[<args>](``: a version of the dispatch (a case may open with a
#: preprocessor line, ``case 5:\n#ifndef ENABLE_BF16\n    matmul_backward_bias5(...)``; versions may differ only
#: by the template arguments of one launcher, ``trimul_launcher<matmul_tri_naive>(...)``)
_CASE = re.compile(r"\bcase\s+(\d+)\s*:\s*(?:#[^\n]*\n\s*)*(?:return\s+)?([A-Za-z_]\w*)\s*(<[^;]*?>)?\s*\(")


@dataclass
class LlmcVersion:
    """One version of an llm.c operation: its number (``./prog N``), host launcher as the dispatch calls it
    (with its template arguments, ``trimul_launcher<matmul_tri_naive>``, when versions differ by them) and
    the kernels it launches (empty for a version that calls a library only, such as cuBLAS: it can be an
    expert, never the start)."""

    number: int
    launcher: str
    kernels: list[str]


@dataclass
class LlmcEntry:
    """One llm.c file: its path, the dispatch function and its versions (``versions[0]`` is the naive start)."""

    path: Path
    dispatch: str | None
    versions: list[LlmcVersion] = field(default_factory=list)
    problem: str | None = None

    @property
    def name(self) -> str:
        """The file's stem (``gelu_forward``)."""
        return self.path.stem

    @property
    def naive(self) -> LlmcVersion | None:
        """The starting version: version 1 (llm.c's naive port; a version 0 is a library call such as cuBLAS),
        else the lowest number that launches a kernel; ``None`` when no version was found."""
        own = [v for v in self.versions if v.kernels]
        ones = [v for v in own if v.number == 1]
        return ones[0] if ones else (own[0] if own else None)

    @property
    def experts(self) -> list[LlmcVersion]:
        """The authors' faster versions (every version numbered above the naive one)."""
        n = self.naive
        return [v for v in self.versions if n is not None and v.number > n.number]


@dataclass
class BuiltHarness:
    """A version made runnable: its work copy, the kernel to optimize, and the inferred harness or why not.

    ``unchecked`` (experts only): why the version's outputs cannot be checked against the naive version's on
    the same inputs (its launcher takes other parameters); ``None`` when the harness checks them (its
    oracle is the naive work copy through the naive launcher).
    """

    entry: str
    version: int
    kernel: str
    work_file: Path
    harness: Harness | None
    reason: str | None = None
    unchecked: str | None = None


def _host_functions_launching(text: str, kernels: set[str]) -> dict[str, list[str]]:
    """Host function name -> the kernels of ``kernels`` it launches with ``<<<...>>>`` (in order)."""
    prog = Program(text)
    out: dict[str, list[str]] = {}
    root = prog.tree.root_node
    src = prog.src
    for k in kernels:
        for lc in launch_calls(root, src, k):
            fn = lc.call.parent
            while fn is not None and fn.type != "function_definition":
                fn = fn.parent
            name = function_name(fn) if fn is not None else None
            if name:
                out.setdefault(name, [])
                if k not in out[name]:
                    out[name].append(k)
    return out


def discover_file(path: Path) -> LlmcEntry:
    """Read one llm.c file: its dispatch (the host function whose first parameter is ``int kernel_num``),
    the switch's cases and the kernels each case's launcher launches, in the fp32 build the work copies use
    (``ENABLE_BF16``/``ENABLE_FP16`` not defined).

    Raises:
        HarnessError: the file cannot be read or parsed.
    """
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise HarnessError(f"{path}: cannot read ({e.strerror})") from None
    text = _FP_DEFINES.sub("", text)  # read as the work copies build it (fp32: a BF16-only branch is dropped)
    model = parse_text(text, "cuda", str(path))
    kernels = {k.name for k in model.kernels}
    launching = _host_functions_launching(text, kernels)
    m = re.search(r"\bvoid\s+(\w+)\s*\(\s*int\s+kernel_num\b", text)
    entry = LlmcEntry(path=path, dispatch=m.group(1) if m else None)
    if m is None:
        # one version only (no kernel_num dispatch): main() launches the file's kernels itself
        if model.kernels:
            entry.versions.append(LlmcVersion(1, "main", [model.kernels[0].name]))
        return entry
    host_names = set(Program(text).functions)
    body = text[m.end():]
    nxt = re.search(r"^\}", body, re.M)
    body = body[: nxt.start()] if nxt else body
    for num, fn, targs in _CASE.findall(body):
        ks = list(launching.get(fn, []))
        # a launcher may call a helper that launches (two hops): follow one more level by name
        for helper, hk in launching.items():
            if helper != fn and re.search(rf"\b{re.escape(helper)}\s*[<(]", _function_text(text, fn)):
                ks += [k for k in hk if k not in ks]
        if ks or fn in host_names:
            entry.versions.append(LlmcVersion(int(num), fn + re.sub(r"\s*([<>,])\s*", r"\1", " ".join(targs.split())), ks))  # no kernel: a library version (cuBLAS)
    entry.versions.sort(key=lambda v: v.number)
    return entry


def _function_text(text: str, name: str) -> str:
    """The text of host function ``name`` (its definition as parsed, never a ``__global__`` kernel of the same
    name), or ``""``."""
    from htam_core.harness.cu_launcher import definition_head

    for fn in Program(text).functions.get(name, []):
        if "__global__" not in definition_head(fn):
            return (fn.text or b"").decode("utf-8", "replace")
    return ""


def discover(root: str | Path) -> list[LlmcEntry]:
    """Every llm.c file under ``root`` (``*.cu``, sorted by name) with its versions.

    Raises:
        HarnessError: ``root`` is not a folder.
    """
    r = Path(root)
    if not r.is_dir():
        raise HarnessError(f"{r}: no llm.c folder here; pass --llmc PATH (a checkout's dev/cuda)")
    return [discover_file(p) for p in sorted(r.glob("*.cu"))]


def work_copy_text(entry: LlmcEntry, version: int, block_size: int | None = None) -> str:
    """The text of ``entry``'s work copy for ``version`` (see the module docstring); ``block_size`` replaces
    ``main()``'s list of block sizes with that one value.

    Raises:
        HarnessError: the file or its ``common.h`` cannot be read.
    """
    try:
        text = entry.path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise HarnessError(f"{entry.path}: cannot read ({e.strerror})") from None
    common = entry.path.parent / "common.h"
    if _COMMON_INCLUDE.search(text):
        try:
            body = common.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise HarnessError(f"{common}: cannot read ({e.strerror}); the file includes it") from None
        text = _COMMON_INCLUDE.sub(lambda _m: f"// ---- common.h, inlined by htam's llm.c bench\n{body}\n"
                                   "// ---- end of common.h", text, count=1)
    text = _FP_DEFINES.sub("// (fp32 build: ENABLE_BF16/FP16 dropped by htam's llm.c bench)", text)
    text, n = _KERNEL_NUM.subn(f"int kernel_num = {version};", text, count=1)
    if n == 0 and entry.dispatch is not None:
        raise HarnessError(f"{entry.path.name}: main() has no `int kernel_num = ...;` to select version {version}")
    if block_size is not None:
        text = _BLOCK_LIST.sub(f"int block_sizes[] = {{{int(block_size)}}};", text, count=1)
    return text


def launcher_signature(text: str, name: str) -> list[str] | None:
    """The parameter types of host function ``name`` in ``text`` (element types through the file's typedefs,
    ``*`` kept, ``const`` dropped; a template parameter of the function is ``?``), never a ``__global__``
    kernel of the same name; ``None``: not found. Template arguments of ``name`` (``f<g>``) are ignored."""
    from htam_core.harness.cu_launcher import definition_head, host_definition, template_params

    prog = Program(text)
    name = re.sub(r"<.*>$", "", name.strip()).strip()
    defs = [d for d in prog.functions.get(name, []) if "__global__" not in definition_head(d)]
    if not defs:
        return None
    fn = host_definition(defs, len(param_declarations(defs[0])))
    tparams = template_params(fn)
    out = []
    for p in param_declarations(fn):
        ty = p.child_by_field_name("type")
        t = ty.text.decode("utf-8", "replace") if ty is not None and ty.text else ""
        stars = (p.text or b"").decode("utf-8", "replace").count("*")
        elem = prog.resolve(base_type(t))
        out.append(("?" if elem in tparams else elem) + "*" * stars)
    return out


def same_buffers(mine: list[str] | None, theirs: list[str] | None) -> bool:
    """A version's launcher (``mine``) takes the naive launcher's buffers (``theirs``): the same types in
    order (a template parameter ``?`` matches any element type), possibly without some trailing scalars of
    the naive one (llm.c's cuBLAS version has no block-size parameter)."""
    if not mine or not theirs or len(mine) > len(theirs):
        return False
    for a, b in zip(mine, theirs, strict=False):
        if a.count("*") != b.count("*") or (a.rstrip("*") != b.rstrip("*") and "?" not in (a[0], b[0])):
            return False
    return all("*" not in t for t in theirs[len(mine):])


def build_harness(entry: LlmcEntry, version: LlmcVersion, workdir: str | Path,
                  block_size: int | None = None, like: Harness | None = None) -> BuiltHarness:
    """Write the work copy of ``version`` under ``workdir/<file stem>/v<N>/`` and infer its harness.

    Args:
        entry: the file (from :func:`discover`).
        version: one of ``entry.versions``.
        workdir: a folder outside the repository (created when missing).
        block_size: force main()'s block size (``None``: the first of the file's list).
        like: the naive version's inferred harness (for an expert). When this version's host launcher takes
            the naive launcher's buffers (:func:`same_buffers`), the harness is the
            naive one with this version's launcher: the same buffers, sizes and outputs, and its oracle is
            the naive work copy through the naive launcher (``oracle_launcher``), so a check compares the
            expert's outputs with the naive version's on the same inputs. Otherwise the version's own harness
            is inferred and ``unchecked`` says why it cannot be compared.

    Returns:
        A :class:`BuiltHarness`; ``harness`` is ``None`` and ``reason`` says why when the inference fails
        (the message of :class:`HarnessError`, with file and line). Nothing is raised for a file that does
        not fit; an unreadable file gives a reason too.
    """
    kernel = version.kernels[0] if version.kernels else version.launcher
    out = Path(workdir) / entry.name / (f"v{version.number}" + (f"-b{block_size}" if block_size else ""))
    work = out / entry.path.name
    try:
        out.mkdir(parents=True, exist_ok=True)
        work.write_text(work_copy_text(entry, version.number, block_size), encoding="utf-8")
    except HarnessError as e:
        return BuiltHarness(entry.name, version.number, kernel, work, None, e.message)
    except OSError as e:
        return BuiltHarness(entry.name, version.number, kernel, work, None, f"cannot write {work}: {e.strerror}")
    base = like.launcher.split("(")[0].strip() if like is not None and like.launcher else None
    if like is not None and base and version.launcher != "main":
        text = work.read_text(encoding="utf-8", errors="replace")
        mine, theirs = launcher_signature(text, version.launcher), launcher_signature(text, base)
        if same_buffers(mine, theirs):
            h = dataclasses.replace(like, path=str(work), kernel=kernel, launcher=version.launcher,
                                    oracle_path=like.path, oracle_launcher=like.launcher, origin_path=str(work),
                                    notes=[*like.notes, f"{version.launcher} takes {base}'s parameters: run on "
                                           f"the naive version's buffers and checked against {base}"])
            return BuiltHarness(entry.name, version.number, kernel, work, h)
        why = (f"{version.launcher} takes other parameters than {base} ({', '.join(mine or ['?'])} against "
               f"{', '.join(theirs or ['?'])}), so its outputs cannot be compared on the same inputs")
        try:
            h = infer_cuda_harness(work, kernel)
        except HarnessError as e:
            return BuiltHarness(entry.name, version.number, kernel, work, None, f"{e.message}; {why}", why)
        return BuiltHarness(entry.name, version.number, kernel, work, h, None, why)
    try:
        h = infer_cuda_harness(work, kernel)
    except HarnessError as e:
        return BuiltHarness(entry.name, version.number, kernel, work, None, e.message)
    return BuiltHarness(entry.name, version.number, kernel, work, h)


#: Steps that change launch parameters or add hints only: they do not count as structural steps.
NON_STRUCTURAL = frozenset({"cuda_block_size", "launch_bounds", "triton_block_size", "triton_warps_stages",
                            "triton_autotune", "readonly_cache_loads", "restrict_pointers", "triton_cache_hints",
                            "triton_divisibility_hints", "unroll_loops", "fast_math_intrinsics"})


@dataclass
class StepReach:
    """Whether the rules engine makes one strategy on a kernel as it is: ``refusal`` is ``None`` when it does."""

    strategy: str
    direction: str
    structural: bool
    refusal: str | None

    @property
    def makeable(self) -> bool:
        """The transform produced a validated edit."""
        return self.refusal is None


def reach(path: str | Path, kernel_name: str, text: str | None = None) -> list[StepReach]:
    """Every strategy of the knowledge base that has a mechanical transform for the kernel's language, each
    tried on ``kernel_name`` of ``path`` (no GPU, no compiler: the transforms' own preconditions decide).

    Raises:
        HarnessError: the file cannot be read or has no such kernel.
    """
    from htam_core.memory import load_knowledge
    from htam_core.transforms.registry import resolve_step
    from htam_core.types.profile import Bottleneck, Profile

    p = Path(path)
    try:
        src = text if text is not None else p.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise HarnessError(f"{p}: cannot read ({e.strerror})") from None
    model = parse_text(src, "cuda" if p.suffix in (".cu", ".cuh") else "python", str(p))
    try:
        kernel = model.kernel(kernel_name)
    except KeyError:
        raise HarnessError(f"{p.name}: no kernel {kernel_name!r}") from None
    kb = load_knowledge()
    profile = Profile(kernel=kernel_name, bottleneck=Bottleneck("unknown"))
    out: list[StepReach] = []
    for s in kb.strategies:
        if not s.transform or not s.handles(kernel.language):
            continue
        r = resolve_step(s.title, s.transform, s.guidance, model, kernel, profile, llm_hint="")
        out.append(StepReach(s.id, s.direction, s.id not in NON_STRUCTURAL, None if r else r.reason))
    return out


#: Declarations of the cuBLAS/cuBLASLt names llm.c's host code uses, for a compile-only check on a machine whose
#: CUDA toolkit has no cuBLAS (:func:`cublas_stub`): every function accepts anything and returns 0. Never for
#: running: a library version compiled against it does nothing.
_CUBLAS_STUB = r"""// htam compile-check stub: this toolkit has no cuBLAS; never run code built against it
#pragma once
#include <stdint.h>
#include <library_types.h>
typedef int cublasStatus_t; typedef void* cublasHandle_t; typedef int cublasComputeType_t; typedef int cublasMath_t;
typedef int cublasOperation_t;
enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_16F,
       CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_DEFAULT_MATH, CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_GEMM_DEFAULT,
       CUBLAS_GEMM_DEFAULT_TENSOR_OP };
#define HTAM_STUB(name) template <class... A> static inline int name(A...) { return 0; }
HTAM_STUB(cublasCreate) HTAM_STUB(cublasSetMathMode) HTAM_STUB(cublasDestroy) HTAM_STUB(cublasSgemm)
HTAM_STUB(cublasSgemmStridedBatched) HTAM_STUB(cublasGemmEx) HTAM_STUB(cublasGemmStridedBatchedEx)
HTAM_STUB(cublasSetStream) HTAM_STUB(cublasSetWorkspace)
"""
_CUBLASLT_STUB = r"""// htam compile-check stub: this toolkit has no cuBLASLt; never run code built against it
#pragma once
#include "cublas_v2.h"
typedef void* cublasLtHandle_t; typedef void* cublasLtMatmulDesc_t; typedef void* cublasLtMatrixLayout_t;
typedef void* cublasLtMatmulPreference_t; typedef int cublasLtEpilogue_t;
typedef struct { int algo; int workspaceSize; int state; float wavesCount; } cublasLtMatmulHeuristicResult_t;
enum { CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_GELU_BIAS,
       CUBLASLT_MATMUL_DESC_BIAS_POINTER, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_MATMUL_DESC_TRANSA,
       CUBLASLT_MATMUL_DESC_TRANSB, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES };
HTAM_STUB(cublasLtCreate) HTAM_STUB(cublasLtDestroy) HTAM_STUB(cublasLtMatmul) HTAM_STUB(cublasLtMatmulAlgoGetHeuristic)
HTAM_STUB(cublasLtMatmulDescCreate) HTAM_STUB(cublasLtMatmulDescDestroy) HTAM_STUB(cublasLtMatmulDescSetAttribute)
HTAM_STUB(cublasLtMatmulPreferenceCreate) HTAM_STUB(cublasLtMatmulPreferenceDestroy)
HTAM_STUB(cublasLtMatmulPreferenceSetAttribute) HTAM_STUB(cublasLtMatrixLayoutCreate)
HTAM_STUB(cublasLtMatrixLayoutDestroy)
"""


def toolkit_has_header(name: str) -> bool:
    """nvcc finds ``#include <name>`` (``cublas_v2.h``): a preprocess-only run of a one-line file; ``False``
    when nvcc is missing."""
    import subprocess
    import tempfile

    nvcc = find_nvcc()
    if nvcc is None:
        return False
    with tempfile.TemporaryDirectory(prefix="htam-hdr-") as tmp:
        src = Path(tmp) / "probe.cu"
        src.write_text(f"#include <{name}>\n", encoding="utf-8")
        proc = subprocess.run([nvcc, "-E", str(src), "-o", str(Path(tmp) / "probe.ii")], capture_output=True,
                              text=True, timeout=120, **one_shot_kwargs())
    return proc.returncode == 0


def cublas_stub(folder: str | Path) -> Path:
    """Write a compile-check stand-in for cuBLAS under ``folder`` (``cublas_v2.h``, ``cublasLt.h`` and empty
    ``libcublas.so``/``libcublasLt.so`` to link against) and return it; pass ``-I<it> -L<it>`` to nvcc (the
    static bench does, through ``NVCC_APPEND_FLAGS``). Only for a machine whose toolkit has no cuBLAS: the
    kernels and the shims are compiled for real, cuBLAS calls only against these declarations.

    Raises:
        HarnessError: the folder cannot be written or the empty libraries cannot be linked (no host compiler).
    """
    import subprocess

    d = Path(folder)
    try:
        d.mkdir(parents=True, exist_ok=True)
        (d / "cublas_v2.h").write_text(_CUBLAS_STUB, encoding="utf-8")
        (d / "cublasLt.h").write_text(_CUBLASLT_STUB, encoding="utf-8")
        (d / "empty.c").write_text("int htam_cublas_stub;\n", encoding="utf-8")
    except OSError as e:
        raise HarnessError(f"cannot write the cuBLAS stub under {d}: {e.strerror}") from None
    for lib in ("libcublas.so", "libcublasLt.so"):
        try:
            proc = subprocess.run(["cc", "-shared", "-fPIC", str(d / "empty.c"), "-o", str(d / lib)],
                                  capture_output=True, text=True, timeout=120, **one_shot_kwargs())
        except OSError as e:
            raise HarnessError(f"cannot link the cuBLAS stub {lib}: no host compiler `cc` ({e.strerror})") from None
        if proc.returncode != 0:
            raise HarnessError(f"cannot link the cuBLAS stub {lib}: {proc.stderr[-500:]}")
    return d


def first_error(message: str) -> str:
    """One line for a build failure's message: which build (``the build of gelu1 failed``) and the first
    compiler error line (``gelu.cu(12): error: ...``, folders dropped), else the message's first line."""
    lines = message.splitlines()
    hit = next((ln for ln in lines if re.search(r"\berror\b", ln) and "could not build" not in ln), None)
    if hit is None:
        return " ".join((lines[0] if lines else "").split())
    head = lines[0].split(": nvcc could not build")[0] if "nvcc could not build" in lines[0] else ""
    hit = re.sub(r"(?<![\w.])/(?:[^\s/:]+/)+", "", " ".join(hit.split()))
    return f"{head}: {hit}" if head else hit


def build_status(built: BuiltHarness) -> dict[str, object]:
    """Whether the harness of ``built`` compiles (:func:`htam_core.harness.build_check.check_build`, nvcc,
    no GPU): ``{"ok", "reason", "built", "oracle_checked", "s"}``; ``ok`` is False with the harness's own
    reason when there is no harness. Never raises."""
    import time

    from htam_core.harness.build_check import check_build

    if built.harness is None:
        return {"ok": False, "reason": f"no harness: {built.reason}", "built": [], "oracle_checked": False, "s": 0.0}
    t0 = time.time()
    try:
        bc = check_build(built.harness)
    except HarnessError as e:
        return {"ok": False, "reason": first_error(e.message)[:300], "built": [], "oracle_checked": False,
                "s": round(time.time() - t0, 1)}
    return {"ok": True, "reason": None, "built": bc.built, "oracle_checked": bc.oracle_checked and not built.unchecked,
            "s": round(time.time() - t0, 1)}
