"""Infer a harness from a ``.cu`` program's ``main()``: the launch it makes, on the buffers it allocates.

The developer's file already says how the kernel is called: ``main()`` (or a host function it calls)
allocates buffers with ``cudaMalloc``, copies data in, and launches ``k<<<grid, block>>>(args)``. This module
reads that with :class:`htam_core.harness.cu_eval.Program` (the program as run with no arguments) and builds
a harness of kind ``"inferred"``:

* **direct launch** (``grid``/``block``/``args``) when the launch is in ``main()`` or in a host function that
  also allocates, copies or loops (a timing helper): the grid and block are the values they have at the launch;
* **host launcher** (``launcher = "run_sgemm"``) when ``main()`` calls a plain host function that only launches
  (``void f(device pointers, sizes[, stream])``): the launch configuration then stays in the code that the
  transforms edit. C++ names (no ``extern "C"``, namespaces, templates) are called through a generated shim
  (:mod:`htam_core.harness.cu_launcher`).

Buffers get random inputs (float: normal; integer: the range their use in the kernel calls for,
:mod:`htam_core.harness.int_ranges`: indices, an offsets array, small values); a buffer the kernel writes (the source model's write set, :attr:`Param.written`) is an output:
in-out when ``main()`` filled it before the launch (``cudaMemcpy`` from the host: random data;
``cudaMemset(.., 0, ..)``: zeros), write-only (poisoned) otherwise. There is no reference: the **starting
kernel is the oracle** (:attr:`Harness.oracle_path`, :func:`htam_core.harness.runner.prepare_spec`).

Every failure is a :class:`HarnessError` that names what is missing with file and line, e.g. "cannot size
`d_out` (line 42): cudaMalloc size `bytes` depends on a command-line argument with no default".
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tree_sitter as ts

from htam_core.harness.base import Harness, HarnessError, InputSpec
from htam_core.harness.cu_eval import (
    DTYPE_OF,
    Buffer,
    DeviceValue,
    Dim3,
    Program,
    Ptr,
    Scope,
    StructValue,
    Unknown,
    Unreached,
    base_type,
    call_args,
    function_name,
    line_of,
    param_declarations,
    param_names,
)
from htam_core.harness.device_symbols import SymbolOutputs, symbol_outputs
from htam_core.harness.host_callables import (
    enclosing_lambda,
    enter_lambda,
    functor_calls,
    functor_class,
    lambda_call,
    member_scope,
)
from htam_core.harness.int_ranges import integer_ranges
from htam_core.harness.spec import table_header
from htam_core.harness.toml_render import render_toml
from htam_core.source.analysis import KernelFacts, analyze
from htam_core.source.analysis.api_launch import api_launch, api_launch_calls
from htam_core.source.analysis.callee_writes import callee_writes
from htam_core.source.analysis.device_queries import in_words
from htam_core.source.analysis.facts import DeviceGlobal
from htam_core.source.analysis.launch import launch_calls, launch_config
from htam_core.source.analysis.structs import StructLayout, field_values, struct_layout
from htam_core.source.api import parse_text
from htam_core.source.cuda import _enclosing_function as enclosing_function  # the source layer's
from htam_core.source.model import Kernel, SourceModel
from htam_core.source.parsing import node_text

_HOST_EFFECTS = re.compile(r"\b(cudaMalloc\w*|cudaMemcpy\w*|cudaFree|cudaEvent\w*|malloc|free|new|delete|"
                           r"cudaDeviceSynchronize|cudaStreamSynchronize|printf)\b")
_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")


@dataclass
class _Arg:
    """One value passed to the kernel or launcher."""

    name: str
    type_text: str
    pointer: bool
    value: Any = None
    error: str | None = None


@dataclass
class _Found:
    """What one launch site gave."""

    args: list[_Arg]
    written: set[str]
    grid: Dim3 | None = None
    block: Dim3 | None = None
    smem: int = 0
    launcher: str | None = None
    line: int = 0
    notes: list[str] = field(default_factory=list)
    #: launcher argument -> the kernel parameter the launch passes it to (a host launcher; empty: the same name)
    param_of: dict[str, str] = field(default_factory=dict)


def _py_name(name: str, taken: set[str]) -> str:
    n = re.sub(r"\W", "_", name) or "arg"
    if keyword.iskeyword(n) or n in ("torch", "math", "cdiv", "triton", "F"):
        n += "_"
    base, k = n, 2
    while n in taken:
        n, k = f"{base}{k}", k + 1
    taken.add(n)
    return n


def launch_call(prog: Program, line: int, kernel: str) -> ts.Node | None:
    """The launch of ``kernel`` starting on ``line``: a ``call_expression`` with ``<<<...>>>`` (the one launch query)
    or a runtime-API launch (``cudaLaunchKernel``; :mod:`~htam_core.source.analysis.api_launch`)."""
    root = prog.tree.root_node
    for lc in launch_calls(root, prog.src, kernel) + api_launch_calls(root, prog.src, kernel):
        if line_of(lc.call) == line:
            return lc.call
    return None


def _calls_of(body: ts.Node, name: str) -> list[ts.Node]:
    out: list[ts.Node] = []
    stack = [body]
    while stack:
        n = stack.pop()
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            if fn is not None and re.sub(r"<.*", "", node_text(fn)).split("::")[-1].strip() == name:
                out.append(n)
        stack.extend(n.children)
    return sorted(out, key=lambda n: n.start_byte)


def _launch_parts(prog: Program, launch: ts.Node) -> tuple[list[ts.Node], list[ts.Node] | None]:
    """The configuration expressions (grid, block, smem, stream) and the kernel's argument nodes of ``launch``, a
    ``<<<...>>>`` call or a runtime-API launch (whose slots and ``void* args[]`` array the analysis layer reads:
    :func:`~htam_core.source.analysis.api_launch.api_launch`); the arguments are ``None`` when they cannot be read."""
    cfg = launch_config(launch)
    if cfg is not None:
        return list(cfg), call_args(launch)
    api = api_launch(launch, prog.src)
    if api is None:
        return [], None
    return list(api.config), list(api.kernel_args or ()) if api.args_known else None


def _dim(v: Any, *, device: bool = False) -> Dim3:
    """A launch dimension; ``device``: a value read from the device at run time (:class:`DeviceValue`) may be
    one (a grid; the harness reads it again on its device), else (a block) only the block size the occupancy API
    picks for the kernel (``cudaOccupancyMaxPotentialBlockSize``'s ``blockSize``: the harness asks the device
    again for the kernel it compiled); any other is refused with the reason."""
    for c in v.as_tuple() if isinstance(v, Dim3) else (v,):
        if isinstance(c, DeviceValue) and not device and set(c.quantities) != {"occupancy"}:
            raise c.unknown("sets the block: write the block size in htam.toml")
    if isinstance(v, Dim3):
        return v
    if isinstance(v, DeviceValue):
        return Dim3(v)  # type: ignore[arg-type]
    if isinstance(v, int | float):
        return Dim3(int(v))
    raise Unknown(f"{v!r} is not a launch dimension")


def _device_notes(grid: Dim3, block: Dim3, kernel: str) -> list[str]:
    """The notes of a launch whose grid or block the harness reads on the device at run time (``sm_count * 4``,
    ``blocks_per_sm(256, 0) * sm_count``).

    Raises:
        Unknown: a component reads the occupancy of another kernel (``cudaOccupancyMaxActiveBlocksPerMultiprocessor``
            asked for ``other``, then ``kernel`` launched): the harness reads the occupancy of the kernel it
            compiles, which is ``kernel``.
    """
    notes = []
    for what, dim in (("grid", grid), ("block", block)):
        comps = [c for c in dim.as_tuple() if isinstance(c, DeviceValue)]
        others = sorted({k for c in comps for k in c.kernels} - {kernel})
        if others:
            raise Unknown(f"the {what} is the occupancy of {', '.join(others)} (line {comps[0].line}), not of "
                          f"{kernel}: htam reads on the device the occupancy of the kernel it launches only")
        quantities = tuple(sorted({q for c in comps for q in c.quantities}))
        if quantities:
            notes.append(f"the {what} is read on the device at run time ({in_words(quantities)}: "
                         f"{', '.join(c.text for c in comps)})")
    return notes


def _kernel_params(kernel: Kernel) -> list[tuple[str, str, bool]]:
    return [(p.name, p.type or "", p.is_pointer) for p in kernel.params]


def output_params(model: SourceModel, kernel: Kernel) -> tuple[set[str], str | None]:
    """The pointer parameters of ``kernel`` that may be written, and a note when some were taken on trust.

    A parameter is written when the kernel stores through it in its own body (:attr:`Param.written`, or the
    analysis layer's write set, which sees stores through function-like macros such as ``FLOAT4(out[i]) = v``) or a
    ``__device__`` helper it calls stores through the argument it receives
    (:func:`~htam_core.source.analysis.callee_writes.callee_writes`). A
    pointer whose uses are not all visible loads and stores (the analysis layer's ``"unknown"`` mode: it is
    passed to a device function, or through a function pointer given as a template argument, as llm.c's
    ``trimul_global<matmul_tri>`` passes ``out`` to ``matmul_tri(r, ...)``) and whose pointee is not
    declared ``const`` may be written where htam does not look: it is an output too (comparing a buffer
    that turns out unwritten is harmless, missing a written one would leave nothing to compare).
    """
    facts = analyze(model, kernel)
    written = ({p.name for p in kernel.params if p.is_pointer and p.written} | set(callee_writes(model, kernel))
               | {pf.name for pf in facts.pointers if pf.mode in ("write", "readwrite")})
    const = {p.name for p in kernel.params if p.is_pointer and p.is_const}  # the parser's fact: `const T*`
    hidden = sorted(pf.name for pf in facts.pointers
                    if pf.mode == "unknown" and pf.name not in written and pf.name not in const)
    if not hidden:
        return written, None
    return written | set(hidden), (f"{kernel.name} passes {', '.join(hidden)} on (to a function it calls) and "
                                   "does not declare the data const: taken as output(s)")


def _at_launch(prog: Program, launch: ts.Node, kernel: Kernel, scope: Scope, path: Path,
               outputs: set[str]) -> _Found:
    """Evaluate the launch's configuration and arguments in ``scope`` (the scope at the launch); ``outputs``:
    the kernel's parameters that may be written (:func:`output_params`)."""
    exprs, args = _launch_parts(prog, launch)
    where = f"{path.name}:{line_of(launch)}"
    found = _Found(args=[], written=set(outputs), line=line_of(launch))
    try:
        found.grid = _dim(prog.ev(exprs[0], scope), device=True)
        found.block = _dim(prog.ev(exprs[1], scope))
        found.smem = int(prog.ev(exprs[2], scope)) if len(exprs) > 2 else 0
        found.notes.extend(_device_notes(found.grid, found.block, kernel.name))
    except (Unknown, IndexError) as e:
        why = e.reason if isinstance(e, Unknown) else "the launch has fewer than two configuration values"
        raise HarnessError(f"{where}: cannot read the launch configuration of {kernel.name}: {why}") from None
    if len(exprs) > 3:
        found.notes.append(f"the launch's stream `{node_text(exprs[3])}` is replaced by htam's stream")
    if args is None:
        raise HarnessError(f"{where}: the arguments of {kernel.name} are not read: pass them as `void* args[] = "
                           "{&a, &b, ...};` declared in the launching function")
    params = _kernel_params(kernel)
    if len(args) != len(params):
        raise HarnessError(f"{where}: {kernel.name} takes {len(params)} arguments but the launch passes {len(args)}")
    for (name, ty, ptr), a in zip(params, args, strict=True):
        v, err = prog.value_of(a, scope)
        found.args.append(_Arg(name, ty, ptr, v, None if err is None else f"argument `{node_text(a)}`: {err}"))
    return found


def _launcher_ok(fn: ts.Node, launch: ts.Node, kernel: Kernel, prog: Program) -> list[str] | None:
    """The launcher's parameter names when host function ``fn`` is a plain launcher (it only launches:
    no allocation, copy, timing or loop around the launch, and passes its own parameters straight to the
    kernel's written pointers), else ``None``."""
    ret = fn.child_by_field_name("type")
    if ret is None or node_text(ret) != "void":
        return None
    body = fn.child_by_field_name("body")
    if body is None or _HOST_EFFECTS.search(node_text(body)):
        return None
    cur = launch.parent
    while cur is not None and cur != body:
        if cur.type in _LOOPS or cur.type == "if_statement":
            return None
        cur = cur.parent
    names = param_names(fn)
    if any(not n for n in names):
        return None
    args = _launch_parts(prog, launch)[1] or []
    for p, a in zip(kernel.params, args, strict=False):
        if p.is_pointer and node_text(a) not in names:
            return None
    return names


def plain_host_launcher(prog: Program, kernel: Kernel, line: int) -> tuple[ts.Node, ts.Node, list[str]] | None:
    """The host function that holds ``kernel``'s launch on 1-based ``line`` when it is a plain launcher (the
    test of the inference, :func:`_launcher_ok`: it only launches, and passes its own parameters to the
    kernel's pointers) and is not ``main()``: ``(function, launch call, parameter names)``, else ``None``.
    The harness template proposes such a function as ``launcher``."""
    launch = launch_call(prog, line, kernel.name)
    fn = enclosing_function(launch) if launch is not None else None
    if fn is None or function_name(fn) == "main":
        return None
    names = _launcher_ok(fn, launch, kernel, prog)
    return (fn, launch, names) if names is not None else None


def _bind_call(prog: Program, fn: ts.Node, call: ts.Node, outer: Scope) -> Scope:
    """The scope of host function ``fn`` entered by ``call``: its parameters bound to the call's arguments
    (evaluated in ``outer``) and its template parameters to the call's (``runTest<float>``)."""
    inner = Scope(parent=prog.globals)
    prog.bind_template(fn, call, outer, inner)
    prog.bind_params(fn, call, outer, inner)
    return inner


def _callers(prog: Program, name: str) -> list[tuple[ts.Node, ts.Node]]:
    """``(host function, call)`` for every call of ``name`` in the body of a host function of the file."""
    out: list[tuple[ts.Node, ts.Node]] = []
    for fns in prog.functions.values():
        for fn in fns:
            body = fn.child_by_field_name("body")
            if body is not None and "__global__" not in node_text(fn)[:200]:
                out += [(fn, c) for c in _calls_of(body, name)]
    return out


def _chains_from_main(prog: Program, fname: str, main: ts.Node, depth: int = 3) -> list[list[tuple[ts.Node, ts.Node]]]:
    """The call paths ``main() -> f1 -> ... -> fname`` (at most ``depth`` calls), each as its ``(caller, call)``
    hops from main down: a version dispatch (``run(kernel_num, ...)`` switching to ``run1(...)``) is one hop."""
    chains: list[list[tuple[ts.Node, ts.Node]]] = []
    frontier: list[tuple[str, list[tuple[ts.Node, ts.Node]]]] = [(fname, [])]
    for _ in range(depth):
        nxt: list[tuple[str, list[tuple[ts.Node, ts.Node]]]] = []
        for name, tail in frontier:
            for fn, call in _callers(prog, name):
                if fn == main:
                    chains.append([(fn, call), *tail])
                elif all(fn != f for f, _ in tail):
                    caller = function_name(fn)
                    if caller and caller != name:
                        nxt.append((caller, [(fn, call), *tail]))
        frontier = nxt
    return sorted(chains, key=len)


def _scope_at(prog: Program, chain: list[tuple[ts.Node, ts.Node]]) -> Scope:
    """The scope at the last call of ``chain``: main() run up to its call, then each callee bound to its
    arguments and run up to the next call. Raises :class:`Unreached` when a hop is not taken."""
    main, call = chain[0]
    scope = Scope(parent=prog.globals)
    prog.run_until(main.child_by_field_name("body"), scope, call.start_byte)
    for (fn, nxt), (_, prev) in zip(chain[1:], chain[:-1], strict=True):
        scope = _bind_call(prog, fn, prev, scope)
        prog.run_until(fn.child_by_field_name("body"), scope, nxt.start_byte)
    return scope


def _pin_selector(prog: Program, e: Unreached, fns: list[ts.Node], calls: list[ts.Node], kernel: Kernel) -> str | None:
    """When a ``switch`` selects another case than the one launching ``kernel`` (``switch (whichKernel)`` with
    ``whichKernel`` 0 from main's default, and ``reduce1`` asked for), trace the switch's variable up the call
    chain (``fns[i]`` is entered by ``calls[i-1]``; a parameter is the argument its caller passed) to the local
    variable that holds the choice and pin it to the case's value (:attr:`Program.pins`).

    Returns:
        The note saying what was set, or ``None`` when the choice is not a variable htam can set (a literal, an
        expression): the launch is then not reached by this chain.
    """
    sel = e.selector
    if sel is None or sel.type != "identifier":
        return None
    name, fi = node_text(sel), next((i for i, f in enumerate(fns) if f.start_byte <= sel.start_byte < f.end_byte), None)
    if fi is None:
        return None
    while True:
        params = param_names(fns[fi])
        if name not in params:
            break
        if fi == 0:
            return None  # a parameter of main()
        arg = call_args(calls[fi - 1])
        i = params.index(name)
        if i >= len(arg) or arg[i].type != "identifier":
            return None
        name, fi = node_text(arg[i]), fi - 1
    prog.pins[(fns[fi].start_byte, name)] = e.wanted
    where = function_name(fns[fi]) or "?"
    return (f"`{name}` of {where}() is set to {e.wanted}: the switch at line {line_of(sel)} selects the case "
            f"that launches {kernel.name} (the program's default selects another)")


def _run_to_launch(prog: Program, fn: ts.Node, scope: Scope, launch: ts.Node, path: Path) -> Scope:
    """Run host function ``fn``'s body in ``scope`` up to ``launch`` and return the scope there; a launch inside a
    lambda of ``fn`` is reached through the lambda's first call after it
    (:func:`~htam_core.harness.host_callables.enter_lambda`).

    Raises:
        Unreached: the launch (or the lambda's call) lies under a condition that is false here.
        HarnessError: the launch is in a lambda whose call htam does not find (it says why).
    """
    lam = enclosing_lambda(launch, fn)
    body = fn.child_by_field_name("body")
    if lam is None:
        prog.run_until(body, scope, launch.start_byte)
        return scope
    call, why = lambda_call(fn, lam)
    if call is None:
        raise HarnessError(f"{path.name}:{line_of(launch)}: {why}; call it, or add a [kernel] table to htam.toml",
                           missing=True)
    prog.run_until(body, scope, call.start_byte)
    return enter_lambda(prog, lam, call, scope, launch.start_byte)


def _via_functor(prog: Program, fn: ts.Node, cls: ts.Node, launch: ts.Node, kernel: Kernel, main: ts.Node,
                 path: Path, outputs: set[str]) -> _Found:
    """The launch in ``operator()`` (``fn``) of class ``cls``, reached through a call of an object of the class in
    main() or in a host function main() calls (:func:`~htam_core.harness.host_callables.functor_calls`), with
    the object's members and the call's arguments bound (:func:`~htam_core.harness.host_callables.member_scope`).

    Raises:
        HarnessError: no call of an object of the class reaches the launch from main() (it says why).
    """
    cname = node_text(cls.child_by_field_name("name"))
    last: Exception | None = None
    for caller, call, obj in functor_calls(prog, cls):
        chains = [[(main, call)]] if caller == main else [
            [*c, (caller, call)] for c in _chains_from_main(prog, function_name(caller) or "", main)]
        for chain in chains:
            try:
                inner = _run_to_launch(prog, fn, member_scope(prog, fn, cls, call, obj, _scope_at(prog, chain)),
                                       launch, path)
            except Unreached as e:
                last = e
                continue
            found = _at_launch(prog, launch, kernel, inner, path, outputs)
            via = " -> ".join(function_name(f) or "?" for f, _ in chain[1:])
            found.notes.append(f"launch in `{cname}::operator()` (line {line_of(launch)}), called through the object "
                               f"`{obj}` at line {line_of(call)}" + (f" (main() -> {via})" if via else " of main()"))
            return found
    raise HarnessError(f"{path.name}:{line_of(launch)}: {kernel.name} is launched in `{cname}::operator()`, and "
                       + (f"no call of a `{cname}` object from main() reaches it ({last})" if last else
                          f"main() calls no `{cname}` object declared as a variable (directly or through up to two "
                          "host functions)") + "; add a [kernel] table to htam.toml", missing=True)


def _via_host_function(prog: Program, fn: ts.Node, launch: ts.Node, kernel: Kernel, main: ts.Node,
                       path: Path, outputs: set[str], own_bytes: int | None = None) -> _Found:
    cls = functor_class(fn)
    if cls is not None:
        return _via_functor(prog, fn, cls, launch, kernel, main, path, outputs)
    fname = node_text(fn.child_by_field_name("declarator").child_by_field_name("declarator")).split("::")[-1]
    chains = _chains_from_main(prog, fname, main)
    if not chains:
        raise HarnessError(f"{path.name}:{line_of(launch)}: {kernel.name} is launched in `{fname}`, which main() "
                           "does not call (directly or through up to two host functions); call it from main() or "
                           "add a [kernel] table to htam.toml")
    last: Exception | None = None
    for chain in chains:
        call = chain[-1][1]
        prog.pins.clear()
        pinned: list[str] = []
        reached = False
        for _ in range(4):  # each round may pin one more case selector
            try:
                outer = _scope_at(prog, chain)
                inner = _run_to_launch(prog, fn, _bind_call(prog, fn, call, outer), launch, path)
                reached = True
                break
            except Unreached as e:
                last = e
                note = _pin_selector(prog, e, [f for f, _ in chain] + [fn], [c for _, c in chain], kernel)
                if note is None or note in pinned:
                    break
                pinned.append(note)
        if not reached:
            continue
        # a host launcher is run from the kernel's file: one defined past ``own_bytes`` (another file) is read
        # as a direct launch
        names = _launcher_ok(fn, launch, kernel, prog) if (own_bytes is None or fn.end_byte <= own_bytes) \
            and enclosing_lambda(launch, fn) is None else None
        if names is not None:
            found = _as_launcher(prog, fn, call, outer, kernel, launch, names, outputs)
            if len(chain) > 1:  # the call is in a host function that main() reaches, not in main() itself
                path_text = " -> ".join(["main()"] + [function_name(f) or "?" for f, _ in chain[1:]])
                found.notes[-1] = found.notes[-1].replace(
                    f"called from main() at line {line_of(call)}",
                    f"called at line {line_of(call)} ({path_text}, main()'s call at line {line_of(chain[0][1])})")
            found.notes.extend(pinned)
            return found
        found = _at_launch(prog, launch, kernel, inner, path, outputs)
        found.notes.extend(pinned)
        via = " -> ".join(function_name(f) or "?" for f, _ in chain[1:])
        found.notes.append(f"launch in `{fname}` (line {line_of(launch)}), called from main() at line "
                           f"{line_of(chain[0][1])}" + (f" through {via}" if via else ""))
        return found
    raise HarnessError(f"{path.name}:{line_of(launch)}: no call of `{fname}` from main() reaches the launch of "
                       f"{kernel.name} ({last or 'every call takes another branch'})")


def _instantiated(prog: Program, name: str, scope: Scope) -> str:
    """``reduce<T>`` written with the template bindings of ``scope`` (``reduce<float>``); other text stays."""
    head, lt, rest = name.partition("<")
    if not lt:
        return name
    return head + lt + re.sub(r"\b[A-Za-z_]\w*\b",
                              lambda m: prog.resolve(m.group(0), scope) if scope.type_of(m.group(0)) else m.group(0),
                              rest)


def _as_launcher(prog: Program, fn: ts.Node, call: ts.Node, outer: Scope, kernel: Kernel, launch: ts.Node,
                 names: list[str], outputs: set[str]) -> _Found:
    decls = param_declarations(fn)
    args = call_args(call)
    launch_args = [node_text(a) for a in _launch_parts(prog, launch)[1] or []]
    written = {launch_args[i] for i, p in enumerate(kernel.params) if p.name in outputs and i < len(launch_args)}
    found = _Found(args=[], written=written, line=line_of(launch),
                   launcher=_instantiated(prog, " ".join(node_text(call.child_by_field_name("function")).split()),
                                          outer),
                   param_of={launch_args[i]: p.name for i, p in enumerate(kernel.params) if i < len(launch_args)})
    for i, (name, decl) in enumerate(zip(names, decls, strict=True)):
        ty = node_text(decl.child_by_field_name("type") or decl)
        if "cudaStream_t" in ty:
            continue  # the shim passes the default stream
        if i >= len(args):
            break  # a defaulted parameter: the launcher's default is used
        ptr = "*" in node_text(decl)
        v, err = prog.value_of(args[i], outer)
        found.args.append(_Arg(name, node_text(decl).rsplit(name, 1)[0] if ptr else ty, ptr, v,
                               None if err is None else f"argument `{node_text(args[i])}`: {err}"))
    found.notes.append(f"host launcher `{found.launcher}` (line {line_of(fn)}), called from main() at line "
                       f"{line_of(call)}")
    return found


def _elem_dtype(buf: Buffer, type_text: str) -> str | None:
    return DTYPE_OF.get(base_type(buf.elem)) or DTYPE_OF.get(base_type(type_text))


def _by_value_structs(found: _Found, kernel: Kernel, where: str, prog: Program) -> dict[str, StructLayout]:
    """The structs ``found`` passes the kernel by value (a type the file or its local headers define with a body,
    :meth:`Program.aggregates`), by argument name, each as its number fields
    (:func:`~htam_core.source.analysis.structs.struct_layout`): the harness passes every field as a number and a
    generated shim builds the struct (:mod:`htam_core.harness.cu_struct_launch`).

    Raises:
        HarnessError: in one line, a struct that cannot be passed as numbers (a pointer field, a union, ...: the
            field is named), one handed to a host launcher or a templated kernel (no shim builds those).
    """
    out: dict[str, StructLayout] = {}
    roots = [h.root for h in prog.headers] + [prog.tree.root_node]
    for a in found.args:
        t = base_type(a.type_text).split("::")[-1]
        given = base_type(a.value.type).split("::")[-1] if isinstance(a.value, StructValue) else t
        if not a.pointer and not found.launcher and given in prog.aggregates() and \
                (empty := struct_layout(roots, given)) is not None and empty.empty:
            out[a.name] = empty  # a stateless functor (``Gelu{}``): passed default-constructed, a template's too
            continue
        if a.pointer or t not in prog.aggregates():
            continue
        via = f"the launcher `{found.launcher}`" if found.launcher else kernel.name
        layout = struct_layout(roots, t)
        why = ("a host launcher's struct is built by htam only when the kernel itself takes it" if found.launcher
               else "htam builds a struct for a templated kernel's launch only in a host launcher"
               if kernel.attributes.get("template_params") else layout.unsupported if layout is not None
               else f"`{t}` is not defined in the file or its local headers")
        if why:
            raise HarnessError(f"{where}:{found.line}: `{a.name}` of {via} is a `{t}` passed by value, and {why}; "
                               "launch it from a host function that takes buffers and numbers and builds it (main() "
                               "calling it: htam then runs it as the launcher), or describe the run in htam.toml",
                               missing=True)
        assert layout is not None
        out[a.name] = layout
    return out


@dataclass
class _Made:
    """The inputs, outputs and sizes :func:`_build` makes from one launch, with what each input needs to know."""

    where: str
    found: _Found
    kernel: Kernel
    read_first: frozenset[str]
    #: the guessed index range of an integer buffer
    int_high: int
    inputs: list[InputSpec] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    sizes: dict[str, int | float] = field(default_factory=dict)
    #: id of a buffer -> the argument it was given to (each argument gets its own buffer)
    seen: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _buffer_input(m: _Made, a: _Arg, name: str, written: bool, param: str) -> InputSpec:
    """The tensor input of the pointer argument ``a`` (a kernel parameter, or a struct's pointer field), sized and
    typed by the buffer main() passes; ``written``: an output (added to ``m.outputs``); ``param``: the kernel
    parameter, for the read-before-write facts.

    Raises:
        HarnessError: no buffer of known size, host memory, a pointer inside a buffer, a buffer given twice, or an
            element type htam cannot fill.
    """
    where, kernel = m.where, m.kernel.name
    if not isinstance(a.value, Ptr):
        raise HarnessError(f"{where}:{m.found.line}: `{a.name}` of {kernel} is a pointer, but the launch "
                           f"passes {a.value!r}")
    buf = a.value.buffer
    if buf.numel is None:
        raise HarnessError(f"{where}: cannot size `{buf.var}` (line {buf.line}): {buf.why}")
    if not buf.device:
        raise HarnessError(f"{where}:{m.found.line}: `{a.name}` of {kernel} gets `{buf.var}`, host memory "
                           f"(line {buf.line}); the kernel needs a cudaMalloc'd buffer")
    if a.value.offset:
        raise HarnessError(f"{where}:{m.found.line}: `{a.name}` points inside `{buf.var}`; pass the start of a buffer")
    if id(buf) in m.seen:
        raise HarnessError(f"{where}:{m.found.line}: `{m.seen[id(buf)]}` and `{a.name}` of {kernel} are the "
                           f"same buffer `{buf.var}`; a harness gives every argument its own buffer")
    m.seen[id(buf)] = a.name
    dtype = _elem_dtype(buf, a.type_text)
    if dtype is None:
        raise HarnessError(f"{where}: `{buf.var}` (line {buf.line}) holds `{buf.elem}`, an element type htam "
                           "cannot fill; add a [kernel] table to htam.toml")
    if written:
        # a buffer the kernel reads and writes (atomicAdd, +=) is never poisoned: main() left it unfilled,
        # so it starts from zeros, the value such an accumulator needs
        unfilled = "zeros" if param in m.read_first else "empty"
        init = {"host": "randn", "memset": "zeros"}.get(buf.filled or "", unfilled)
        if init == "randn" and not dtype.startswith(("float", "bfloat")):
            init = "randint"
        m.outputs.append(name)
    else:
        init = "randn" if dtype.startswith(("float", "bfloat")) else "randint"
    spec = InputSpec(name=name, dtype=dtype, shape=[buf.numel], init=init)
    if init == "randint":
        spec.low, spec.high = 0, m.int_high
    return spec


def _struct_inputs(m: _Made, a: _Arg, name: str, layout: StructLayout) -> list[InputSpec]:
    """One input per field of the struct argument ``a`` (named ``<name>__<field>``: ``w__wa``, ``p__s__x``,
    ``p__c__1``), valued as main() set it (brace list, designated initializers, field assignments): a number
    field is a scalar (an integer one a size symbol, like an integer argument), a pointer field the buffer main()
    points it at (an output unless its elements are declared ``const``). A number field main() leaves unread gets a
    scalar's default (1.0, or 1) and a TODO note.

    Raises:
        HarnessError: a pointer field whose buffer cannot be read (:func:`_buffer_input`).
    """
    v = a.value if isinstance(a.value, StructValue) else StructValue(layout.type)
    values = field_values(layout, v.fields, v.assigned)
    out: list[InputSpec] = []
    unread: list[str] = []
    for f in layout.fields:
        n, x = f"{name}__{f.suffix}", values.get(f.path)
        if f.pointer:
            out.append(_buffer_input(m, _Arg(f"{a.name}.{f.path}", f"{f.ctype} *", True, x), n, not f.const, ""))
            continue
        if not isinstance(x, int | float):
            unread.append(f"`{a.name}.{f.path}` ({n})")
            x = 1.0 if f.dtype.startswith("float") else 1
        if f.dtype.startswith("float") or f.dtype == "bool":
            out.append(InputSpec(name=n, dtype=f.dtype, shape=None, init=None,
                                 value=float(x) if f.dtype != "bool" else int(bool(x))))
        else:
            m.sizes[n] = int(x)
            out.append(InputSpec(name=n, dtype=f.dtype, shape=None, init=None, value=n))
    if unread:
        m.notes.append(f"TODO: main() sets no value htam reads for {', '.join(unread)} of the `{layout.type}` "
                       "passed by value: a default is used; write the value in htam.toml")
    written = [f.path for f in layout.fields if f.pointer and not f.const]
    m.notes.append(f"`{a.name}` is a `{layout.type}` passed by value: each field is an input ({name}__<field>), "
                   "and htam's shim builds the struct for the launch" + (
                       f"; its pointer field(s) {', '.join(written)}, not declared const, are taken as output(s)"
                       if written else ""))
    return out


def _empty_struct_input(m: _Made, a: _Arg, name: str, layout: StructLayout) -> InputSpec:
    """The input of a struct argument with no non-static data member (a stateless functor, ``Gelu{}``;
    :attr:`StructLayout.empty`): one byte, C++'s size of an empty object, whose value no code reads, so the kernel
    gets what a default-constructed object holds."""
    m.notes.append(f"`{a.name}` is a `{layout.type}` passed by value, which holds no data member: the harness "
                   f"passes it default-constructed (`{layout.type}{{}}`, one byte: the `uint8` input {name})")
    return InputSpec(name=name, dtype="uint8", shape=None, init=None, value=0)


def _build(found: _Found, kernel: Kernel, path: Path, read_first: frozenset[str] = frozenset(),
           structs: dict[str, StructLayout] | None = None, globals_: tuple[DeviceGlobal, ...] = ()) -> Harness:
    """Turn the evaluated arguments into a harness (inputs, outputs, sizes); ``structs``: the struct arguments
    passed by value (:func:`_by_value_structs`), each given as its fields; ``globals_``: the kernel's
    ``__device__`` variables, those it writes outputs too (:func:`~htam_core.harness.device_symbols.
    symbol_outputs`)."""
    where = path.name
    taken: set[str] = set()
    args: list[str] = []
    buffers = [a.value.buffer for a in found.args if isinstance(a.value, Ptr) and a.value.buffer.numel]
    # the guessed index range: the smallest buffer's length, a 1-element buffer (a counter, a scalar output) aside
    m = _Made(where, found, kernel, read_first, max(1, min((b.numel for b in buffers if b.numel and b.numel > 1),
                                                            default=1)), notes=list(found.notes))
    for a in found.args:
        name = _py_name(a.name, taken)
        args.append(name)
        if structs and a.name in structs and structs[a.name].empty:
            m.inputs.append(_empty_struct_input(m, a, name, structs[a.name]))
        elif structs and a.name in structs:
            m.inputs.extend(_struct_inputs(m, a, name, structs[a.name]))
        elif a.error is not None:
            raise HarnessError(f"{where}:{found.line}: cannot infer {kernel.name}'s `{a.name}`: {a.error}")
        elif a.pointer:
            m.inputs.append(_buffer_input(m, a, name, a.name in found.written, found.param_of.get(a.name, a.name)))
        else:
            m.inputs.append(_number_input(a, name, f"{where}:{found.line}", kernel.name, m.sizes))
    sym = symbol_outputs(globals_, kernel.name, lambda n: _py_name(n, taken))
    if sym.symbols and found.launcher is not None:
        sym = SymbolOutputs(notes=[f"{kernel.name} writes the __device__ variable(s) {', '.join(sym.symbols.values())}"
                                   ", which a harness that calls a host launcher does not read back"])
    m.inputs += sym.inputs
    m.outputs += list(sym.symbols)
    m.notes += sym.notes
    if not m.outputs:
        raise HarnessError(f"{where}:{found.line}: {kernel.name} writes through none of its pointer arguments"
                           + (" and no __device__ variable it writes can be compared" if globals_ else "")
                           + ", so there is no output to compare" + (f" ({sym.notes[0]})" if sym.notes else ""))
    h = Harness(kind="inferred", path=str(path), kernel=kernel.key, language="cuda",
                source=f"inferred from main() of {path.name} (launch at line {found.line})",
                inputs=m.inputs, sizes=[m.sizes], outputs=m.outputs, oracle_path=str(path), notes=m.notes,
                symbols=sym.symbols)
    if found.launcher is not None:
        h.launcher = found.launcher
    else:
        assert found.grid is not None and found.block is not None
        h.grid = repr(found.grid.as_tuple())
        h.block = repr(found.block.as_tuple())
        h.shared_bytes = found.smem
        h.args = args
        if kernel.attributes.get("template_params"):
            h.notes.append("templated kernel: the instantiation compiled for main() is the one launched")
    return h


def _number_input(a: _Arg, name: str, where: str, kernel: str, sizes: dict[str, int | float]) -> InputSpec:
    """The scalar input of the number argument ``a``; an integer is a size symbol (added to ``sizes``): the static
    profile reads trip counts from them."""
    _check_number(a, where, kernel)
    # a template type (T alpha) takes the type of a converted argument (__float2half(2.0f): float16)
    dtype = DTYPE_OF.get(base_type(a.type_text)) or DTYPE_OF.get(getattr(a.value, "ctype", "")) or \
        ("float32" if isinstance(a.value, float) else "int32")
    if dtype.startswith(("float", "bfloat")):
        return InputSpec(name=name, dtype=dtype, shape=None, init=None, value=float(a.value))
    sizes[name] = int(a.value)
    return InputSpec(name=name, dtype=dtype, shape=None, init=None, value=name)


def _check_number(a: Any, where: str, kernel: str) -> None:
    """Raise :class:`HarnessError` when the launch argument ``a`` (not a pointer) does not get a number: a struct
    passed by value is named as one (htam's harnesses pass numbers and buffers only)."""
    if isinstance(a.value, StructValue):
        raise HarnessError(f"{where}: `{a.name}` of {kernel} is a `{a.value.type}` passed by value; htam's harnesses "
                           "pass numbers and buffers only (htam optimize runs the program whole: timed, not checked)")
    if not isinstance(a.value, int | float):
        raise HarnessError(f"{where}: `{a.name}` of {kernel} gets {a.value!r}, not a number")


def _index_ranges(h: Harness, found: _Found, facts: KernelFacts, structs: dict[str, StructLayout]) -> Harness:
    """Give each integer input drawn by ``randint`` the values its use calls for
    (:func:`~htam_core.harness.int_ranges.integer_ranges`: indices, an offsets array, values, or a noted guess);
    a struct argument's fields (``structs``) are numbers, never drawn. Returns ``h``, changed in place."""
    specs = iter(h.inputs)
    by_param = {}
    for a in found.args:
        if a.name in structs:
            for _ in structs[a.name].fields or [()] * structs[a.name].empty:
                next(specs, None)
            continue
        spec = next(specs, None)
        if spec is not None:
            by_param[found.param_of.get(a.name, a.name)] = (a, spec)
    return _as_written(integer_ranges(h, by_param, facts), {s.name: a.name for a, s in by_param.values()})


def _as_written(h: Harness, names: dict[str, str]) -> Harness:
    """Name each argument in ``h``'s notes as the user wrote it (``names``: input name -> the argument as written):
    an input renamed for Python (``in`` is the input ``in_``) is quoted in its own spelling, ```in```."""
    renamed = {f"`{py}`": f"`{own}`" for py, own in names.items() if py != own}
    if renamed:
        pattern = re.compile("|".join(re.escape(k) for k in renamed))
        h.notes = [pattern.sub(lambda m: renamed[m.group(0)], n) for n in h.notes]
    return h


def infer_cuda_harness(path: str | Path, kernel_name: str, model: SourceModel | None = None,
                       text: str | None = None, own_bytes: int | None = None) -> Harness:
    """Infer the harness of ``kernel_name`` from the ``main()`` of the ``.cu`` file ``path``.

    Args:
        path: the ``.cu`` file.
        kernel_name: the kernel.
        model: the file's source model (parsed here when ``None``).
        text: the file's text (read when ``None``).
        own_bytes: when ``text`` is the file followed by the program that runs it
            (:mod:`htam_core.harness.infer_host`), the length of the file's own UTF-8 text: a host launcher
            defined past it is read as a direct launch (the harness runs the kernel's file).

    Returns:
        A harness of kind ``"inferred"``, language ``"cuda"``, with no reference and
        :attr:`Harness.oracle_path` = ``path``: candidates are checked against the starting kernel.

    Raises:
        HarnessError: no ``main()``, the kernel is not launched from it, or some size, argument or type
            cannot be read; the message names what is missing with the file and line (``missing=True``:
            callers may fall back to an unchecked run).
    """
    p = Path(path)
    text = text if text is not None else p.read_text(encoding="utf-8", errors="replace")
    model = model or parse_text(text, "cuda", str(p))
    try:
        kernel = model.kernel(kernel_name)
    except KeyError as e:
        raise HarnessError(f"{p.name}: no kernel {kernel_name!r} ({e.args[0] if e.args else ''})", missing=True) \
            from None
    prog = Program(text, p)
    mains = prog.functions.get("main")
    if not mains:
        raise HarnessError(f"{p.name} has no main(), so there is no launch to read", missing=True)
    main = mains[0]
    outputs, trusted = output_params(model, kernel)
    # the analysis layer's read/write facts: a pointer read and written (atomicAdd, +=) accumulates into its buffer
    facts = analyze(model, kernel)
    read_first = frozenset(pf.name for pf in facts.pointers if pf.mode == "readwrite")
    errors: list[str] = []
    for site in kernel.launch_sites or []:
        launch = launch_call(prog, site.line, kernel.name)
        if launch is None:
            continue
        fn = enclosing_function(launch)
        try:
            if fn is None:
                raise HarnessError(f"{p.name}:{site.line}: the launch is outside any function")
            if fn == main:
                try:
                    scope = _run_to_launch(prog, main, Scope(parent=prog.globals), launch, p)
                except Unreached as e:
                    raise HarnessError(f"{p.name}:{site.line}: main() does not reach this launch ({e})") from None
                found = _at_launch(prog, launch, kernel, scope, p, outputs)
            else:
                found = _via_host_function(prog, fn, launch, kernel, main, p, outputs, own_bytes)
            if trusted:
                found.notes.append(trusted)
            structs = _by_value_structs(found, kernel, p.name, prog)  # passed as its fields, built by a shim
            return _index_ranges(_build(found, kernel, p, read_first, structs, facts.device_globals), found, facts,
                                 structs)
        except HarnessError as e:
            errors.append(e.message)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError, ZeroDivisionError, OverflowError,
                RecursionError) as e:  # host code shaped in a way the evaluator does not follow
            errors.append(f"{p.name}:{site.line}: the launch of {kernel.name} could not be read "
                          f"({type(e).__name__}: {e}); add a {table_header(kernel.key)} table to htam.toml")
    if not errors:
        raise HarnessError(f"{p.name}: {kernel.name} is never launched with <<<...>>> in this file, so main() says "
                           "nothing about its inputs; add a [kernel] table to htam.toml", missing=True)
    raise HarnessError(errors[0] if len(errors) == 1 else "; ".join(errors), missing=True)


