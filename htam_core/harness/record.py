"""Record the calls of a kernel's launcher while the file's own ``__main__`` block (or a pytest test) runs.

This module is the **child process** of :mod:`htam_core.harness.infer_py` (``python -m
htam_core.harness.record REQUEST.json RESULT.json``): it executes user code, so it never runs in the caller.
What it does:

* The file is executed from its own AST with one statement added after the launcher's definition
  (``launcher = __htam_wrap__(launcher)``), as ``__main__`` (its ``__main__`` block runs) or as an importable
  module under its own name (a pytest test beside it imports it, then pytest runs the test in this process).
* Every call of the launcher records each bound argument: tensors (shape, dtype, strides, device, value
  range, all-zero), numbers (value), ``None``; the return value's shapes and dtypes, and which tensor
  arguments it wrote in place (compared with a clone taken before the call).
* ``torch.testing.assert_close``, ``torch.allclose``, ``numpy.testing.assert_allclose`` and
  ``triton.testing.assert_close`` are wrapped: when one compares a recorded launcher output with another
  value, the other argument's source expression (read with :mod:`ast` at the assert's line, following local
  assignments) is rewritten over the launcher's parameter names and checked by evaluating it on the recorded
  inputs: only an expression that reproduces the compared value is kept as the reference.
* Functions named ``*_ref``, ``ref_*``, ``*_reference``, ``torch_*`` or ``naive_*`` are tried on the smallest
  recorded call; one whose result matches the launcher's output is kept as a reference by name.
* Without a GPU (``TRITON_INTERPRET=1``), ``device="cuda"`` in tensor factories, ``.cuda()`` and
  ``.to("cuda")`` are mapped to the CPU (a :class:`torch.overrides.TorchFunctionMode`), and
  ``torch.cuda.synchronize`` becomes a no-op, so the recording works on a CPU machine.
* The mirror case: on a GPU machine (no interpreter) a file written for the interpreter makes CPU tensors
  (``torch.randn(3, 4000)`` with no device), which a compiled Triton launch refuses. The launcher call's CPU
  tensor arguments are then moved to the GPU (:func:`launch_device`), the call runs there, tensors it wrote
  are copied back and its return value comes back on the CPU, so the rest of the file runs as written; the
  recording says so (``inputs_moved``) and the harness's origin names it.
* A launcher call that raises is recorded with the exception's first line (``error``) before the exception
  goes on to the file, so the inference can say "``f() raised ValueError: ... at line N``".
* Benchmarks are not run: ``triton.testing.do_bench`` calls its function once and returns 0.0. Recording
  stops (the process exits) at the launcher call after ``max_calls`` calls or ``budget_s`` seconds, and at a
  call whose inputs exceed ``huge_numel`` elements (recorded, not run): what was recorded is written after
  every call, so a timeout keeps it.
"""

from __future__ import annotations

import ast
import builtins
import json
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from htam_core.runtime.children import become_subreaper, die_with_parent, kill_tree
from htam_core.runtime.triton_interp import read_constexpr_spellings
from htam_core.types.errors import exception_line

#: Names of reference functions tried by name (``*_ref``, ``ref_*``, ``_reference``, ``torch_*``,
#: ``naive_*``).
REF_NAME = re.compile(r"(^ref_|_ref$|^_?reference$|_reference$|^torch_|^naive_|^ref$)")
_ASSERTS = ("assert_close", "allclose", "assert_allclose", "assert_array_almost_equal")


