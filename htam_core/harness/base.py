"""What a harness is: how to call one kernel, with which inputs, and what is correct.

A :class:`Harness` is plain data (JSON-serializable) so that it can be handed to a worker
process (:mod:`htam_core.runtime.worker`); nothing here imports torch or evaluates user
expressions. Expressions (shapes, grid, reference, bytes, flops) are only *compiled* for syntax
here and evaluated inside the worker by :mod:`htam_core.harness.runner`.

Kinds (in order of preference, as in docs/HARNESS.md):

* ``"kernelbench"``: a file with ``class ModelNew`` and a reference ``class Model`` with
  ``get_inputs()``/``get_init_inputs()`` (KernelBench's format);
* ``"spec"``: a ``[kernel.<name>]`` table of a ``htam.toml`` (see :mod:`htam_core.harness.spec`);
* ``"inferred"``: inferred from the file itself (a Python file's ``__main__`` block or a pytest test, recorded
  in a subprocess: :mod:`htam_core.harness.infer_py`; a ``.cu`` program's ``main()``:
  :mod:`htam_core.harness.infer_cuda`); a spec-like harness whose reference may be the starting kernel (the
  *oracle*, :attr:`Harness.oracle_path`);
* ``"cu-main"``: a ``.cu`` program with ``main()``, built with nvcc and run under ncu.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from htam_core.harness.kinds import KindTraits
from htam_core.harness.kinds import create as create_kind
from htam_core.runtime.include_dirs import describe, include_dirs

HarnessKind = Literal["kernelbench", "spec", "inferred", "cu-main"]
KernelLanguage = Literal["triton", "cuda", "cuda-in-python", "python"]

#: What the harness origin and the notes say when the recording child (:mod:`htam_core.harness.record`,
#: ``launch_device``) moved a call's inputs to the GPU.
MOVED_NOTE = "inputs moved to the GPU (the file makes CPU tensors, as for the Triton interpreter)"
#: dtypes a harness spec may name (torch attribute names).
DTYPES: tuple[str, ...] = (
    "float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool",
)
#: Largest input-set volume (product of the size symbols) run under the Triton interpreter by default:
#: it executes every program instance in Python, so GPU-sized sets would take minutes.
INTERPRET_MAX_VOLUME = 1 << 21
#: Most elements one tensor of a harness may have (64 Gi): more than any GPU holds in float32. A shape beyond it
#: is a harness error naming the input, never a kernel failure.
MAX_TENSOR_ELEMENTS = 1 << 36
#: Most bytes the tensors of one input set may take together (256 GiB: more than any one GPU's memory).
MAX_INPUT_SET_BYTES = 1 << 38
#: ``init`` values of a tensor input. ``"empty"`` marks a write-only output buffer: it is poisoned with NaN
#: (floats) or the dtype's maximum (ints) before every run, so an unwritten output never passes. An output
#: (listed in ``outputs``) with any other init is an in-out buffer the kernel may read (``C`` of
#: ``C = alpha*A@B + beta*C``, ``out += x``): it is restored to its initial value before every checked run
#: (see :func:`htam_core.harness.runner.split_outputs`). ``"scratch"`` is workspace: poisoned, not compared.
#: ``"offsets"`` is an offsets array (CSR's ``row_ptr``): sorted integers from ``low`` to ``high`` (both included,
#: the first element ``low``, the last ``high``), each pair of neighbours one row's range of positions.
INITS: tuple[str, ...] = ("randn", "rand", "zeros", "ones", "empty", "arange", "randint", "scratch", "offsets")


#: The start of the note an inferred harness carries when its first timed set is the largest recorded one scaled up
#: to a GPU-sized problem (:func:`htam_core.harness.infer_py.build`).
SCALED_NOTE = "timed set scaled up to a GPU-sized problem"


def unscaled(h: Harness) -> Harness | None:
    """``h`` without the scaled-up timed set that inference put first (:data:`SCALED_NOTE`), so its first set is
    the largest recorded one; ``None`` when ``h`` has no scaled set. For a compile or run that fails only at the
    scaled size (a ``tl.static_range`` unrolled hundreds of times), retried at the size the program was written
    for."""
    import dataclasses

    if len(h.sizes) < 2 or not any(n.startswith(SCALED_NOTE) for n in h.notes):
        return None
    notes = [n for n in h.notes if not n.startswith(SCALED_NOTE)]
    return dataclasses.replace(h, sizes=list(h.sizes[1:]), notes=notes)


def reference_failed(message: str) -> bool:
    """Whether a worker's ``message`` says the harness's reference expression could not be evaluated
    (``HarnessError: reference = '...' could not be evaluated: ...``, from the runner): a fault of the harness,
    never of the kernel, which the caller must not report as "the starting kernel failed"."""
    return "reference = " in message and "could not be evaluated" in message


class HarnessError(Exception):
    """A harness is missing or wrong.

    The message says exactly what to add or fix and usually ends with a ready-to-paste snippet
    (:attr:`snippet`), e.g. a filled-in ``htam.toml`` table from
    :func:`htam_core.harness.template.write_template`.

    Args:
        message: what happened and what to do (one paragraph).
        snippet: text the user can paste, or ``None``.
        path: the file the snippet belongs in (``.../htam.toml``), or ``None``.
        missing: ``True`` when no harness exists at all (a caller may go on unverified), ``False`` when one
            exists but is wrong (a caller must stop: going on would silently drop the user's harness).
    """

    def __init__(self, message: str, snippet: str | None = None, path: str | None = None,
                 missing: bool = False) -> None:
        self.message = message
        self.snippet = snippet
        self.path = path
        self.missing = missing
        full = message
        if snippet:
            full += f"\n\nPaste this into {path or 'htam.toml'}:\n\n{snippet}"
        super().__init__(full)


@dataclass
class InputSpec:
    """One input of a spec harness.

    Attributes:
        name: the name used in ``args``, the reference expression and ``outputs``.
        dtype: one of :data:`DTYPES`.
        shape: dimensions, each an int or an expression over the size symbols (``"N"``,
            ``"M * 2"``); ``None`` for a scalar.
        init: one of :data:`INITS` for tensors; ``None`` for scalars.
        value: a scalar's value: a number or an expression over the size symbols (``"N"``).
        low, high: range for ``init = "randint"`` (``high`` exclusive) and ``"rand"``; for ``"offsets"`` the first
            and the last value (``high`` included: the length of the buffers the offsets point into).
            For ``randint`` and ``"offsets"``, ``high`` may be an expression over the size symbols (``"V"``: indices
            into a dimension of ``V`` elements), so the range follows the size it indexes in every input set.
        scale: multiplier applied to ``randn``/``rand`` values.
    """

    name: str
    dtype: str = "float32"
    shape: list[int | str] | None = None
    init: str | None = "randn"
    value: float | int | str | None = None
    low: float = 0
    high: float | str = 1
    scale: float = 1.0

    @property
    def is_scalar(self) -> bool:
        """True for a scalar argument (no shape)."""
        return self.shape is None

    @property
    def is_output_buffer(self) -> bool:
        """True for a write-only buffer (``init = "empty"``): poisoned before every checked run. An
        in-out output (listed in ``outputs`` with another init) is not one: it starts from its init."""
        return self.init == "empty"


@dataclass
class Harness:
    """How to run one kernel.

    Attributes:
        kind: ``"kernelbench" | "spec" | "inferred" | "cu-main"`` (what each allows: :mod:`htam_core.harness.kinds`).
        path: absolute path of the kernel's file.
        kernel: the kernel's name.
        language: ``"triton"``, ``"cuda"`` (a ``.cu`` file), ``"cuda-in-python"`` (``load_inline``
            or a source string) or ``"python"`` (no GPU kernel found: plain PyTorch).
        source: where the harness came from (``"/dir/htam.toml [kernel.vadd]"``, ``"same file"``,
            ``"sibling kb_swish_ref.py"``).
        launcher: spec: name of a Python function in ``path`` called with the inputs in order.
        grid: spec, kernel launch: the grid expression (Triton ``(triton.cdiv(N, 1024),)``; CUDA
            blocks per grid, an int or tuple expression).
        block: spec, CUDA kernel launch: threads per block (int or tuple expression).
        shared_bytes: spec, CUDA kernel launch: dynamic shared memory per block, bytes.
        args: spec, kernel launch: argument names in order (names of inputs).
        kwargs: spec, kernel launch: extra keyword arguments (Triton constexprs, ``num_warps``).
        inputs: spec: the inputs in order.
        sizes: spec: one dict of size symbols per input set (at least one, possibly empty).
        interpret_sizes: spec: the input sets used under the Triton interpreter on a CPU (it runs
            every program instance in Python, so GPU-sized inputs take minutes); ``None`` means the
            smallest set of ``sizes`` (see :meth:`sizes_for`).
        outputs: spec: names of the inputs the kernel writes; empty means "the launcher's return
            value". One with ``init = "empty"`` is write-only (poisoned before every checked run); one
            with any other init is in-out (the kernel may read it; restored to its initial value before
            every checked run).
        reference: spec: a torch expression over the input names (in-out outputs hold their initial
            value there), or ``"module:function"`` / ``"file.py:function"`` called with the non-output
            inputs in order (outputs, in-out ones included, and scratch buffers are left out).
        atol, rtol: tolerances; ``None`` means KernelBench's per-dtype default
            (:data:`htam_core.verify.correctness.DEFAULT_TOLERANCES`).
        fp32_tol: the float32 default tolerance for this check when ``atol``/``rtol`` are not set (``None``: the
            default of :data:`~htam_core.verify.correctness.DEFAULT_TOLERANCES`); the optimize loop sets
            :data:`~htam_core.verify.correctness.REORDERED_SUM_FP32_TOL` for a candidate whose only numeric change
            is the order of float additions.
        bytes_expr, flops_expr: spec: expressions for the DRAM bytes and FLOPs of one call (for
            bandwidth, FLOP/s and roofline position), or ``None``.
        reference_path: kernelbench: the file holding ``Model``/``get_inputs``/``get_init_inputs``.
        program_args: cu-main: command-line arguments for the program.
        version: the spec format version (1).
        origin_path: the ORIGINAL kernel file (absolute) when :attr:`path` is a copy (an optimize candidate
            folder, ``htam verify`` of a candidate elsewhere): its folder is put on ``sys.path`` and a
            ``"file.py:function"`` reference resolves there, so sibling modules import from every candidate.
            ``None`` means ``path`` is the original.
        oracle_path: the starting kernel's file when the harness has no reference: the reference is then the
            starting kernel run with the same launcher, inputs, seeds and guards (the *oracle rule*,
            :func:`htam_core.harness.runner.prepare_spec`). ``dataclasses.replace(h, path=candidate)`` keeps it.
        oracle_launcher: the oracle's host launcher when it is not :attr:`launcher` (another version of the
            operation, checked against the naive one on the same inputs: llm.c's ``gelu_forward2`` against
            ``gelu_forward1``); ``None``: the oracle runs the candidate's launcher.
        ref_globals: a Python file whose module-level names a reference *expression* may use (a torch
            expression found in a test file calls that file's helpers), or ``None``.
        launcher_path: inferred: the Python file that defines :attr:`launcher` when it is not :attr:`path` (a
            launcher module that imports the kernel's module: ``ops.py`` with ``from rowk import row_softmax``);
            the launcher module is loaded again for each kernel file (candidate or oracle), with that file's module
            standing for :attr:`kernel_module` (:func:`htam_core.harness.foreign.launcher_module`). ``None``: the
            launcher is in :attr:`path`.
        kernel_module: the module name the launcher module imports the kernel's file by (``"rowk"``,
            ``"pkg.kernels"``); set with :attr:`launcher_path`.
        launcher_root: the folder the launcher module's imports resolve from (the folder above its package, or its
            own folder); set with :attr:`launcher_path`.
        notes: what inference found or assumed, one line each (shown with :attr:`source`).
        symbols: CUDA kernel launch: input name -> the qualified C++ name of the ``__device__`` variable it stands
            for (``{"g_count": "g_count"}``): no argument passes it; before each launch its value is copied into the
            variable and after it the variable is copied back into it, so a kernel whose output is a ``__device__``
            variable has an output to compare (:mod:`htam_core.harness.device_symbols`).
        inference: how an inferred harness was obtained by this process: ``{"cached": bool, "seconds": float,
            "cache_file": str | None}`` (``cached``: read from the on-disk recording cache, no recording ran);
            empty for any other harness.
    """

    kind: HarnessKind
    path: str
    kernel: str
    language: KernelLanguage = "triton"
    source: str = ""
    launcher: str | None = None
    grid: str | None = None
    block: str | None = None
    shared_bytes: int = 0
    args: list[str] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    inputs: list[InputSpec] = field(default_factory=list)
    sizes: list[dict[str, int | float]] = field(default_factory=lambda: [{}])
    interpret_sizes: list[dict[str, int | float]] | None = None
    outputs: list[str] = field(default_factory=list)
    reference: str | None = None
    atol: float | None = None
    rtol: float | None = None
    fp32_tol: float | None = None
    bytes_expr: str | None = None
    flops_expr: str | None = None
    reference_path: str | None = None
    program_args: list[str] = field(default_factory=list)
    version: int = 1
    origin_path: str | None = None
    oracle_path: str | None = None
    oracle_launcher: str | None = None
    ref_globals: str | None = None
    launcher_path: str | None = None
    kernel_module: str | None = None
    launcher_root: str | None = None
    notes: list[str] = field(default_factory=list)
    symbols: dict[str, str] = field(default_factory=dict)
    inference: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # the original file is the one found first; dataclasses.replace(h, path=candidate) keeps it
        if self.origin_path is None and self.path:
            self.origin_path = self.path

    @property
    def traits(self) -> KindTraits:
        """What this harness's kind allows (:mod:`htam_core.harness.kinds`).

        Raises:
            ValueError: ``kind`` is not a registered harness kind.
        """
        return create_kind(self.kind)

    @property
    def uses_oracle(self) -> bool:
        """True when candidates are checked against the starting kernel (no reference was given)."""
        return not self.reference and self.oracle_path is not None and self.traits.launches

    @property
    def checked_against(self) -> str:
        """What a passing check means, for reports and hovers: ``"the starting kernel"`` under the oracle
        rule, ``"the reference"`` otherwise."""
        return "the starting kernel" if self.uses_oracle else "the reference"

    def origin_dir(self) -> Path:
        """The folder of the original kernel file: sibling modules and relative references live there."""
        return Path(self.origin_path or self.path).resolve().parent

    def description(self) -> str:
        """One line for a hover or a report: where the harness came from and what a pass means, e.g.
        ``"inferred from __main__ of f.py, 3 calls recorded; oracle: the starting kernel"``. A ``.cu`` program
        run whole (kind ``"cu-main"``) says so and why (its first note: why no launch harness was inferred)."""
        text = self.source or self.label()
        if self.traits.whole_program:
            text += " run whole (timed, not checked)"
            if self.notes:
                text += f"; {self.notes[0]}"
        if self.uses_oracle and "oracle" not in text:
            text += "; oracle: the starting kernel"
        return text

    def sizes_for(self, interpreter: bool) -> list[dict[str, int | float]]:
        """The input sets to run: all of ``sizes`` on a GPU; under the interpreter ``interpret_sizes``
        or, when not given, the sets of ``sizes`` whose volume (product of their values) is at most
        :data:`INTERPRET_MAX_VOLUME`, or else the smallest one."""
        sizes = list(self.sizes or [{}])
        if not interpreter:
            return sizes
        if self.interpret_sizes:
            return list(self.interpret_sizes)

        def volume(s: dict[str, int | float]) -> float:
            v = 1.0
            for x in s.values():
                v *= max(1.0, float(x))
            return v

        small = [s for s in sizes if volume(s) <= INTERPRET_MAX_VOLUME]
        return small or [min(sizes, key=volume)]

    @property
    def input_sets(self) -> int:
        """Number of input sets the harness provides."""
        return max(1, len(self.sizes))

    def label(self) -> str:
        """Short name for :attr:`htam_core.types.profile.Profile.harness`: ``"htam.toml"``,
        ``"kernelbench"`` or ``"cu-main"``."""
        return self.traits.label

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form (what the worker receives)."""
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Harness:
        """Inverse of :meth:`to_json`."""
        d = dict(d)
        d["inputs"] = [i if isinstance(i, InputSpec) else InputSpec(**i) for i in d.get("inputs", [])]
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})


