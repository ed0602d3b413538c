"""Write a filled-in ``htam.toml`` harness template for one kernel (the LSP offers it as a code action).

Shapes and values are *guessed* from the kernel's parameters and the launch site (pointer
parameters become tensors, size-like integers become size symbols, stores make outputs). Every
guess is marked with a comment; the reference is left empty on purpose, since only the developer
knows what the kernel must compute, and an empty reference is refused with a message that says so.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from htam_core.harness.cu_eval import base_type
from htam_core.harness.foreign import foreign_launches
from htam_core.harness.infer_cuda import output_params
from htam_core.harness.pywrapper import wrapper_def as _wrapper_def
from htam_core.harness.spec import table_header
from htam_core.harness.template_cuda import (
    direct_launch,
    guessed_launch,
    kernel_shapes,
    launcher_template,
    py_expr,
)
from htam_core.harness.template_ranges import IntegerInit, integer_inits, integer_roles
from htam_core.source.analysis import analyze, sym
from htam_core.source.analysis.structs import file_struct_layout
from htam_core.source.model import Kernel, LaunchSite, Param, SourceModel
from htam_core.source.workspace import WorkspaceLaunch, find_launches
from htam_core.types.language import traits

_C_DTYPES = {
    "float": "float32", "double": "float64", "half": "float16", "__half": "float16",
    "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "int": "int32", "int32_t": "int32",
    "unsigned": "int32", "int64_t": "int64", "long": "int64", "size_t": "int64", "int8_t": "int8",
    "uint8_t": "uint8", "char": "int8", "bool": "bool", "float4": "float32",
    "at::Half": "float16", "c10::Half": "float16", "at::BFloat16": "bfloat16", "c10::BFloat16": "bfloat16",
}
_SIZE_NAMES = {"n", "numel", "n_elements", "size", "len", "length", "count", "total"}
_MNK = ("M", "N", "K")


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _c_dtype(p: Param) -> str:
    base = re.sub(r"\b(const|__restrict__|restrict|volatile|unsigned|signed)\b|[*&]", " ", p.type or "").split()
    for tok in base:
        if tok in _C_DTYPES:
            return _C_DTYPES[tok]
    return "float32"


def _size_symbol(name: str, symbols: dict[str, int]) -> str | None:
    if name in _MNK or name.upper() in _MNK and len(name) == 1:
        symbols.setdefault(name.upper(), 1024)
        return name.upper()
    if name.lower() in _SIZE_NAMES or name.lower().startswith(("n_", "num_")):
        symbols.setdefault("N", 1 << 20)
        return "N"
    if name in ("rows", "cols", "width", "height"):
        symbols.setdefault(name.upper(), 1024)
        return name.upper()
    return None


_FLOAT_NAMES = re.compile(r"^(eps|epsilon|alpha|beta|gamma|scale|sm_scale|momentum|slope|negative_slope|temperature|"
                          r"dropout|dropout_p|p|lr|theta|sigma|mu|lambd|weight_decay|threshold)$", re.IGNORECASE)


def _plain_annotation(ann: str) -> str:
    """``Optional[float]``/``float | None``/``typing.Optional[int]`` -> ``float``/``int``; others unchanged."""
    m = re.fullmatch(r"(?:typing\.)?Optional\[\s*(\w+)\s*\]|(\w+)\s*\|\s*None|None\s*\|\s*(\w+)", ann.strip())
    return next((g for g in m.groups() if g), ann) if m else ann


def _launcher_ranks(fn: ast.FunctionDef) -> dict[str, list[str | None]]:
    """What the launcher's body says about each parameter's dimensions: ``p.stride(i)``, ``p.shape[i]``,
    ``p.size(i)`` give at least ``i + 1`` dimensions, ``a, b = p.shape`` gives exactly two and names them.
    Returns ``{param: [dimension name or None, ...]}`` for the parameters it says something about."""
    params = {a.arg for a in fn.args.args}
    dims: dict[str, list[str | None]] = {}

    def need(name: str, rank: int, label: str | None = None, at: int | None = None) -> None:
        d = dims.setdefault(name, [])
        d.extend([None] * (rank - len(d)))
        if label is not None and at is not None and d[at] is None:
            d[at] = label

    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple) and \
                isinstance(node.value, ast.Attribute) and node.value.attr == "shape" and \
                isinstance(node.value.value, ast.Name) and node.value.value.id in params:
            for i, t in enumerate(node.targets[0].elts):
                need(node.value.value.id, len(node.targets[0].elts), t.id if isinstance(t, ast.Name) else None, i)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("stride", "size") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in params and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int) and node.args[0].value >= 0:
            need(node.func.value.id, node.args[0].value + 1)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
                and isinstance(node.value.value, ast.Name) and node.value.value.id in params and \
                isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) and node.slice.value >= 0:
            need(node.value.value.id, node.slice.value + 1)
    return dims


def _wrapper_inputs(fn: ast.FunctionDef, kernel: Kernel, symbols: dict[str, int],
                    recorded: Mapping[str, str] | None = None) -> tuple[list[str], list[str]]:
    """``inputs`` lines for the launcher's parameters, and the parameters left out: annotations and defaults decide.

    ``float``/``int``/``bool`` annotations (also ``Optional[...]`` of them) and number defaults make scalars (the
    default is the value; an ``int`` size-like name becomes a size symbol). Trailing parameters whose default
    is not a number (``out=None``, ``activation="gelu"``) are left out: the launcher's default applies. Every
    other parameter is a tensor whose rank the launcher's body gives (``x.stride(1)``, ``M, N = x.shape``), else
    2-D (``["M", "N"]``) when the kernel takes ``stride`` parameters and the parameter is the first tensor, 1-D
    (the last dimension) for the others, or 1-D (``["N"]``) without strides. A tensor's dtype is the one the
    recording saw (``recorded``: launcher parameter -> torch dtype name, :func:`recorded_dtypes`), else a
    ``float32`` guess.
    """
    recorded = recorded or {}
    args = fn.args.args
    defaults: list[ast.expr | None] = [None] * (len(args) - len(fn.args.defaults)) + list(fn.args.defaults)
    keep = len(args)
    while keep and defaults[keep - 1] is not None and not (
            isinstance(defaults[keep - 1], ast.Constant) and isinstance(defaults[keep - 1].value, int | float)):
        keep -= 1
    left_out = [a.arg for a in args[keep:]]
    two_d = any("stride" in p.name for p in kernel.params)
    ranks = _launcher_ranks(fn)
    first_tensor = True
    shapes: list[list[str]] = []
    out: list[str] = []
    for a, default in zip(args[:keep], defaults[:keep], strict=True):
        ann = _plain_annotation(ast.unparse(a.annotation)) if a.annotation is not None else ""
        dval = default.value if isinstance(default, ast.Constant) else None
        number = isinstance(dval, int | float) and not isinstance(dval, bool)
        size_like = not ann and default is None and _size_symbol(a.arg, {}) is not None
        if size_like:
            ann = "int"
        if not ann and default is None and _FLOAT_NAMES.match(a.arg):
            ann = "float"
        if ann in ("float", "int", "bool") or number or isinstance(dval, bool):
            kind = ann or ("bool" if isinstance(dval, bool) else "float" if isinstance(dval, float) else "int")
            sym = _size_symbol(a.arg, symbols) if kind == "int" and dval is None else None
            value = _toml_str(sym) if sym else (str(dval).lower() if isinstance(dval, bool) else
                                                repr(dval) if dval is not None else "1.0" if kind == "float" else "1")
            dtype = {"float": "float32", "int": "int32", "bool": "bool"}[kind]
            note = "" if dval is not None or sym else "  # guessed value"
            out.append(f"  {{ name = {_toml_str(a.arg)}, dtype = {_toml_str(dtype)}, value = {value} }},{note}")
            continue
        known = ranks.get(a.arg)
        if known:
            default_names = ["M", "N"] if len(known) == 2 else ["N"] if len(known) == 1 else \
                [f"D{i}" for i in range(len(known))]
            names = [(d.upper() if d and not keyword.iskeyword(d) else None) or default_names[i]
                     for i, d in enumerate(known)]
            why = "the launcher reads its shape/strides"
        elif two_d:
            last = next((r[-1] for r in shapes if len(r) >= 2), "N")
            names = ["M", "N"] if first_tensor else [last]
            why = "guessed shape (the kernel takes strides)" + ("" if first_tensor else
                                                                 f": a vector over the last dimension {last}")
        else:
            names = ["N"]
            why = "guessed shape"
        first_tensor = False
        shapes.append(names)
        for d in names:
            symbols.setdefault(d, 1 << 20 if names == ["N"] and not two_d else 1024)
        shape = "[" + ", ".join(_toml_str(d) for d in names) + "]"
        dtype = recorded.get(a.arg, "float32")
        why += "; dtype as recorded" if a.arg in recorded else ""
        out.append(f"  {{ name = {_toml_str(a.arg)}, shape = {shape}, dtype = {_toml_str(dtype)}, init = \"randn\" }},"
                   f"  # {why}")
    return out, left_out


_STRIDE_ROW = re.compile(r"stride(_?\w*?)(m|row|rows|0|_r|b|batch|h)?$", re.IGNORECASE)


def _pointer_strided(kernel: Kernel, pointer: str) -> bool:
    """Whether ``pointer``'s address in the kernel's text adds a ``stride`` parameter (``X + row * stride +
    cols``): a row-major matrix rather than a vector. A text scan of ``<pointer> + ...`` up to the next
    comma or closing parenthesis."""
    strides = [p.name for p in kernel.params if "stride" in p.name]
    for m in re.finditer(rf"\b{re.escape(pointer)}\s*\+([^,)]*)", kernel.text):
        if any(re.search(rf"\b{re.escape(s)}\b", m.group(1)) for s in strides):
            return True
    return False


def _stride_value(name: str, shapes: dict[str, list[str]]) -> str:
    """A row-major stride's value: ``stride_am`` of ``a_ptr`` shaped ``["M", "K"]`` is ``"K"``, ``stride_ak``
    is ``1``; a row stride without a tensor letter (``stride``, ``stride_row``, ``x_stride0``) is the last
    dimension of the first matrix; a column stride (``stride_col``, ``*_stride1``, ``stride_xn``) is 1."""
    low = name.lower()
    for ptr, shape in shapes.items():
        base = ptr.lower().removesuffix("_ptr").rstrip("_")
        for i, d in enumerate(shape):
            if base and low in (f"stride_{base}{d.lower()}", f"{base}_stride_{d.lower()}",
                                f"stride_{base}_{d.lower()}", f"{base}_stride{i}"):
                return shape[-1] if i < len(shape) - 1 else "1"
    if re.search(r"(col|cols|_n|1|_c|_d)$", low) and not re.search(r"(row|rows|_m|0)$", low):
        return "1"
    mats = [s for s in shapes.values() if len(s) == 2]
    return mats[0][-1] if mats else "N"


def _number(text: str) -> int | float | None:
    """The number a launch argument's text spells (``"512"``, ``"1e-6"``, ``"-0.5"``), else ``None``."""
    try:
        v = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def _literal_block(expr: str | None) -> list[int] | None:
    if not expr:
        return None
    nums = re.fullmatch(r"\s*(?:dim3\s*\()?\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?\)?\s*", expr)
    if not nums:
        return None
    return [int(g) for g in nums.groups() if g]


