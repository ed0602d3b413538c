"""The ``htam.toml`` template of a CUDA kernel launched by a host function: ``launcher = "<that function>"``.

A ``.cu`` file without a usable ``main()`` often has a host launcher, ``void run(const float* A, ..., int M,
int N, int K[, cudaStream_t s])`` that computes the grid and launches the kernel. Calling that function keeps
the launch configuration in the user's code, so the template proposes it rather than a guessed 1-D
``grid``/``block``. Its inputs are the launcher's parameters in order (a ``cudaStream_t`` is left out: htam
passes the default stream). What the template reads, all from the analysis layer
(:func:`htam_core.source.analysis.analyze`), never re-derived here:

* which host function is a plain launcher: the inference's own test
  (:func:`htam_core.harness.infer_cuda.plain_host_launcher`);
* each buffer's shape from the kernel's indices (:attr:`Access.index`, affine over ``threadIdx``/``blockIdx``/
  loop variables) with the ranges the launch gives them: a global index ``blockIdx.x * blockDim.x +
  threadIdx.x`` covers the ``E`` of the launcher's ``grid.x = (E + B - 1) / B`` (:attr:`Dim.expr`), a loop
  variable its bound, and kernel parameters are written in the launcher's terms through the launch's
  arguments (:attr:`LaunchFacts.arg_exprs`). ``A[row * K + k]`` with ``row`` over ``M`` and ``k`` over ``K``
  is ``["M", "K"]``;
* written buffers from the kernel's write sets.

Whatever cannot be read is a marked placeholder (``# TODO``), never a silent guess. The rule of reading a
row-major shape from the strides of an affine index is the usual one of polyhedral access analysis.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

import sympy
import tree_sitter as ts
from sympy.printing.str import StrPrinter

from htam_core.harness.cu_eval import DTYPE_OF, Program, base_type, function_name, param_declarations
from htam_core.harness.infer_cuda import output_params, plain_host_launcher
from htam_core.harness.template_ranges import IntegerInit, integer_inits, integer_roles
from htam_core.source.analysis import (
    DIMS,
    Access,
    KernelFacts,
    LaunchFacts,
    ThreadIndex,
    analyze,
    stride_of,
    sym,
)
from htam_core.source.analysis.guards import enclosing_bounds, first_bounds_guard
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.model import Kernel, SourceModel
from htam_core.source.parsing import node_text
from htam_core.source.workspace import launch_unit
from htam_core.types.language import traits

__all__ = ["GUESS_BLOCK", "LauncherTemplate", "direct_launch", "guessed_launch", "kernel_shapes", "launcher_template",
           "py_expr", "row_major"]

_FLOAT_TYPES = ("float32", "float64", "float16", "bfloat16")
#: C integer types of a size parameter (``base_type`` of its declaration).
_INTEGER_TYPES = ("int", "unsigned", "unsigned int", "long", "long long", "unsigned long", "unsigned long long",
                  "size_t", "int32_t", "int64_t", "uint32_t", "uint64_t", "ptrdiff_t", "short", "unsigned short")
_EPS = re.compile(r"eps", re.IGNORECASE)


@dataclass
class LauncherTemplate:
    """The launcher part of a template: the header lines (``launcher = ...`` and notes), the ``inputs``
    lines, the outputs, the size symbols with their values and the names a reference would use."""

    head: list[str]
    inputs: list[str]
    outputs: list[str]
    sizes: dict[str, int] = field(default_factory=dict)
    ref_names: list[str] = field(default_factory=list)


def _toml(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _py(name: str) -> str:
    """A launcher parameter's name as a harness name (a Python identifier: ``in`` -> ``in_``)."""
    n = re.sub(r"\W", "_", name) or "arg"
    return n + "_" if keyword.iskeyword(n) or n in ("torch", "math", "cdiv", "triton", "F") else n


def _qualified(fn: ts.Node, name: str) -> str:
    """``ns::name`` for a function defined inside ``namespace ns { ... }``."""
    parts = [name]
    cur = fn.parent
    while cur is not None:
        if cur.type == "namespace_definition":
            n = cur.child_by_field_name("name")
            if n is not None:
                parts.insert(0, node_text(n))
        cur = cur.parent
    return "::".join(parts)