def attribute_path(obj: Any, dotted: str) -> Any:
    """``obj.a.b`` for ``dotted == "a.b"``: a kernel reached from its module through its qualified
    name (``"Ops.scale"`` for a ``@triton.jit`` method of ``class Ops``, ``"add_kernel"`` for
    ``add_kernel = triton.jit(fn)``; see ``Kernel.qualified_name``).

    Raises:
        AttributeError: some part of the path is missing.
    """
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


#: A file in a folder of candidate folders (``htam-out/.../candidates/.htam-origin``) naming the folder of the
#: ORIGINAL kernel file: every loader of a candidate puts that folder on ``sys.path`` (:func:`origin_dirs`).
ORIGIN_MARKER = ".htam-origin"


def mark_origin(candidates_dir: Path, original: Path) -> None:
    """Record in ``candidates_dir`` that its candidates derive from ``original`` (see :data:`ORIGIN_MARKER`)."""
    candidates_dir.mkdir(parents=True, exist_ok=True)
    (candidates_dir / ORIGIN_MARKER).write_text(str(original.resolve().parent), encoding="utf-8")


def include_flags(path: str | Path) -> list[str]:
    """nvcc/NVRTC ``-I`` flags for the CUDA file ``path``: the folders of :func:`cuda_include_dirs`."""
    return [f"-I{d}" for d in cuda_include_dirs(path)]