@dataclass
class _Direct:
    """The parts of a direct-launch table (no launcher function): the kernel's arguments and constexpr keywords,
    the ``inputs`` entries (TOML lines), the outputs, the tensors declared ``const``, and each integer
    parameter's size symbol."""

    args: list[str] = field(default_factory=list)
    kwargs: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    const_data: set[str] = field(default_factory=set)
    size_of: dict[str, str] = field(default_factory=dict)
    #: each pointer's shape read from its indices (size symbols), or why it was not read
    derived: dict[str, list[str] | str] = field(default_factory=dict)
    #: each pointer whose element type is a template parameter: its dtype and the note (:func:`_template_dtypes`)
    elem: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: each tensor's entry: its index in ``inputs``, the parameter, the guessed shape and whether strides are used
    tensors: dict[str, tuple[int, Param, list[str] | None, bool]] = field(default_factory=dict)


def recorded_dtypes(recording: dict | None) -> dict[str, str]:
    """``{launcher parameter: torch dtype name}`` of the tensors a recording of the launcher saw
    (:func:`htam_core.harness.infer_py.record`'s ``calls[i]["params"]``, calls that raised included: the
    template is written when nothing could be inferred), the first recorded call's dtype for each; ``{}`` for
    no recording. A template guesses ``float32`` only where the program never showed the dtype."""
    out: dict[str, str] = {}
    for call in (recording or {}).get("calls") or []:
        for name, d in (call.get("params") or {}).items():
            if isinstance(d, dict) and d.get("kind") == "tensor" and d.get("dtype"):
                out.setdefault(name, str(d["dtype"]))
    return out


