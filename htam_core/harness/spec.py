"""The harness spec: a ``[kernel.<name>]`` table in a ``htam.toml`` next to the kernel's file.

Designed for a kernel developer: short, declarative, versioned. A complete example (the
``write_template`` code action writes one like it)::

    [kernel.vadd_kernel]
    version = 1
    file = "vector_add.py"              # optional when only one file here defines the kernel
    launcher = "vector_add"             # a Python function in the file, called with the inputs in order
    inputs = [
      { name = "a", shape = ["N"], dtype = "float32", init = "randn" },
      { name = "b", shape = ["N"], dtype = "float32", init = "randn" },
    ]
    sizes = [{ N = 98432 }, { N = 1048576 }]   # one input set each; symbols usable in any expression
    interpret_sizes = [{ N = 4096 }]    # optional: sets for the Triton interpreter on a CPU (default: smallest)
    reference = "a + b"                 # torch expression over the inputs, or "module:function"
                                        # (or oracle = true: check against the starting kernel)
    atol = 1e-4                         # optional; default per dtype (KernelBench: fp32 1e-4, fp16/bf16 1e-2)
    rtol = 1e-4
    bytes = "3 * N * 4"                 # optional: DRAM bytes per call, for bandwidth and roofline
    flops = "N"                         # optional: FLOPs per call

Instead of ``launcher``, a kernel launch: ``grid`` (expression), ``args`` (input names in
order), ``kwargs`` (Triton constexprs, ``num_warps``) and, for CUDA, ``block`` and
``shared_bytes``; the written buffers are inputs listed in ``outputs``: ``init = "empty"`` for a
write-only buffer (poisoned before every checked run), any other init (``"zeros"``, ``"randn"``) for an
in-out buffer the kernel also reads (``C`` of ``C = alpha*A@B + beta*C``; restored before every run). An
in-place kernel (``y = alpha*x + y``, an optimizer step) lists the tensors it updates in ``outputs`` the same
way; a launcher that returns the tensor it was given needs no ``outputs`` (the returned argument is the output).
Shapes are bounded (:func:`size_problem`) and tolerances must be finite and non-negative.
Scalars are inputs with a ``value`` (number or expression) and no shape.

A CUDA kernel whose output is a ``__device__`` variable lists it as an input no argument passes, in ``outputs``,
and maps it to the variable: ``symbols = { g_count = "g_count" }`` (reset from the input before each launch, read
back into it after).

A ``.cu`` program with ``main()`` may take arguments: ``[program."file.cu"] args = ["1024"]``.
A KernelBench file may name its reference: ``[kernelbench."file.py"] reference = "ref.py"``.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from htam_core.harness.base import (
    DTYPES,
    INITS,
    MAX_INPUT_SET_BYTES,
    MAX_TENSOR_ELEMENTS,
    Harness,
    HarnessError,
    InputSpec,
)
from htam_core.harness.launch_values import launch_value
from htam_core.types.language import traits

SPEC_FILENAME = "htam.toml"
SPEC_VERSION = 1

_KERNEL_KEYS = {
    "version", "file", "launcher", "grid", "block", "shared_bytes", "args", "kwargs", "inputs", "sizes",
    "outputs", "reference", "atol", "rtol", "bytes", "flops", "interpret_sizes", "oracle", "symbols",
}
_INPUT_KEYS = {"name", "dtype", "shape", "init", "value", "low", "high", "scale"}
_FUNC_REF = re.compile(r"^[\w./-]+(\.py)?:[A-Za-z_][\w.]*$")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")
_CXX_NAME = re.compile(r"^(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*(?:<[\w\s,:*]+>)?$")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def table_header(kernel: str) -> str:
    """The ``htam.toml`` header of the table of ``kernel`` (a :attr:`~htam_core.source.model.Kernel.key`):
    ``[kernel.vadd]`` for a name TOML takes bare, else the name as a quoted key: ``[kernel."f64::scale"]``,
    ``[kernel."scale(double*, double, int)"]`` (TOML 1.0, *Keys*: a bare key is ``A-Za-z0-9_-`` only)."""
    if _BARE_KEY.match(kernel):
        return f"[kernel.{kernel}]"
    quoted = kernel.replace("\\", "\\\\").replace('"', '\\"')
    return f'[kernel."{quoted}"]'


def is_function_reference(text: str) -> bool:
    """True when a ``reference`` names a function (``"mod:fn"``, ``"ref.py:fn"``) rather than
    being a torch expression (``"x[:, 0].sum()"`` is an expression)."""
    return bool(_FUNC_REF.match(text.strip()))


def write_only_outputs_in_reference(inputs: list[InputSpec], outputs: list[str], reference: str | None) -> list[str]:
    """Names of write-only outputs (``init = "empty"``) that a reference *expression* reads: they hold the
    NaN poison there, so the reference would be NaN too (and NaN matches NaN). ``[]`` for a
    ``module:function`` reference (it never gets outputs) or an expression that does not parse."""
    if not reference or is_function_reference(reference):
        return []
    try:
        used = {n.id for n in ast.walk(ast.parse(reference.strip(), mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return []
    init = {i.name: i.init for i in inputs}
    return [o for o in outputs if o in used and init.get(o) == "empty"]


def check_reference(where: str, reference: str, inputs: list[InputSpec], outputs: list[str],
                    key: str = "reference") -> None:
    """Check a ``reference`` as ``htam.toml`` takes it: ``"module:function"``/``"file.py:function"`` (only its
    form here; the function is looked up in the worker by :func:`htam_core.harness.runner.function_reference`)
    or a torch expression over the input names (compiled for syntax, never run here), which must not read a
    write-only output. Shared by ``[kernel.<name>] reference`` and ``htam verify --reference``.

    Args:
        where: where the reference was written, for the message (``"htam.toml:12 [kernel.k]"``, ``"--reference"``).
        reference: the reference text.
        inputs: the harness's inputs; outputs: its output names.
        key: the key named in a syntax error (``"<where>.reference = ..."``); ``""`` names ``where`` alone.

    Raises:
        HarnessError: the expression does not compile or reads a write-only output.
    """
    if is_function_reference(reference):
        return
    _check_expr(f"{where}.{key}" if key else where, reference)
    poisoned = write_only_outputs_in_reference(inputs, outputs, reference)
    if poisoned:
        raise HarnessError(reference_reads_write_only_message(where, poisoned))


def reference_reads_write_only_message(where: str, names: list[str]) -> str:
    """The error for :func:`write_only_outputs_in_reference`: what happened and what to do."""
    listed = ", ".join(names)
    return (f"{where}: the reference reads {listed}, declared init = \"empty\" (a write-only output: it holds the "
            f"NaN poison, so the reference would be NaN). If the kernel reads {listed} too (C in C = alpha*A@B + "
            f"beta*C, out += x), give it init = \"zeros\" (or another init) and keep it in outputs: it is then "
            "restored before every run and the reference sees its initial value. Otherwise leave it out of the "
            "reference")


def load_toml(path: Path) -> dict[str, Any]:
    """Read ``path`` with :mod:`tomllib`.

    Raises:
        HarnessError: the file is not UTF-8 text (a binary file), not valid TOML (the message names the line
            tomllib reports), or cannot be read.
    """
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except UnicodeDecodeError as e:
        line = path.read_bytes().count(b"\n", 0, e.start) + 1
        raise HarnessError(f"{path} is not a UTF-8 text file (byte 0x{e.object[e.start]:02x} at line {line}: a binary "
                           "file?), so it is not a valid htam.toml. Replace it with a text htam.toml (docs/HARNESS.md "
                           "has a complete example) or remove it", path=str(path)) from None
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"{path} is not valid TOML: {e}. Fix the syntax (docs/HARNESS.md has a complete "
                           "example; with the file moved aside, `htam harness infer FILE` prints a filled-in table).",
                           path=str(path)) from e
    except OSError as e:
        raise HarnessError(f"cannot read {path}: {e}", path=str(path)) from e


def key_line(spec_path: Path, table: tuple[str, ...], key: str) -> int | None:
    """The 1-based line of ``key = ...`` inside the table ``[table[0].table[1]...]`` of ``spec_path``.

    A text scan (:mod:`tomllib` keeps no positions): headers are compared without spaces and quotes, so
    ``[kernel.vadd]`` and ``[kernel."vadd"]`` both match; a dotted key ``kernel.vadd.file = ...`` at the top
    level matches too. ``None`` when the file cannot be read or the key is not found there.
    """
    try:
        lines = spec_path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    want = ".".join(table)
    current = ""
    key_re = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
    dotted_re = re.compile(r"^\s*([^=\[]+?)\s*=")
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("["):
            current = stripped.strip("[]").split("#")[0].replace('"', "").replace("'", "").replace(" ", "")
            current = current.rstrip("]")
            continue
        if current == want and key_re.match(line):
            return n
        m = dotted_re.match(line)
        if m and current == "" and m.group(1).replace('"', "").replace(" ", "") == f"{want}.{key}":
            return n
    return None


def table_line(spec_path: Path, table: tuple[str, ...]) -> int | None:
    """The 1-based line of the header ``[table[0].table[1]...]`` in ``spec_path`` (same matching as
    :func:`key_line`), or ``None``."""
    try:
        lines = spec_path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    want = ".".join(table)
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.strip("[]").split("#")[0].replace('"', "").replace(
                "'", "").replace(" ", "").rstrip("]") == want:
            return n
    return None


def located(spec_path: Path, table: tuple[str, ...], key: str | None = None) -> str:
    """``"<htam.toml>:<line> [<table>]"`` for a message: the line of ``key`` in the table, or of the table's
    header when the key is absent (or not given), so that every spec error names the file, the line and the key
    (the caller's text names the key)."""
    line = (key_line(spec_path, table, key) if key else None) or table_line(spec_path, table)
    return f"{spec_path}{f':{line}' if line else ''} [{'.'.join(table)}]"


def inside_spec_folder(spec_path: Path, table: tuple[str, ...], key: str, value: Any) -> Path:
    """Resolve the path ``value`` of ``key`` (relative to the folder of ``htam.toml``) and check it stays there.

    A harness names files of its own project; a path that leaves the folder of ``htam.toml`` (``../../etc/passwd``,
    an absolute path elsewhere) is refused rather than silently ignored or read.

    Returns:
        The resolved path (it need not exist).

    Raises:
        HarnessError: ``value`` is not a string, or resolves outside the folder; the message names the key, the
            file and the line.
    """
    line = key_line(spec_path, table, key)
    where = f"{spec_path}{f':{line}' if line else ''}: [{'.'.join(table)}] {key}"
    if not isinstance(value, str) or not value.strip():
        raise HarnessError(f"{where} must be a file name (a string), got {value!r}", path=str(spec_path))
    folder = spec_path.parent.resolve()
    target = (folder / value).resolve()
    if not target.is_relative_to(folder):
        raise HarnessError(f"{where} = {value!r} points outside the folder of htam.toml ({folder}); a harness may "
                           "only name files in that folder or below it. Copy the file there and name it relative "
                           "to htam.toml", path=str(spec_path))
    return target


def _check_expr(where: str, text: Any, *, mode: str = "eval") -> str:
    if not isinstance(text, str | int | float) or isinstance(text, bool):
        raise HarnessError(f"{where} must be a string expression or a number, got {text!r}")
    text = str(text)
    try:
        compile(text, where, mode)
    except SyntaxError as e:
        raise HarnessError(f"{where} = {text!r} is not a valid Python expression: {e.msg}") from e
    return text


_ITEM_BYTES = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2, "int16": 2,
               "int8": 1, "uint8": 1, "bool": 1}


