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
from pathlib import Path

from htam_core.source.model import Kernel, Param, SourceModel

_C_DTYPES = {
    "float": "float32", "double": "float64", "half": "float16", "__half": "float16",
    "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "int": "int32", "int32_t": "int32",
    "unsigned": "int32", "int64_t": "int64", "long": "int64", "size_t": "int64", "int8_t": "int8",
    "uint8_t": "uint8", "char": "int8", "bool": "bool", "float4": "float32",
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


def wrapper_function(model: SourceModel, kernel: Kernel) -> tuple[str, list[str]] | None:
    """The top-level Python function that launches ``kernel`` (name, parameter names), if any."""
    found = _wrapper_def(model, kernel)
    return (found.name, [a.arg for a in found.args.args]) if found is not None else None


def _wrapper_def(model: SourceModel, kernel: Kernel) -> ast.FunctionDef | None:
    """The ``def`` of the top-level function holding a launch site of ``kernel``, if any."""
    if model.file_language != "python" or not kernel.launch_sites:
        return None
    try:
        tree = ast.parse(model.text)
    except SyntaxError:
        return None
    lines = {s.line for s in kernel.launch_sites}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name != kernel.name:
            end = node.end_lineno or node.lineno
            if any(node.lineno <= ln <= end for ln in lines):
                return node
    return None


def _wrapper_inputs(fn: ast.FunctionDef, kernel: Kernel, symbols: dict[str, int]) -> list[str]:
    """``inputs`` lines for the launcher's parameters: annotations and defaults decide.

    ``float``/``int``/``bool`` annotations and number defaults make scalars (the default is the value; an
    ``int`` size-like name becomes a size symbol); every other parameter is a tensor, 2-D (``["M", "N"]``)
    when the kernel takes ``stride`` parameters (row-major matrices), else 1-D (``["N"]``).
    """
    args = fn.args.args
    defaults: list[ast.expr | None] = [None] * (len(args) - len(fn.args.defaults)) + list(fn.args.defaults)
    two_d = any("stride" in p.name for p in kernel.params)
    out: list[str] = []
    for a, default in zip(args, defaults, strict=True):
        ann = ast.unparse(a.annotation) if a.annotation is not None else ""
        dval = default.value if isinstance(default, ast.Constant) else None
        number = isinstance(dval, int | float) and not isinstance(dval, bool)
        size_like = not ann and default is None and _size_symbol(a.arg, {}) is not None
        if size_like:
            ann = "int"
        if ann in ("float", "int", "bool") or number or isinstance(dval, bool):
            kind = ann or ("bool" if isinstance(dval, bool) else "float" if isinstance(dval, float) else "int")
            sym = _size_symbol(a.arg, symbols) if kind == "int" and dval is None else None
            value = _toml_str(sym) if sym else (str(dval).lower() if isinstance(dval, bool) else
                                                repr(dval) if dval is not None else "1.0" if kind == "float" else "1")
            dtype = {"float": "float32", "int": "int32", "bool": "bool"}[kind]
            note = "" if dval is not None or sym else "  # guessed value"
            out.append(f"  {{ name = {_toml_str(a.arg)}, dtype = {_toml_str(dtype)}, value = {value} }},{note}")
            continue
        if two_d:
            symbols.setdefault("M", 1024)
            symbols.setdefault("N", 1024)
            shape = '["M", "N"]'
        else:
            symbols.setdefault("N", 1 << 20)
            shape = '["N"]'
        out.append(f"  {{ name = {_toml_str(a.arg)}, shape = {shape}, dtype = \"float32\", init = \"randn\" }},"
                   "  # guessed shape")
    return out


def _literal_block(expr: str | None) -> list[int] | None:
    if not expr:
        return None
    nums = re.fullmatch(r"\s*(?:dim3\s*\()?\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?\)?\s*", expr)
    if not nums:
        return None
    return [int(g) for g in nums.groups() if g]


def write_template(model: SourceModel, kernel: Kernel) -> str:
    """Return a ``[kernel.<name>]`` table for ``htam.toml``, filled in from the kernel's parameters.

    Args:
        model: the file's source model (its ``path`` gives the ``file`` key).
        kernel: the kernel to write a harness for.

    Returns:
        TOML text (a complete table with comments) that parses with :mod:`tomllib`. Its
        ``reference`` is empty: the developer fills it in.
    """
    fname = Path(model.path).name if model.path else "kernel_file"
    lines = [
        f"# Profiling harness for {kernel.name} (htam harness format, version 1).",
        "# Guessed from the kernel's parameters: check shapes, dtypes and sizes, then write the reference.",
        f"[kernel.{kernel.name}]",
        "version = 1",
        f"file = {_toml_str(fname)}",
    ]
    symbols: dict[str, int] = {}
    inputs: list[str] = []
    outputs: list[str] = []
    wrapper = _wrapper_def(model, kernel)
    if wrapper is not None:
        name, params = wrapper.name, [a.arg for a in wrapper.args.args]
        lines.append(f"launcher = {_toml_str(name)}   # called as {name}({', '.join(params)}); its return value is "
                     "the output")
        inputs = _wrapper_inputs(wrapper, kernel, symbols)
        ref_names = [p for p in params]
    else:
        args: list[str] = []
        kwargs: list[str] = []
        site = kernel.launch_sites[0] if kernel.launch_sites else None
        scalar_syms = {_size_symbol(p.name, {}) for p in kernel.params
                       if not p.is_constexpr and not (p.is_pointer or p.name.endswith("_ptr"))}
        if {"M", "N", "K"} <= scalar_syms:
            shapes = iter([["M", "K"], ["K", "N"], ["M", "N"]])
        elif {"ROWS", "COLS"} <= scalar_syms:
            shapes = iter([["ROWS", "COLS"]] * len(kernel.params))
        else:
            shapes = iter([])
        for p in kernel.params:
            if keyword.iskeyword(p.name):
                p = Param(**{**p.__dict__, "name": p.name + "_"})
            if p.is_constexpr:
                val = (site.config.get(p.name) if site else None) or p.default or "128"
                kwargs.append(f"{p.name} = {val}")
                continue
            args.append(p.name)
            if p.is_pointer or p.name.endswith("_ptr"):
                dtype = _c_dtype(p) if kernel.language != "triton" else "float32"
                init = "empty" if p.written else "randn"
                if p.written:
                    outputs.append(p.name)
                shape = next(shapes, None)
                if shape is None:
                    symbols.setdefault("N", 1 << 20)
                    shape = ["N"]
                note = "  # guessed shape" + ('; init = "zeros" if the kernel also reads it (+=, beta * C)'
                                              if p.written else "")
                inputs.append(f"  {{ name = {_toml_str(p.name)}, shape = [{', '.join(_toml_str(d) for d in shape)}], "
                              f"dtype = {_toml_str(dtype)}, init = {_toml_str(init)} }},{note}")
            else:
                sym = _size_symbol(p.name, symbols)
                dtype = _c_dtype(p) if kernel.language != "triton" else "int32"
                value = sym if sym is not None else "1"
                note = "" if sym is not None else "  # guessed value"
                inputs.append(f"  {{ name = {_toml_str(p.name)}, dtype = {_toml_str(dtype)}, "
                              f"value = {_toml_str(value)} }},{note}")
        first = next(iter(symbols), "N")
        if kernel.language == "triton":
            block = next((k.split(" = ")[0] for k in kwargs if k.startswith("BLOCK")), None)
            grid = f"(triton.cdiv({first}, {block}),)" if block else f"(triton.cdiv({first}, 1024),)"
            lines.append(f"grid = {_toml_str(grid)}   # guessed: one program per block of {first}")
        else:
            blk = _literal_block(site.config.get("block") if site else None) or [256]
            bx = blk[0]
            grid = f"(cdiv({first}, {bx}),)" if len(blk) == 1 else f"(cdiv({first}, {bx}), cdiv({first}, {blk[1]}))"
            lines.append(f"block = {_toml_str(str(tuple(blk)) if len(blk) > 1 else str(bx))}")
            lines.append(f"grid = {_toml_str(grid)}   # guessed: one thread per element")
        lines.append(f"args = [{', '.join(_toml_str(a) for a in args)}]")
        if kwargs:
            lines.append(f"kwargs = {{ {', '.join(kwargs)} }}")
        if not outputs:
            outputs = [a for a in args if any(f'name = "{a}", shape' in i for i in inputs)][-1:]
            lines.append("# no store was found: the last tensor argument is assumed to be the output")
            inputs = [i.replace('init = "randn"', 'init = "empty"') if f'name = "{outputs[0]}"' in i else i
                      for i in inputs] if outputs else inputs
        lines.append(f"outputs = [{', '.join(_toml_str(o) for o in outputs)}]")
        ref_names = [a for a in args if a not in outputs]
    lines.append("inputs = [")
    lines.extend(inputs)
    lines.append("]")
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
    return "\n".join(lines) + "\n"
