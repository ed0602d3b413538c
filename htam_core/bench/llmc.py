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

#: The default block size list is replaced by this one value in a work copy when a block size is forced.
_BLOCK_LIST = re.compile(r"int\s+block_sizes\s*\[\s*\]\s*=\s*\{[^}]*\}\s*;")
_KERNEL_NUM = re.compile(r"\bint\s+kernel_num\s*=\s*\d+\s*;")
_FP_DEFINES = re.compile(r"^[ \t]*#[ \t]*define[ \t]+ENABLE_(BF16|FP16)\b.*$", re.M)
_COMMON_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"common\.h"[ \t]*$', re.M)
_CASE = re.compile(r"\bcase\s+(\d+)\s*:\s*(?:return\s+)?([A-Za-z_]\w*)\s*(?:<[^;]*?>)?\s*\(")


@dataclass
class LlmcVersion:
    """One version of an llm.c operation: its number (``./prog N``), host launcher and the kernels it launches."""

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
        else the lowest number; ``None`` when no version was found."""
        ones = [v for v in self.versions if v.number == 1]
        return ones[0] if ones else (self.versions[0] if self.versions else None)

    @property
    def experts(self) -> list[LlmcVersion]:
        """The authors' faster versions (every version numbered above the naive one)."""
        n = self.naive
        return [v for v in self.versions if n is not None and v.number > n.number]


@dataclass
class BuiltHarness:
    """A version made runnable: its work copy, the kernel to optimize, and the inferred harness or why not."""

    entry: str
    version: int
    kernel: str
    work_file: Path
    harness: Harness | None
    reason: str | None = None


def _host_functions_launching(text: str, kernels: set[str]) -> dict[str, list[str]]:
    """Host function name -> the kernels of ``kernels`` it launches with ``<<<...>>>`` (in order)."""
    from htam_core.harness.cu_eval import Program, function_name
    from htam_core.source.analysis.launch import launch_calls

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
    the switch's cases and the kernels each case's launcher launches.

    Raises:
        HarnessError: the file cannot be read or parsed.
    """
    from htam_core.source.api import parse_text

    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise HarnessError(f"{path}: cannot read ({e.strerror})") from None
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
    body = text[m.end():]
    nxt = re.search(r"^\}", body, re.M)
    body = body[: nxt.start()] if nxt else body
    for num, fn in _CASE.findall(body):
        ks = list(launching.get(fn, []))
        # a launcher may call a helper that launches (two hops): follow one more level by name
        for helper, hk in launching.items():
            if helper != fn and re.search(rf"\b{re.escape(helper)}\s*[<(]", _function_text(text, fn)):
                ks += [k for k in hk if k not in ks]
        if ks:
            entry.versions.append(LlmcVersion(int(num), fn, ks))
    entry.versions.sort(key=lambda v: v.number)
    return entry


def _function_text(text: str, name: str) -> str:
    """The text of host function ``name`` (from its signature to the next top-level ``}``), or ``""``."""
    m = re.search(rf"^[\w:<>\s\*&]*\b{re.escape(name)}\s*\([^;{{]*\)\s*\{{", text, re.M)
    if m is None:
        return ""
    end = re.search(r"^\}", text[m.end():], re.M)
    return text[m.start(): m.end() + (end.start() if end else len(text))]


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


def _launcher_arity(text: str, name: str) -> int | None:
    """The number of parameters of host function ``name`` in ``text`` (``None``: not found)."""
    m = re.search(rf"\bvoid\s+{re.escape(name)}\s*\(([^)]*)\)\s*\{{", text)
    if m is None:
        return None
    return len([p for p in m.group(1).split(",") if p.strip()])


def build_harness(entry: LlmcEntry, version: LlmcVersion, workdir: str | Path,
                  block_size: int | None = None, like: Harness | None = None) -> BuiltHarness:
    """Write the work copy of ``version`` under ``workdir/<file stem>/v<N>/`` and infer its harness.

    Args:
        entry: the file (from :func:`discover`).
        version: one of ``entry.versions``.
        workdir: a folder outside the repository (created when missing).
        block_size: force main()'s block size (``None``: the first of the file's list).
        like: the naive version's inferred harness. When this version's own inference fails (an expert that
            writes through ``store128`` has no write set the source model reads) and both are host launchers
            with the same number of parameters, the harness is the naive one with this version's launcher:
            the same buffers, sizes and outputs (the expert's result is then not checked by htam; llm.c's
            own main() validates it).

    Returns:
        A :class:`BuiltHarness`; ``harness`` is ``None`` and ``reason`` says why when the inference fails
        (the message of :class:`HarnessError`, with file and line). Nothing is raised for a file that does
        not fit; an unreadable file gives a reason too.
    """
    from htam_core.harness.infer_cuda import infer_cuda_harness

    kernel = version.kernels[0]
    out = Path(workdir) / entry.name / (f"v{version.number}" + (f"-b{block_size}" if block_size else ""))
    work = out / entry.path.name
    try:
        out.mkdir(parents=True, exist_ok=True)
        work.write_text(work_copy_text(entry, version.number, block_size), encoding="utf-8")
    except HarnessError as e:
        return BuiltHarness(entry.name, version.number, kernel, work, None, e.message)
    except OSError as e:
        return BuiltHarness(entry.name, version.number, kernel, work, None, f"cannot write {work}: {e.strerror}")
    try:
        h = infer_cuda_harness(work, kernel)
    except HarnessError as e:
        if like is None or not like.launcher:
            return BuiltHarness(entry.name, version.number, kernel, work, None, e.message)
        text = work.read_text(encoding="utf-8", errors="replace")
        base = like.launcher.split("(")[0].strip()
        if _launcher_arity(text, version.launcher) != _launcher_arity(text, base):
            return BuiltHarness(entry.name, version.number, kernel, work, None,
                                f"{e.message}; the naive harness does not fit either ({version.launcher} and "
                                f"{base} take different parameters)")
        h = dataclasses.replace(like, path=str(work), kernel=kernel, launcher=version.launcher,
                                oracle_path=str(work), notes=[*like.notes, f"harness of {like.kernel} reused "
                                                              f"({e.message})"])
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
    from htam_core.source.api import parse_text
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
        if not s.transform or kernel.language not in s.languages:
            continue
        r = resolve_step(s.title, s.transform, s.guidance, model, kernel, profile, llm_hint="")
        out.append(StepReach(s.id, s.direction, s.id not in NON_STRUCTURAL, None if r else r.reason))
    return out