def cuda_include_dirs(path: str | Path, text: str | None = None) -> list[Path]:
    """Every ``-I`` folder of a build of the CUDA file ``path``: its own folder and, for a candidate, the original
    file's folder (:func:`origin_dirs`), so a ``#include "common.h"`` next to the original builds in every
    candidate; then the folders its build files name or that hold a header it includes from elsewhere
    (:func:`htam_core.runtime.include_dirs.include_dirs`: ``compile_commands.json``, a Makefile's or
    ``CMakeLists.txt``'s ``-I``, a search of the ancestors). ``text``: the file's text when it differs from
    disk. Never raises."""
    own = origin_dirs(path)
    return own + [d.path for d in include_dirs(path, text, known=own)]


def cu_language(path: str | Path) -> list[str]:
    """``["-x", "cu"]`` for a CUDA file nvcc would not read as CUDA by its suffix (a ``.cuh`` header holding
    kernels, built on its own), else nothing."""
    return [] if Path(path).suffix == ".cu" else ["-x", "cu"]


def include_notes(path: str | Path) -> list[str]:
    """The lines that say which include folders beyond its own a build of ``path`` uses, and why (for a
    harness's notes and ``htam harness infer``)."""
    return describe(include_dirs(path, known=origin_dirs(path)))


def origin_dirs(path: str | Path) -> list[Path]:
    """Folders to import from for the file ``path``: its own, and the original file's folder when ``path`` is a
    candidate (``<candidates>/<label>/<file>`` with ``<candidates>/.htam-origin``). Sibling modules of the
    original (``import helpers``, ``refs.py``) then import from every candidate, in every worker."""
    p = Path(path).resolve()
    out = [p.parent]
    marker = p.parent.parent / ORIGIN_MARKER
    try:
        if marker.is_file():
            d = Path(marker.read_text(encoding="utf-8").strip())
            if d.is_dir() and d not in out:
                out.append(d)
    except OSError:
        pass
    return out
