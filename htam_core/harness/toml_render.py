"""The inferred harness as an ``htam.toml`` table: the one writer (:func:`render_toml`) and its appending to the
spec file beside the kernel (:func:`save_to_spec`).

Read by the Python/Triton inference (:mod:`htam_core.harness.infer_py`), the CUDA inference
(:mod:`htam_core.harness.infer_cuda`), the harness status the editor shows and ``htam harness infer``. It imports
neither inference, so both can import it at load time.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.spec import SPEC_FILENAME, load_toml, parse_kernel_table, table_header


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def _comment(text: str, lead: str = "") -> list[str]:
    """``text`` as TOML comment lines: every line of it starts with ``#`` (a multi-line note, such as an
    ``AssertionError`` message of the file's ``__main__`` block, would otherwise break the table), the first one
    after ``lead``, the others indented under it."""
    parts = str(text).splitlines() or [""]
    pad = " " * len(lead)
    return [f"# {lead}{parts[0]}".rstrip()] + [f"# {pad}{p}".rstrip() for p in parts[1:]]


def render_toml(h: Harness) -> str:
    """The inferred harness ``h`` as a fully filled-in ``[kernel.<name>]`` table of ``htam.toml``.

    Every key is written (launcher, or for a direct launch ``grid``/``block``/``args``/``kwargs``/
    ``shared_bytes``; inputs with shapes, dtypes and inits, sizes, interpret_sizes, outputs, reference,
    tolerances), with comments saying where each came from, so the user can adjust it. Under the oracle rule
    the table says ``oracle = true`` (candidates are checked against the starting kernel) and the reference
    line is a comment to fill in. Covers both Python launchers (:func:`infer`) and CUDA ``main()`` launches
    (:func:`htam_core.harness.infer_cuda.infer_cuda_harness`).

    Raises:
        HarnessError: ``h`` is not a launcher or direct-launch harness (a KernelBench pair, a ``main()``
            program run whole).
    """
    if not (h.launcher or h.grid) or not h.traits.launches:
        raise HarnessError(f"{h.source or h.kernel}: only a launcher or direct-launch harness can be written to "
                           f"htam.toml (this one is {h.kind!r})")
    lines = _comment(h.description())
    for n in h.notes:
        lines += _comment(n, "note: ")
    lines += [table_header(h.kernel), "version = 1", f"file = {json.dumps(Path(h.origin_path or h.path).name)}"]
    if h.launcher:
        lines.append(f"launcher = {json.dumps(h.launcher)}")
    else:
        lines.append(f"grid = {json.dumps(h.grid)}")
        if h.block is not None:
            lines.append(f"block = {json.dumps(h.block)}")
        lines.append(f"args = {_toml_value(list(h.args))}")
        if h.kwargs:
            lines.append(f"kwargs = {_toml_value(dict(h.kwargs))}")
        if h.shared_bytes:
            lines.append(f"shared_bytes = {int(h.shared_bytes)}")
    lines.append("inputs = [")
    for i in h.inputs:
        d: dict[str, Any] = {"name": i.name}
        if i.is_scalar:
            d.update(dtype=i.dtype, value=i.value)
        else:
            d.update(shape=i.shape, dtype=i.dtype, init=i.init)
            if i.init in ("rand", "randint", "offsets"):
                d.update(low=i.low, high=i.high)
        lines.append(f"  {_toml_value({k: v for k, v in d.items() if v is not None})},")
    lines.append("]")
    if h.outputs:
        lines.append(f"outputs = {_toml_value(h.outputs)}")
    if h.symbols:  # the __device__ variables the inputs stand for
        lines.append("symbols = { " + ", ".join(f'{k} = "{v}"' for k, v in h.symbols.items()) + " }")
    lines.append(f"sizes = {_toml_value(h.sizes)}   # the first set is timed")
    if h.interpret_sizes:
        lines.append(f"interpret_sizes = {_toml_value(h.interpret_sizes)}   # for the Triton interpreter on a CPU")
    if h.reference:
        lines.append(f"reference = {json.dumps(h.reference)}")
    else:
        lines.append("oracle = true   # no reference was found: candidates are checked against the starting kernel")
        lines.append('# reference = "<torch expression over the inputs>"   # a reference wins: write one, drop oracle')
    if h.atol is not None:
        lines.append(f"atol = {h.atol!r}")
    if h.rtol is not None:
        lines.append(f"rtol = {h.rtol!r}")
    return "\n".join(lines) + "\n"


def save_to_spec(h: Harness) -> Path:
    """Append the inferred harness ``h`` (:func:`render_toml`) to the ``htam.toml`` beside its kernel file.

    The engine side of the editor's code action *Save the inferred harness to htam.toml* and of
    ``htam harness infer FILE --write``. The new file text is parsed (:mod:`tomllib` and the spec checks)
    before anything is written, so a failure leaves the user's ``htam.toml`` as it was.

    Returns:
        The path of ``htam.toml``.

    Raises:
        HarnessError: ``htam.toml`` already has a ``[kernel.<name>]`` table for this kernel (edit it instead),
            cannot be read or written, or the rendered table does not parse (a bug: the message says so).
    """
    original = Path(h.origin_path or h.path)
    spec = original.parent / SPEC_FILENAME
    old = ""
    if spec.is_file():
        existing = load_toml(spec)
        if h.kernel in (existing.get("kernel") or {}):
            raise HarnessError(f"{spec} already has a {table_header(h.kernel)} table; edit it there (htam did not change "
                               "the file)", path=str(spec))
        old = spec.read_text(encoding="utf-8")
    text = old + ("\n" if old and not old.endswith("\n\n") else "") + render_toml(h)
    try:
        table = tomllib.loads(text)["kernel"][h.kernel]
        parse_kernel_table(table, kernel=h.kernel, spec_path=spec, file_path=original)
    except (tomllib.TOMLDecodeError, KeyError, HarnessError) as e:
        raise HarnessError(f"the inferred harness of {h.kernel} did not render to a valid htam.toml table ({e}); "
                           "nothing was written", path=str(spec)) from e
    try:
        spec.write_text(text, encoding="utf-8")
    except OSError as e:
        raise HarnessError(f"cannot write {spec}: {e.strerror or e}", path=str(spec)) from e
    return spec