def _template_args(fn: ts.Node) -> tuple[str, bool]:
    """``("<256, float>", guessed)`` for a template launcher whose parameters need arguments (``("", False)``
    when it is no template, or every parameter has a default: the plain name calls it)."""
    parent = fn.parent
    if parent is None or parent.type != "template_declaration":
        return "", False
    params = parent.child_by_field_name("parameters")
    args: list[str] = []
    needed = False
    for p in params.named_children if params is not None else []:
        default = p.child_by_field_name("default_value") or p.child_by_field_name("default_type")
        if default is not None:
            args.append(node_text(default))
            continue
        needed = True  # no default: a guess (float for a type, 256 for a value)
        args.append("float" if p.type.startswith(("type_parameter", "variadic_type")) else "256")
    return (f"<{', '.join(args)}>" if needed else ""), needed


def _ranges(launch: LaunchFacts, facts: KernelFacts, kmap: dict[str, sympy.Expr]) -> tuple[
        dict[str, sympy.Expr], dict[str, sympy.Expr], dict[sympy.Symbol, sympy.Expr]]:
    """``(blockDim, gridDim, extents)`` in the launcher's terms: ``blockDim.x``/``gridDim.x`` by name, and the
    extent of every index variable: ``g.x`` (a global index along x: the ``E`` of ``grid.x = (E + B - 1) /
    B``, else grid times block), ``threadIdx.x``, ``blockIdx.x`` and each loop variable (its bound when it
    counts up from 0 or from a thread index with ``<``/``<=``)."""
    block: dict[str, sympy.Expr] = {}
    grid: dict[str, sympy.Expr] = {}
    ext: dict[sympy.Symbol, sympy.Expr] = {}
    for i, d in enumerate(DIMS):
        b = launch.block[i].expr if i < len(launch.block) else sympy.Integer(1)
        g = launch.grid[i].expr if i < len(launch.grid) else sympy.Integer(1)
        if b is None or g is None:
            continue
        block[d], grid[d] = b, g
        ext[sym(f"threadIdx.{d}")], ext[sym(f"blockIdx.{d}")] = b, g
        cover = g * b
        if isinstance(g, sympy.Function) and g.func.__name__ == "div" and sympy.simplify(g.args[1] - b) == 0:
            e = sympy.expand(g.args[0] - (b - 1))
            cover = e if e.as_coeff_Add()[0] == 0 else g.args[0]
        ext[sym(f"g.{d}")] = cover
    for lp in facts.loops:
        if lp.var is None or lp.bound is None or lp.step is None or lp.cmp not in ("<", "<="):
            continue
        start_ok = lp.start == 0 or (lp.start is not None and all(
            s.name.startswith(("threadIdx.", "blockIdx.", "blockDim.")) for s in lp.start.free_symbols))
        if start_ok:
            ext[sym(lp.var)] = _host(lp.bound, kmap, block, grid) + (1 if lp.cmp == "<=" else 0)
    return block, grid, ext


def _host(e: sympy.Expr, kmap: dict[str, sympy.Expr], block: dict[str, sympy.Expr],
          grid: dict[str, sympy.Expr]) -> sympy.Expr:
    """``e`` (kernel terms) in the launcher's terms: kernel parameters through the launch's arguments,
    ``blockDim``/``gridDim`` through the launch configuration."""
    subs: dict[sympy.Symbol, sympy.Expr] = {}
    for s in e.free_symbols:
        n = s.name
        if n in kmap:
            subs[s] = kmap[n]
        elif n.startswith("blockDim.") and n[-1] in block:
            subs[s] = block[n[-1]]
        elif n.startswith("gridDim.") and n[-1] in grid:
            subs[s] = grid[n[-1]]
    return e.xreplace(subs) if subs else e


def _shape(acc: Access, launch: LaunchFacts, facts: KernelFacts, kmap: dict[str, sympy.Expr],
           sizes: set[str]) -> list[sympy.Expr] | None:
    """The row-major shape that ``acc``'s index walks (launcher terms), or ``None`` when it is not readable:
    the index is linear in its variables, the unit-stride variable is the last dimension and each next
    stride is the product of the dimensions after it; otherwise one dimension, the largest index plus one.
    Every dimension must be an expression over the launcher's integer parameters (``sizes``)."""
    if acc.index is None:
        return None
    block, grid, ext = _ranges(launch, facts, kmap)
    idx = sympy.expand(_host(acc.index, kmap, block, grid))
    for d in DIMS:  # blockIdx.d * blockDim.d + threadIdx.d -> g.d, the global index along d
        t, b = stride_of(idx, f"threadIdx.{d}"), stride_of(idx, f"blockIdx.{d}")
        if t and b and d in block and sympy.simplify(b - t * block[d]) == 0:
            idx = sympy.expand(idx - t * sym(f"threadIdx.{d}") - b * sym(f"blockIdx.{d}") + t * sym(f"g.{d}"))
    return row_major(idx, ext, sizes)