class _Recorder:
    """State of one recording run (written to the result file after every launcher call)."""

    def __init__(self, req: dict[str, Any]) -> None:
        self.req = req
        self.out_path = Path(req["result"])
        self.path = Path(req["path"]).resolve()
        self.wrapper = req["wrapper"]
        self.max_calls = int(req.get("max_calls", 16))
        self.budget_s = float(req.get("budget_s", 20.0))
        self.huge = int(req.get("huge_numel", 1 << 24))
        self.t0 = time.monotonic()
        self.calls: list[dict[str, Any]] = []
        self.live: list[dict[str, Any]] = []  # per call: clones of the inputs, the outputs (kept alive)
        self.asserts: list[dict[str, Any]] = []
        self.named_refs: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.device_mapped = False
        self.inputs_moved: str | None = None
        self.interpret = os.environ.get("TRITON_INTERPRET") == "1"
        self.cuda_ok: bool | None = None  # torch.cuda.is_available(), asked at the first call
        self.stopped_huge = False
        self.error: str | None = None
        self.stopped: str | None = None
        self._trees: dict[str, ast.Module] = {}
        self.signature: list[dict[str, Any]] = []
        #: set while a reference expression is evaluated: a launcher call then is the reference reading the
        #: launcher's own output (it runs unrecorded and :attr:`relaunched` says so)
        self.in_reference = False
        self.relaunched = False

    # -- output -------------------------------------------------------------------------------------
    def flush(self) -> None:
        data = {"calls": self.calls, "asserts": self.asserts, "named_refs": self.named_refs, "notes": self.notes,
                "device_mapped": self.device_mapped, "inputs_moved": self.inputs_moved, "error": self.error,
                "stopped": self.stopped, "stopped_huge": self.stopped_huge,
                "signature": self.signature}
        tmp = self.out_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, default=str), encoding="utf-8")
        os.replace(tmp, self.out_path)

    def stop(self, why: str) -> None:
        self.stopped = why
        self.flush()
        sys.stdout.flush()
        os._exit(0)

    def user_file(self, filename: str) -> bool:
        """A file of the user's project (the kernel's folder or below, or the test's), not a library's."""
        try:
            f = Path(filename).resolve()
        except (OSError, ValueError):
            return False
        test = Path(self.req.get("test") or self.path).resolve().parent
        return "site-packages" not in f.parts and (f.is_relative_to(self.path.parent) or f.is_relative_to(test))

    # -- source ---------------------------------------------------------------------------------------
    def tree(self, filename: str) -> ast.Module | None:
        if filename not in self._trees:
            try:
                self._trees[filename] = ast.parse(Path(filename).read_text(encoding="utf-8", errors="replace"))
            except (OSError, SyntaxError, ValueError):
                return None
        return self._trees[filename]


def _describe(v: Any) -> dict[str, Any]:
    import torch

    if isinstance(v, torch.Tensor):
        d: dict[str, Any] = {"kind": "tensor", "shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", ""),
                             "stride": list(v.stride()), "device": str(v.device), "contiguous": v.is_contiguous()}
        if v.numel() and not v.is_complex():
            with torch.no_grad():
                vf = v.detach()
                d["min"] = float(vf.min())
                d["max"] = float(vf.max())
                d["all_zero"] = bool((vf == 0).all())
        return d
    if isinstance(v, bool):
        return {"kind": "scalar", "type": "bool", "value": v}
    if isinstance(v, int):
        return {"kind": "scalar", "type": "int", "value": v}
    if isinstance(v, float):
        return {"kind": "scalar", "type": "float", "value": v}
    if v is None:
        return {"kind": "none"}
    return {"kind": "other", "type": type(v).__name__, "module": type(v).__module__.split(".")[0],
            "repr": repr(v)[:80]}


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _calls_at(tree: ast.Module, line: int, names: tuple[str, ...]) -> list[ast.Call]:
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _call_name(n.func) in names
             and n.lineno <= line <= (n.end_lineno or n.lineno)]
    return sorted(found, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)


def _enclosing_function(tree: ast.Module, line: int) -> ast.AST:
    best: ast.AST = tree
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.lineno <= line <= (n.end_lineno or n.lineno):
            if not isinstance(best, ast.FunctionDef | ast.AsyncFunctionDef) or n.lineno > best.lineno:
                best = n
    return best


def _scope_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope`` (a function, or the module) without those of the functions and classes defined in it:
    a name of the launcher call's scope is never bound inside a nested ``def`` (a ``@triton.jit`` kernel's
    ``a = tl.load(...)`` is not the ``__main__``'s ``a``)."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        n = todo.pop()
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        out.append(n)
        todo.extend(ast.iter_child_nodes(n))
    return out


def _last_assignment(scope: ast.AST, name: str, before: int) -> ast.expr | None:
    """The expression last assigned to ``name`` before line ``before`` in ``scope`` itself (never inside a function
    or class defined in it: the kernel's ``a = tl.load(...)`` is not the ``__main__``'s ``a``), following tuple
    unpacking: ``a, b = x.chunk(2, -1)`` gives ``a`` as ``(x.chunk(2, -1))[0]``; ``None`` when there is none (or
    the name is bound through a starred target)."""
    value, at = None, -1
    for n in _scope_nodes(scope):
        if not (isinstance(n, ast.Assign) and at < n.lineno < before):
            continue
        for t in n.targets:
            if isinstance(t, ast.Name) and t.id == name:
                value, at = n.value, n.lineno
            elif isinstance(t, ast.Tuple | ast.List) and not any(isinstance(e, ast.Starred) for e in t.elts):
                k = next((i for i, e in enumerate(t.elts) if isinstance(e, ast.Name) and e.id == name), None)
                if k is not None:
                    value = ast.Subscript(n.value, ast.Constant(k), ast.Load())
                    at = n.lineno
    return value


#: torch factories whose positional arguments (or one tuple/list argument, or ``size=``) are the tensor's shape.
_SHAPE_FACTORIES = {"randn", "rand", "empty", "zeros", "ones", "full", "randint", "randperm", "arange"}


