"""Find the harness of a kernel: KernelBench pair, ``htam.toml`` spec, inferred from the file, ``.cu`` ``main()``.

Order of preference (docs/HARNESS.md): KernelBench pair, ``htam.toml`` spec, a harness inferred from the
Python file's own ``__main__`` block or tests (:mod:`htam_core.harness.infer_py`: the file's code runs in a
child process, never here), a harness inferred from a ``.cu`` program's ``main()``
(:mod:`htam_core.harness.infer_cuda`; the starting kernel is the oracle), the ``.cu`` program run whole under
ncu when that inference fails, for a kernel file with no ``main()`` the workspace program that launches it
(:mod:`htam_core.harness.infer_host`), then the template message. The other steps only read files (``ast``,
tree-sitter, :mod:`tomllib`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.cu_main import has_main
from htam_core.harness.infer_host import infer_cuda
from htam_core.harness.infer_py import NotInferred, infer_harness
from htam_core.harness.kernel_tables import select_kernel_table
from htam_core.harness.pysource import parse_failure, read_py_facts
from htam_core.harness.spec import (
    SPEC_FILENAME,
    inside_spec_folder,
    key_line,
    load_toml,
    parse_kernel_table,
    table_header,
)
from htam_core.harness.template import write_template
from htam_core.source import load
from htam_core.source.model import SourceModel
from htam_core.types.language import traits


def _spec_tables(path: Path) -> tuple[Path, dict[str, Any]] | None:
    spec = path.parent / SPEC_FILENAME
    if not spec.is_file():
        return None
    return spec, load_toml(spec)


def _kernelbench(path: Path, text: str, config: dict[str, Any] | None, spec: Path | None,
                 kernel: str) -> Harness | None:
    facts = read_py_facts(text)
    if facts.syntax_error:
        raise HarnessError(parse_failure(path.name, text) or facts.syntax_error)
    if not facts.is_kernelbench_candidate:
        return None
    language = "triton" if facts.triton_kernels else (
        "cuda-in-python" if facts.has_cuda_string or facts.uses_load_inline else "python")
    named = ((config or {}).get("kernelbench") or {}).get(path.name)
    if named is not None:
        ref_name = named.get("reference") if isinstance(named, dict) else None
        if not isinstance(ref_name, str):
            raise HarnessError(f'{spec} [kernelbench."{path.name}"] needs reference = "<file with Model, '
                               'get_inputs, get_init_inputs>"')
        ref = inside_spec_folder(spec, ("kernelbench", path.name), "reference", ref_name) if spec else \
            (path.parent / ref_name).resolve()
        if not ref.is_file():
            raise HarnessError(f'{spec} [kernelbench."{path.name}"] names reference {ref_name!r}, but {ref} '
                               "does not exist; fix the path (relative to htam.toml)")
        _require_reference(ref, ref.read_text(encoding="utf-8", errors="replace"))
        return Harness(kind="kernelbench", path=str(path), kernel=kernel, language=language,
                       source=f'{spec} [kernelbench."{path.name}"]', reference_path=str(ref))
    if facts.is_kernelbench_reference:
        return Harness(kind="kernelbench", path=str(path), kernel=kernel, language=language, source="same file",
                       reference_path=str(path))
    sibling = path.with_name(f"{path.stem}_ref.py")
    if sibling.is_file():
        _require_reference(sibling, sibling.read_text(encoding="utf-8", errors="replace"))
        return Harness(kind="kernelbench", path=str(path), kernel=kernel, language=language,
                       source=f"sibling {sibling.name}", reference_path=str(sibling))
    raise HarnessError(
        f"{path.name} defines ModelNew (a KernelBench candidate) but no reference was found. Add one of: "
        f"a class Model with get_inputs() and get_init_inputs() in {path.name}; a sibling file "
        f"{sibling.name} that defines them; or name the reference in {path.parent / SPEC_FILENAME}.",
        snippet=f'[kernelbench."{path.name}"]\nreference = "{sibling.name}"\n', path=str(path.parent / SPEC_FILENAME))


def kernelbench_pair(path: str | os.PathLike, kernel_name: str) -> Harness | None:
    """The KernelBench pair of the ``.py`` file ``path``, or ``None`` when it is no ``ModelNew`` candidate.

    The one discovery of pairs: :func:`find_harness` (``htam verify``, ``htam optimize``, the editor) and
    ``htam harness infer`` call it. The reference is, in order, named in ``[kernelbench."<file>"]`` of the
    ``htam.toml`` beside the file, the file itself (``class Model`` with ``get_inputs``/``get_init_inputs``), or
    the sibling ``<stem>_ref.py``.

    Raises:
        HarnessError: the file defines ``ModelNew`` but no usable reference was found (the message says what to
            add), or the file or ``htam.toml`` does not parse.
    """
    p = Path(path).resolve()
    if p.suffix != ".py" or not p.is_file():
        return None
    found = _spec_tables(p)
    spec_path, config = (found if found else (None, None))
    return _kernelbench(p, p.read_text(encoding="utf-8", errors="replace"), config, spec_path, kernel_name)


def pair_table(h: Harness) -> str:
    """The KernelBench pair ``h`` as ``htam.toml`` text (a comment saying where it was found, then the
    ``[kernelbench."<file>"]`` table naming its reference), what ``htam harness infer`` prints for a pair."""
    ref = Path(h.reference_path or h.path)
    try:
        rel = ref.relative_to(Path(h.path).parent).as_posix()
    except ValueError:
        rel = str(ref)
    return (f"# KernelBench pair ({h.source}): ModelNew of {Path(h.path).name} is checked against Model of {ref.name}, "
            f"on get_inputs()\n[kernelbench.\"{Path(h.path).name}\"]\nreference = \"{rel}\"\n")


def _require_reference(ref: Path, text: str) -> None:
    facts = read_py_facts(text)
    missing = [n for n in ("get_inputs", "get_init_inputs") if n not in facts.functions]
    if "Model" not in facts.classes:
        missing.insert(0, "class Model")
    if facts.syntax_error or missing:
        why = facts.syntax_error or f"it lacks {', '.join(missing)}"
        raise HarnessError(f"the KernelBench reference {ref.name} cannot be used: {why}. It must define class "
                           "Model(nn.Module), get_inputs() (a list of tensors) and get_init_inputs() (a list of "
                           "constructor arguments)")


def _load_model(path: Path) -> SourceModel | None:
    """The source model of ``path``, or ``None`` when the file cannot be parsed (the template then falls back)."""
    try:
        return load(str(path))
    except Exception:  # noqa: BLE001 - the snippet is a convenience; a parse failure falls back
        return None


def missing_harness_error(path: Path, kernel: str, model: SourceModel | None = None,
                          inferred_why: str | None = None, recorded: dict[str, str] | None = None) -> HarnessError:
    """The error for a kernel with no harness, with a filled-in ``htam.toml`` table to paste; ``inferred_why``
    says why none could be inferred from the file (:mod:`htam_core.harness.infer_py`), ``recorded`` the
    launcher's tensor dtypes its recording saw (the template uses them instead of guesses)."""
    model = model or _load_model(path)
    snippet = None
    if model is not None:
        try:
            snippet = write_template(model, model.kernel(kernel), recorded)
        except KeyError:
            snippet = None
    if snippet is None:
        snippet = (f"[kernel.{kernel}]\nversion = 1\nfile = \"{path.name}\"\nlauncher = \"<python function that "
                   "launches the kernel>\"\ninputs = [\n  { name = \"x\", shape = [\"N\"], dtype = \"float32\", "
                   "init = \"randn\" },\n]\nsizes = [{ N = 1048576 }]\nreference = \"<torch expression over x>\"\n")
    extra = " or give the program a main() that launches it" if path.suffix in (".cu", ".cuh") else ""
    why = f" {inferred_why.rstrip('.')}." if inferred_why else ""
    return HarnessError(
        f"no harness for kernel {kernel!r} in {path.name}: htam does not know how to call it.{why} Add a "
        f"[kernel.{kernel}] table to {path.parent / SPEC_FILENAME} (template below: check the guessed shapes and "
        f"write the reference){extra}.", snippet=snippet, path=str(path.parent / SPEC_FILENAME), missing=True)