def write_template(model: SourceModel, kernel: Kernel, recorded: Mapping[str, str] | None = None) -> str:
    """Return a ``[kernel.<name>]`` table for ``htam.toml``, filled in from the kernel's parameters.

    The table calls, in order of preference, the ``.cu`` host function that launches the kernel
    (:func:`~htam_core.harness.template_cuda.launcher_template`), the Python function that launches it, or the
    kernel itself with a guessed launch (:func:`_direct_table`).

    Args:
        model: the file's source model (its ``path`` gives the ``file`` key).
        kernel: the kernel to write a harness for.
        recorded: the launcher's tensor dtypes a recording of the file saw (:func:`recorded_dtypes`); they
            replace the ``float32`` guesses.

    Returns:
        TOML text (a complete table with comments) that parses with :mod:`tomllib`. Its
        ``reference`` is empty: the developer fills it in.
    """
    fname = Path(model.path).name if model.path else "kernel_file"
    lines = [
        f"# Profiling harness for {kernel.name} (htam harness format, version 1).",
        "# Guessed from the kernel's parameters: check shapes, dtypes and sizes, then write the reference.",
        table_header(kernel.key),
        "version = 1",
        f"file = {_toml_str(fname)}",
    ]
    symbols: dict[str, int] = {}
    wrapper = _wrapper_def(model, kernel)
    host = launcher_template(model, kernel) if wrapper is None else None
    if host is not None:  # a .cu host function launches it: call that, its launch configuration stays as written
        lines.extend(host.head)
        inputs, outputs, ref_names = host.inputs, host.outputs, host.ref_names
        symbols.update(host.sizes)
        if not outputs:
            lines.append("# TODO: no store through a launcher parameter was found: name the output(s) below")
        lines.append(f"outputs = [{', '.join(_toml_str(o) for o in outputs)}]")
    elif wrapper is not None:
        name, params = wrapper.name, [a.arg for a in wrapper.args.args]
        lines.append(f"launcher = {_toml_str(name)}   # called as {name}({', '.join(params)}); its return value is "
                     "the output")
        inputs, left_out = _wrapper_inputs(wrapper, kernel, symbols, recorded)
        if left_out:
            lines.append(f"# left out (their defaults apply): {', '.join(left_out)}")
        ref_names = [p for p in params if p not in left_out]
    else:
        inputs, ref_names = _direct_table(model, kernel, lines, symbols)
    lines.append("inputs = [")
    lines.extend(inputs)
    lines.append("]")
    lines.extend(_template_tail(symbols, ref_names))
    return "\n".join(lines) + "\n"