def _factory_dims(value: ast.expr) -> list[ast.expr] | None:
    """The shape arguments of a tensor factory call, seen through methods chained on it
    (``torch.randn(M, N, device=d).to(torch.bfloat16)`` -> ``[M, N]``), else ``None``."""
    call = value
    while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        call = call.func.value
    if not isinstance(call, ast.Call) or _call_name(call.func) not in _SHAPE_FACTORIES:
        return None
    size = next((k.value for k in call.keywords if k.arg == "size"), None)
    size = size or next((a for a in call.args if isinstance(a, ast.Tuple | ast.List)), None)
    if isinstance(size, ast.Tuple | ast.List):
        return list(size.elts)
    if _call_name(call.func) in ("randint", "full", "arange"):  # their positional numbers are not a shape
        return None
    return list(call.args)


def _size_source(name: str, value: int, scope: ast.AST, mapping: dict[str, str],
                 inputs: dict[str, Any]) -> ast.expr | None:
    """The recorded call's own expression for an integer local ``name`` (= ``value``) that stands for a size:
    ``x.shape[1]`` when an argument of the call was made with ``name`` as its dimension 1 (``x = torch.randn(M,
    N)``), else the first argument dimension equal to ``value`` (in the launcher's parameter order); ``None``
    when no tensor argument has a dimension of that value (the number is not a size: it is inlined). A wrong tie
    is caught across calls: the harness keeps an assert only when it reads the same in every recorded call.
    """
    shapes = {p: tuple(v.shape) for p, v in inputs.items() if hasattr(v, "shape") and hasattr(v, "dtype")}
    for n in _scope_nodes(scope):
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1):
            continue
        param = mapping.get(ast.unparse(n.targets[0]))
        dims = _factory_dims(n.value)
        if param not in shapes or dims is None:
            continue
        for d, e in enumerate(dims):
            if isinstance(e, ast.Name) and e.id == name and d < len(shapes[param]) and shapes[param][d] == value:
                return ast.parse(f"{param}.shape[{d}]", mode="eval").body
    for p, shape in shapes.items():
        if value in shape:
            return ast.parse(f"{p}.shape[{shape.index(value)}]", mode="eval").body
    return None


class _Unresolvable(Exception):
    pass


class _ReadsOutput(Exception):
    """The reference expression reads (directly, or through a local derived from it) an output of the launch
    it checks: ``torch.where(out != 0, (x + b) / 0.75, 0)`` holds whatever the launch wrote, so a candidate
    writing zeros would pass it. ``args[0]``: the name read."""


_KNOWN = {"torch", "F", "math"}


def _rewrite(expr: ast.expr, scope: ast.AST, line: int, mapping: dict[str, str], f_locals: dict[str, Any],
             f_globals: dict[str, Any], needs: set[str], depth: int = 0,
             inputs: dict[str, Any] | None = None, outputs: tuple[Any, ...] = ()) -> ast.expr:
    """``expr`` over the launcher's parameter names: mapped locals renamed, a number local that stands for a size
    tied to the recorded call's own shapes (:func:`_size_source`: a loop's ``N`` must not become the first call's
    ``200``), other number locals inlined, other locals replaced by the expression last assigned to them (depth
    4); module names are kept (``needs``). ``inputs``: the recorded call's arguments by parameter name;
    ``outputs``: the objects the checked launch returned or wrote in place.

    Raises:
        _Unresolvable: a name the rewrite cannot express over the call's arguments.
        _ReadsOutput: a name (of the expression, or of an assignment it follows) holds one of ``outputs``."""
    inputs = inputs or {}

    class T(ast.NodeTransformer):
        def visit_Attribute(self, n: ast.Attribute) -> ast.AST:
            if ast.unparse(n) in mapping:  # args.a passed as the launcher's parameter a
                return ast.copy_location(ast.Name(mapping[ast.unparse(n)], ast.Load()), n)
            # args.scale of an argparse namespace (a local object holding a number) becomes the number
            if isinstance(n.value, ast.Name) and n.value.id not in mapping and n.value.id not in _KNOWN:
                obj = f_locals.get(n.value.id, f_globals.get(n.value.id))
                v = getattr(obj, n.attr, None) if obj is not None and not hasattr(obj, "__file__") else None
                if isinstance(v, bool | int | float):
                    return ast.copy_location(ast.Constant(v), n)
            self.generic_visit(n)
            return n

        def visit_Name(self, n: ast.Name) -> ast.AST:
            import types

            missing = object()
            v = f_locals.get(n.id, f_globals.get(n.id, missing))
            if any(v is o for o in outputs):  # before the mapping: an argument the launch wrote is an output
                raise _ReadsOutput(n.id)
            if n.id in mapping:
                return ast.copy_location(ast.Name(mapping[n.id], ast.Load()), n)
            if n.id in _KNOWN or (hasattr(builtins, n.id) and n.id not in f_locals and n.id not in f_globals):
                return n
            if isinstance(v, int) and not isinstance(v, bool) and v > 1:
                size = _size_source(n.id, v, scope, mapping, inputs)
                if size is not None:
                    return ast.copy_location(size, n)
            if isinstance(v, bool | int | float):
                return ast.copy_location(ast.Constant(v), n)
            if isinstance(v, types.ModuleType | type) or (callable(v) and not hasattr(v, "shape")):
                needs.add(n.id)
                return n
            assigned = _last_assignment(scope, n.id, line)
            if assigned is not None and depth < 4:
                return _rewrite(assigned, scope, line, mapping, f_locals, f_globals, needs, depth + 1, inputs,
                                outputs)
            raise _Unresolvable(n.id)

    return T().visit(ast.parse(ast.unparse(expr), mode="eval").body)