def row_major(idx: sympy.Expr, ext: dict[sympy.Symbol, sympy.Expr], sizes: set[str]) -> list[sympy.Expr] | None:
    """The row-major shape an index walks, from the extent of each of its variables (``ext``: variable -> the
    number of values it takes, counting from 0): the unit-stride variable is the last dimension and each next
    stride is the product of the dimensions after it; otherwise one dimension, the largest index plus one.
    ``None`` when the index or an extent is not an expression over the integer parameters ``sizes``."""
    terms: list[tuple[sympy.Expr, sympy.Expr]] = []
    rest = idx
    for v, r in ext.items():
        c = stride_of(idx, v.name)
        if c is None:
            return None
        if c != 0:
            terms.append((c, r))
            rest = sympy.expand(rest - c * v)
    if _opaque(rest, sizes) or any(_opaque(r, sizes) for _, r in terms):
        return None
    dims: list[sympy.Expr] = []
    left, stride = list(terms), sympy.Integer(1)
    while left:
        hit = next((t for t in left if sympy.simplify(t[0] - stride) == 0), None)
        if hit is None:
            break
        left.remove(hit)
        dims.insert(0, hit[1])
        stride = stride * hit[1]
    if left or rest != 0 or not dims:
        numel = sympy.expand(sum((c * (r - 1) for c, r in terms), sympy.Integer(0)) + rest + 1)
        return [numel] if numel.free_symbols or numel.is_Integer else None
    return dims


def _opaque(e: sympy.Expr, sizes: set[str]) -> bool:
    """Whether ``e`` is not an expression over the launcher's integer parameters (``sizes``) with ``+ - *``
    and integer division (``div``): a load, a call, a modulo or another name."""
    return bool(e.free_symbols - {sym(s) for s in sizes}) or any(
        f.func.__name__ != "div" for f in e.atoms(sympy.Function))


class _PyPrinter(StrPrinter):
    """Prints a shape expression as Python over the size symbols: ``div(n + 255, 256)`` as ``cdiv(n, 256)``
    (the harness's ceiling division) or ``((a) // (b))``."""

    def _print_Function(self, expr: sympy.Expr) -> str:  # noqa: N802 - sympy's printer protocol
        if expr.func.__name__ != "div":
            return super()._print_Function(expr)
        a, b = expr.args
        e = sympy.expand(a - (b - 1))
        if e.as_coeff_Add()[0] == 0 and e != 0:
            return f"cdiv({self._print(e)}, {self._print(b)})"
        return f"(({self._print(a)}) // ({self._print(b)}))"


def py_expr(e: sympy.Expr) -> str:
    """``e`` as Python over the size symbols (:class:`_PyPrinter`: ``div`` as ``cdiv`` or ``//``)."""
    return _PyPrinter().doprint(e)


def _pointee_dtype(decl_text: str) -> tuple[str, bool]:
    """The harness dtype of a pointer parameter's element type, and whether it is guessed (a template type or
    another type htam cannot fill: float32)."""
    head = decl_text.rsplit("*", 1)[0]
    bt = base_type(head)
    words = bt.split()
    if bt in DTYPE_OF:
        return DTYPE_OF[bt], False
    if words and words[0] in DTYPE_OF:
        return DTYPE_OF[words[0]], False
    return "float32", True


def launcher_template(model: SourceModel, kernel: Kernel) -> LauncherTemplate | None:
    """The template's launcher part for ``kernel`` when a plain host function of the file launches it (see
    the module docstring), else ``None`` (the caller then writes a direct ``grid``/``block`` launch).

    Args:
        model: the ``.cu``/``.cuh`` file's source model (``file_language == "cuda"``).
        kernel: one of ``model.kernels``.

    Returns:
        The lines and sizes; every placeholder carries a ``# TODO`` comment saying what to set.
    """
    if model.file_language != "cuda" or not kernel.launch_sites:
        return None
    facts = analyze(model, kernel)
    try:
        prog = Program(model.text, model.path)
    except (ValueError, RecursionError):
        return None
    for launch in facts.launches:
        if launch.host is None or launch.host == "main":
            continue
        found = plain_host_launcher(prog, kernel, launch.line)
        if found is not None:  # (function, launch call, parameter names); the launch is read through its facts
            return _build(model, kernel, facts, launch, found[0], found[2])
    return None