def size_problem(inputs: list[InputSpec], sets: list[dict[str, Any]]) -> str | None:
    """What is wrong with the tensor shapes of ``inputs`` over the size sets ``sets``, or ``None``.

    Each shape is evaluated over each set (numbers, size symbols and arithmetic, never ``eval``:
    :func:`~htam_core.harness.launch_values.launch_value`; a dimension it cannot evaluate is left to the run). A
    negative or non-finite dimension, a tensor of more than :data:`~htam_core.harness.base.MAX_TENSOR_ELEMENTS`
    elements, or a set whose tensors take more than :data:`~htam_core.harness.base.MAX_INPUT_SET_BYTES` bytes
    together is a problem: one line naming the input, its shape and the set.

    Args:
        inputs: the harness's inputs (scalars are skipped).
        sets: one dict of size symbols per input set.
    """
    for k, sv in enumerate(sets):
        total = 0
        env = {n: v for n, v in sv.items()}
        for spec in inputs:
            if spec.is_scalar:
                continue
            numel = 1
            for d in spec.shape or []:
                v = launch_value(d, env)
                if v is None or isinstance(v, bool):
                    numel = None
                    break
                if not math.isfinite(v) or v < 0:
                    what = f"dimension {v:g}" if str(d).strip() == f"{v:g}" else f"dimension {d!r} = {v:g}"
                    return (f"input {spec.name!r} has shape {spec.shape} with {what} in set {k} ({sv}); a "
                            "dimension must be 0 or more")
                numel = numel * int(v) if numel is not None else None
            if numel is None:
                continue
            if numel > MAX_TENSOR_ELEMENTS:
                return (f"input {spec.name!r} has {numel:.3g} elements in set {k} ({sv}); a harness tensor may have "
                        f"at most {MAX_TENSOR_ELEMENTS:.3g} (2^36) elements")
            total += numel * _ITEM_BYTES.get(spec.dtype, 8)
        if total > MAX_INPUT_SET_BYTES:
            return (f"the inputs of set {k} ({sv}) take {total / 2**30:.3g} GiB; an input set may take at most "
                    f"{MAX_INPUT_SET_BYTES // 2**30} GiB")
    return None