def _close(a: Any, b: Any) -> tuple[bool, float | None]:
    import torch

    try:
        ta, tb = torch.as_tensor(a), torch.as_tensor(b)
    except (TypeError, ValueError, RuntimeError):
        return False, None
    if tuple(ta.shape) != tuple(tb.shape):
        return False, None
    ta, tb = ta.detach().cpu().to(torch.float64), tb.detach().cpu().to(torch.float64)
    if not ta.numel():
        return True, 0.0
    err = float((ta - tb).abs().nan_to_num(0.0).max())
    return bool(torch.allclose(ta, tb, atol=2e-2, rtol=2e-2, equal_nan=True)), err


def _main_globals_file(rec: _Recorder, filename: str) -> bool:
    return Path(filename).resolve() == rec.path


def _pair_assert(rec: _Recorder, fname: str, a: Any, b: Any, kw: dict[str, Any], frame: Any) -> None:
    """Match an assert's arguments with a recorded launcher output; keep the other side as a reference."""
    import torch

    hit = None
    for k in range(len(rec.live) - 1, -1, -1):
        for j, o in enumerate(rec.live[k]["outputs"]):
            for side, v in ((0, a), (1, b)):
                if v is o or (isinstance(v, torch.Tensor) and isinstance(o, torch.Tensor)
                              and tuple(v.shape) == tuple(o.shape)
                              and bool(torch.equal(v.detach().cpu().to(torch.float64), o.detach().cpu().to(torch.float64)))):
                    hit = (k, j, side)
                    break
            if hit:
                break
        if hit:
            break
    if hit is None:
        return
    k, j, side = hit
    other = b if side == 0 else a
    entry: dict[str, Any] = {"call": k, "output": j, "assert": fname, "file": frame.f_code.co_filename,
                             "line": frame.f_lineno, "atol": kw.get("atol"), "rtol": kw.get("rtol"),
                             "expression": None, "why": None, "needs_globals": []}
    rec.asserts.append(entry)
    tree = rec.tree(frame.f_code.co_filename)
    calls = _calls_at(tree, frame.f_lineno, (fname,)) if tree else []
    if not calls:
        entry["why"] = "the assert's source was not found"
        return
    call = calls[0]
    args = list(call.args)
    for key in ("actual", "expected", "a", "b", "input", "other", "desired"):
        for kwd in call.keywords:
            if kwd.arg == key:
                args.append(kwd.value)
    if len(args) < 2:
        entry["why"] = "the assert has fewer than two arguments"
        return
    expr = args[1 - side] if side in (0, 1) else None
    live = rec.live[k]
    if live["site_file"] != frame.f_code.co_filename:
        entry["why"] = "the launcher was called in another function than the assert"
        return
    _check_reference(rec, entry, expr, _enclosing_function(tree, frame.f_lineno), frame, live, other)


def _reads_output_why(rec: _Recorder, expr: ast.expr, name: str | None) -> str:
    """The note of an assert whose other side reads the output it checks (``name``: the local holding the
    output, ``None``: the expression calls the launcher itself)."""
    what = (f"reads {name!r}, an output of the {rec.wrapper}() call it checks" if name else
            f"is {rec.wrapper}()'s own result (evaluating it calls {rec.wrapper}() again)")
    return (f"{ast.unparse(expr)} {what}, so it follows whatever the launch wrote (a wrong result, zeros "
            "everywhere, could pass it); the starting kernel's output is the reference instead")