def _direct_table(model: SourceModel, kernel: Kernel, lines: list[str],
                  symbols: dict[str, int]) -> tuple[list[str], list[str]]:
    """The direct-launch part of the table (no launcher function): ``grid``/``block``, ``args``, ``kwargs`` and
    ``outputs`` appended to ``lines``; returns the ``inputs`` entries and the names the reference reads. Size
    symbols are added to ``symbols``."""
    site = kernel.launch_sites[0] if kernel.launch_sites else None
    d = _direct_parts(model, kernel, symbols)
    found = foreign_launches(model, kernel) if site is None else []
    if found:  # launched from another module: that launch's grid and constexprs, not a guess
        lines.extend(_found_launch_lines(found[0], d, kernel))
    else:
        lines.extend(_grid_lines(model, kernel, site, symbols, d))
    lines.append(f"args = [{', '.join(_toml_str(a) for a in d.args)}]")
    if d.kwargs:
        lines.append(f"kwargs = {{ {', '.join(d.kwargs)} }}")
    if not d.outputs:
        d.outputs = [a for a in d.args if a not in d.const_data and
                     any(f'name = "{a}", shape' in i for i in d.inputs)][-1:]
        lines.append("# no store was found: the last tensor argument not declared const is assumed to be the "
                     "output" if d.outputs else "# TODO: no store was found and every tensor is const: name the "
                     "output(s) below")
        d.inputs = [i.replace('init = "randn"', 'init = "empty"') if f'name = "{d.outputs[0]}"' in i else i
                    for i in d.inputs] if d.outputs else d.inputs
    lines.append(f"outputs = [{', '.join(_toml_str(o) for o in d.outputs)}]")
    names = [m.group(1) for i in d.inputs if (m := re.match(r'\s*\{ name = "([^"]+)"', i))]  # our own entries
    return d.inputs, [n for n in names if n not in d.outputs]


def _struct_entries(model: SourceModel, p: Param) -> list[str] | None:
    """The ``inputs`` entries of parameter ``p`` when it is a struct passed by value (the file or a local header
    defines its type with a body: :func:`~htam_core.source.analysis.structs.file_struct_layout`): one entry per
    field (``w__wa``: a number with a guessed value; a pointer field a tensor of guessed shape ``["N"]``, write-only
    unless its elements are const), or, for a struct htam cannot pass, one line marked ``TODO`` that says why;
    ``None`` for any other parameter."""
    t = base_type(p.type or "").split("::")[-1]
    layout = file_struct_layout(model.text, model.path, t) if not p.is_pointer and t else None
    if layout is None:
        return None
    if layout.unsupported:
        return [f"  {{ name = {_toml_str(p.name)}, dtype = \"float32\", value = 0.0 }},  # TODO: a `{layout.type}` "
                f"passed by value, and {layout.unsupported}: use a host launcher (launcher = \"<host function>\") "
                "that builds it"]
    return [f"  {{ name = {_toml_str(f'{p.name}__{f.suffix}')}, "
            + (f"shape = [\"N\"], dtype = {_toml_str(f.dtype)}, init = \"{'randn' if f.const else 'empty'}\" }},  "
               f"# TODO: pointer field `{p.name}.{f.path}` of the `{layout.type}` passed by value: check its shape"
               + ("" if f.const else " (an output: not declared const)") if f.pointer else
               f"dtype = {_toml_str(f.dtype)}, value = {'1.0' if f.dtype.startswith('float') else '1'} }},  "
               f"# field `{p.name}.{f.path}` of the `{layout.type}` passed by value: guessed value")
            for f in layout.fields]