def _parse_input(where: str, raw: Any, index: int) -> InputSpec:
    if not isinstance(raw, dict):
        raise HarnessError(f"{where}.inputs[{index}] must be a table like "
                           '{ name = "x", shape = ["N"], dtype = "float32", init = "randn" }')
    unknown = set(raw) - _INPUT_KEYS
    if unknown:
        raise HarnessError(f"{where}.inputs[{index}] has unknown keys {sorted(unknown)}; "
                           f"allowed: {sorted(_INPUT_KEYS)}")
    name = raw.get("name")
    if not isinstance(name, str) or not _IDENT.match(name) or keyword.iskeyword(name):
        raise HarnessError(f"{where}.inputs[{index}] needs a name that is a Python identifier, got {name!r}")
    dtype = raw.get("dtype", "float32")
    if dtype not in DTYPES:
        raise HarnessError(f"{where}.inputs[{index}] ({name}): dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    shape = raw.get("shape")
    value = raw.get("value")
    if shape is None and value is None:
        raise HarnessError(f"{where}.inputs[{index}] ({name}) needs a shape (a tensor: "
                           'shape = ["N"]) or a value (a scalar: value = "N")')
    if shape is not None:
        if not isinstance(shape, list):
            raise HarnessError(f"{where}.inputs[{index}] ({name}): shape must be a list such as [1024, \"N\"]")
        for j, d in enumerate(shape):
            _check_expr(f"{where}.inputs[{index}].shape[{j}]", d)
        init = raw.get("init", "randn")
        if init not in INITS:
            raise HarnessError(f"{where}.inputs[{index}] ({name}): init {init!r} is not one of {', '.join(INITS)}")
    else:
        init = None
        _check_expr(f"{where}.inputs[{index}].value", value)
    if isinstance(raw.get("high"), str):  # an expression over the sizes: indices into a dimension ("V")
        _check_expr(f"{where}.inputs[{index}].high", raw["high"])
    return InputSpec(name=name, dtype=dtype, shape=shape, init=init, value=value,
                     low=raw.get("low", 0), high=raw.get("high", 1 if init not in ("randint", "offsets") else 100),
                     scale=float(raw.get("scale", 1.0)))


def parse_kernel_table(table: dict[str, Any], *, kernel: str, spec_path: Path, file_path: Path) -> Harness:
    """Validate one ``[kernel.<name>]`` table and build a :class:`Harness` of kind ``"spec"``.

    Args:
        table: the parsed table.
        kernel: the kernel's name (the table's key).
        spec_path: the ``htam.toml`` it came from (for messages).
        file_path: the kernel's file.

    Raises:
        HarnessError: a key is missing, unknown or malformed; the message names the key and the fix.
    """
    def where_of(key: str | None = None) -> str:
        return located(spec_path, ("kernel", kernel), key)

    where = where_of()
    unknown = set(table) - _KERNEL_KEYS
    if unknown:
        raise HarnessError(f"{where_of(sorted(unknown)[0])} has unknown keys {sorted(unknown)}; allowed: {sorted(_KERNEL_KEYS)}")
    version = table.get("version")
    if version is None:
        raise HarnessError(f"{where} has no version: add `version = {SPEC_VERSION}` as its first line")
    if version != SPEC_VERSION:
        raise HarnessError(f"{where_of('version')} has version = {version!r}, but this htam reads version {SPEC_VERSION}; "
                           f"set `version = {SPEC_VERSION}` and check the keys against the template")
    raw_inputs = table.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise HarnessError(f'{where_of("inputs")} needs inputs, e.g. inputs = [{{ name = "x", shape = [1024], '
                           'dtype = "float32", init = "randn" }]')
    inputs = [_parse_input(where_of("inputs"), r, i) for i, r in enumerate(raw_inputs)]
    names = [i.name for i in inputs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise HarnessError(f"{where_of('inputs')}: input names must be unique; repeated: {sorted(dup)}")
    launcher = table.get("launcher")
    grid = table.get("grid")
    if launcher is None and grid is None:
        raise HarnessError(f'{where} needs either launcher = "<python function in {file_path.name}>" or a '
                           'kernel launch: grid = "...", args = [...] (and block = ... for CUDA)')
    if launcher is not None and grid is not None:
        raise HarnessError(f"{where_of('grid')} gives both launcher and grid: keep one (launcher calls a Python function, "
                           "grid/args launch the kernel directly)")
    cuda_file = file_path.suffix in (".cu", ".cuh")
    # a .cu launcher may be a C++ name (ns::launch, launch<float>): it is called through an extern "C" shim
    if launcher is not None and (not isinstance(launcher, str)
                                 or not (_CXX_NAME if cuda_file else _IDENT).match(launcher)):
        raise HarnessError(f"{where_of('launcher')}: launcher must be the name of a function in {file_path.name}, got {launcher!r}")
    args = table.get("args", [])
    if grid is not None:
        _check_expr(f"{where_of('grid')}.grid", grid)
        if not isinstance(args, list) or not args:
            raise HarnessError(f"{where_of('args')}: a kernel launch needs args = [...], the input names in the kernel's "
                               "parameter order")
        for a in args:  # a struct passed by value is its fields: inputs named <arg>__<field>
            if a not in names and not any(n.startswith(f"{a}__") for n in names):
                raise HarnessError(f"{where_of('args')}: args names {a!r}, which is not an input; inputs: {names}")
    block = table.get("block")
    if block is not None:
        _check_expr(f"{where_of('block')}.block", str(block))
        block = str(block)
    kwargs = table.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise HarnessError(f"{where_of('kwargs')}: kwargs must be a table, e.g. kwargs = {{ BLOCK_SIZE = 1024, num_warps = 4 }}")
    outputs = table.get("outputs", [])
    if not isinstance(outputs, list) or any(o not in names for o in outputs):
        raise HarnessError(f"{where_of('outputs')}: outputs must list input names (buffers with init = \"empty\", or another "
                           f"init for a buffer the kernel also reads); got {outputs!r}")
    scalar_outs = [o for o in outputs if next(i for i in inputs if i.name == o).is_scalar]
    if scalar_outs:
        raise HarnessError(f"{where_of('outputs')}: outputs {scalar_outs} are scalars; outputs must be tensor buffers (give them "
                           "a shape)")
    if grid is not None and not outputs:
        raise HarnessError(f"{where_of('outputs')}: a kernel launch writes into buffers: add an input with init = \"empty\" "
                           "and list it in outputs = [\"out\"]")
    reference = table.get("reference")
    oracle = table.get("oracle", False)
    if not isinstance(oracle, bool):
        raise HarnessError(f"{where_of('oracle')}: oracle must be true or false (true: check candidates against the starting "
                           f"kernel instead of a reference), got {oracle!r}")
    if oracle and reference:
        raise HarnessError(f"{where_of('oracle')} gives both reference and oracle = true: keep one (a reference wins; remove "
                           "oracle)")
    if reference is None and cuda_file:
        oracle = True  # a CUDA table without a reference: candidates are checked against the starting kernel
    if oracle:
        reference = None
    elif not isinstance(reference, str) or not reference.strip():
        raise HarnessError(f"{where_of('reference')} needs a reference: a torch expression over {names} (e.g. "
                           f'reference = "{names[0]} + 1"), "module:function", or oracle = true')
    if reference and is_function_reference(reference) and reference.split(":")[0].endswith(".py"):
        inside_spec_folder(spec_path, ("kernel", kernel), "reference", reference.split(":")[0])
    if reference:
        check_reference(where_of("reference"), reference, inputs, outputs)
    sizes = table.get("sizes", [{}])
    if isinstance(sizes, dict):
        sizes = [sizes]
    if not isinstance(sizes, list) or not sizes or not all(isinstance(s, dict) for s in sizes):
        raise HarnessError(f"{where_of('sizes')}: sizes must be a list of tables, e.g. sizes = [{{ N = 4096 }}, {{ N = 1000003 }}]")
    interpret_sizes = table.get("interpret_sizes")
    if isinstance(interpret_sizes, dict):
        interpret_sizes = [interpret_sizes]
    if interpret_sizes is not None and (not isinstance(interpret_sizes, list) or not interpret_sizes
                                        or not all(isinstance(s, dict) for s in interpret_sizes)):
        raise HarnessError(f"{where_of('interpret_sizes')}: interpret_sizes must be a list of tables like sizes, e.g. "
                           "interpret_sizes = [{ N = 4096 }]")
    for key, sets in (("sizes", sizes), ("interpret_sizes", interpret_sizes or [])):
        for s in sets:
            for k, v in s.items():
                if not _IDENT.match(k) or isinstance(v, bool) or not isinstance(v, int | float):
                    raise HarnessError(f"{where_of(key)}: {key} entries map a symbol to a number, got {k} = {v!r}")
    for key in ("atol", "rtol"):
        v = table.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0):
            raise HarnessError(f"{where_of(key)}: {key} must be a finite non-negative number, got {v!r}")
    for key, sets in (("sizes", sizes), ("interpret_sizes", interpret_sizes or [])):
        problem = size_problem(inputs, sets)
        if problem:
            raise HarnessError(f"{where_of(key)}: {key}: {problem}")
    bytes_expr = _check_expr(f"{where_of('bytes')}.bytes", table["bytes"]) if "bytes" in table else None
    flops_expr = _check_expr(f"{where_of('flops')}.flops", table["flops"]) if "flops" in table else None
    language = "cuda" if file_path.suffix in (".cu", ".cuh") else "triton"
    shared = table.get("shared_bytes", 0)
    if not isinstance(shared, int) or shared < 0:
        raise HarnessError(f"{where_of('shared_bytes')}: shared_bytes must be a non-negative integer (dynamic shared memory in bytes)")
    if traits(language).nvcc_build and grid is not None and block is None:
        raise HarnessError(f"{where_of('grid')}: a CUDA kernel launch needs block = <threads per block>, e.g. block = 256")
    return Harness(
        kind="spec", path=str(file_path), kernel=kernel, language=language,
        source=f"{spec_path} {table_header(kernel)}", launcher=launcher, grid=None if grid is None else str(grid),
        block=block, shared_bytes=shared, args=list(args), kwargs=dict(kwargs), inputs=inputs, sizes=sizes,
        interpret_sizes=interpret_sizes,
        outputs=list(outputs), reference=reference, atol=table.get("atol"), rtol=table.get("rtol"),
        bytes_expr=bytes_expr, flops_expr=flops_expr, version=version,
        oracle_path=str(file_path) if oracle else None, symbols=_symbols(table, names, list(args), where_of),
    )


def _symbols(table: dict[str, Any], names: set[str] | list[str], args: list[str], where_of: Any) -> dict[str, str]:
    """The ``symbols`` table: input name -> the C++ name of the ``__device__`` variable it stands for (an input that
    no argument passes; :attr:`Harness.symbols`).

    Raises:
        HarnessError: not a table of input names to C++ names, or an input a launch argument also passes.
    """
    sym = table.get("symbols", {})
    if not isinstance(sym, dict) or any(k not in names or k in args or not isinstance(v, str)
                                        or not _CXX_NAME.match(v) for k, v in sym.items()):
        raise HarnessError(f"{where_of('symbols')}: symbols must map input names no argument passes to C++ names of "
                           f"__device__ variables ({{ g_count = \"g_count\" }}); got {sym!r}")
    return dict(sym)