def _check_reference(rec: _Recorder, entry: dict[str, Any], expr: ast.expr, scope: ast.AST, frame: Any,
                     live: dict[str, Any], other: Any) -> None:
    """Rewrite the assert's other side ``expr`` over the launcher's parameters and keep it in ``entry`` as the
    reference only when it reproduces the compared value ``other`` on the recorded inputs and reads no output
    of the launch it checks (``live``: that call's inputs, outputs and name mapping); else ``entry["why"]``."""
    import torch

    needs: set[str] = set()
    outputs = tuple(o for o in (*live["outputs"], *live["after"].values()) if isinstance(o, torch.Tensor))
    try:
        new = _rewrite(expr, scope, frame.f_lineno, live["mapping"], frame.f_locals, frame.f_globals, needs,
                       inputs=live["inputs"], outputs=outputs)
    except _Unresolvable as e:
        entry["why"] = (f"{ast.unparse(expr)} uses {e.args[0]!r}, which the recording could not express over the "
                        f"arguments of {rec.wrapper}() (no assignment of it in the assert's scope)")
        return
    except _ReadsOutput as e:
        entry["why"] = _reads_output_why(rec, expr, e.args[0])
        return
    text = ast.unparse(new)
    entry["expression_source"] = ast.unparse(expr)
    ns: dict[str, Any] = dict(frame.f_globals)
    import torch.nn.functional as F  # noqa: N812

    ns.update({"torch": torch, "F": F, "math": math})
    ns.update({n: v.clone() if isinstance(v, torch.Tensor) else v for n, v in live["inputs"].items()})
    rec.in_reference, rec.relaunched = True, False
    try:
        value = eval(compile(text, "<reference>", "eval"), ns)  # noqa: S307 - user code, in this child only
    except Exception as e:  # noqa: BLE001
        entry["why"] = f"{text} could not be evaluated on the recorded inputs ({type(e).__name__}: {e})"
        return
    finally:
        rec.in_reference = False
    if rec.relaunched:
        entry["why"] = _reads_output_why(rec, expr, None)
        return
    ok, err = _close(value, other)
    if not ok:
        entry["why"] = f"{text} does not reproduce the compared value on the recorded inputs (max abs err {err})"
        return
    entry["expression"] = text
    entry["needs_globals"] = sorted(needs)


def _patch_asserts(rec: _Recorder) -> None:
    import torch

    def wrap(owner: Any, attr: str) -> None:
        orig = getattr(owner, attr, None)
        if orig is None or getattr(orig, "_htam_wrapped", False):
            return

        def patched(*args: Any, **kw: Any) -> Any:
            a = args[0] if args else kw.get("actual", kw.get("input", kw.get("a")))
            b = args[1] if len(args) > 1 else kw.get("expected", kw.get("other", kw.get("desired", kw.get("b"))))
            try:
                frame = sys._getframe(1)
                if rec.user_file(frame.f_code.co_filename):
                    _pair_assert(rec, attr, a, b, kw, frame)
            except Exception as e:  # noqa: BLE001 - recording must never change the program's outcome
                rec.notes.append(f"an {attr} call could not be read: {type(e).__name__}: {e}")
            return orig(*args, **kw)

        patched._htam_wrapped = True  # type: ignore[attr-defined]
        setattr(owner, attr, patched)

    wrap(torch.testing, "assert_close")
    wrap(torch.testing, "assert_allclose")
    wrap(torch, "allclose")
    import numpy.testing
    import triton.testing

    wrap(numpy.testing, "assert_allclose")
    wrap(numpy.testing, "assert_array_almost_equal")
    wrap(triton.testing, "assert_close")

    def once(fn: Any, *a: Any, **kw: Any) -> float:
        fn()
        return 0.0
    triton.testing.do_bench = once


def cpu_triton_driver() -> None:
    """Under the Triton interpreter without a GPU, make ``triton.runtime.driver.active`` answer
    ``get_active_torch_device()`` with the CPU (the tutorials' ``DEVICE = ...`` at module level), instead of
    raising "0 active drivers". Does nothing when a driver works or Triton is missing."""
    try:
        import torch
        import triton

        drv = triton.runtime.driver
        try:
            drv.active.get_active_torch_device  # noqa: B018 - probing whether the driver works here
        except Exception:  # noqa: BLE001 - no GPU driver: the interpreter's device is the CPU

            class _Cpu:
                def get_active_torch_device(self) -> Any:
                    return torch.device("cpu")

                def __getattr__(self, item: str) -> Any:
                    raise AttributeError(item)
            drv.set_active(_Cpu())  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - no Triton, or a driver API this stub does not fit: leave it
        pass