def _direct_parts(model: SourceModel, kernel: Kernel, symbols: dict[str, int]) -> _Direct:
    """The kernel's arguments, constexpr keywords and ``inputs`` entries for a direct launch, each parameter's
    dtype, shape or value guessed from its C type, its name and the launch site's arguments (size symbols are
    added to ``symbols``); stores in the body, or in a ``__device__`` helper it calls, make outputs."""
    d = _Direct()
    lang = traits(kernel.language)
    d.derived = _derived_shapes(model, kernel, d.size_of, symbols) if lang.c_types else {}
    d.elem = _template_dtypes(model, kernel) if lang.c_types else {}
    args, kwargs, inputs, outputs, size_of = d.args, d.kwargs, d.inputs, d.outputs, d.size_of
    site = kernel.launch_sites[0] if kernel.launch_sites else None
    shapes = _size_shapes(kernel)
    strided = any("stride" in p.name for p in kernel.params)
    site_args = site.args if site else []
    shapes_of: dict[str, list[str]] = {}
    pending: list[tuple[int, str, str]] = []  # (index in inputs, stride name, dtype): valued after the shapes
    positional = [p for p in kernel.params if not p.is_constexpr]
    # stores in the body, or in a __device__ helper it calls (the analysis layer's callee facts)
    stored = output_params(model, kernel)[0] if lang.nvcc_build else \
        {q.name for q in kernel.params if q.written}
    const_data = d.const_data  # tensors declared `const T*`: never the output
    for p in kernel.params:
        derived = d.derived.get(p.name)  # read before a keyword name is renamed (``in`` -> ``in_``)
        if p.is_pointer and p.is_const:
            const_data.add(p.name + "_" if keyword.iskeyword(p.name) else p.name)
        if p.name in stored and not p.written:
            p = Param(**{**p.__dict__, "written": True})
        if keyword.iskeyword(p.name):
            p = Param(**{**p.__dict__, "name": p.name + "_"})
        if p.is_constexpr:
            val = (site.config.get(p.name) if site else None) or p.default or "128"
            kwargs.append(f"{p.name} = {val}")
            continue
        args.append(p.name)
        at = next((i for i, q in enumerate(positional) if q.name.rstrip("_") == p.name.rstrip("_")), -1)
        literal = _number(site_args[at]) if 0 <= at < len(site_args) else None
        if p.is_pointer or p.name.endswith("_ptr"):
            if p.written:
                outputs.append(p.name)
            guess = next(shapes, None)
            shapes_of[p.name], entry = _tensor_entry(p, kernel, guess, strided, symbols, derived, d.elem.get(p.name))
            d.tensors[p.name] = (len(inputs), p, guess, strided)
            inputs.append(entry)
        elif "stride" in p.name:
            pending.append((len(inputs), p.name, _c_dtype(p) if lang.c_types else "int32"))
            inputs.append("")
        elif lang.c_types and (entries := _struct_entries(model, p)) is not None:
            inputs.extend(entries)
            outputs.extend(e.split('"')[1] for e in entries if 'init = "empty"' in e)  # non-const pointer fields
        else:
            sym = size_of.get(p.name) or _size_symbol(p.name, symbols)
            is_float = _FLOAT_NAMES.match(p.name) is not None or isinstance(literal, float) or \
                _c_dtype(p) in ("float32", "float64", "float16") and lang.c_types and \
                p.type is not None and not p.is_pointer
            if sym is not None and isinstance(literal, int) and not is_float:
                symbols[sym] = literal  # the launch passes this size
            if is_float:
                dtype = _c_dtype(p) if lang.c_types and p.type else "float32"
                value, note = (repr(float(literal)), "  # from the launch") if literal is not None else \
                    ("1e-05" if re.match(r"eps", p.name, re.IGNORECASE) else "1.0", "  # guessed value")
                inputs.append(f"  {{ name = {_toml_str(p.name)}, dtype = {_toml_str(dtype)}, value = {value} }},"
                              f"{note}")
                continue
            dtype = _c_dtype(p) if lang.c_types else "int32"
            value = sym if sym is not None else (str(literal) if isinstance(literal, int) else "1")
            if sym is not None:
                size_of[p.name] = sym
            note = "" if sym is not None or isinstance(literal, int) else "  # guessed value"
            inputs.append(f"  {{ name = {_toml_str(p.name)}, dtype = {_toml_str(dtype)}, "
                          f"value = {_toml_str(value)} }},{note}")
    for i, name, dtype in pending:
        inputs[i] = (f"  {{ name = {_toml_str(name)}, dtype = {_toml_str(dtype)}, "
                     f"value = {_toml_str(_stride_value(name, shapes_of))} }},  # row-major stride (guessed)")
    if lang.c_types:  # offsets arrays and index buffers: the values their use calls for
        _integer_entries(model, kernel, d, shapes_of, symbols)
    return d


def _size_shapes(kernel: Kernel) -> Iterator[list[str]]:
    """The shapes the size parameters give the tensors, in order: ``M x K``, ``K x N``, ``M x N`` for a kernel
    with ``M``, ``N`` and ``K``, ``ROWS x COLS`` for one with both, else none."""
    scalar_syms = {_size_symbol(p.name, {}) for p in kernel.params
                   if not p.is_constexpr and not (p.is_pointer or p.name.endswith("_ptr"))}
    if {"M", "N", "K"} <= scalar_syms:
        return iter([["M", "K"], ["K", "N"], ["M", "N"]])
    if {"ROWS", "COLS"} <= scalar_syms:
        return iter([["ROWS", "COLS"]] * len(kernel.params))
    return iter([])


