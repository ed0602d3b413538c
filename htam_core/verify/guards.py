"""Static reward-hack guards over candidate source (KernelBench's checker and known hacks; scoped to the kernel and its launcher).

A candidate (LLM output, transform output, a KernelBench ``ModelNew`` file) is checked *before* any
time counts. Each guard is a named :class:`Rule` with its rationale and the source of the idea:

* KernelBench's static checker (``src/kernel_static_checker.py`` upstream): a list of named patterns,
  each with a rationale; its bypass checks come from the Kevin paper (arXiv:2507.11948);
* KernelBench's list of known reward hacks (zeros on reductions, side streams,
  result caching, TF32 against an fp32 baseline, inputs mutated in place, a persisting L2 window).

Python is analysed with the ``ast`` module (aliases of imports are resolved, so ``import time as t;
t.perf_counter = ...`` is seen). CUDA, in ``.cu`` files and in CUDA sources held in Python strings, is
analysed with tree-sitter-cuda queries. Plain token search is used only for inline-PTX strings,
where the token *is* the structure.

Severities: ``"refuse"`` means the candidate is rejected; ``"label"`` means it may run but its result
is labelled (TF32 or reduced precision against an fp32 baseline: never counted as a plain speedup).

Scope: only the kernel and its launcher are judged (:func:`htam_core.source.scope.kernel_scope`): findings in
``main()``, ``if __name__ == "__main__":`` self-tests, driver functions and code the kernel never reaches are
dropped, so a stream created by a test program or a bf16 self-test does not refuse or label the kernel.

Static checks are not complete and do not replace the runtime checks (poisoned outputs, several
seeds, fresh inputs, a second input set, timing all streams): they catch the common forms cheaply.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from htam_core.source.analysis.launch import LAUNCH_QUERY
from htam_core.source.analysis.syntax import captures, parse
from htam_core.source.scope import kernel_scope

Severity = Literal["refuse", "label"]

#: Languages accepted by :func:`check_source` (``htam_core.source.model.Language`` plus ``"python"``).
PYTHON_LANGUAGES = frozenset({"python", "triton", "cuda-in-python"})
CUDA_LANGUAGES = frozenset({"cuda"})


@dataclass(frozen=True)
class GuardFinding:
    """One rule that fired.

    Attributes:
        rule_id: the :class:`Rule` id.
        severity: ``"refuse"`` or ``"label"``.
        message: what was found, in words, naming the construct.
        line: 1-based line in the checked file (CUDA inside a Python string is mapped to the file's line).
    """

    rule_id: str
    severity: Severity
    message: str
    line: int

    def to_json(self) -> dict[str, Any]:
        """JSON form: ``{"rule_id", "severity", "message", "line"}``."""
        return {"rule_id": self.rule_id, "severity": self.severity, "message": self.message, "line": self.line}


@dataclass(frozen=True)
class Rule:
    """A named static guard.

    Attributes:
        id: stable identifier (used in verdicts, ``refused_by``, fixture names).
        severity: ``"refuse"`` or ``"label"``.
        title: one line.
        rationale: why this pattern is a reward hack.
        source: where the idea comes from (KernelBench static checker, KernelBench's known hacks).
        languages: ``{"python", "cuda"}`` subsets the rule inspects.
    """

    id: str
    severity: Severity
    title: str
    rationale: str
    source: str
    languages: frozenset[str] = field(default_factory=lambda: frozenset({"python", "cuda"}))


_KB = "KernelBench static checker (kernel_static_checker.py)"
_KB_HACKS = "KernelBench known hacks"

RULES: tuple[Rule, ...] = (
    Rule("unparsable-source", "refuse", "the candidate does not parse",
         "The guards cannot vouch for code they cannot read; a candidate that does not parse cannot run either.",
         "HTAM (this project)", frozenset({"python"})),
    Rule("bypass-try-except", "refuse", "try/except that swallows errors",
         "A handler that does not re-raise lets a failing custom kernel fall back silently to another path "
         "(usually the PyTorch reference), so a broken kernel passes the correctness check.",
         f"{_KB}: code_bypass / try-except fallback (Kevin paper)", frozenset({"python"})),
    Rule("bypass-pass", "refuse", "forward is a no-op or inherited from the reference",
         "A ModelNew that subclasses Model and leaves forward to it (pass, super().forward, no override) runs "
         "the reference itself; a forward whose body is pass computes nothing.",
         f"{_KB}: code_bypass / pass-statement inheritance bypass (Kevin paper)", frozenset({"python"})),
    Rule("timing-monkeypatch", "refuse", "timing functions replaced",
         "Reassigning CUDA events, synchronize, time.* or triton.testing.do_bench (or #defining CUDA timing "
         "APIs) changes what the benchmark measures instead of making the kernel faster.",
         f"{_KB}: check_monkey_patch"),
    Rule("side-stream", "refuse", "work launched on a side stream",
         "CUDA-event timing records the current stream only; work put on another stream escapes the timed "
         "interval and the result may not even be ready when it is checked.",
         f"{_KB}: stream injection; {_KB_HACKS}"),
    Rule("background-thread", "refuse", "threads or processes started by the candidate",
         "Work deferred to a thread or process escapes the timed interval or races with the check.",
         f"{_KB}: thread injection"),
    Rule("result-cache", "refuse", "results cached across calls",
         "Storing outputs keyed on the inputs (a dict, lru_cache, state written in forward, a static tensor) "
         "makes every timed call after the first free and breaks on fresh inputs.",
         f"{_KB_HACKS}: result caching"),
    Rule("no-custom-kernel", "refuse", "forward launches no custom kernel",
         "A forward that only calls PyTorch operators (for example torch.matmul for a matmul task) measures "
         "the reference library, not a generated kernel.",
         f"{_KB}: pytorch_wrap / torch_computation_ops / backend impl checks", frozenset({"python"})),
    Rule("input-mutation", "refuse", "forward mutates its inputs in place",
         "Writing into an input tensor changes what the reference sees afterwards and can make a wrong "
         "result compare equal; it also skips an allocation the reference pays for.",
         f"{_KB_HACKS}: inputs mutated in place", frozenset({"python"})),
    Rule("persisting-l2", "refuse", "persisting L2 access window",
         "A persisting L2 access policy keeps the inputs resident in L2 across the cache flush that precedes "
         "each timed trial, so the measured time is not the cold-cache time of the reference.",
         f"{_KB_HACKS}: persisting L2 window"),
    Rule("tf32", "label", "TF32 math on fp32 data",
         "TF32 keeps 10 mantissa bits: against an fp32 baseline it is a precision change, not a plain speedup. "
         "Triton's tl.dot uses TF32 for fp32 operands unless input_precision='ieee'.",
         f"{_KB_HACKS}: TF32 against an fp32 baseline"),
    Rule("reduced-precision", "label", "reduced-precision casts against an fp32 baseline",
         "Computing in fp16/bf16/fp8 when the reference is fp32 trades accuracy for speed; the speedup must be "
         "labelled, never reported as a plain fp32 speedup.",
         f"{_KB}: precision downgrade"),
)

RULES_BY_ID: dict[str, Rule] = {r.id: r for r in RULES}


class GuardInputError(ValueError):
    """:func:`check_source` was called with an unsupported language."""


# ------------------------------------------------------------------------------------------------
# Python analysis
# ------------------------------------------------------------------------------------------------

#: Module prefixes whose attributes must never be reassigned by a candidate (timing and sync).
_TIMING_ROOTS = ("time", "timeit", "torch.cuda", "triton.testing", "torch.utils.benchmark", "cupy.cuda",
                 "torch.Tensor.record_stream", "torch.accelerator")
_STREAM_CALLS = ("torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream", "torch.cuda.set_stream",
                 "torch.Stream", "torch.cuda.StreamContext", "cupy.cuda.Stream", "torch.cuda.graphs.CUDAGraph",
                 "torch.cuda.CUDAGraph")
_STREAM_METHODS = ("wait_stream", "record_stream")
_OK_STREAM_VALUES = ("torch.cuda.current_stream", "torch.cuda.default_stream")
_THREAD_MODULES = ("threading", "multiprocessing", "concurrent.futures", "_thread", "asyncio")
_CACHE_DECORATORS = ("functools.lru_cache", "functools.cache", "functools.cached_property")
_EXT_BUILDERS = ("load_inline", "load", "RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel",
                 "_create_jit_fn", "compile", "get_function", "SourceModule")
_REDUCED_DTYPES = ("float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                   "float8_e5m2fnuz", "fp8e4nv", "fp8e5")
_REDUCED_METHODS = ("half", "bfloat16")
#: dtype spellings (triton.language, torch, strings) -> one name, for the operands of ``tl.dot``.
_DTYPE_ALIASES = {"float32": "float32", "fp32": "float32", "float": "float32", "float16": "float16",
                  "half": "float16", "fp16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16",
                  "float64": "float64", "double": "float64", "fp64": "float64",
                  **{n: "fp8" for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                                        "fp8e4nv", "fp8e5", "float8e4nv", "float8e5")},
                  "int8": "int8", "uint8": "uint8"}
_CAST_METHODS = {"half": "float16", "bfloat16": "bfloat16", "float": "float32", "double": "float64"}
_AUTOCAST = ("torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast")
_VIEW_METHODS = ("view", "view_as", "reshape", "flatten", "squeeze", "unsqueeze", "transpose", "permute", "t",
                 "expand", "expand_as", "narrow", "select", "as_strided", "detach", "contiguous", "unflatten",
                 "movedim", "swapaxes", "diagonal", "unfold", "split", "chunk", "unbind", "data")
_INPLACE_OK = ("requires_grad_", "share_memory_", "retain_grad")
_L2_NAMES = frozenset({"accessPolicyWindow", "cudaStreamAttrValue", "cudaLimitPersistingL2CacheSize",
                       "cudaAccessPropertyPersisting", "cudaStreamAttributeAccessPolicyWindow",
                       "cudaKernelNodeAttributeAccessPolicyWindow", "cudaLaunchAttributeAccessPolicyWindow",
                       "cudaAccessPolicyWindow", "CU_LIMIT_PERSISTING_L2_CACHE_SIZE",
                       "CU_ACCESS_PROPERTY_PERSISTING", "CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW"})


def _under(qual: str | None, roots: Iterable[str]) -> bool:
    return qual is not None and any(qual == r or qual.startswith(r + ".") for r in roots)


class _PyAnalysis:
    """One pass over a Python candidate; appends findings via ``emit``."""

    def __init__(self, tree: ast.Module, emit: Callable[[str, str, int], None], baseline_dtype: str | None,
                 covers: Callable[[int], bool] = lambda line: True) -> None:
        self.tree = tree
        self.covers = covers  # line -> in the kernel, its launcher or module-level code
        self.emit = emit
        self.baseline_fp32 = baseline_dtype in ("float32", "fp32", "torch.float32")
        self.aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        self.module_names = self._module_level_names()
        self.noop_forwards: set[int] = set()  # reported by bypass-pass; no-custom-kernel stays silent
        self._launch_dtypes: dict[str, dict[str, str | None]] | None = None

    # -- helpers ------------------------------------------------------------------------------
    def qual(self, node: ast.AST) -> str | None:
        """Dotted name of a Name/Attribute chain with import aliases resolved, else ``None``."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.qual(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _module_level_names(self) -> set[str]:
        names: set[str] = set()
        for n in self.tree.body:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
                n, ast.AnnAssign | ast.AugAssign) else []
            for t in targets:
                names.update(x.id for x in ast.walk(t) if isinstance(x, ast.Name))
        return names

    def model_classes(self) -> list[ast.ClassDef]:
        """``ModelNew`` when present, else every class with a ``forward`` method."""
        new = [c for c in self.classes if c.name == "ModelNew"]
        if new:
            return new
        return [c for c in self.classes if any(isinstance(b, ast.FunctionDef) and b.name == "forward"
                                               for b in c.body)]

    @staticmethod
    def method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
        return next((b for b in cls.body if isinstance(b, ast.FunctionDef) and b.name == name), None)

    def reachable(self, cls: ast.ClassDef, start: ast.FunctionDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """``start`` plus the module functions and methods of ``cls`` it calls, transitively."""
        seen: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        todo: list[ast.FunctionDef | ast.AsyncFunctionDef] = [start]
        while todo:
            fn = todo.pop()
            if id(fn) in seen:
                continue
            seen[id(fn)] = fn
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                f = call.func
                if isinstance(f, ast.Name) and f.id in self.functions:
                    todo.append(self.functions[f.id])
                elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self"
                      and (m := self.method(cls, f.attr)) is not None):
                    todo.append(m)
        return list(seen.values())

    def jit_kernels(self) -> dict[str, ast.FunctionDef]:
        """Functions decorated with ``@triton.jit`` / ``@triton.autotune`` / ``@triton.heuristics``."""
        out: dict[str, ast.FunctionDef] = {}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.FunctionDef):
                for d in n.decorator_list:
                    q = self.qual(d.func if isinstance(d, ast.Call) else d)
                    if q and q.startswith("triton.") and q.split(".")[-1] in ("jit", "autotune", "heuristics"):
                        out[n.name] = n
        return out

    # -- rules --------------------------------------------------------------------------------
    def run(self) -> None:
        self.rule_try_except()
        self.rule_pass_bypass()
        self.rule_timing_patch()
        self.rule_side_stream()
        self.rule_threads()
        self.rule_cache()
        self.rule_no_kernel()
        self.rule_input_mutation()
        self.rule_l2()
        self.rule_tf32()
        if self.baseline_fp32:
            self.rule_reduced_precision()

    def rule_try_except(self) -> None:
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Try | ast.TryStar):
                for h in n.handlers:
                    if not any(isinstance(x, ast.Raise) for x in ast.walk(ast.Module(body=h.body, type_ignores=[]))):
                        what = ast.unparse(h.type) if h.type is not None else "every exception"
                        self.emit("bypass-try-except", f"try/except catches {what} and does not re-raise: a failing "
                                  f"kernel would fall back silently", n.lineno)
                        break

    def rule_pass_bypass(self) -> None:
        for cls in self.model_classes():
            base_names = {self.qual(b) for b in cls.bases}
            inherits_ref = any(b and b.split(".")[-1] == "Model" for b in base_names)
            fwd = self.method(cls, "forward")
            if inherits_ref and fwd is None:
                self.emit("bypass-pass", f"class {cls.name} inherits forward from the reference Model", cls.lineno)
                continue
            if fwd is None:
                continue
            body = [s for s in fwd.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                and isinstance(s.value.value, str))]
            if all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                               and s.value.value is Ellipsis) for s in body):
                self.emit("bypass-pass", f"{cls.name}.forward does nothing (body is pass)", fwd.lineno)
                self.noop_forwards.add(id(fwd))
                continue
            for call in (n for n in ast.walk(fwd) if isinstance(n, ast.Call)):
                f = call.func
                if (isinstance(f, ast.Attribute) and f.attr == "forward" and isinstance(f.value, ast.Call)
                        and isinstance(f.value.func, ast.Name) and f.value.func.id == "super"):
                    self.emit("bypass-pass", f"{cls.name}.forward calls super().forward(): the reference runs",
                              call.lineno)

    def rule_timing_patch(self) -> None:
        for n in ast.walk(self.tree):
            targets: list[ast.AST] = []
            if isinstance(n, ast.Assign):
                targets = list(n.targets)
            elif isinstance(n, ast.AugAssign | ast.AnnAssign):
                targets = [n.target]
            elif isinstance(n, ast.Delete):
                targets = list(n.targets)
            for t in targets:
                for sub in (t.elts if isinstance(t, ast.Tuple | ast.List) else [t]):
                    if isinstance(sub, ast.Attribute) and _under(q := self.qual(sub), _TIMING_ROOTS):
                        self.emit("timing-monkeypatch", f"reassigns {q}", n.lineno)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("setattr", "delattr") \
                    and n.args and _under(q := self.qual(n.args[0]), _TIMING_ROOTS):
                attr = ast.unparse(n.args[1]) if len(n.args) > 1 else "?"
                self.emit("timing-monkeypatch", f"{n.func.id}({q}, {attr}, ...) patches a timing API", n.lineno)

    def rule_side_stream(self) -> None:
        for n in ast.walk(self.tree):
            if not isinstance(n, ast.Call):
                continue
            q = self.qual(n.func)
            if q in _STREAM_CALLS or (q and q.split(".")[-1] in ("Stream", "ExternalStream")):
                self.emit("side-stream", f"creates or enters a CUDA stream ({q})", n.lineno)
            elif isinstance(n.func, ast.Attribute) and n.func.attr in _STREAM_METHODS:
                self.emit("side-stream", f"synchronizes across streams (.{n.func.attr})", n.lineno)
            for kw in n.keywords:
                if kw.arg == "stream" and not self._ok_stream(kw.value):
                    self.emit("side-stream", f"launches with stream={ast.unparse(kw.value)}", n.lineno)

    def _ok_stream(self, v: ast.AST) -> bool:
        if isinstance(v, ast.Constant) and v.value in (None, 0):
            return True
        if isinstance(v, ast.Attribute) and v.attr in ("cuda_stream", "stream_id"):
            v = v.value
        return isinstance(v, ast.Call) and self.qual(v.func) in _OK_STREAM_VALUES

    def rule_threads(self) -> None:
        for n in ast.walk(self.tree):
            mods: list[str] = []
            if isinstance(n, ast.Import):
                mods = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom) and n.module:
                mods = [n.module]
            for m in mods:
                if _under(m, _THREAD_MODULES):
                    self.emit("background-thread", f"imports {m}", n.lineno)

    def rule_cache(self) -> None:
        for n in ast.walk(self.tree):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                for d in n.decorator_list:
                    q = self.qual(d.func if isinstance(d, ast.Call) else d)
                    if q in _CACHE_DECORATORS or q in ("lru_cache", "cache"):
                        self.emit("result-cache", f"{n.name} is memoized with @{q}", d.lineno)
        for cls in self.model_classes():
            fwd = self.method(cls, "forward")
            if fwd is None:
                continue
            for fn in self.reachable(cls, fwd):
                self._cache_writes(fn)

    def _cache_writes(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Writes of input-derived values to state that outlives the call (globals, self, module containers)."""
        args = fn.args
        tainted = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg != "self"}
        tainted |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        globals_ = {name for g in ast.walk(fn) if isinstance(g, ast.Global) for name in g.names}
        local_assigned = {t.id for s in ast.walk(fn) if isinstance(s, ast.Assign) for t in s.targets
                          if isinstance(t, ast.Name)} - globals_

        def uses_taint(e: ast.AST) -> bool:
            return any(isinstance(x, ast.Name) and x.id in tainted for x in ast.walk(e))

        def persistent(t: ast.AST) -> str | None:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                return f"self.{t.attr}"
            if isinstance(t, ast.Name) and (t.id in globals_ or (t.id in self.module_names
                                                                 and t.id not in local_assigned)):
                return t.id
            return None

        for s in sorted((x for x in ast.walk(fn) if isinstance(x, ast.Assign | ast.AugAssign)),
                        key=lambda x: (x.lineno, x.col_offset)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            value_tainted = uses_taint(s.value)
            for t in targets:
                if isinstance(t, ast.Subscript):
                    where = persistent(t.value)
                    if where and (value_tainted or uses_taint(t.slice)):
                        self.emit("result-cache", f"stores a result keyed on the inputs in {where}[...]", s.lineno)
                elif (where := persistent(t)) and value_tainted:
                    self.emit("result-cache", f"keeps an input-derived value in {where} across calls", s.lineno)
                elif isinstance(t, ast.Name) and value_tainted:
                    tainted.add(t.id)
        for c in (x for x in ast.walk(fn) if isinstance(x, ast.Call)):
            if isinstance(c.func, ast.Attribute) and c.func.attr in ("setdefault", "update", "__setitem__") \
                    and (where := persistent(c.func.value)) and any(uses_taint(a) for a in c.args):
                self.emit("result-cache", f"stores input-derived values in {where} via .{c.func.attr}", c.lineno)

    def _kernel_handles(self, cls: ast.ClassDef) -> tuple[set[str], set[str]]:
        """Names and ``self`` attributes bound to compiled extensions or kernels."""
        names = set(self.jit_kernels())
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
                q = self.qual(n.value.func) or ""
                if q.split(".")[-1] in _EXT_BUILDERS:
                    names.update(t.id for t in n.targets if isinstance(t, ast.Name))
        # module functions that launch kernels (wrappers) or return a compiled extension (lazy builders)
        changed = True
        while changed:
            changed = False
            for fname, fn in self.functions.items():
                returns_handle = any(isinstance(r, ast.Return) and isinstance(r.value, ast.Name)
                                     and r.value.id in names for r in ast.walk(fn))
                if fname not in names and (returns_handle or self._launches(fn, names, set())):
                    names.add(fname)
                    changed = True
        attrs: set[str] = set()
        for fn in (b for b in cls.body if isinstance(b, ast.FunctionDef)):
            for s in (x for x in ast.walk(fn) if isinstance(x, ast.Assign)):
                roots = {x.id for x in ast.walk(s.value) if isinstance(x, ast.Name)}
                builds = isinstance(s.value, ast.Call) and (self.qual(s.value.func) or "").split(".")[-1] \
                    in _EXT_BUILDERS
                if roots & names or builds:
                    attrs.update(t.attr for t in s.targets if isinstance(t, ast.Attribute)
                                 and isinstance(t.value, ast.Name) and t.value.id == "self")
        return names, attrs

    @staticmethod
    def _root(e: ast.AST) -> ast.AST:
        while isinstance(e, ast.Attribute | ast.Subscript | ast.Call):
            e = e.func if isinstance(e, ast.Call) else e.value
        return e

    def _launches(self, fn: ast.AST, names: set[str], attrs: set[str]) -> bool:
        for c in (x for x in ast.walk(fn) if isinstance(x, ast.Call)):
            f = c.func
            # self.ext.fn(...) / self.kernel(...)
            chain = f
            while isinstance(chain, ast.Attribute | ast.Subscript):
                if isinstance(chain, ast.Attribute) and isinstance(chain.value, ast.Name) \
                        and chain.value.id == "self" and chain.attr in attrs:
                    return True
                chain = chain.value
            root = self._root(f)
            if isinstance(root, ast.Name) and root.id in names:
                return True
        return False

    def rule_no_kernel(self) -> None:
        for cls in self.model_classes():
            fwd = self.method(cls, "forward")
            if fwd is None or id(fwd) in self.noop_forwards:
                continue
            names, attrs = self._kernel_handles(cls)
            if any(self._launches(fn, names, attrs) for fn in self.reachable(cls, fwd)):
                continue
            torch_ops = sorted({q for c in ast.walk(fwd) if isinstance(c, ast.Call)
                                and (q := self.qual(c.func)) and q.startswith("torch.")})
            ops = f"; it computes with {', '.join(torch_ops)}" if torch_ops else ""
            self.emit("no-custom-kernel", f"{cls.name}.forward launches no custom kernel (no @triton.jit "
                      f"launch, no compiled CUDA extension call){ops}", fwd.lineno)

    def rule_input_mutation(self) -> None:
        jit = self.jit_kernels()
        written = {name: self._stored_params(fn) for name, fn in jit.items()}
        for cls in self.model_classes():
            fwd = self.method(cls, "forward")
            if fwd is None:
                continue
            a = fwd.args
            inputs = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs] if x.arg != "self"}
            alias = set(inputs)
            for s in sorted((x for x in ast.walk(fwd) if isinstance(x, ast.Assign)), key=lambda x: x.lineno):
                if self._aliases_input(s.value, alias):
                    alias.update(t.id for t in s.targets if isinstance(t, ast.Name))
            for n in ast.walk(fwd):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                    m = n.func.attr
                    if m.endswith("_") and not m.startswith("_") and m not in _INPLACE_OK \
                            and self._aliases_input(n.func.value, alias):
                        self.emit("input-mutation", f"calls in-place {ast.unparse(n.func)}() on a forward input",
                                  n.lineno)
                if isinstance(n, ast.Call):
                    for kw in n.keywords:
                        if kw.arg == "out" and self._aliases_input(kw.value, alias):
                            self.emit("input-mutation", f"writes into a forward input with out={ast.unparse(kw.value)}",
                                      n.lineno)
                    if isinstance(n.func, ast.Subscript) and isinstance(n.func.value, ast.Name) \
                            and n.func.value.id in written:
                        params = [p.arg for p in jit[n.func.value.id].args.args]
                        for i, arg in enumerate(n.args):
                            if i < len(params) and params[i] in written[n.func.value.id] \
                                    and self._aliases_input(arg, alias):
                                self.emit("input-mutation", f"kernel {n.func.value.id} stores into forward input "
                                          f"{ast.unparse(arg)} (parameter {params[i]})", n.lineno)
                if isinstance(n, ast.Assign | ast.AugAssign):
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    for t in targets:
                        if isinstance(t, ast.Subscript) and self._aliases_input(t.value, alias):
                            self.emit("input-mutation", f"assigns into forward input {ast.unparse(t)}", n.lineno)
                        elif isinstance(n, ast.AugAssign) and isinstance(t, ast.Name) and t.id in alias:
                            self.emit("input-mutation", f"updates forward input {t.id} in place "
                                      f"(augmented assignment)", n.lineno)

    def _aliases_input(self, e: ast.AST, alias: set[str]) -> bool:
        while True:
            if isinstance(e, ast.Name):
                return e.id in alias
            if isinstance(e, ast.Subscript):
                e = e.value
            elif isinstance(e, ast.Attribute) and e.attr == "data":
                e = e.value
            elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _VIEW_METHODS:
                e = e.func.value
            else:
                return False

    def _stored_params(self, fn: ast.FunctionDef) -> set[str]:
        """Parameters used as the base pointer of ``tl.store`` / ``tl.atomic_*`` in a Triton kernel."""
        params = {p.arg for p in fn.args.args}
        out: set[str] = set()
        for c in (x for x in ast.walk(fn) if isinstance(x, ast.Call)):
            q = self.qual(c.func) or ""
            last = q.split(".")[-1]
            if (last == "store" or last.startswith("atomic_")) and c.args:
                out.update(x.id for x in ast.walk(c.args[0]) if isinstance(x, ast.Name) and x.id in params)
        return out

    def rule_l2(self) -> None:
        for n in ast.walk(self.tree):
            name = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else None
            if name in _L2_NAMES:
                self.emit("persisting-l2", f"uses {name} (persisting L2 access policy)", n.lineno)

    def rule_tf32(self) -> None:
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    q = self.qual(t) or ""
                    v = n.value.value if isinstance(n.value, ast.Constant) else None
                    if q.endswith("allow_tf32") and v is True:
                        self.emit("tf32", f"enables TF32 ({q} = True)", n.lineno)
                    elif q.endswith("fp32_precision") and isinstance(v, str) and "tf32" in v.lower():
                        self.emit("tf32", f"enables TF32 ({q} = {v!r})", n.lineno)
            if not isinstance(n, ast.Call):
                continue
            q = self.qual(n.func) or ""
            if q.endswith("set_float32_matmul_precision"):
                arg = n.args[0] if n.args else None
                if not (isinstance(arg, ast.Constant) and arg.value == "highest"):
                    self.emit("tf32", f"lowers fp32 matmul precision ({ast.unparse(n)})", n.lineno)
            elif self._is_tl_dot(q):
                kws = {k.arg: k.value for k in n.keywords}
                prec = kws.get("input_precision")
                allow = kws.get("allow_tf32")
                if isinstance(prec, ast.Constant):
                    if isinstance(prec.value, str) and "tf32" in prec.value:
                        self.emit("tf32", f"tl.dot with input_precision={prec.value!r}", n.lineno)
                    continue
                if isinstance(allow, ast.Constant) and allow.value is False:
                    continue
                why = self._dot_fp32_operands(n)
                if why is None:
                    continue
                if isinstance(allow, ast.Constant) and allow.value is True:
                    self.emit("tf32", f"tl.dot with allow_tf32=True on {why}", n.lineno)
                else:
                    self.emit("tf32", f"tl.dot on {why} without input_precision='ieee': Triton uses TF32 for "
                              "fp32 operands by default", n.lineno)

    @staticmethod
    def _is_tl_dot(q: str) -> bool:
        return q in ("triton.language.dot", "triton.language.core.dot") or (
            q.endswith(".dot") and q.split(".")[0] in ("tl", "triton"))

    # -- operand dtypes of tl.dot (kernel data flow, then the launcher's arguments) ------------------
    def _dtype_name(self, node: ast.AST | None) -> str | None:
        """``tl.float16``/``torch.half``/``"fp16"`` -> ``"float16"`` (``float32``, ``bfloat16``, ``fp8``...)."""
        if node is None:
            return None
        text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else \
            (self.qual(node) or "").rsplit(".", 1)[-1]
        return _DTYPE_ALIASES.get(text)

    def _dot_fp32_operands(self, call: ast.Call) -> str | None:
        """Why the operands of ``call`` count as fp32 (``"fp32 operands"``), or ``None`` when they do not.

        An operand's dtype comes from the kernel's own data flow (``.to(tl.float16)``, ``tl.zeros(dtype=)``,
        ``tl.load`` of a pointer parameter) and, for a pointer parameter, from the launcher's argument
        (``x.half()``, ``torch.empty(..., dtype=torch.float16)``, ``assert x.dtype == torch.float16``).
        Unknown operands count as fp32 only against an fp32 baseline (then Triton would use TF32).
        """
        fn = next((k for k in self.jit_kernels().values()
                   if k.lineno <= call.lineno <= (k.end_lineno or k.lineno)), None)
        ops = call.args[:2]
        if fn is None or len(ops) < 2:
            return "operands of unknown dtype" if self.baseline_fp32 else None
        env = self._assignments(fn)
        params = self._launch_param_dtypes().get(fn.name, {})
        dts = [self._kernel_dtype(op, env, params, 0) for op in ops]
        if "float32" in dts:
            return "fp32 operands"
        if all(d is not None for d in dts):
            return None
        return "operands of unknown dtype (fp32 baseline)" if self.baseline_fp32 else None

    @staticmethod
    def _assignments(fn: ast.AST) -> dict[str, list[ast.AST]]:
        env: dict[str, list[ast.AST]] = {}
        for st in ast.walk(fn):
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        env.setdefault(t.id, []).append(st.value)
            elif isinstance(st, ast.AugAssign | ast.AnnAssign) and isinstance(st.target, ast.Name) \
                    and st.value is not None:
                env.setdefault(st.target.id, []).append(st.value)
        return env

    def _kernel_dtype(self, e: ast.AST, env: dict[str, list[ast.AST]], params: dict[str, str | None],
                      depth: int) -> str | None:
        """Static dtype of a Triton expression, or ``None`` when unknown."""
        if depth > 12:
            return None
        if isinstance(e, ast.Name):
            if e.id in params:
                return params[e.id]
            found = {self._kernel_dtype(v, env, params, depth + 1) for v in env.get(e.id, [])}
            return found.pop() if len(found) == 1 else ("float32" if "float32" in found else None)
        if isinstance(e, ast.Subscript):
            return self._kernel_dtype(e.value, env, params, depth + 1)
        if isinstance(e, ast.BinOp):
            a = self._kernel_dtype(e.left, env, params, depth + 1)
            b = self._kernel_dtype(e.right, env, params, depth + 1)
            return "float32" if "float32" in (a, b) else (a if a == b else None)
        if not isinstance(e, ast.Call):
            return None
        kws = {k.arg: k.value for k in e.keywords}
        if isinstance(e.func, ast.Attribute) and e.func.attr == "to":
            target = e.args[0] if e.args else kws.get("dtype")
            if isinstance(target, ast.Attribute) and target.attr == "element_ty":  # x.to(p.dtype.element_ty)
                root = self._root(target)
                return params.get(root.id) if isinstance(root, ast.Name) else None
            return self._dtype_name(target)
        q = (self.qual(e.func) or "").rsplit(".", 1)[-1]
        if q in ("zeros", "full", "zeros_like", "full_like", "empty"):
            return self._dtype_name(kws.get("dtype"))
        if q == "load" and e.args:
            base = self._pointer_base(e.args[0], env, params)
            return params.get(base) if base is not None else None
        if q in ("trans", "permute", "reshape", "view", "broadcast_to", "where") and e.args:
            return self._kernel_dtype(e.args[-1 if q == "where" else 0], env, params, depth + 1)
        return None

    def _pointer_base(self, e: ast.AST, env: dict[str, list[ast.AST]], params: dict[str, str | None]) -> str | None:
        """The pointer parameter an address expression (``a_ptr + offs``, a name bound to one) starts from."""
        seen: set[str] = set()
        while True:
            e = self._root(e)
            if isinstance(e, ast.BinOp):
                e = e.left
            elif isinstance(e, ast.Name) and e.id not in params and e.id in env and e.id not in seen:
                seen.add(e.id)
                e = env[e.id][0]
            else:
                return e.id if isinstance(e, ast.Name) else None

    def _launch_param_dtypes(self) -> dict[str, dict[str, str | None]]:
        """Kernel name -> {pointer parameter -> dtype of the launcher's argument, or ``None``}."""
        if self._launch_dtypes is not None:
            return self._launch_dtypes
        jit = self.jit_kernels()
        out: dict[str, dict[str, str | None]] = {}
        for fn in self.functions.values():
            if fn.name in jit or not self.covers(fn.lineno):
                continue
            env = self._assignments(fn)
            asserted = self._asserted_dtypes(fn)
            for c in (x for x in ast.walk(fn) if isinstance(x, ast.Call)):
                if not (isinstance(c.func, ast.Subscript) and isinstance(c.func.value, ast.Name)
                        and c.func.value.id in jit):
                    continue
                kernel = jit[c.func.value.id]
                names = [p.arg for p in kernel.args.args]
                slot = out.setdefault(kernel.name, {})
                for name, arg in zip(names, c.args, strict=False):
                    dt = self._host_dtype(arg, env, asserted, 0)
                    if name in slot and slot[name] != dt:
                        dt = None  # launched with different dtypes: unknown
                    slot[name] = dt
        self._launch_dtypes = out
        return out

    def _asserted_dtypes(self, fn: ast.AST) -> dict[str, str]:
        out: dict[str, str] = {}
        for a in (x for x in ast.walk(fn) if isinstance(x, ast.Assert)):
            for cmp in (x for x in ast.walk(a.test) if isinstance(x, ast.Compare)):
                parts = [cmp.left, *cmp.comparators]
                dts = {d for p in parts if (d := self._dtype_name(p))}
                if len(dts) == 1 and all(isinstance(o, ast.Eq) for o in cmp.ops):
                    for p in parts:
                        if isinstance(p, ast.Attribute) and p.attr == "dtype" and isinstance(p.value, ast.Name):
                            out[p.value.id] = next(iter(dts))
        return out

    def _host_dtype(self, e: ast.AST, env: dict[str, list[ast.AST]], asserted: dict[str, str],
                    depth: int) -> str | None:
        """Static dtype of a torch tensor expression in a launcher, or ``None`` when unknown."""
        if depth > 12:
            return None
        if isinstance(e, ast.Name):
            if e.id in asserted:
                return asserted[e.id]
            found = {self._host_dtype(v, env, asserted, depth + 1) for v in env.get(e.id, [])}
            return found.pop() if len(found) == 1 else None
        if not isinstance(e, ast.Call):
            return None
        kws = {k.arg: k.value for k in e.keywords}
        if "dtype" in kws:
            return self._dtype_name(kws["dtype"])
        if isinstance(e.func, ast.Attribute):
            m = e.func.attr
            if m in _CAST_METHODS:
                return _CAST_METHODS[m]
            if m == "to" and e.args and (d := self._dtype_name(e.args[0])):
                return d
            if m in _VIEW_METHODS or m in ("clone", "to", "cuda"):
                return self._host_dtype(e.func.value, env, asserted, depth + 1)
        q = self.qual(e.func) or ""
        if q.startswith("torch.") and q.endswith("_like") and e.args:
            return self._host_dtype(e.args[0], env, asserted, depth + 1)
        return None

    def rule_reduced_precision(self) -> None:
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Attribute):
                q = self.qual(n) or ""
                head, _, last = q.rpartition(".")
                if last in _REDUCED_DTYPES and head in ("torch", "triton.language", "tl", "numpy", "np"):
                    self.emit("reduced-precision", f"uses reduced-precision dtype {q}", n.lineno)
            elif isinstance(n, ast.Call):
                q = self.qual(n.func)
                if isinstance(n.func, ast.Attribute) and n.func.attr in _REDUCED_METHODS and not n.args:
                    self.emit("reduced-precision", f"casts with .{n.func.attr}()", n.lineno)
                elif q in _AUTOCAST:
                    self.emit("reduced-precision", f"runs under {q}", n.lineno)


# ------------------------------------------------------------------------------------------------
# CUDA analysis (tree-sitter-cuda)
# ------------------------------------------------------------------------------------------------

_CUDA_QUERIES = {
    "calls": "(call_expression function: (_) @fn) @call",
    "ids": "[(identifier) (field_identifier) (type_identifier) (namespace_identifier)] @id",
    "qualified": "(qualified_identifier) @q",
    "static": "(declaration (storage_class_specifier) @sc type: (_) @ty) @decl",
    "globals": "(translation_unit (declaration type: (_) @ty) @decl)",
    "macros": "[(preproc_def name: (identifier) @name) (preproc_function_def name: (identifier) @name)]",
    "fndefs": "(function_definition declarator: (function_declarator declarator: (_) @name))",
    "asm": "(gnu_asm_expression) @asm",
}
_CUDA_TIMING_APIS = frozenset({"cudaEventRecord", "cudaEventElapsedTime", "cudaEventSynchronize",
                               "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventCreate",
                               "cuEventRecord", "cuEventElapsedTime", "clock", "clock64", "gettimeofday"})
_CUDA_STREAM_CREATE = frozenset({"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
                                 "cuStreamCreate", "cuStreamCreateWithPriority", "getStreamFromPool",
                                 "getStreamFromExternal"})
_CUDA_OK_STREAMS = frozenset({"0", "nullptr", "NULL", "cudaStreamLegacy", "cudaStreamDefault"})
_CUDA_OK_STREAM_CALLS = frozenset({"getCurrentCUDAStream", "getDefaultCUDAStream"})
_CUDA_REDUCED_TYPES = frozenset({"half", "__half", "half2", "__half2", "__nv_bfloat16", "__nv_bfloat162",
                                 "nv_bfloat16", "nv_bfloat162", "__nv_fp8_e4m3", "__nv_fp8_e5m2", "__nv_fp8x2_e4m3",
                                 "__nv_fp8x4_e4m3"})
_CUDA_REDUCED_CALL_PREFIXES = ("__float2half", "__float2bfloat16", "__floats2half2", "__floats2bfloat162",
                               "__float22half2", "__float22bfloat162", "__half2half2")
_CUDA_THREADS = frozenset({"std::thread", "std::jthread", "std::async"})


def _captures(name: str, root: Any) -> dict[str, list[Any]]:
    return captures("cuda", LAUNCH_QUERY if name == "launch" else _CUDA_QUERIES[name], root)


def _last_segment(text: str) -> str:
    return re.split(r"::|\.|->", text)[-1].split("<")[0].strip()


def _check_cuda(text: str, emit: Callable[[str, str, int], None], line0: int, baseline_fp32: bool) -> None:
    """Run the CUDA rules over ``text``; ``line0`` is the file line of the text's first line.

    Only the kernels, their launchers and file-scope code are judged (:func:`htam_core.source.scope.kernel_scope`):
    a ``main()`` that creates a stream or checks results in ``__half`` is not the candidate.
    """
    scope = kernel_scope(text, "cuda")
    outer_emit = emit

    def emit(rule_id: str, message: str, line: int) -> None:
        if scope.covers(line - line0 + 1):
            outer_emit(rule_id, message, line)

    root = parse(text.encode("utf-8"), "cuda").root_node

    def line(node: Any) -> int:
        return line0 + node.start_point[0]

    def txt(node: Any) -> str:
        return node.text.decode("utf-8", "replace")

    calls = _captures("calls", root)
    for fn in calls.get("fn", []):
        name = _last_segment(txt(fn))
        if name in _CUDA_STREAM_CREATE:
            emit("side-stream", f"creates a stream ({name})", line(fn))
        elif name == "pthread_create":
            emit("background-thread", "starts a thread (pthread_create)", line(fn))
        elif baseline_fp32 and name.startswith(_CUDA_REDUCED_CALL_PREFIXES):
            emit("reduced-precision", f"converts to reduced precision ({name})", line(fn))
    for cfg in _captures("launch", root).get("cfg", []):
        args = [c for c in cfg.named_children]
        if len(args) >= 4:
            s = args[3]
            s_text = txt(s).strip()
            ok = s_text in _CUDA_OK_STREAMS or (
                s.type == "call_expression" and _last_segment(txt(s.child_by_field_name("function")))
                in _CUDA_OK_STREAM_CALLS)
            if not ok and s.type == "call_expression":
                emit("side-stream", f"launches on stream {s_text}", line(cfg))
    for q in _captures("qualified", root).get("q", []):
        t = re.sub(r"<.*", "", txt(q)).replace(" ", "")
        if t in _CUDA_THREADS:
            emit("background-thread", f"starts a thread ({t})", line(q))
    seen_ids: set[tuple[str, int]] = set()
    for node in _captures("ids", root).get("id", []):
        name, ln = txt(node), line(node)
        if (name, ln) in seen_ids:
            continue
        seen_ids.add((name, ln))
        if name in _L2_NAMES:
            emit("persisting-l2", f"uses {name} (persisting L2 access policy)", ln)
        elif "tf32" in name.lower():
            emit("tf32", f"uses TF32 ({name})", ln)
        elif baseline_fp32 and node.type == "type_identifier" and name in _CUDA_REDUCED_TYPES:
            emit("reduced-precision", f"uses reduced-precision type {name}", ln)
    for asm in _captures("asm", root).get("asm", []):
        if "tf32" in txt(asm):  # inline PTX: the token is the structure
            emit("tf32", "inline PTX uses .tf32", line(asm))
    for name_node in _captures("macros", root).get("name", []) + _captures("fndefs", root).get("name", []):
        name = _last_segment(txt(name_node))
        if name in _CUDA_TIMING_APIS:
            emit("timing-monkeypatch", f"redefines the timing API {name}", line(name_node))
    decls = _captures("static", root)
    for decl, ty in zip(decls.get("decl", []), decls.get("ty", []), strict=False):
        if decl.parent is not None and decl.parent.type == "compound_statement" and _cache_type(txt(ty)):
            emit("result-cache", f"static {txt(ty)} inside a function keeps results across calls", line(decl))
    g = _captures("globals", root)
    for decl, ty in zip(g.get("decl", []), g.get("ty", []), strict=False):
        if _cache_type(txt(ty)) and not txt(decl).lstrip().startswith(("extern", "using", "typedef")):
            emit("result-cache", f"global {txt(ty)} keeps results across calls", line(decl))


def _cache_type(type_text: str) -> bool:
    t = type_text.replace(" ", "")
    return bool(re.search(r"(^|::)Tensor\b|(^|::)(unordered_)?map<", t))


def _embedded_cuda(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """CUDA sources held in Python string constants: ``(text, first line)``."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and \
                ("__global__" in n.value or "#include" in n.value or "<<<" in n.value):
            yield n.value, n.lineno


# ------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------

def check_source(text: str, language: str, *, baseline_dtype: str | None = "float32") -> list[GuardFinding]:
    """Run every static guard over a candidate source file.

    Args:
        text: the whole candidate file.
        language: ``"cuda"`` (a .cu/.cuh file) or ``"python"``, ``"triton"``, ``"cuda-in-python"`` (a .py
            file; CUDA held in its string constants is checked too).
        baseline_dtype: dtype of the reference; the reduced-precision rule only fires against
            ``"float32"``. ``None`` disables it.

    Returns:
        Findings sorted by line then rule id, one per (rule, line, message); empty when every rule passes.

    Raises:
        GuardInputError: unsupported language.
    """
    if language not in PYTHON_LANGUAGES | CUDA_LANGUAGES:
        raise GuardInputError(f"cannot check {language!r} sources; use one of "
                              f"{', '.join(sorted(PYTHON_LANGUAGES | CUDA_LANGUAGES))}")
    found: dict[tuple[str, int, str], GuardFinding] = {}

    def emit(rule_id: str, message: str, line: int) -> None:
        rule = RULES_BY_ID[rule_id]
        found.setdefault((rule_id, line, message), GuardFinding(rule_id, rule.severity, message, line))

    fp32 = baseline_dtype in ("float32", "fp32", "torch.float32")
    if language in CUDA_LANGUAGES:
        _check_cuda(text, emit, 1, fp32)
    else:
        scope = kernel_scope(text, "python")
        file_emit = emit

        def emit(rule_id: str, message: str, line: int) -> None:  # only the kernel and its launcher
            if rule_id == "unparsable-source" or scope.covers(line):
                file_emit(rule_id, message, line)

        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            emit("unparsable-source", f"Python syntax error: {exc.msg}", exc.lineno or 1)
        except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
            emit("unparsable-source", f"Python source cannot be parsed: {type(exc).__name__}: {exc}", 1)
        else:
            _PyAnalysis(tree, emit, baseline_dtype, scope.covers).run()
            for src, line0 in _embedded_cuda(tree):
                _check_cuda(src, emit, line0, fp32)
    return sorted(found.values(), key=lambda f: (f.line, f.rule_id, f.message))


def refused_by(findings: Iterable[GuardFinding]) -> list[str]:
    """Ids of the refusing rules among ``findings`` (sorted, unique): the ``refused_by`` of a verdict."""
    return sorted({f.rule_id for f in findings if f.severity == "refuse"})


def labels(findings: Iterable[GuardFinding]) -> list[str]:
    """Ids of the labelling rules among ``findings`` (sorted, unique)."""
    return sorted({f.rule_id for f in findings if f.severity == "label"})


def new_findings(candidate: Iterable[GuardFinding], original: Iterable[GuardFinding]) -> list[GuardFinding]:
    """Findings of a candidate that its original does not already have.

    A user's own launcher may legitimately use a stream or ``__half`` (``main()`` and ``__main__`` self-tests
    are never judged, see :mod:`htam_core.source.scope`); a transform or LLM candidate derived from it should
    be judged on what *it* introduced. Findings are
    matched by ``(rule_id, message)``, ignoring lines (edits move code): a refusing finding with multiplicity (a
    second stream is a new escape), a labelling one by presence. A label names a property of the code (TF32, a
    reduced-precision type or conversion, a persisting L2 window): when the start already has it, more uses of it
    are the start's property spread over more lines (a vector loop and its scalar tail both convert ``__half`` as
    the start did), not one the candidate introduced; numerics are judged by the verification either way.
    """
    budget: dict[tuple[str, str], int] = {}
    for f in original:
        budget[(f.rule_id, f.message)] = budget.get((f.rule_id, f.message), 0) + 1
    had = set(budget)
    out: list[GuardFinding] = []
    for f in candidate:
        k = (f.rule_id, f.message)
        if budget.get(k, 0) > 0:
            budget[k] -= 1
        elif not (f.severity == "label" and k in had):
            out.append(f)
    return out