def _not_inferred(path: Path, kernel: str, model: SourceModel | None, exc: HarnessError) -> HarnessError:
    """:func:`missing_harness_error` for a Python file whose inference failed with ``exc`` (its message is the
    reason; a :class:`~htam_core.harness.infer_py.NotInferred` gives the dtypes its recording saw)."""
    return missing_harness_error(path, kernel, model, inferred_why=exc.message,
                                 recorded=exc.recorded if isinstance(exc, NotInferred) else None)


def _model_of(path: Path, model: SourceModel | None) -> SourceModel | None:
    """``model`` when it is the parse of ``path``, else ``path`` parsed; ``None`` when it cannot be read (the
    ``htam.toml`` tables are then matched by their exact key)."""
    if model is not None and model.path and Path(model.path).resolve() == path:
        return model
    try:
        return load(path)
    except (OSError, ValueError):
        return None


def _string_kernel(path: Path, kernel: str, model: SourceModel | None) -> bool:
    """Whether the Python file ``path`` holds ``kernel`` as CUDA in one of its strings (a cupy ``RawKernel``
    source, which a ``grid``/``block`` table launches directly, compiled from that string)."""
    try:
        m = model if model is not None and model.path and Path(model.path).resolve() == path else load(path)
    except ValueError:
        return False
    return any(k.name == kernel and traits(k.language).embedded for k in m.kernels)