def _integer_entries(model: SourceModel, kernel: Kernel, d: _Direct, shapes_of: dict[str, list[str]],
                     symbols: dict[str, int]) -> None:
    """Render again each read tensor entry of ``d`` that is an offsets array or an index buffer, with the init its
    use calls for (:func:`~htam_core.harness.template_ranges.integer_inits`, chosen from the analysis layer's
    facts and the tensors' shapes at the sizes' values ``symbols``)."""
    inits = integer_inits(integer_roles(model, kernel), dict(shapes_of), symbols)
    for name, (at, p, guess, strided) in d.tensors.items():
        if name in inits and not p.written:
            _, d.inputs[at] = _tensor_entry(p, kernel, guess, strided, dict(symbols), d.derived.get(name),
                                            d.elem.get(name), inits[name])


def _template_dtypes(model: SourceModel, kernel: Kernel) -> dict[str, tuple[str, str]]:
    """For each pointer parameter whose element type is a type template parameter of the kernel (``const
    scalar_t *x``): its dtype and the note for the template line, from the types the analysis reads its launches
    instantiating the parameter with (:attr:`~htam_core.source.analysis.KernelFacts.type_instantiations`:
    ``k<float>``, a dispatch macro's ``using scalar_t = __nv_bfloat16;``). One type htam knows gives its dtype;
    several give one of them (float32 when it is one) marked ``TODO``, none a float32 guess marked ``TODO``."""
    facts = analyze(model, kernel)
    inst = dict(facts.type_instantiations)
    out: dict[str, tuple[str, str]] = {}
    for pf in facts.pointers:
        t = pf.element_type
        if t not in inst:
            continue
        known = sorted(((c, _C_DTYPES[c]) for c in inst[t] if c in _C_DTYPES), key=lambda k: k[1] != "float32")
        if len(inst[t]) == 1 and known:
            out[pf.name] = (known[0][1], f"element type {t} = {known[0][0]} at its launch")
        elif known:
            out[pf.name] = (known[0][1], f"TODO: element type: {t} is a template type launched with "
                                         f"{', '.join(inst[t])}: set the dtype of the instantiation to run")
        else:
            out[pf.name] = ("float32", f"TODO: element type guessed ({t} is a template type"
                                       + (f" launched with {', '.join(inst[t])})" if inst[t] else ")"))
    return out


def _tensor_entry(p: Param, kernel: Kernel, shape: list[str] | None, strided: bool,
                  symbols: dict[str, int], derived: list[str] | str | None = None,
                  elem: tuple[str, str] | None = None, integer: IntegerInit | None = None) -> tuple[list[str], str]:
    """The shape and the ``inputs`` entry of the tensor parameter ``p``: the shape its indices walk when
    ``derived`` gives it (:func:`_derived_shapes`), else guessed: ``shape`` when the size parameters gave one
    (``M x K``, ``K x N``, ``M x N``), a row-major ``M x N`` matrix when its address adds a stride, else a vector
    of ``N``, the comment saying why the indices did not give it (``derived`` as a reason). dtype from its C type
    (``float32`` for Triton; ``elem``: the dtype and note of a template element type, :func:`_template_dtypes`),
    ``empty`` when the kernel writes it; ``integer``: the init of an integer buffer read as offsets or indices
    (:mod:`~htam_core.harness.template_ranges`), its note first in the comment."""
    dtype = elem[0] if elem else _c_dtype(p) if traits(kernel.language).c_types else "float32"
    init = "empty" if p.written else "randn"
    if integer is not None and (p.written or not dtype.startswith(("int", "uint"))):
        integer = None
    why = "guessed shape" + (f" ({derived})" if isinstance(derived, str) else "")
    if isinstance(derived, list):
        shape, why = derived, "shape read from its indices and their bounds"
    if shape is None and strided and _pointer_strided(kernel, p.name):
        symbols.setdefault("M", 1024)
        symbols.setdefault("N", 1024)
        shape, why = ["M", "N"], "guessed shape: its address adds a stride (a row-major matrix)"
    if shape is None:
        symbols.setdefault("N", 1024 if strided else 1 << 20)
        shape = ["N"]
    note = f"  # {why}" + (f"; {elem[1]}" if elem else "") + ('; init = "zeros" if the kernel also reads it (+=, beta * C)' if p.written else "")
    fields = integer.fields if integer is not None else f"init = {_toml_str(init)}"
    note = f"  # {integer.note};{note[3:]}" if integer is not None else note
    return shape, (f"  {{ name = {_toml_str(p.name)}, shape = [{', '.join(_toml_str(dim) for dim in shape)}], "
                   f"dtype = {_toml_str(dtype)}, {fields} }},{note}")