def inferred_summary(h: Harness) -> list[str]:
    """Lines that show an inferred CUDA harness (``htam verify``, the hover): launch, inputs, outputs."""
    lines = [h.source]
    if h.launcher:
        lines.append(f"launcher: {h.launcher}")
    else:
        lines.append(f"grid {h.grid}, block {h.block}" + (f", {h.shared_bytes} B shared" if h.shared_bytes else ""))
    for i in h.inputs:
        role = "output" if i.name in h.outputs else "input"
        what = f"{i.dtype}[{', '.join(str(d) for d in i.shape)}] {i.init}" if i.shape is not None else \
            f"{i.dtype} = {h.sizes[0].get(i.name, i.value) if h.sizes else i.value}"
        lines.append(f"  {i.name}: {what} ({role})")
    lines.extend(h.notes)
    lines.append("oracle: the starting kernel")
    return lines


def harness_table(h: Harness) -> str:
    """The inferred harness as a ``[kernel.<name>]`` table of ``htam.toml``, fully filled in, for the user to
    adjust (the code action "Save the inferred harness to htam.toml"): the one writer,
    :func:`htam_core.harness.toml_render.render_toml` (``oracle = true``: candidates are checked against the
    starting kernel; write a ``reference`` instead to check against a torch expression)."""
    return render_toml(h)