def _spec_table(kernels: dict[str, Any], kernel_name: str, p: Path, model: SourceModel | None,
                spec_path: Path) -> tuple[str | None, dict[str, Any] | None]:
    """``(key, table)`` of the ``[kernel.<key>]`` table that describes ``kernel_name`` of ``p``
    (:func:`~htam_core.harness.kernel_tables.select_kernel_table`); the table is ``None`` when it names another
    file, both are ``None`` when no table is there.

    Raises:
        HarnessError: the table is not a table, or its ``file`` does not exist or lies outside the spec's folder.
    """
    key = select_kernel_table(kernels, kernel_name, _model_of(p, model), spec_path=spec_path, file_path=p)
    table = kernels.get(key) if key is not None else None
    if key is None or table is None:
        return None, None
    header = table_header(key)
    if not isinstance(table, dict):
        line = key_line(spec_path, ("kernel",), key)
        raise HarnessError(f"{spec_path}{f':{line}' if line else ''}: {header} must be a table "
                           f"of keys (version, inputs, ...), got {table!r}", path=str(spec_path))
    fname = table.get("file")
    if fname is not None:
        target = inside_spec_folder(spec_path, ("kernel", key), "file", fname)
        if not target.is_file():
            line = key_line(spec_path, ("kernel", key), "file")
            raise HarnessError(f"{spec_path}{f':{line}' if line else ''}: {header} file = "
                               f"{fname!r} names {target}, which does not exist; fix the file name "
                               "(relative to htam.toml) or remove the key", path=str(spec_path))
        if target != p:
            return key, None  # describes a kernel of the same name in another file
    return key, table