def _derived_shapes(model: SourceModel, kernel: Kernel, size_of: dict[str, str],
                    symbols: dict[str, int]) -> dict[str, list[str] | str]:
    """Each pointer's shape from the analysis of its indices (:func:`~htam_core.harness.template_cuda.kernel_shapes`)
    written over size symbols: a size parameter it names gets its usual symbol (``rows`` -> ``ROWS``, ``n`` ->
    ``N``) or its own name in capitals (``hidden`` -> ``HIDDEN``), recorded in ``size_of`` (the parameter's value)
    and ``symbols`` (a default size). A shape that is not read stays a reason (the caller guesses and says so)."""
    out: dict[str, list[str] | str] = {}
    for ptr, shape in kernel_shapes(model, kernel).items():
        if isinstance(shape, str):
            out[ptr] = shape
            continue
        used = {s.name for dim in shape for s in dim.free_symbols}
        names = [q.name for q in kernel.params if q.name in used]  # the parameters' order
        for n in names:
            if n not in size_of:
                size_of[n] = _size_symbol(n, symbols) or _own_symbol(n, symbols)
        subs = {sym(n): sym(size_of[n]) for n in names}
        out[ptr] = [py_expr(dim.xreplace(subs)) for dim in shape]
    return out


def _own_symbol(name: str, symbols: dict[str, int]) -> str:
    """A size symbol for the size parameter ``name`` that has no usual one: its name in capitals (default 1024)."""
    upper = re.sub(r"\W", "_", name).upper()
    symbols.setdefault(upper, 1024)
    return upper


def _found_launch_lines(la: WorkspaceLaunch, d: _Direct, kernel: Kernel) -> list[str]:
    """The ``grid`` line of a Triton kernel launched from another module (``la``, found by the workspace search), as
    launched there, and ``d``'s constexpr keywords replaced by that launch's (a number as it is, an expression as a
    string over the sizes and inputs), with a comment naming the launcher's file and line. What the launch passes
    to a parameter of ``kernel`` is written as that parameter's size symbol or input name (:func:`_kernel_terms`:
    the launcher's ``rows`` passed as ``M`` is ``M``; a local ``grid`` is its one assignment)."""
    where = f"{Path(la.path).name}:{la.line}"
    terms = _kernel_terms(la, kernel, d.size_of)
    given = dict(a.split("=", 1) for a in la.template_args if "=" in a)
    for i, kw in enumerate(d.kwargs):
        name = kw.split(" = ")[0]
        if name in given:
            v = given[name].strip()
            d.kwargs[i] = f"{name} = {v if _number(v) is not None else _toml_str(terms(v))}"
    return [f"# launched at {where}: the grid and kwargs below are that launch's, written over the kernel's size "
            "symbols and inputs where the launch passes them; make any other name an input or a size symbol (or put "
            "the launch in a function that takes the tensors)",
            f"grid = {_toml_str(terms(la.grid))}   # as launched at {where}"]


def _kernel_terms(la: WorkspaceLaunch, kernel: Kernel, size_of: dict[str, str]) -> Callable[[str], str]:
    """A rewriter of the launcher's expressions (``la``'s grid, a constexpr keyword) into the table's terms: each
    expression the launch passes to a non-constexpr parameter of ``kernel`` (by position or keyword: ``rows``,
    ``a.shape[0]``) becomes the parameter's size symbol (``size_of``) or its input name, and a grid that is a local of the
    launcher assigned once before the launch (``grid = (triton.cdiv(M, 32),)``) becomes that value first.
    An expression that does not parse is kept as written."""
    try:
        tree = ast.parse(Path(la.path).read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return lambda text: text
    call = next((c for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript)
                 and c.lineno == la.line), None)
    if call is None:
        return lambda text: text
    names = [p.name for p in kernel.params]
    passed = [(names[i], a) for i, a in enumerate(call.args[:len(names)])]
    passed += [(k.arg, k.value) for k in call.keywords if k.arg in names]
    constexpr = {p.name for p in kernel.params if p.is_constexpr}  # their values are what the table writes
    mapping: dict[str, str] = {}
    for name, arg in passed:
        if name not in constexpr:
            mapping.setdefault(ast.unparse(arg), size_of.get(name, name))
    local = _single_local(tree, la.line)

    def rewrite(text: str) -> str:
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            return text
        if isinstance(node, ast.Name) and node.id in local:
            node = local[node.id]
        return ast.unparse(_Substitute(mapping).visit(node))
    return rewrite


def _single_local(tree: ast.Module, line: int) -> dict[str, ast.expr]:
    """The locals of the function around ``line`` assigned exactly once (``name = value``) before it."""
    fn = next((f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
               and f.lineno <= line <= (f.end_lineno or f.lineno) and not any(
                   isinstance(g, ast.FunctionDef | ast.AsyncFunctionDef) and g is not f
                   and g.lineno <= line <= (g.end_lineno or g.lineno) for g in ast.walk(f))), None)
    if fn is None:
        return {}
    seen: dict[str, list[ast.expr]] = {}
    for st in ast.walk(fn):
        if isinstance(st, ast.Assign) and st.lineno < line:
            for t in st.targets:
                if isinstance(t, ast.Name):
                    seen.setdefault(t.id, []).append(st.value)
    return {k: v[0] for k, v in seen.items() if len(v) == 1}