def _map_devices(rec: _Recorder) -> Any:
    """A TorchFunctionMode that sends ``cuda`` devices to the CPU (recording without a GPU)."""
    import torch
    from torch.overrides import TorchFunctionMode

    def cpu_dev(d: Any) -> Any:
        if d is None:
            return d
        s = str(d)
        if s.startswith("cuda") or s.isdigit():
            rec.device_mapped = True
            return "cpu"
        return d

    class CpuMode(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = cpu_dev(kwargs["device"])
            name = getattr(func, "__name__", "")
            if name == "cuda":
                rec.device_mapped = True
                return args[0]
            if name == "to":
                args = tuple(cpu_dev(a) if isinstance(a, str | torch.device) else a for a in args)
            return func(*args, **kwargs)

    torch.cuda.synchronize = lambda *a, **k: None  # type: ignore[assignment]
    cpu_triton_driver()
    return CpuMode()




def launch_device(tensor_devices: list[str], *, interpret: bool, cuda_available: bool) -> str | None:
    """Where a launcher call's CPU tensors must go before the call, or ``None`` to call it as it is.

    The mirror of the CPU mapping (:func:`_map_devices`): under the interpreter every tensor is on the CPU
    and that is right; on a GPU machine without the interpreter a compiled Triton launch refuses CPU
    tensors ("Pointer argument cannot be accessed from Triton (cpu tensor?)"), so a call holding any CPU
    tensor runs with its CPU tensors moved to ``"cuda"``.

    Args:
        tensor_devices: ``str(t.device)`` of each tensor argument of the call (``"cpu"``, ``"cuda:0"``...).
        interpret: the recording runs under the Triton interpreter (``TRITON_INTERPRET=1``).
        cuda_available: ``torch.cuda.is_available()`` in the recording process.

    Returns:
        ``"cuda"`` or ``None``.
    """
    if interpret or not cuda_available:
        return None
    return "cuda" if any(d == "cpu" for d in tensor_devices) else None


def autotune_bench_failure(e: BaseException, user_file: Any) -> bool:
    """``e`` was raised while Triton's autotuner benchmarked its configs (a frame of ``runtime/autotuner.py``
    whose function names a benchmark, ``_bench``/``do_bench``), by Triton itself: no frame of the user's code
    (``user_file(filename) -> bool``) and none of the interpreter's kernel run comes after it. Under
    ``TRITON_INTERPRET=1`` without a GPU that is the autotuner asking for a GPU benchmarker (Triton 3.x:
    ``driver.active.get_benchmarker()``, an ``AttributeError`` here), not a fault of the user's program; a
    failing prune function or kernel is the user's and is not matched."""
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    bench = [i for i, f in enumerate(frames) if Path(f.filename).name == "autotuner.py" and "bench" in f.name]
    if not bench:
        return False
    after = frames[bench[-1] + 1:]
    return not any(user_file(f.filename) or Path(f.filename).name == "interpreter.py" for f in after)




def _site_mapping(rec: _Recorder, names: list[str], frame: Any) -> dict[str, str]:
    """``{source name at the call site: launcher parameter}`` for the launcher call on ``frame``'s line
    (``launch(x, out=y)`` -> ``{"x": "x", "y": "out"}``, ``names``: the launcher's parameters in order); only
    plain names and attributes are mapped."""
    mapping: dict[str, str] = {}
    tree = rec.tree(frame.f_code.co_filename)
    site = _calls_at(tree, frame.f_lineno, (rec.wrapper.rsplit(".", 1)[-1],)) if tree else []
    if site:
        for i, a in enumerate(site[0].args):
            if isinstance(a, ast.Name | ast.Attribute) and i < len(names):
                mapping[ast.unparse(a)] = names[i]
        for kw in site[0].keywords:
            if kw.arg and isinstance(kw.value, ast.Name | ast.Attribute):
                mapping[ast.unparse(kw.value)] = kw.arg
    return mapping


def _wrap_factory(rec: _Recorder) -> Any:
    import inspect

    import torch

    def wrap(fn: Any) -> Any:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return fn
        rec.signature = [{"name": p.name, "kind": str(p.kind), "default": _describe(p.default)
                          if p.default is not inspect.Parameter.empty else None,
                          "annotation": None if p.annotation is inspect.Parameter.empty else str(p.annotation)}
                         for p in sig.parameters.values()]

        def recorded(*args: Any, **kwargs: Any) -> Any:
            if rec.in_reference:  # a reference expression calling the launcher: not a recorded call
                rec.relaunched = True
                return fn(*args, **kwargs)
            n = len(rec.calls)
            if n >= rec.max_calls:
                rec.stop(f"{n} calls recorded (the most recorded)")
            if n and time.monotonic() - rec.t0 > rec.budget_s:
                rec.stop(f"the recording budget of {rec.budget_s:g} s was spent after {n} calls")
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                return fn(*args, **kwargs)
            params = {name: _describe(v) for name, v in bound.arguments.items()}
            frame = sys._getframe(1)
            mapping = _site_mapping(rec, list(sig.parameters), frame)
            numel = sum(v.numel() for v in bound.arguments.values() if isinstance(v, torch.Tensor))
            call: dict[str, Any] = {"params": params, "file": frame.f_code.co_filename, "line": frame.f_lineno,
                                    "ran": False, "numel": numel}
            rec.calls.append(call)
            if numel > rec.huge:
                rec.stopped_huge = True
                rec.stop(f"the call at line {frame.f_lineno} has {numel} input elements: recorded, not run")
            clones = {k: (v.detach().clone() if isinstance(v, torch.Tensor) else v) for k, v in bound.arguments.items()}
            if rec.cuda_ok is None:
                rec.cuda_ok = not rec.interpret and torch.cuda.is_available()
            target = launch_device([str(v.device) for v in bound.arguments.values() if isinstance(v, torch.Tensor)],
                                   interpret=rec.interpret, cuda_available=bool(rec.cuda_ok))
            run_args, run_kwargs, run_bound = args, kwargs, bound
            if target is not None:
                def move(v: Any) -> Any:
                    return v.to(target) if isinstance(v, torch.Tensor) and v.device.type == "cpu" else v
                run_args = tuple(move(a) for a in args)
                run_kwargs = {k: move(v) for k, v in kwargs.items()}
                run_bound = sig.bind(*run_args, **run_kwargs)
                rec.inputs_moved = call["moved_to"] = target
            try:
                out = fn(*run_args, **run_kwargs)
            except Exception as e:
                call["error"] = exception_line(e, 200)
                call["autotune_bench"] = rec.interpret and autotune_bench_failure(e, rec.user_file)
                rec.flush()
                raise
            # which argument each returned tensor is (a launcher returning the tensor it updated, or out=)
            raw = list(out) if isinstance(out, tuple | list) else ([] if out is None else [out])
            given = {id(w): k for k, w in run_bound.arguments.items() if isinstance(w, torch.Tensor)}
            call["returned_args"] = [given.get(id(o)) for o in raw]
            if target is not None:  # the file goes on with CPU tensors, as it was written
                for k, v in bound.arguments.items():
                    w = run_bound.arguments[k]
                    if isinstance(v, torch.Tensor) and w is not v:
                        v.copy_(w.to(v.device))

                def back(o: Any) -> Any:
                    k = given.get(id(o))
                    if k is not None:  # the argument it updated, as the file holds it
                        return bound.arguments[k]
                    return o.cpu() if isinstance(o, torch.Tensor) else o
                out = (tuple if isinstance(out, tuple) else list)(back(o) for o in out) \
                    if isinstance(out, tuple | list) else back(out)
            outs = list(out) if isinstance(out, tuple | list) else ([] if out is None else [out])
            call["ran"] = True
            call["returns"] = [_describe(o) for o in outs]
            call["returns_none"] = out is None
            call["mutated"] = [k for k, v in bound.arguments.items() if isinstance(v, torch.Tensor)
                               and not torch.equal(v.detach(), clones[k])]
            if out is None:  # what an assert after the call compares: the tensors it updated in place
                outs = [bound.arguments[k] for k in call["mutated"]]
            rec.live.append({"inputs": clones, "outputs": outs, "mapping": mapping,
                             "site_file": frame.f_code.co_filename,
                             "after": {k: bound.arguments[k] for k in call["mutated"]}})
            rec.flush()
            return out

        recorded.__wrapped__ = fn  # type: ignore[attr-defined]
        return recorded

    return wrap


def _instrumented_code(rec: _Recorder) -> Any:
    text = rec.path.read_text(encoding="utf-8", errors="replace")
    tree = ast.parse(text, filename=str(rec.path))
    body: list[ast.stmt] = []
    owner, _, method = rec.wrapper.rpartition(".")
    for node in tree.body:
        body.append(node)
        if isinstance(node, ast.FunctionDef) and node.name == rec.wrapper:
            body.append(ast.parse(f"{rec.wrapper} = __htam_wrap__({rec.wrapper})").body[0])
        elif isinstance(node, ast.ClassDef) and node.name == owner:  # a static or class method: "Ops.launch"
            body.append(ast.parse(f"{owner}.{method} = staticmethod(__htam_wrap__({rec.wrapper}))").body[0])
    tree.body = body
    ast.fix_missing_locations(tree)
    return compile(tree, str(rec.path), "exec")


def _try_named_refs(rec: _Recorder, namespaces: list[tuple[str, dict[str, Any]]]) -> None:
    """Try functions named like references on the smallest call that ran; keep those that match."""
    import inspect

    import torch

    ran = [(c["numel"], i) for i, c in enumerate(rec.calls) if c.get("ran")]
    if not ran:
        return
    _, k = min(ran)
    live = rec.live[k]
    call = rec.calls[k]
    outs = live["outputs"] if not call["returns_none"] else [live["after"][m] for m in call["mutated"]]
    if not outs:
        return
    pos = [v for name, v in live["inputs"].items() if name not in call["mutated"]]
    for file, ns in namespaces:
        for name, fn in list(ns.items()):
            if not (callable(fn) and REF_NAME.search(name) and inspect.isfunction(fn)) or name == rec.wrapper:
                continue
            try:
                inspect.signature(fn).bind(*pos)
            except (TypeError, ValueError):
                continue
            try:
                with torch.no_grad():
                    got = fn(*[v.clone() if isinstance(v, torch.Tensor) else v for v in pos])
            except Exception as e:  # noqa: BLE001
                rec.named_refs.append({"name": name, "file": file, "ok": False,
                                       "why": f"raised {type(e).__name__}: {e}"[:200]})
                continue
            got_l = list(got) if isinstance(got, tuple | list) else [got]
            pairs = [_close(g, o) for g, o in zip(got_l, outs, strict=False)]
            ok = len(got_l) == len(outs) and all(p[0] for p in pairs)
            rec.named_refs.append({"name": name, "file": file, "ok": ok,
                                   "why": None if ok else "its result differs from the launcher's output "
                                   f"on the recorded call (max abs err {max((p[1] or 0) for p in pairs) if pairs else None})"})


def run(req: dict[str, Any]) -> None:
    """Record according to ``req`` (``path``, ``wrapper``, ``mode``: ``"main"`` or ``"pytest"``, ``test``,
    ``result``, ``max_calls``, ``budget_s``, ``huge_numel``); writes the result file and returns."""
    rec = _Recorder(req)
    rec.flush()
    import torch  # noqa: F401 - imported before the user's code so the patches apply

    _patch_asserts(rec)
    mode_ctx = _map_devices(rec) if os.environ.get("TRITON_INTERPRET") == "1" else None
    sys.path.insert(0, str(rec.path.parent))
    if req.get("root"):  # a launcher module of a package: its imports resolve as under `python -m pkg.mod`
        sys.path.insert(0, str(req["root"]))
    sys.argv = [str(rec.path)]
    code = _instrumented_code(rec)
    namespaces: list[tuple[str, dict[str, Any]]] = []
    try:
        if mode_ctx is not None:
            mode_ctx.__enter__()
        if req.get("mode") == "pytest":
            import types

            mod = types.ModuleType(rec.path.stem)
            mod.__file__ = str(rec.path)
            mod.__dict__["__htam_wrap__"] = _wrap_factory(rec)
            sys.modules[rec.path.stem] = mod
            exec(code, mod.__dict__)  # noqa: S102 - the user's file, in this child process
            namespaces.append((str(rec.path), mod.__dict__))
            import pytest

            test = Path(req["test"]).resolve()
            sys.path.insert(0, str(test.parent))
            # conftest files between the kernel's folder and the test load; none above it (a project's own)
            pytest.main([str(test), "-q", "-x", "-p", "no:cacheprovider", "--no-header",
                         f"--confcutdir={rec.path.parent}", f"--rootdir={rec.path.parent}"])
            tmod = next((m for m in list(sys.modules.values())
                         if getattr(m, "__file__", None) and Path(m.__file__).resolve() == test), None)
            if tmod is not None:
                namespaces.append((str(test), vars(tmod)))
        else:
            g: dict[str, Any] = {"__name__": "__main__", "__file__": str(rec.path), "__builtins__": builtins,
                                 "__htam_wrap__": _wrap_factory(rec), "__package__": req.get("package")}
            namespaces.append((str(rec.path), g))
            exec(code, g)  # noqa: S102 - the user's file, in this child process
    except SystemExit as e:
        if e.code not in (0, None):
            rec.error = f"the program exited with status {e.code!r}"
    except BaseException as e:  # noqa: BLE001 - the user's failure is reported, never raised
        from htam_core.types.errors import exception_text

        rec.error = exception_text(e)[:500]
    try:
        _try_named_refs(rec, namespaces)
    except Exception as e:  # noqa: BLE001
        rec.notes.append(f"reference functions were not tried: {type(e).__name__}: {e}")
    rec.flush()


if __name__ == "__main__":
    die_with_parent()  # the inference's caller was killed: this run and what it started go too
    become_subreaper()  # what the program started and left (a daemon, a double fork) stays ours to kill
    read_constexpr_spellings()  # the interpreter reads `language.constexpr` as the compiler does (no-op on a GPU)
    try:
        run(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")))
        sys.stdout.flush()
    finally:
        kill_tree(os.getpid(), include_root=False)
    os._exit(0)