def find_harness(path: str | os.PathLike, kernel_name: str, model: SourceModel | None = None, *,
                 run_code: bool = True) -> Harness:
    """Find how to run ``kernel_name`` of file ``path``.

    Order: a KernelBench pair (``ModelNew`` + reference in the same file, a sibling
    ``<stem>_ref.py``, or ``[kernelbench."<file>"] reference = ...`` in ``htam.toml``); a
    ``[kernel.<name>]`` table of ``htam.toml`` next to the file; a harness inferred from a ``.py`` file's
    ``__main__`` block or tests (:func:`htam_core.harness.infer_py.infer_harness`, off with ``HTAM_INFER=0``);
    for a ``.cu`` program with ``main()``, the harness inferred from its launch (kind ``"inferred"``, checked
    against the starting kernel), or, when that fails or ``[program."<file>"] args = [...]`` is given, the
    program run whole (kind ``"cu-main"``, its :attr:`Harness.notes` say why); for a ``.cu``/``.cuh`` file with
    no ``main()``, the harness inferred from the workspace program that runs the kernel
    (:mod:`htam_core.harness.infer_host`).

    Args:
        path: the kernel's file (``.py``, ``.cu``, ``.cuh``).
        kernel_name: the kernel's name.
        model: the file's source model, used to write the template in the error; optional.
        run_code: infer by running the file's ``__main__`` block or tests (in a child process, seconds) when no
            recording of them is cached; ``False`` only reads files (a recording not cached yet then counts as
            no inferred harness).

    Returns:
        The :class:`Harness` (plain data; hand it to :mod:`htam_core.harness.runner` in a worker).

    Raises:
        HarnessError: the file is missing, no harness exists, or the harness is malformed. The
            message says exactly what to add and carries a ready-to-paste snippet.
    """
    p = Path(path).resolve()
    if not p.is_file():
        raise HarnessError(f"{path} does not exist: pass the path of a .py or .cu file holding the kernel")
    text = p.read_text(encoding="utf-8", errors="replace")
    found = _spec_tables(p)
    spec_path, config = (found if found else (None, None))
    kb = kernelbench_pair(p, kernel_name)
    if kb is not None:
        return kb
    if config is not None and spec_path is not None:
        kernels = config.get("kernel") or {}
        if not isinstance(kernels, dict):
            line = key_line(spec_path, (), "kernel")
            raise HarnessError(f"{spec_path}{f':{line}' if line else ''}: `kernel` must be a table of tables: "
                               f"{table_header(kernel_name)}", path=str(spec_path))
        key, table = _spec_table(kernels, kernel_name, p, model, spec_path)
        if key is not None and table is not None:
            h = parse_kernel_table(table, kernel=kernel_name, spec_path=spec_path, file_path=p)
            h.source = f"{spec_path} {table_header(key)}"  # the table as written (``[kernel."other::only"]`` for ``only``)
            if p.suffix == ".py":
                facts = read_py_facts(text)
                if kernel_name in facts.triton_kernels:
                    h.language = "triton"
                elif facts.has_cuda_string or facts.uses_load_inline or facts.uses_cupy_raw:
                    h.language = "cuda-in-python"
                if h.launcher and h.launcher not in facts.functions:
                    raise HarnessError(f"{h.source}: launcher {h.launcher!r} is not a top-level function of "
                                       f"{p.name}; functions there: {sorted(facts.functions) or 'none'}")
                if h.grid and kernel_name not in facts.triton_kernels and not _string_kernel(p, kernel_name, model):
                    raise HarnessError(f"{h.source}: a grid launch needs {kernel_name!r} to be a @triton.jit or "
                                       f"CUDA-string kernel of {p.name}; use launcher = \"<function>\" instead")
            return h
    if p.suffix == ".py" and not read_py_facts(text).syntax_error:
        try:
            inferred = infer_harness(p, kernel_name, model, run_code=run_code)
        except HarnessError as exc:
            raise _not_inferred(p, kernel_name, model, exc) from None
        if inferred is not None:
            return inferred
    if p.suffix in (".cu", ".cuh") and has_main(text):
        prog = ((config or {}).get("program") or {}).get(p.name) or {}
        args = prog.get("args", []) if isinstance(prog, dict) else []
        if not isinstance(args, list):
            raise HarnessError(f'{spec_path} [program."{p.name}"]: args must be a list of strings')
        if not args:  # main() as run without arguments: its launch, buffers and sizes (infer_cuda)
            try:
                return infer_cuda(p, kernel_name, model, text)
            except HarnessError as e:
                why = [f"no harness inferred from main(): {e.message}"]
        else:
            why = ["program arguments are given: the program is run as a whole"]
        return Harness(kind="cu-main", path=str(p), kernel=kernel_name, language="cuda",
                       source=f"main() in {p.name}", program_args=[str(a) for a in args], notes=why)
    if p.suffix in (".cu", ".cuh"):  # no main() here: the workspace program that runs it (infer_host)
        try:
            return infer_cuda(p, kernel_name, model, text)
        except HarnessError as e:
            raise missing_harness_error(p, kernel_name, model, inferred_why=e.message) from None
    raise missing_harness_error(p, kernel_name, model)