class _Substitute(ast.NodeTransformer):
    """Replace each sub-expression whose text is a key of ``mapping`` by the name it maps to (outermost first)."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit(self, node: ast.AST) -> ast.AST:
        """The node replaced when its text is mapped, else with its children visited."""
        if isinstance(node, ast.expr) and not isinstance(node, ast.Constant):
            new = self.mapping.get(ast.unparse(node))
            if new is not None:
                return ast.Name(id=new, ctx=ast.Load())
        return self.generic_visit(node)


def _grid_lines(model: SourceModel, kernel: Kernel, site: LaunchSite | None, symbols: dict[str, int],
                d: _Direct) -> list[str]:
    """The ``grid`` (and for CUDA ``block``) lines of a direct launch: as launched where the launch site says,
    else guessed (one Triton program per block of the first size; for CUDA, from the indices' dimensions or one
    thread per element). A Triton grid of one program per row sets the ``M`` size from the launch."""
    lang = traits(kernel.language)
    kwargs, size_of = d.kwargs, d.size_of
    lines: list[str] = []
    grid_lit = re.fullmatch(r"\(\s*(\d+)\s*,?\s*\)", site.config.get("grid", "")) if site else None
    if grid_lit and lang.tiles and "M" in symbols:
        symbols["M"] = int(grid_lit.group(1))  # one program per row, as launched
    first = next(iter(symbols), "N")
    if lang.tiles and grid_lit and "M" in symbols:
        lines.append('grid = "(M,)"   # as launched: one program per row')
    elif lang.tiles:
        block = next((k.split(" = ")[0] for k in kwargs if k.startswith("BLOCK")), None)
        grid = f"(triton.cdiv({first}, {block}),)" if block else f"(triton.cdiv({first}, 1024),)"
        lines.append(f"grid = {_toml_str(grid)}   # guessed: one program per block of {first}")
    else:
        launch = direct_launch(model, kernel, size_of)
        if launch is not None:  # the launch's own block and grid, over the kernel's size parameters
            blk, grid = launch
            why = "as launched (its grid written over the size parameters)"
        elif (guess := guessed_launch(model, kernel, size_of, first)) is not None:
            blk, grid, why = guess  # the indices' dimensions and hard-coded extents, no launch site
        else:
            unread = _unread_cupy_call(model, kernel)
            blk = _literal_block(site.config.get("block") if site else None) or \
                (list(unread.block_value) if unread and unread.block_value else [256])
            bx = blk[0]
            grid = f"(cdiv({first}, {bx}),)" if len(blk) == 1 else \
                f"(cdiv({first}, {bx}), cdiv({first}, {blk[1]}))"
            why = "TODO: guessed (one thread per element): set the launch's grid" if unread is None else \
                f"TODO: the cupy call at line {unread.line} of {Path(unread.path).name} (grid {unread.grid}) is not " \
                "read (a grid of literals, names and + - * // % is): set the launch's grid"
        lines.append(f"block = {_toml_str(str(tuple(blk)) if len(blk) > 1 else str(blk[0]))}")
        lines.append(f"grid = {_toml_str(grid)}   # {why}")
    return lines


def _unread_cupy_call(model: SourceModel, kernel: Kernel) -> WorkspaceLaunch | None:
    """The first cupy call of a kernel held in a Python string that the launch search found but could not read
    (:attr:`~htam_core.source.workspace.WorkspaceLaunch.editable` false: ``math.ceil(n / 256)`` in its grid)."""
    if not traits(kernel.language).embedded or not model.path or kernel.launch_sites:
        return None
    return next((la for la in find_launches(model, kernel) if la.style == "cupy" and not la.editable), None)


def _template_tail(symbols: dict[str, int], ref_names: list[str]) -> list[str]:
    """The table's closing lines: the sizes (``N = 2**20`` when nothing gave one; ``symbols`` is filled so), the
    commented interpreter sizes, the empty reference with what it reads, and the commented tolerances and
    roofline keys."""
    lines: list[str] = []
    if not symbols:
        symbols["N"] = 1 << 20
    sizes = ", ".join(f"{k} = {v}" for k, v in symbols.items())
    lines.append(f"sizes = [{{ {sizes} }}]   # add more tables for more input sets")
    lines.append("# interpret_sizes = [{ ... }]  # sets for the Triton interpreter on a CPU (default: the small ones)")
    lines.append(f"# TODO: a torch expression over {', '.join(ref_names)} giving the expected output(s), e.g. "
                 "\"a + b\"; or \"module:function\"")
    lines.append('reference = ""')
    lines.append("# atol = 1e-4   # default per dtype (KernelBench): fp32 1e-4, fp16/bf16 1e-2")
    lines.append("# rtol = 1e-4")
    lines.append('# bytes = "..."  # DRAM bytes per call, for bandwidth and roofline (expression over sizes)')
    lines.append('# flops = "..."  # FLOPs per call')
    return lines