def _build(model: SourceModel, kernel: Kernel, facts: KernelFacts, launch: LaunchFacts, fn: ts.Node,
           names: list[str]) -> LauncherTemplate:
    """The template of ``kernel`` launched by ``fn`` at ``launch`` (see :func:`launcher_template`); ``names``:
    ``fn``'s parameter names."""
    name = _qualified(fn, function_name(fn) or "launcher")
    targs, tguess = _template_args(fn)
    decls = param_declarations(fn)
    kmap: dict[str, sympy.Expr] = {}
    for p, e in zip(kernel.params, launch.arg_exprs, strict=False):
        if e is not None:
            kmap[p.name] = e
    tnames = [t.split("=")[0].split()[-1] for t in kernel.attributes.get("template_params") or [] if t.split()]
    for t, e in zip(tnames, launch.template_exprs, strict=False):
        if e is not None:
            kmap[t] = e
    written, _hidden = output_params(model, kernel)
    by_pointer: dict[str, str] = {}  # launcher parameter -> kernel pointer parameter it is passed to
    for p, e in zip(kernel.params, launch.arg_exprs, strict=False):
        if p.is_pointer and isinstance(e, sympy.Symbol):
            by_pointer.setdefault(e.name, p.name)
    params: list[tuple[str, str, bool, ts.Node]] = []  # (name, decl text, pointer, decl)
    skipped: list[str] = []
    for n, d in zip(names, decls, strict=True):
        text = " ".join(node_text(d).split())
        if "cudaStream_t" in text:
            skipped.append(n)
            continue
        params.append((n, text, "*" in text.split("=")[0], d))
    int_names = {n for n, text, ptr, _ in params if not ptr and
                 DTYPE_OF.get(base_type(text.rsplit(n, 1)[0]), "int32").startswith(("int", "uint"))}
    head = [f"launcher = {_toml(name + targs)}   # the host function that launches {kernel.name} (line "
            f"{fn.start_point[0] + 1}): called with the inputs in order; its <<<grid, block>>> stays in your code"]
    if tguess:
        head.append(f"# TODO: {name} is a template: set its template arguments in `launcher` (guessed above)")
    if skipped:
        head.append(f"# {', '.join(skipped)} (cudaStream_t) is left out: htam passes the default stream")
    shapes: dict[str, tuple[list[str] | None, str]] = {}
    rank_of: dict[str, int] = {}  # size symbol -> the highest rank of a buffer whose shape uses it
    for n, _text, ptr, _d in params:
        if not ptr:
            continue
        kp = by_pointer.get(n)
        pf = next((f for f in facts.pointers if f.name == kp), None)
        found: list[sympy.Expr] | None = None
        for acc in (pf.reads + pf.writes) if pf is not None else ():
            s = _shape(acc, launch, facts, kmap, int_names)
            if s is not None and (found is None or len(s) > len(found)):
                found = s
        if found is None:
            shapes[n] = (None, f"TODO: placeholder shape: htam could not read the extent of `{n}` from "
                               f"{kernel.name}'s indexing; set it")
        else:
            shapes[n] = ([py_expr(d) for d in found], f"from {kernel.name}'s indexing and the launch in {name}")
            for d in found:
                for s in d.free_symbols:
                    rank_of[s.name] = max(rank_of.get(s.name, 1), len(found))
    sizes: dict[str, int] = {}
    default_sizes = {n: node_text(d.child_by_field_name("default_value"))
                     for n, _t, _p, d in params if d.child_by_field_name("default_value") is not None}
    inputs: list[str] = []
    outputs: list[str] = []
    used_sizes = [n for n in names if n in rank_of]
    placeholder_size = min(used_sizes, key=lambda n: rank_of[n]) if used_sizes else \
        next((n for n in names if n in int_names), None)
    if placeholder_size is not None and any(v[0] is None for v in shapes.values()):
        rank_of.setdefault(placeholder_size, 1)  # a placeholder shape uses it
    rendered: dict[str, tuple[int, _Pointer]] = {}  # each pointer's entry: its index in inputs, how it is written
    for n, text, ptr, _d in params:
        hn = _py(n)
        if ptr:
            kp = by_pointer.get(n)
            shape, why = shapes[n]
            shape = [_py(placeholder_size)] if shape is None and placeholder_size else ["1024"] if shape is None \
                else [re.sub(r"\b(\w+)\b", lambda m: _py(m.group(1)) if m.group(1) in int_names else m.group(1), s)
                      for s in shape]
            pe = _Pointer(hn, text, shape, why, shapes[n][0] is None, kp is not None and kp in written,
                          next((f.mode for f in facts.pointers if f.name == kp), None))
            if pe.out:
                outputs.append(hn)
            rendered[hn] = (len(inputs), pe)
            inputs.append(pe.entry())
            continue
        dtype = DTYPE_OF.get(base_type(text.rsplit(n, 1)[0]), "int32")
        default = default_sizes.get(n)
        if n in int_names:
            used = n in rank_of
            if default is not None and re.fullmatch(r"\d+", default):
                sizes[hn] = int(default)
            elif used:  # about a million elements per buffer: 1M, 1024 x 1024, 64 x 64 x 64
                sizes.setdefault(hn, 1 << (20 // rank_of.get(n, 1)))
            inputs.append(f"  {{ name = {_toml(hn)}, dtype = {_toml(dtype)}, value = "
                          f"{_toml(hn) if hn in sizes else '1'} }}," +
                          ("" if hn in sizes else "  # TODO: guessed value (no buffer's shape uses it)"))
            continue
        value = default if default is not None and re.fullmatch(r"[-+.\deE]+f?", default) else None
        value = value.rstrip("fF") if value else ("1e-05" if _EPS.match(n) else "1.0")
        inputs.append(f"  {{ name = {_toml(hn)}, dtype = {_toml(dtype)}, value = {float(value)!r} }}," +
                      ("" if default is not None else "  # TODO: guessed value"))
    _integer_entries(model, kernel, inputs, rendered, sizes)
    inout = {_py(n) for n, _t, ptr, _d in params if ptr and next(
        (f.mode for f in facts.pointers if f.name == by_pointer.get(n)), None) == "readwrite"}
    return LauncherTemplate(head, inputs, outputs, sizes,  # a reference sees an in-out buffer's initial value
                            [_py(n) for n, _t, _p, _d in params if _py(n) not in outputs or _py(n) in inout])


@dataclass(frozen=True)
class _Pointer:
    """A launcher's pointer parameter as its ``inputs`` entry writes it: its name, declaration text, shape
    (dimension texts), the shape's note, whether the shape is a placeholder, whether the kernel writes it and the
    kernel's access mode of it."""

    name: str
    text: str
    shape: list[str]
    why: str
    placeholder: bool
    out: bool
    mode: str | None

    def entry(self, integer: IntegerInit | None = None) -> str:
        """The entry (a TOML line); ``integer``: the init of an integer buffer read as offsets or indices
        (:func:`~htam_core.harness.template_ranges.integer_inits`), its note first in the comment."""
        dtype, dguess = _pointee_dtype(self.text)
        init = ("randn" if self.mode == "readwrite" else "empty") if self.out else \
            ("randn" if dtype in _FLOAT_TYPES else "randint")
        if integer is not None and init != "randint":
            integer = None
        notes = ([integer.note] if integer is not None else []) + [self.why] + \
            (["TODO: element type guessed (a template type)"] if dguess else []) + \
            (["in-out: the kernel reads it too"] if self.out and self.mode == "readwrite" else []) + \
            (["TODO: integers in [low, high): set high to the length they index"] if init == "randint" and
             integer is None else [])
        fields = integer.fields if integer is not None else f"init = {_toml(init)}" + (
            ", low = 0, high = 100" if init == "randint" else "")
        return (f"  {{ name = {_toml(self.name)}, shape = [{', '.join(_toml(s) for s in self.shape)}], "
                f"dtype = {_toml(dtype)}, {fields} }},  # {'; '.join(notes)}")


def _integer_entries(model: SourceModel, kernel: Kernel, inputs: list[str], rendered: dict[str, tuple[int, _Pointer]],
                     sizes: dict[str, int]) -> None:
    """Write again each entry of ``rendered`` (by name: its index in ``inputs`` and the pointer) that is an offsets
    array or an index buffer of ``kernel`` under the kernel's own name, with the init its use calls for
    (:func:`~htam_core.harness.template_ranges.integer_inits`, from the entries' shapes at ``sizes``)."""
    inits = integer_inits(integer_roles(model, kernel), {n: pe.shape for n, (_, pe) in rendered.items()}, sizes,
                          {n for n, (_, pe) in rendered.items() if pe.placeholder})
    for n, (at, pe) in rendered.items():
        if n in inits:
            inputs[at] = pe.entry(inits[n])


def direct_launch(model: SourceModel, kernel: Kernel, size_of: dict[str, str]) -> tuple[list[int], str] | None:
    """``(block, grid)`` for a direct-launch template (``block = "(32, 8)"``, ``grid = "(cdiv(COLS, 32),
    cdiv(ROWS, 8))"``) read from the kernel's first launch: its constant block, and its grid with every name
    of the launching code that the launch passes as an integer kernel parameter written as that parameter's
    size symbol (``size_of``: kernel parameter -> symbol). ``None`` when the block is not constant or a grid
    component uses anything else (the caller then guesses and says so). A kernel in a Python string launched by
    a cupy call of its file, or a kernel of a ``.cu`` file launched only from other workspace files (a ``.cpp``
    launcher, a cupy ``RawModule(path=...)`` call in a ``.py``), is read with that launch
    (:func:`~htam_core.source.workspace.launch_unit`)."""
    if model.file_language != "cuda":
        unit = launch_unit(model, kernel) if traits(kernel.language).embedded and model.path \
            and not kernel.launch_sites else None
        if unit is None:
            return None
        model, kernel = unit.model, unit.kernel
    elif not kernel.launch_sites and model.path:
        # launched only from other files of the workspace (a .cpp, a cupy call in a .py): read that launch
        unit = launch_unit(model, kernel)
        if unit is not None:
            model, kernel = unit.model, unit.kernel
    facts = analyze(model, kernel)
    if not facts.launches:
        return None
    la = facts.launches[0]
    if not la.block or any(d.value is None for d in la.block) or not la.grid:
        return None
    to_sym = {e.name: size_of[p.name] for p, e in zip(kernel.params, la.arg_exprs, strict=False)
              if isinstance(e, sympy.Symbol) and p.name in size_of}
    dims = []
    for d in la.grid:
        if d.expr is None:
            return None
        e = d.expr.xreplace({s: sym(to_sym[s.name]) for s in d.expr.free_symbols if s.name in to_sym})
        if _opaque(e, set(to_sym.values())):
            return None
        dims.append(py_expr(e))
    return [int(d.value) for d in la.block], "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


#: The block a template proposes for a kernel that indexes 2 or 3 thread dimensions and has no launch site.
GUESS_BLOCK = {2: [16, 16, 1], 3: [8, 8, 4]}


def _guard_bounds(model: SourceModel, kernel: Kernel) -> dict[str, str]:
    """``{index variable: bound as written}`` of the kernel's first bounds check (``if (row >= M || col >= N)
    return;`` gives ``{"row": "M", "col": "N"}``; :func:`~htam_core.source.analysis.guards.first_bounds_guard`)."""
    found = guard_region(model, kernel)
    return found[0] if found is not None else {}


def guard_region(model: SourceModel, kernel: Kernel) -> tuple[dict[str, str], tuple[int, int]] | None:
    """The kernel's first bounds check as ``({index variable: bound as written}, (start, end))``: the file bytes
    of the code it guards (an ``if``'s statement, or what follows an early ``return``); ``None`` without one."""
    unit = cuda_source(model, kernel)
    if isinstance(unit, str):
        return None
    found = first_bounds_guard([c for c in unit.body.named_children if c.type != "comment"], unit.src)
    if found is None or isinstance(found[1], str):
        return None
    g = found[1]
    start = g.stmt.start_byte if g.form == "if" else g.stmt.end_byte
    return {v: unit.t(b) for v, b in g.bounds().items()}, (start + unit.base, g.end_byte + unit.base)


def kernel_shapes(model: SourceModel, kernel: Kernel) -> dict[str, list[sympy.Expr] | str]:
    """Each pointer parameter's row-major shape over the kernel's own integer parameters, read from its accesses
    (:attr:`Access.index`) and the range of each index variable: a loop variable its loop's bound (counting up
    from 0 or from a thread index), a thread index the bound of the bounds check that guards the access
    (``if (r >= rows) return;``, ``if (idx < total)``), a ``e % m`` the ``m`` (``bias[idx % hidden]`` is a vector of
    ``hidden``). ``layernorm``'s ``x[r * cols + c]`` with ``r < rows`` and ``c < cols`` is ``[rows, cols]``,
    ``gamma[c]`` is ``[cols]``. Every access of a pointer must give the same shape.

    Returns:
        ``{pointer: shape}``, or ``{pointer: why not}`` (one clause) where it cannot be read.
    """
    facts = analyze(model, kernel)
    sizes = {p.name for p in kernel.params if not p.is_pointer and p.type and
             base_type(p.type) in _INTEGER_TYPES}
    guard = guard_region(model, kernel)
    unit = cuda_source(model, kernel)
    unit = None if isinstance(unit, str) else unit
    out: dict[str, list[sympy.Expr] | str] = {}
    for pf in facts.pointers:
        accesses = [a for a in (*pf.reads, *pf.writes) if a.space == "global"]
        shapes = [_kernel_shape(a, facts, guard, sizes, unit) for a in accesses]
        if not accesses:
            continue
        if any(sh is None for sh in shapes):
            bad = next(a for a, sh in zip(accesses, shapes, strict=True) if sh is None)
            out[pf.name] = (f"its index {bad.index_text} (line {bad.line}) is not a range of the size "
                            "parameters under the loop bounds and the bounds check")
        elif any(sh != shapes[0] for sh in shapes):
            out[pf.name] = "its accesses walk different shapes"
        else:
            out[pf.name] = shapes[0]  # type: ignore[assignment]
    return out


def _kernel_shape(acc: Access, facts: KernelFacts, guard: tuple[dict[str, str], tuple[int, int]] | None,
                  sizes: set[str], unit: CudaSource | None = None) -> list[sympy.Expr] | None:
    """The shape ``acc``'s index walks in the kernel's terms (see :func:`kernel_shapes`), or ``None``."""
    if acc.index is None or acc.vector:
        return None
    idx = sympy.expand(acc.index)
    ext: dict[sympy.Symbol, sympy.Expr] = {}
    for i, m in enumerate(sorted(idx.atoms(sympy.Function), key=str)):
        if m.func.__name__ == "mod" and len(m.args) == 2 and m.args[1].free_symbols <= {sym(s) for s in sizes}:
            v = sym(f"mod.{i}")
            idx, ext[v] = sympy.expand(idx.xreplace({m: v})), m.args[1]
    bounds = _bounds_at(acc, guard, unit)
    for ti in facts.thread_indices:
        idx = _guarded_index(idx, ti, bounds.get(ti.name), sizes, ext)
    for lid in acc.loops:
        lp = facts.loops[lid]
        starts = lp.start == 0 or (lp.start is not None and all(
            s.name.startswith(("threadIdx.", "blockIdx.", "blockDim.")) for s in lp.start.free_symbols))
        if lp.var and lp.bound is not None and lp.cmp in ("<", "<=") and lp.update == "+" and starts:
            ext[sym(lp.var)] = lp.bound + (1 if lp.cmp == "<=" else 0)
    return row_major(idx, ext, sizes)


def _bounds_at(acc: Access, guard: tuple[dict[str, str], tuple[int, int]] | None,
               unit: CudaSource | None) -> dict[str, str]:
    """``{var: bound}`` that hold at ``acc``: the conditions around it (``if``, ``?:``;
    :func:`~htam_core.source.analysis.guards.enclosing_bounds`), then the kernel's early-return bounds check when
    the access follows it."""
    out = enclosing_bounds(unit.root, acc.span[0] - unit.base, acc.span[1] - unit.base, unit.src) \
        if unit is not None else {}
    if guard is not None and guard[1][0] <= acc.span[0] < guard[1][1]:
        for var, bound in guard[0].items():
            out.setdefault(var, bound)
    return out


def _guarded_index(idx: sympy.Expr, ti: ThreadIndex, bound: str | None, sizes: set[str],
                   ext: dict[sympy.Symbol, sympy.Expr]) -> sympy.Expr:
    """``idx`` with thread index ``ti``'s expression (``blockIdx.x * blockDim.x + threadIdx.x``) replaced by a
    variable whose extent is ``bound`` (the bounds check's, one of ``sizes``), when ``idx`` holds it whole."""
    if bound not in sizes or len(ti.dims) != 1:
        return idx
    d = ti.dims[0]
    own = [f"threadIdx.{d}", f"blockIdx.{d}"]
    name = next((n for n in own if stride_of(ti.expr, n)), None)
    c = stride_of(idx, name) / stride_of(ti.expr, name) if name else None  # type: ignore[operator]
    if c is None or c == 0:
        return idx
    left = sympy.expand(idx - c * ti.expr)
    if any(stride_of(left, n) != 0 for n in own):
        return idx
    v = sym(f"guard.{ti.name}")
    ext[v] = sym(bound)  # type: ignore[arg-type]
    return sympy.expand(left + c * v)


def guessed_launch(model: SourceModel, kernel: Kernel, size_of: dict[str, str],
                   first: str) -> tuple[list[int], str, str] | None:
    """``(block, grid, why)`` for a CUDA kernel without a launch site whose indices say more than "one thread per
    element of ``first``", else ``None`` (the caller's 1-D guess stands).

    - An index that hard-codes its block's extent along x (``i = 64*blockIdx.x + 4*threadIdx.x``: the analysis
      layer's :meth:`~htam_core.source.analysis.KernelFacts.fixed_block_extents`) gets ``extent / stride``
      threads (16) and ``cdiv(BOUND, extent)`` blocks (``cdiv(N, 64)``), ``BOUND`` the bound its bounds check
      gives that index (else ``first``).
    - A kernel whose thread indices use ``threadIdx.y`` (``.z``) gets a 2-D (3-D) block (:data:`GUESS_BLOCK`)
      and a grid covering each dimension's global index up to its bound in the bounds check (``row = blockIdx.y *
      blockDim.y + threadIdx.y; col = ...x...; if (row >= M || col >= N) return;`` gives ``(cdiv(N, 16),
      cdiv(M, 16))``); a bound that is no size parameter is a TODO in the grid.
    - An index whose ``blockIdx.x`` stride is a number that cannot be read as a block (``i = 100*blockIdx.x +
      3*threadIdx.x``, or a fixed extent in a 2-D kernel) gets a TODO saying the index implies a fixed block.

    ``size_of``: integer kernel parameter -> its size symbol.
    """
    if model.file_language != "cuda" or not traits(kernel.language).nvcc_build or kernel.launch_sites:
        return None
    facts = analyze(model, kernel)
    if facts.launches:
        return None
    bounds = _guard_bounds(model, kernel)

    def size(var: str | None) -> str | None:
        b = bounds.get(var or "")
        return size_of.get(b, b) if b is not None else None

    unread: list[str] = []  # indices whose block stride is a number that the template cannot turn into a block
    for ti in facts.thread_indices:
        if ti.dims != ("x",):
            continue
        sb, st = stride_of(ti.expr, "blockIdx.x"), stride_of(ti.expr, "threadIdx.x")
        if sb is not None and sb.is_number and sb != 0 and (st is None or not st.is_Integer or st <= 0
                                                            or not sb.is_Integer or sb % st):
            unread.append(f"{ti.name} = {ti.expr}")
        if sb is None or st is None or not (sb.is_Integer and st.is_Integer) or st <= 0 or sb % st:
            continue
        threads = int(sb // st)
        if threads > 1 and facts.fixed_block_extents("x", threads):
            bound = size(ti.name)
            dims = 1 + max((("x", "y", "z").index(d) for t in facts.thread_indices for d in t.dims), default=0)
            if dims > 1:
                unread.append(f"{ti.name} = {ti.expr}")
                break
            return ([threads], f"(cdiv({bound if bound and bound in size_of.values() else first}, {int(sb)}),)",
                    f"each block owns {int(sb)} elements ({ti.name} = {ti.expr} hard-codes the block's extent): "
                    f"{threads} threads of stride {int(st)}")
    used = {d for t in facts.thread_indices for d in t.dims}
    n = 3 if "z" in used else 2 if "y" in used else 1
    fixed_todo = f"TODO: the index {unread[0]} implies a fixed block: set block and grid to match it; " \
        if unread else ""
    if n == 1:
        return ([256], f"(cdiv({first}, 256),)", fixed_todo + "guessed (one thread per element)") if unread else None
    block = GUESS_BLOCK[n]
    grid: list[str] = []
    todo = False
    for i, d in enumerate(("x", "y", "z")[:n]):
        ti = facts.thread_index(d)
        bound = size(ti.name if ti is not None else None)
        if bound is None or bound not in size_of.values():
            bound, todo = first, True
        grid.append(f"cdiv({bound}, {block[i]})")
    why = fixed_todo + ("TODO: guessed " if todo else "guessed: ") + \
        f"a {n}-D block, each dimension's global index covered up to its bound in the bounds check"
    return block, "(" + ", ".join(grid) + ")", why
