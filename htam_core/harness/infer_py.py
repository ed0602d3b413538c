"""Infer a harness for a Python/Triton kernel from the file itself: its ``__main__`` block or a pytest test.

Discovery step 3 of :func:`htam_core.harness.find_harness` (after a KernelBench pair and ``htam.toml``):

1. **The launcher** is the top-level function holding a launch site of the kernel (``kernel[grid](...)``,
   from the source model).
2. **Recording.** The file's ``__main__`` block runs in a child process (:mod:`htam_core.harness.record`,
   with a timeout; ``TRITON_INTERPRET=1`` and ``cuda`` mapped to the CPU without a GPU); when it records no
   call, a pytest test beside the file (``test_<stem>.py``, ``test_*.py``, ``tests/test_*.py`` naming the
   file or the launcher) runs instead. Each launcher call records argument shapes, dtypes, strides,
   devices and scalar values.
3. **Inputs and sizes.** Tensor dimensions become size symbols (named after the launcher's own
   ``M, N = x.shape`` where it has them); the largest recorded call is the timed input set, scaled up to a
   GPU-sized problem (rank and ratios kept, reported as scaled) when it is small; the smallest recorded calls
   are the interpreter sets.
4. **Reference**, in order: an ``assert_close``/``allclose`` of the launcher's output against an expression
   (rewritten over the launcher's parameters and checked on the recorded inputs); a function named
   ``*_ref``, ``ref_*``, ``*_reference``, ``torch_*``, ``naive_*`` whose result matched; otherwise the
   **oracle rule**: candidates are checked against the starting kernel (same inputs, seeds and guards).

Recordings are cached by the content of the file and its tests and by the machine's kind (GPU or not), under
``<htam cache>/inferred/`` (``$HTAM_CACHE_DIR``), failed ones too, so profile, verify, optimize and the editor
share one run: ``htam verify`` then ``htam profile`` in fresh processes record once (the harness's
``inference`` field, ``{"cached": true, ...}``, and ``htam verify --json``'s ``harness_inference`` say so). ``HTAM_INFER=0`` turns inference off.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_core.harness.base import DTYPES, MOVED_NOTE, SCALED_NOTE, Harness, HarnessError, InputSpec
from htam_core.harness.foreign import ForeignLauncher, foreign_launcher, foreign_launches, launcher_def
from htam_core.harness.pysource import parse_failure, read_py_facts
from htam_core.harness.pywrapper import wrapper_function
from htam_core.harness.spec import table_header
from htam_core.harness.template import recorded_dtypes
from htam_core.runtime.cache import cache_root
from htam_core.runtime.children import child_env, kill_tree, set_parent_death_signal
from htam_core.source import load
from htam_core.source.analysis import analyze
from htam_core.types.language import traits

#: Version of the recording format; part of the cache key.
RECORD_VERSION = 6  # 6: references reading the checked output refused, autotune benchmark failures marked
#: Largest tensor of the timed set, elements, after scaling a small recorded call up (16 Mi elements).
GPU_TARGET_NUMEL = 1 << 24
#: A recorded call whose largest tensor holds fewer elements than this is scaled up for the GPU.
SCALE_BELOW_NUMEL = 1 << 22
#: Most recorded input sets the Triton interpreter runs (the smallest ones: it runs every program in Python).
MAX_INTERPRET_SETS = 4
_LETTERS = ("M", "N", "K", "L", "P", "Q", "R", "S", "T", "U", "V", "W")


@dataclass
class Inference:
    """What inference found for one kernel: a harness, or why there is none.

    Attributes:
        harness: the inferred harness, or ``None``.
        reason: why none was inferred (names what is missing), ``""`` when one was.
        recording: the child's raw result (calls, asserts, named references), for tests and ``--json``.
        cached: the recording was read from the on-disk cache (no child process ran).
        seconds: wall-clock seconds the inference took (recording, or cache read, and building).
        not_run: ``run_code=False`` found no cached recording, so the file's code was not run (nothing is known
            yet, which is not the same as "nothing can be inferred").
    """

    harness: Harness | None
    reason: str = ""
    recording: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    seconds: float | None = None
    not_run: bool = False

    @property
    def dtypes(self) -> dict[str, str]:
        """The launcher's tensor dtypes the recording saw (:func:`htam_core.harness.template.recorded_dtypes`),
        for the template shown when no harness was inferred."""
        return recorded_dtypes(self.recording)


def launcher_of(path: Path, kernel: str, model: Any = None) -> tuple[str, list[str]] | None:
    """``(name, parameter names)`` of the top-level function that launches ``kernel``, or ``None``."""
    if model is None:
        try:

            model = load(str(path))
        except Exception:  # noqa: BLE001 - a file the source layer cannot read has no launcher
            return None
    try:
        k = model.kernel(kernel)
    except KeyError:
        return None
    return wrapper_function(model, k)


def has_main_block(text: str) -> bool:
    """The file has an ``if __name__ == "__main__":`` block."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test):
            return True
    return False


def nearby_tests(path: Path, wrapper: str) -> list[Path]:
    """Pytest files near ``path`` that name its module or its launcher: ``test_<stem>.py`` and
    ``test_*.py`` beside it, ``tests/test_*.py`` beside it or one folder up."""
    seen: list[Path] = []
    for pattern_dir, pattern in ((path.parent, f"test_{path.stem}.py"), (path.parent, "test_*.py"),
                                 (path.parent / "tests", "test_*.py"), (path.parent.parent / "tests", "test_*.py")):
        if not pattern_dir.is_dir():
            continue
        for t in sorted(pattern_dir.glob(pattern)):
            if t in seen or t.resolve() == path.resolve():
                continue
            try:
                text = t.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if path.stem in text or wrapper in text:
                seen.append(t)
    return seen[:3]


def _has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None or os.environ.get("HTAM_INFER_GPU") == "1"


def _cache_file(path: Path, wrapper: str, tests: list[Path]) -> Path | None:
    try:

        # the recording depends on the machine's kind: the interpreter on a CPU, GPU launches (inputs moved) on a GPU
        h = hashlib.sha256(f"v{RECORD_VERSION}:{wrapper}:{path.resolve()}:gpu={_has_gpu()}".encode())
        for f in [path, *tests]:
            h.update(f.read_bytes())
        return cache_root() / "inferred" / f"{h.hexdigest()[:32]}.json"
    except Exception:  # noqa: BLE001 - no cache: record again
        return None


def record(path: Path, wrapper: str, mode: str = "main", test: Path | None = None, *,
           timeout_s: float | None = None, budget_s: float = 20.0, package: str | None = None,
           root: Path | None = None) -> dict[str, Any]:
    """Run the recording child (:mod:`htam_core.harness.record`) and return its result.

    Args:
        path: the kernel file.
        wrapper: the launcher's name.
        mode: ``"main"`` (run the ``__main__`` block) or ``"pytest"`` (run ``test``).
        test: the pytest file for ``mode == "pytest"``.
        timeout_s: hard wall-clock limit of the child (default ``$HTAM_INFER_TIMEOUT`` or 120 s); the calls
            recorded before it are kept.
        budget_s: soft limit: the child stops at the first launcher call after it.
        package, root: a launcher module inside a package runs as ``python -m package.module`` would: its
            ``__package__`` is ``package`` and ``root`` is on ``sys.path`` (relative imports resolve).

    Returns:
        ``{"calls", "asserts", "named_refs", "notes", "device_mapped", "inputs_moved", "error", "stopped",
        "stopped_huge", "signature"}``; ``error`` says why the program failed (it may still have recorded
        calls); a call that raised holds the exception's first line in ``error``.
    """
    timeout = timeout_s or float(os.environ.get("HTAM_INFER_TIMEOUT", "120"))
    with tempfile.TemporaryDirectory(prefix="htam-record-") as tmp:
        req = Path(tmp) / "request.json"
        res = Path(tmp) / "result.json"
        req.write_text(json.dumps({"path": str(path), "wrapper": wrapper, "mode": mode, "test": str(test or ""),
                                   "result": str(res), "budget_s": budget_s, "package": package,
                                   "root": str(root) if root else None}), encoding="utf-8")
        # the user's program runs here: the allow-listed environment (no API key, token or memory store), its own
        # process group, killed with everything it started once it ends, and dead with its parent
        env = child_env()
        if not _has_gpu():
            env["TRITON_INTERPRET"] = "1"
        env.setdefault("MPLBACKEND", "Agg")
        proc = subprocess.Popen([sys.executable, "-m", "htam_core.harness.record", str(req)], cwd=str(path.parent),
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, preexec_fn=set_parent_death_signal)
        try:
            _out, err = proc.communicate(timeout=timeout)
            tail = (err or "").strip().splitlines()[-3:]
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)  # not reaped yet: the run and every process it started
            proc.communicate()
            tail = [f"the run was stopped after {timeout:g} s (HTAM_INFER_TIMEOUT)"]
        except BaseException:  # Ctrl-C: the run goes with us
            kill_tree(proc.pid)
            raise
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)  # what the run left in its group (the run ended its own tree)
        if not res.is_file():
            return {"calls": [], "asserts": [], "named_refs": [], "notes": [], "error":
                    "the recording process failed: " + (" ".join(tail) or "no output"), "stopped": None,
                    "signature": [], "device_mapped": False}
        out = json.loads(res.read_text(encoding="utf-8"))
        if not out.get("error") and tail and any("Error" in t for t in tail) and not out.get("calls"):
            out["error"] = " ".join(tail)[-300:]
        return out


# -- building the harness ----------------------------------------------------------------------------------
def _shape_names(text: str, wrapper: str) -> dict[tuple[str, int], str]:
    """``{(param, dim): name}`` from the launcher's own size names: ``M, K = a.shape`` (or ``a.size()``,
    ``*batch, M, K = a.shape``), ``n = x.shape[0]`` (or ``x.size(0)``, ``x.shape[-1]``: a negative dimension
    counts from the end, resolved against the tensor's rank by the caller). The launcher is a top-level
    function or a method of a top-level class (``"MatMul.forward"``; :func:`~htam_core.harness.foreign.launcher_def`).
    The first name a dimension gets wins."""
    out: dict[tuple[str, int], str] = {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return out
    fn = launcher_def(tree, wrapper)
    if fn is None:
        return out
    for node in ast.walk(fn):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        t, v = node.targets[0], node.value
        whole = _whole_shape(v)
        if isinstance(t, ast.Tuple | ast.List) and whole is not None:
            star = next((i for i, e in enumerate(t.elts) if isinstance(e, ast.Starred)), None)
            for d, e in enumerate(t.elts):
                if isinstance(e, ast.Name) and e.id != "_":
                    out.setdefault((whole, d if star is None or d < star else d - len(t.elts)), e.id)
        elif isinstance(t, ast.Name) and (one := _one_dim(v)) is not None:
            out.setdefault(one, t.id)
    return out


def _whole_shape(v: ast.expr) -> str | None:
    """The tensor parameter whose whole shape ``v`` is (``x.shape``, ``x.size()``), else ``None``."""
    if isinstance(v, ast.Attribute) and v.attr == "shape" and isinstance(v.value, ast.Name):
        return v.value.id
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "size" and not v.args \
            and not v.keywords and isinstance(v.func.value, ast.Name):
        return v.func.value.id
    return None


def _one_dim(v: ast.expr) -> tuple[str, int] | None:
    """``(tensor parameter, dimension)`` of ``x.shape[i]`` or ``x.size(i)`` with a literal ``i`` (negative from
    the end), else ``None``."""
    if isinstance(v, ast.Subscript) and (name := _whole_shape(v.value)) is not None:
        i = _literal_int(v.slice)
    elif isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "size" \
            and len(v.args) == 1 and isinstance(v.func.value, ast.Name):
        name, i = v.func.value.id, _literal_int(v.args[0])
    else:
        return None
    return (name, i) if i is not None else None


def _literal_int(e: ast.expr) -> int | None:
    """The value of an integer literal (``1``, ``-1``), else ``None``."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _literal_int(e.operand)
        return -v if v is not None else None
    return e.value if isinstance(e, ast.Constant) and type(e.value) is int else None


def _signature_key(call: dict[str, Any], names: list[str]) -> tuple:
    key = []
    for n in names:
        d = call["params"].get(n)
        key.append(((d or {}).get("kind"), (d or {}).get("dtype"), len((d or {}).get("shape") or []),
                    (d or {}).get("type")))
    return tuple(key)


def _tensor_numel(call: dict[str, Any]) -> int:
    return int(call.get("numel") or 0)


def _max_tensor(call: dict[str, Any]) -> tuple[int, int]:
    best = (0, 1)
    for d in call["params"].values():
        if d.get("kind") == "tensor":
            n = math.prod(d["shape"]) if d["shape"] else 1
            best = max(best, (n, max(1, len(d["shape"]))))
    return best


def _scaled(values: dict[str, int], shape_syms: set[str], call: dict[str, Any],
            held: int = 0) -> dict[str, int] | None:
    """``values`` with the ``shape_syms`` scaled so the largest tensor of ``call`` reaches about
    :data:`GPU_TARGET_NUMEL` elements (ratios kept; ``held``: how many of its dimensions stay as recorded, so the
    others grow more), or ``None`` when it is large enough already or nothing changes."""
    numel, rank = _max_tensor(call)
    if numel >= SCALE_BELOW_NUMEL or numel == 0:
        return None
    f = (GPU_TARGET_NUMEL / numel) ** (1.0 / max(1, rank - held))
    out = dict(values)
    for s in shape_syms:
        v = int(values[s])
        if v <= 1:
            continue
        q = 1 << min((v & -v).bit_length() - 1, 4)
        out[s] = max(v, int(round(v * f / q)) * q)
    return out if out != values else None


def _round_up(v: float) -> float:
    """``v`` rounded up to two significant digits (0.9987 -> 1.0, 14.2 -> 15.0): a readable ``rand`` bound."""
    if v <= 0:
        return 1.0
    k = 1 - math.floor(math.log10(v))
    return math.ceil(v * 10**k) / 10**k


def _fmt(v: float | int) -> str:
    return repr(v)


#: Why a ``@triton.autotune`` kernel cannot run under the interpreter, with the fix (the one-config prune that
#: htam's own autotune step writes, :mod:`htam_core.transforms.triton_autotune`).
AUTOTUNE_NEEDS_GPU = (
    "@triton.autotune benchmarks its configs on a GPU and the Triton interpreter (no GPU here) has no benchmarker; "
    "keep one config under TRITON_INTERPRET=1 with prune_configs_by={\"early_config_prune\": lambda configs, "
    "named_args, **kw: configs[:1] if os.environ.get(\"TRITON_INTERPRET\") == \"1\" else configs} (what htam's "
    "autotune step writes), or describe the call in an htam.toml table")


def not_run_reason(wrapper: str, calls: list[dict[str, Any]], rec: dict[str, Any]) -> str:
    """Why no recorded call of ``wrapper`` ran to the end, for the "no harness" message.

    A call that raised says so with the exception's first line and the call's line (``gelu() raised
    ValueError: ... at line 31``), with the fix when it was ``@triton.autotune`` benchmarking under the
    interpreter (:data:`AUTOTUNE_NEEDS_GPU`); "too large" is said only when the recorder's ``huge_numel`` rule stopped
    the run at a call (recorded, not run); otherwise the recorder's stop reason or the program's error.

    Args:
        wrapper: the launcher's name.
        calls: the recorded calls (``error``, ``line``, ``ran``).
        rec: the whole recording (``stopped``, ``stopped_huge``, ``error``).
    """
    raised = next((c for c in calls if c.get("error")), None)
    if raised is not None:
        where = f" at line {raised['line']} of {Path(raised['file']).name}" if raised.get("file") else ""
        err = str(raised["error"])
        if raised.get("autotune_bench"):  # @triton.autotune without a prune for the interpreter
            return f"{wrapper}() raised {err}{where}: {AUTOTUNE_NEEDS_GPU}"
        if "InterpreterError" in err:  # the CPU interpreter's limit, not the user's program
            return (f"{wrapper}() raised {err}{where} under the Triton interpreter (no GPU here), which does not "
                    "support everything Triton compiles on a GPU; describe the call in an htam.toml table instead")
        return f"{wrapper}() raised {err}{where} when htam ran the program; describe the call in an htam.toml table"
    if rec.get("stopped_huge"):
        return (f"{wrapper}() was recorded but not run: {rec.get('stopped')} (too large to run here); add a smaller "
                "call to the __main__ block")
    why = rec.get("stopped") or rec.get("error") or "the program ended inside the call"
    return f"{wrapper}() was recorded but never returned ({why})"


def dedupe_notes(notes: list[str]) -> list[str]:
    """``notes`` with each one said once, in order. The notes on one assert that was not used as the reference
    (``assert at line 29 not used as the reference: ...``), which repeat for every recorded call with that call's
    own numbers, are one note: the first call's, with how many calls it stands for (``(4 calls)``)."""
    groups: dict[str, list[str]] = {}
    for n in notes:
        key = n.split(_NOT_USED)[0] if _NOT_USED in n else n
        groups.setdefault(key, []).append(n)
    return [same[0] if len(same) == 1 or len(set(same)) == 1 and _NOT_USED not in same[0]
            else f"{same[0]} ({len(same)} calls)" for same in groups.values()]


_NOT_USED = " not used as the reference:"


def buffer_modes(path: Path, kernel: str, wrapper: str, model: Any = None) -> dict[str, str]:
    """``{launcher parameter: mode}`` for the launcher's tensors passed as they are to ``kernel``'s pointers.

    The mode is the analysis layer's (:attr:`~htam_core.source.analysis.facts.PointerFacts.mode`: ``"read"``,
    ``"write"``, ``"readwrite"`` for a load and a store or an atomic, ``"unused"``, ``"unknown"``) of the kernel
    parameter that the launch site in ``wrapper`` passes the launcher parameter to by name (``k[grid](x, y)``).
    A parameter passed through an expression (``y.view(-1)``) or through several launches with different
    modes is left out: its mode is not known. Never raises: a file the source layer cannot read gives ``{}``.
    """
    try:

        model = model or load(str(path))
        k = model.kernel(kernel)
        pointer_mode = {pf.name: pf.mode for pf in analyze(model, k).pointers}
    except Exception:  # noqa: BLE001 - no facts: every output is taken as in-out
        return {}
    found = launcher_of(path, kernel, model)
    params = set(found[1]) if found else set()
    kernel_params = [p.name for p in k.params]
    out: dict[str, str] = {}
    clash: set[str] = set()
    for site in k.launch_sites:
        for pos, arg in enumerate(site.args[:len(kernel_params)]):
            arg = arg.strip()
            mode = pointer_mode.get(kernel_params[pos])
            if arg not in params or mode is None:
                continue
            if out.setdefault(arg, mode) != mode:
                clash.add(arg)
    return {a: m for a, m in out.items() if a not in clash}


def unroll_sizes(path: Path, kernel: str, model: Any = None) -> set[str]:
    """The names the launches of ``kernel`` read in arguments that set a ``tl.static_range`` unroll count (the
    analysis layer's :attr:`~htam_core.source.analysis.facts.TritonFacts.unroll_feeds`: ``N`` of ``NUM_TILES =
    cdiv(args["N"], args["BLOCK_N"])``): sizes the timed set must not scale, or the compile unrolls the loop body
    hundreds of times. Never raises: a file the source layer cannot read gives ``set()``."""
    try:
        model = model or load(str(path))
        tf = analyze(model, model.kernel(kernel)).triton
    except Exception:  # noqa: BLE001 - no facts: nothing is held back
        return set()
    return set(tf.unroll_feeds) if tf is not None else set()


class _NoHarness(Exception):
    """A step of :func:`build` found the recording cannot give a harness; ``args[0]`` says why."""


#: A recorded call (its ``params`` by name) and its values of the size symbols.
_Set = tuple[dict[str, Any], dict[str, int | float]]


def build(path: Path, kernel: str, wrapper: str, rec: dict[str, Any], where: str, model: Any = None) -> Inference:
    """Turn a recording into an inferred :class:`Harness` (see the module docstring), or say what is missing.

    The steps, in order: the launcher's parameters (:func:`_launcher_params`), the calls of the timed call's
    kinds, the size symbols (:func:`_dimension_specs`, :func:`_input_sets`, :func:`_merge_symbols`), the inputs
    (:func:`_input_specs`), the outputs (:func:`_outputs`), the timed and interpreter sets (:func:`_size_sets`), the
    reference (:func:`_reference`) and the notes.
    """
    calls = [c for c in rec.get("calls") or []]
    err = rec.get("error")
    if not calls:
        why = f" (it failed: {err})" if err else ""
        return Inference(None, f"{where} ran but called {wrapper}() 0 times{why}", rec)
    try:
        names = [p["name"] for p in _launcher_params(wrapper, rec.get("signature") or [], calls)]
        notes: list[str] = []
        # calls of the timed call's kinds/dtypes/ranks only
        largest = max(calls, key=_tensor_numel)
        key = _signature_key(largest, names)
        kept = [c for c in calls if _signature_key(c, names) == key]
        if len(kept) < len(calls):
            notes.append(f"{len(calls) - len(kept)} recorded call(s) with other dtypes or ranks were left out")
        structure = max(kept, key=_tensor_numel)
        dims, named, used = _dimension_specs(path, wrapper, names, structure, kept)
        sets = _input_sets(dims, kept, notes)
        if sets:  # dimensions equal in every recorded set are one symbol (K of a and K of b in a matmul)
            dims, sets = _merge_symbols(dims, named, used, sets)
        shape_syms = {s for spec in dims.values() for s in spec if isinstance(s, str)}
        inputs = _input_specs(wrapper, names, structure, dims, sets, shape_syms, notes)
        if not sets:
            raise _NoHarness(f"the recorded calls of {wrapper}() do not share one shape pattern")
        ran = [c for c, _ in sets if c.get("ran")]
        if not ran:
            raise _NoHarness(not_run_reason(wrapper, calls, rec))
        outputs = _outputs(path, kernel, wrapper, model, names, inputs, ran, notes)
    except _NoHarness as e:
        return Inference(None, str(e.args[0]), rec)
    timed, interp = _size_sets(sets, shape_syms, notes, held=unroll_sizes(path, kernel, model) & shape_syms)
    reference, ref_globals, ref_note, atol, rtol = _reference(path, rec, sets, ran, outputs, notes)
    if rec.get("device_mapped"):
        notes.append('device="cuda" in the file was mapped to the CPU for recording (no GPU here)')
    if rec.get("stopped"):
        notes.append(f"recording stopped: {rec['stopped']}")
    if err:
        notes.append(f"the program then failed: {err}")
    notes = dedupe_notes(notes)
    source = f"inferred from {where} of {path.name}, {len(calls)} call{'s' if len(calls) != 1 else ''} recorded; " \
             f"{ref_note}"
    if rec.get("inputs_moved"):
        source += f"; {MOVED_NOTE}"
    h = Harness(kind="inferred", path=str(path), kernel=kernel, language=_file_kernel_language(path, kernel),
                source=source, launcher=wrapper, inputs=inputs, sizes=timed, interpret_sizes=interp, outputs=outputs,
                reference=reference, atol=atol, rtol=rtol, oracle_path=None if reference else str(path),
                ref_globals=ref_globals, notes=notes)
    return Inference(h, "", rec)


def _launcher_params(wrapper: str, sig: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The launcher's positional parameters up to the last one any call passed, each call given a value for every
    one of them (the default where it was not passed; ``calls`` are changed so).

    Raises:
        _NoHarness: a keyword-only or variadic argument was passed, a parameter has no recorded value, or one was
            passed something other than a tensor or a number.
    """
    positional = [p for p in sig if p["kind"] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    passed = [i for i, p in enumerate(positional) if any(p["name"] in c["params"] for c in calls)]
    kw_only = sorted({n for c in calls for n in c["params"] if n not in {p["name"] for p in positional}})
    if kw_only:
        raise _NoHarness(f"{wrapper}() was called with keyword-only or variadic arguments "
                         f"({', '.join(kw_only)}), which a harness cannot pass in order")
    params = positional[:max(passed) + 1] if passed else []
    # every call gets a value for every parameter: the default where it was not passed
    for c in calls:
        for p in params:
            if p["name"] not in c["params"]:
                if p["default"] is None:
                    raise _NoHarness(f"{wrapper}() parameter {p['name']!r} has no recorded value")
                c["params"][p["name"]] = p["default"]
    for p in params:
        bad = [c["params"][p["name"]] for c in calls if c["params"][p["name"]].get("kind") in ("other", "none")]
        if bad:
            b = bad[0]
            what = "None" if b["kind"] == "none" else f"a {b['type']} ({b.get('repr')})"
            if b.get("module") == "cupy":  # a cupy launcher: the htam.toml table launches the kernel itself
                raise _NoHarness(f"{wrapper}() parameter {p['name']!r} was passed a cupy array; an inferred "
                                 "harness passes torch tensors and numbers only: write the htam.toml table below "
                                 "(its grid and block are the cupy call's)")
            raise _NoHarness(f"{wrapper}() parameter {p['name']!r} was passed {what}; an inferred harness "
                             "passes tensors and numbers only: write an htam.toml for this kernel")
    return params


def _dimension_specs(path: Path, wrapper: str, names: list[str], structure: dict[str, Any],
                     kept: list[dict[str, Any]]) -> tuple[dict[str, list[int | str]], set[str], set[str]]:
    """One size symbol per tensor dimension of the largest call ``structure`` (``1`` where every kept call has 1),
    named after the launcher's own ``M, N = x.shape`` where it has them, else made up (``_d0``...). Returns the
    dimensions by tensor, the symbols named by the launcher, and every name taken.

    Dimensions equal in EVERY kept call share one symbol later (:func:`_merge_symbols`); never by value in one
    call: a square call (64 x 64) would otherwise tie M to N and leave the other calls out, with labels that do
    not fit them.
    """
    src_names = _shape_names(path.read_text(encoding="utf-8", errors="replace"), wrapper)
    dims: dict[str, list[int | str]] = {}
    used: set[str] = set(names)
    named: set[str] = set()
    fresh = iter(f"_d{k}" for k in range(1 << 16))
    for n in names:
        d = structure["params"][n]
        if d["kind"] != "tensor":
            continue
        spec: list[int | str] = []
        for i in range(len(d["shape"])):
            if all(c["params"][n]["shape"][i] == 1 for c in kept):
                spec.append(1)
                continue
            nm = src_names.get((n, i)) or src_names.get((n, i - len(d["shape"])))
            if nm and nm not in names and (nm not in used or nm in named):
                used.add(nm)
                named.add(nm)
                spec.append(nm)
            else:
                spec.append(next(fresh))
        dims[n] = spec
    return dims, named, used


def _input_sets(dims: dict[str, list[int | str]], kept: list[dict[str, Any]], notes: list[str]) -> list[_Set]:
    """Each kept call with its values of the size symbols; a call that gives one symbol two values (or a fixed
    dimension another value) is left out, with a note."""

    def values_of(c: dict[str, Any]) -> dict[str, int] | None:
        vals: dict[str, int] = {}
        for n, spec in dims.items():
            shape = c["params"][n]["shape"]
            for s, v in zip(spec, shape, strict=True):
                if isinstance(s, int):
                    if v != s:
                        return None
                elif vals.setdefault(s, v) != v:
                    return None
        return vals

    sets: list[_Set] = []
    misfit: list[int] = []
    for c in kept:
        vals = values_of(c)
        if vals is None:
            misfit.append(c["line"])
            continue
        sets.append((c, dict(vals)))
    if misfit:
        notes.append(f"{len(misfit)} recorded call(s) (line {', '.join(str(x) for x in sorted(set(misfit)))}) give "
                     "one launcher dimension name two values: left out")
    return sets


def _merge_symbols(dims: dict[str, list[int | str]], named: set[str], used: set[str],
                   sets: list[_Set]) -> tuple[dict[str, list[int | str]], list[_Set]]:
    """Symbols equal in every recorded set become one (a launcher's own name wins over a made-up one), and the
    made-up ones get letters (``M``, ``N``, ``K``...) in order of first appearance; the dimensions and the sets'
    values are renamed so."""
    merged: dict[str, str] = {}
    order = list(dict.fromkeys(s for spec in dims.values() for s in spec if isinstance(s, str)))
    order.sort(key=lambda s: s not in named)  # a launcher's own name wins over a made-up one
    for i, s1 in enumerate(order):
        for s0 in order[:i]:
            if s0 not in merged and all(sv[s0] == sv[s1] for _, sv in sets):
                merged[s1] = s0
                break
    dims = {n: [merged.get(s, s) if isinstance(s, str) else s for s in spec] for n, spec in dims.items()}
    # made-up symbols get letters in order of first appearance
    letters = iter(x for x in _LETTERS if x not in used)
    rename: dict[str, str] = {}
    for spec in dims.values():
        for x in spec:
            if isinstance(x, str) and x not in named and x not in rename:
                rename[x] = next(letters, f"D{len(rename)}")
    dims = {n: [rename.get(x, x) if isinstance(x, str) else x for x in spec] for n, spec in dims.items()}
    renamed = []
    for c, sv in sets:
        out: dict[str, int | float] = {}
        for k, v in sv.items():
            if k not in merged:
                out[rename.get(k, k)] = v
        renamed.append((c, out))
    return dims, renamed


def _input_specs(wrapper: str, names: list[str], structure: dict[str, Any], dims: dict[str, list[int | str]],
                 sets: list[_Set], shape_syms: set[str], notes: list[str]) -> list[InputSpec]:
    """The harness inputs, one per launcher parameter: a tensor with its symbolic shape and an init from its
    recorded range; a number as its size symbol (when it equals one in every set), its one value, or a symbol of
    its own valued per set (the sets are changed so).

    Raises:
        _NoHarness: a tensor's dtype is not one a harness supports.
    """
    inputs: list[InputSpec] = []
    for n in names:
        d = structure["params"][n]
        if d["kind"] == "tensor":
            inputs.append(_tensor_input(wrapper, n, d, dims[n], sets, notes))
            continue
        typ = d["type"]
        dtype = {"bool": "bool", "int": "int32", "float": "float32"}[typ]
        vals = [c["params"][n]["value"] for c, _ in sets]
        sym = next((s for s in shape_syms if all(v == sv.get(s) for v, (_, sv) in zip(vals, sets, strict=True))),
                   None) if typ == "int" else None
        if sym is not None and len(set(vals)) > 1 or (sym is not None and vals and vals[0] > 1):
            inputs.append(InputSpec(n, dtype, None, None, value=sym))
        elif len(set(vals)) <= 1:
            inputs.append(InputSpec(n, dtype, None, None, value=vals[0] if vals else d["value"]))
        else:
            for (_, sv), v in zip(sets, vals, strict=True):
                sv[n] = v
            inputs.append(InputSpec(n, dtype, None, None, value=n))
    return inputs


def _tensor_input(wrapper: str, n: str, d: dict[str, Any], shape: list[int | str], sets: list[_Set],
                  notes: list[str]) -> InputSpec:
    """The input of tensor parameter ``n`` (``d``: the largest call's record of it): ``randint`` for integers and
    booleans, ``rand`` up to the recorded maximum (rounded up) for non-negative values, else ``randn``; a note when
    it was not contiguous.

    Raises:
        _NoHarness: its dtype is not one a harness supports.
    """
    dtype = d["dtype"]
    if dtype not in DTYPES:
        raise _NoHarness(f"{wrapper}() parameter {n!r} is a {dtype} tensor; an inferred harness "
                         f"supports {', '.join(DTYPES)}")
    lo = min((c["params"][n].get("min", 0.0) for c, _ in sets), default=0.0)
    hi = max((c["params"][n].get("max", 1.0) for c, _ in sets), default=1.0)
    if dtype == "bool":
        spec = InputSpec(n, dtype, shape, "randint", low=0, high=2)
    elif dtype.startswith(("int", "uint")):
        low, high = _integer_range(n, sets, notes)
        spec = InputSpec(n, dtype, shape, "randint", low=low, high=high)
    elif lo >= 0 and hi > lo:
        spec = InputSpec(n, dtype, shape, "rand", low=0, high=_round_up(float(hi)))
    else:
        spec = InputSpec(n, dtype, shape, "randn")
    if not all(c["params"][n].get("contiguous", True) for c, _ in sets):
        notes.append(f"{n} was not contiguous in a recorded call (strides {d['stride']}); the harness "
                     "gives contiguous tensors")
    return spec


def _integer_range(n: str, sets: list[_Set], notes: list[str]) -> tuple[int, int | str]:
    """``(low, high)`` of ``randint`` for the integer tensor parameter ``n`` from each recorded call's OWN range,
    never pooled over the calls (targets up to 3000 recorded for ``V = 3001`` are out of bounds for ``V = 100``):

    * when every call's values lie in ``[0, S)`` for a size symbol ``S`` of that call, they are indices into a
      dimension of ``S``: the range is ``[0, "S")`` (the smallest such symbol; 0 is a valid index even where the
      few recorded values missed it), so each input set, a scaled one too, draws inside the size it indexes and
      nothing else scales the range;
    * otherwise the range every call had, ``[max of the lows, min of the highs]`` (valid in each call), with a
      note when the calls disagree.

    The CUDA side bounds an index by the buffer it reads (:mod:`htam_core.harness.int_ranges`); here the recorded
    calls show the bound. ``sets``: the kept calls with their size symbols' values.
    """
    rng = [(int(c["params"][n].get("min", 0)), int(c["params"][n].get("max", 0))) for c, _ in sets
           if "min" in c["params"][n]]
    if not rng:
        return 0, 2
    low = min(lo for lo, _ in rng)
    if low >= 0:
        fits = [s for s in sets[0][1] if isinstance(sets[0][1][s], int) and all(
            "min" not in c["params"][n] or c["params"][n]["max"] < int(sv.get(s, 0)) for c, sv in sets)]
        if fits:
            sym = min(fits, key=lambda s: (sum(int(sv[s]) for _, sv in sets), s))
            notes.append(f"{n} holds indices below {sym} in every recorded call: randint over [0, {sym}) of "
                         "each input set")
            return 0, sym
    lo_all, hi_all = max(lo for lo, _ in rng), min(hi for _, hi in rng)
    if lo_all > hi_all:  # the calls' ranges do not meet: the first recorded call's own
        lo_all, hi_all = rng[0]
    if len(set(rng)) > 1:
        notes.append(f"{n}: the recorded calls' integer ranges differ and none follows a size; randint over "
                     f"[{lo_all}, {hi_all + 1}), the range every call had")
    return lo_all, hi_all + 1


def _outputs(path: Path, kernel: str, wrapper: str, model: Any, names: list[str], inputs: list[InputSpec],
             ran: list[dict[str, Any]], notes: list[str]) -> list[str]:
    """What the program compares: the tensor arguments written in place when the launcher returns nothing, or the
    arguments it returns (``y`` of ``axpy_``, ``out=``); empty when it returns new tensors. A written output's
    init follows how the kernel uses it (``empty``: write-only, poisoned; ``zeros``: recorded all zero; else
    in-out, restored before every checked call); the ``inputs`` are changed so.

    Raises:
        _NoHarness: the launcher returns nothing and wrote none of its tensor arguments.
    """
    outputs: list[str] = []
    mutated = [n for n in names if any(n in c.get("mutated", []) for c in ran)]
    returned = [c.get("returned_args") or [] for c in ran]
    if all(c.get("returns_none") for c in ran):
        outputs = mutated
        if not outputs:
            raise _NoHarness(f"{wrapper}() returns nothing and wrote none of its tensor arguments")
    elif returned[0] and all(r == returned[0] for r in returned) and all(n in names for n in returned[0]) \
            and len(set(returned[0])) == len(returned[0]):
        outputs = list(returned[0])
    unchecked = [n for n in mutated if n not in outputs]
    if unchecked:
        notes.append(f"{wrapper}() also changes {', '.join(unchecked)} in place, which the program does not compare: "
                     "an input changed in place is refused (list it in outputs of an htam.toml table if it is an "
                     "output)")
    if outputs:
        modes = buffer_modes(path, kernel, wrapper, model)
        for i in inputs:
            if i.name not in outputs:
                continue
            if modes.get(i.name) == "write":  # write-only: poisoned, so an unwritten element fails
                i.init = "empty"
            elif all(c["params"][i.name].get("all_zero") for c in ran):
                i.init = "zeros"
            # else: the kernel reads it (y += ..., an optimizer's state, an atomic) or htam cannot tell: in-out,
            # from the recorded range, restored before every checked call
    return outputs


def _size_sets(sets: list[_Set], shape_syms: set[str], notes: list[str],
               held: set[str] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The timed sets (the largest first, scaled up to a GPU-sized problem when small, then every other distinct
    set: results cached across calls or hard-wired to one shape fail there) and the interpreter's sets (the
    :data:`MAX_INTERPRET_SETS` smallest that ran). ``held``: size symbols kept at their recorded value when
    scaling (they set a ``tl.static_range`` unroll count: :func:`unroll_sizes`), with a note."""
    held = held or set()
    by_size = sorted(sets, key=lambda cs: _tensor_numel(cs[0]))
    uniq: list[_Set] = []
    for c, sv in by_size:
        if sv not in [u[1] for u in uniq]:
            uniq.append((c, sv))
    big_c, big = uniq[-1]
    timed: list[dict[str, Any]] = [big] + [sv for _, sv in reversed(uniq[:-1])]
    scaled = _scaled({k: int(v) for k, v in big.items()}, shape_syms - held, big_c, len(held))
    if held and scaled is not None:
        notes.append(f"{', '.join(sorted(held))} not scaled for the timed set: it sets a tl.static_range unroll "
                     "count of the kernel, and a larger value unrolls more copies of the loop body at compile time")
    if scaled is not None:
        timed = [scaled, *timed]
        shown = {s: f"{big[s]}->{scaled[s]}" for s in sorted(shape_syms) if big[s] != scaled[s]}
        kept = f"rank kept, {', '.join(sorted(held))} as recorded" if held else "rank and ratios kept"
        notes.append(f"{SCALED_NOTE} ({kept}): "
                     + ", ".join(f"{k} {v}" for k, v in shown.items()))
    ran_sets: list[dict[str, Any]] = [sv for c, sv in uniq if c.get("ran")]
    interp = ran_sets[:MAX_INTERPRET_SETS]
    if len(ran_sets) > MAX_INTERPRET_SETS:
        notes.append(f"the Triton interpreter runs the {MAX_INTERPRET_SETS} smallest of the {len(ran_sets)} recorded "
                     "input sets (interpret_sizes); a GPU runs them all")
    return timed, interp


def _reference(path: Path, rec: dict[str, Any], sets: list[_Set], ran: list[dict[str, Any]], outputs: list[str],
               notes: list[str]) -> tuple[str | None, str | None, str, float | None, float | None]:
    """``(reference, ref_globals, note, atol, rtol)``: an assert's torch expression covering every output (with
    its tolerances), else a function found by name that matched the recorded output, else none (the oracle rule:
    the starting kernel); why an assert or a named function was not used goes to ``notes``."""
    reference: str | None = None
    ref_globals: str | None = None
    ref_note = "oracle: the starting kernel"
    atol = rtol = None
    n_out = max((len(c.get("returns") or []) for c in ran), default=1) if not outputs else len(outputs)
    by_call: dict[int, dict[int, dict[str, Any]]] = {}
    rec_calls = rec.get("calls") or []
    for a in rec.get("asserts") or []:
        if a.get("expression") and 0 <= a["call"] < len(rec_calls) and rec_calls[a["call"]] in [c for c, _ in sets]:
            by_call.setdefault(a["call"], {}).setdefault(a["output"], a)
    full = next((v for v in by_call.values() if len(v) >= n_out), None)
    rec_asserts = [a for a in rec.get("asserts") or [] if 0 <= a["call"] < len(rec_calls)
                   and rec_calls[a["call"]] in [c for c, _ in sets]]
    unsteady = [w for p in (full or {}).values() if (w := _unsteady_assert(p, rec_asserts))]
    if unsteady:
        notes.extend(unsteady)
        full = None
    if full:
        parts = [full[j] for j in range(n_out)]
        reference = parts[0]["expression"] if n_out == 1 else "(" + ", ".join(p["expression"] for p in parts) + ")"
        needs = sorted({g for p in parts for g in p.get("needs_globals") or []})
        if needs:
            ref_globals = parts[0]["file"]
        lines = ", ".join(str(p["line"]) for p in parts)
        rel = Path(parts[0]["file"]).name
        ref_note = f"reference: torch expression at line {lines} of {rel} ({parts[0]['assert']})"
        tol = [p.get("atol") for p in parts if isinstance(p.get("atol"), int | float)]
        atol = max(tol) if tol else None
        tol = [p.get("rtol") for p in parts if isinstance(p.get("rtol"), int | float)]
        rtol = max(tol) if tol else None
        return reference, ref_globals, ref_note, atol, rtol
    partial = next(iter(by_call.values()), None)
    if partial:
        notes.append(f"the assert at line {next(iter(partial.values()))['line']} checks {len(partial)} of "
                     f"{n_out} outputs: the starting kernel is the oracle for all of them")
    for a in rec.get("asserts") or []:
        if not a.get("expression") and a.get("why"):
            notes.append(f"assert at line {a['line']} not used as the reference: {a['why']}")
    named = next((r for r in rec.get("named_refs") or [] if r.get("ok")), None)
    if named:
        try:
            rel = os.path.relpath(named["file"], path.parent)
        except ValueError:
            rel = Path(named["file"]).name
        reference = f"{Path(rel).as_posix()}:{named['name']}"
        ref_note = f"reference: {named['name']}() in {Path(named['file']).name} (found by name; it matched the " \
                   "recorded output)"
    for r in rec.get("named_refs") or []:
        if not r.get("ok"):
            notes.append(f"{r['name']}() not used as the reference: {r['why']}")
    return reference, ref_globals, ref_note, atol, rtol


def _unsteady_assert(part: dict[str, Any], asserts: list[dict[str, Any]]) -> str | None:
    """Why the assert ``part`` (one call's rewritten reference) cannot stand for every recorded call, else ``None``:
    the same assert line rewritten in another recorded call reads differently (a number of the program, such as a
    loop's size, was frozen into it) or could not be rewritten there. Then the reference is not used and this one
    line says why: a harness whose reference fails on its other input sets would make the starting kernel look
    broken."""
    same = [a for a in asserts if (a.get("file"), a.get("line"), a.get("output"))
            == (part.get("file"), part.get("line"), part.get("output"))]
    other = next((a for a in same if a.get("expression") != part["expression"]), None)
    if other is None:
        return None
    if other.get("expression") is None:
        return (f"assert at line {part['line']} not used as the reference: it could not be rewritten for every "
                f"recorded call ({other.get('why') or 'no reason recorded'})")
    return (f"assert at line {part['line']} not used as the reference: it reads {part['expression']!r} in one "
            f"recorded call and {other['expression']!r} in another (a number of the program, such as a loop's "
            "size, that could not be tied to the call's own arguments)")


def _file_kernel_language(path: Path, kernel: str) -> str:
    """The harness language of ``kernel`` in the Python file ``path``: ``triton`` when the file has Triton kernels,
    ``cuda-in-python`` when it holds CUDA strings (``load_inline``, cupy), else ``python``."""
    facts = read_py_facts(path.read_text(encoding="utf-8", errors="replace"))
    return "triton" if kernel.split(".")[-1] in facts.triton_kernels or facts.triton_kernels else (
        "cuda-in-python" if facts.has_cuda_string or facts.uses_load_inline or facts.uses_cupy_raw else "python")


def _no_launcher_reason(p: Path, kernel: str, model: Any = None) -> str:
    """Why no Python function of ``p`` is the launcher of ``kernel``, in one line: a kernel of a CUDA string
    (``load_inline``, cupy) launched by a C++ function of that string is named with that function (htam does not
    call a compiled extension's functions itself); otherwise the Triton-style hint."""
    from htam_core.source.analysis.unit import CudaSource, cuda_source  # only for this message: a CUDA string

    m: Any = None
    k: Any = None
    try:
        m = model if model is not None else load(p)
        k = next(x for x in m.kernels if x.name == kernel)
        src = cuda_source(m, k) if traits(k.language).embedded else None
    except (StopIteration, OSError, ValueError):
        src = None
    hosts = [la for la in src.sites if la.host is not None] if isinstance(src, CudaSource) else []
    if hosts:
        decl = hosts[0].host.child_by_field_name("declarator")  # type: ignore[union-attr]
        name = src.t(decl).split("(")[0].strip() if decl is not None else "its host function"  # type: ignore[union-attr]
        return (f"{kernel} is launched by the C++ function {name}() in the CUDA string of {p.name} (line "
                f"{hosts[0].site.line}), which htam does not call by itself; describe the kernel's inputs in a "
                f"{table_header(kernel)} table of htam.toml (`htam harness infer {p.name} --kernel {kernel}` prints one "
                "to start from)")
    elsewhere = foreign_launches(m, k) if m is not None and k is not None else []
    if elsewhere:
        la = elsewhere[0]
        return (f"{kernel} is launched at {Path(la.path).name}:{la.line}, but not inside a top-level function or a "
                f"static or class method that takes the tensors, or that module imports {p.name} by a name htam "
                "does not resolve; put the launch in such a function")
    return (f"no function of {p.name} launches {kernel} (kernel[grid](...) inside a top-level function); put the "
            "launch in a function that takes the tensors")


def infer(path: str | os.PathLike, kernel: str, model: Any = None, *, use_cache: bool = True,
          run_code: bool = True) -> Inference:
    """Infer a harness for ``kernel`` of the Python file ``path`` (see the module docstring).

    ``run_code=False`` answers from a cached recording only: on a cache miss nothing runs and the
    :attr:`Inference.reason` says that the file was not recorded yet (the editor's source-only profile stage,
    which must not wait seconds for the file's ``__main__`` block).

    Runs the file's own code in a child process (never in the caller). Never raises for a bad file: the
    :attr:`Inference.reason` names what is missing (no launcher function, no ``__main__`` block or test
    that calls it, an argument a harness cannot pass).
    """
    p = Path(path).resolve()
    text = p.read_text(encoding="utf-8", errors="replace")
    broken = parse_failure(p.name, text, f"run `htam harness infer {p.name}` again")
    if broken is not None:
        return Inference(None, broken)
    found = launcher_of(p, kernel, model)
    if found is None:
        host = _foreign(p, kernel, model)
        if host is None:
            return Inference(None, _no_launcher_reason(p, kernel, model))
        return _infer_foreign(p, kernel, model, host, use_cache=use_cache, run_code=run_code)
    return _infer_at(p, kernel, found[0], text, model, use_cache=use_cache, run_code=run_code)


def _infer_at(p: Path, kernel: str, wrapper: str, text: str, model: Any, *, use_cache: bool, run_code: bool,
              host: ForeignLauncher | None = None) -> Inference:
    """:func:`infer` once the launcher is known: ``wrapper`` of the file ``p`` (text ``text``), recorded from its
    ``__main__`` block or its tests (cached); ``host``: ``p`` is another module that launches the kernel."""
    tests = nearby_tests(p, wrapper)
    sources: list[tuple[str, Path | None, str]] = []
    if has_main_block(text):
        sources.append(("main", None, "__main__"))
    for t in tests:
        try:
            rel = t.relative_to(p.parent).as_posix()
        except ValueError:
            rel = t.name
        sources.append(("pytest", t, f"pytest {rel}"))
    if not sources:
        return Inference(None, f"{p.name} has no __main__ block and no test_*.py beside it that calls "
                               f"{wrapper}(): nothing shows how {wrapper}() is called")
    t0 = time.monotonic()
    cache = _cache_file(p, wrapper, tests + ([Path(model.path)] if host is not None and model.path else [])) \
        if use_cache else None
    if cache is not None and cache.is_file():
        try:
            stored = json.loads(cache.read_text(encoding="utf-8"))
            return _from_attempts(p, kernel, wrapper, stored["attempts"], cached=True, t0=t0, cache=cache,
                                  model=model)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    if not run_code:
        return Inference(None, f"no recording of {p.name} is cached yet: its {sources[0][2]} was not run",
                         not_run=True)
    attempts: list[dict[str, Any]] = []
    for mode, test, where in sources:
        attempts.append({"recording": record(p, wrapper, mode, test, package=host.package if host else None,
                                             root=host.root if host else None), "where": where})
        if build(p, kernel, wrapper, json.loads(json.dumps(attempts[-1]["recording"])), where,
                 model).harness is not None:
            break
    if cache is not None:  # a failed inference is kept too: the next command says the same without re-running
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"attempts": attempts}, default=str), encoding="utf-8")
            os.replace(tmp, cache)
        except OSError:
            pass
    return _from_attempts(p, kernel, wrapper, attempts, cached=False, t0=t0, cache=cache, model=model)


def _foreign(p: Path, kernel: str, model: Any) -> ForeignLauncher | None:
    """The launcher of Triton ``kernel`` of ``p`` in another module (:func:`~htam_core.harness.foreign.foreign_launcher`)."""
    try:
        m = model if model is not None else load(str(p))
        return foreign_launcher(m, m.kernel(kernel))
    except (KeyError, OSError, ValueError):
        return None


def _infer_foreign(p: Path, kernel: str, model: Any, host: ForeignLauncher, *, use_cache: bool,
                   run_code: bool) -> Inference:
    """Infer with the launcher module ``host`` as the host launcher: its ``__main__`` or tests are recorded, and
    the harness runs the kernel file ``p`` (each candidate's text) through it."""
    m = model if model is not None else load(str(p))
    text = host.path.read_text(encoding="utf-8", errors="replace")
    inf = _infer_at(host.path, kernel, host.qualname, text, m, use_cache=use_cache, run_code=run_code, host=host)
    h = inf.harness
    where = f"{host.path.name}:{host.line}"
    if h is None:
        inf.reason = f"{kernel} is launched by {host.qualname}() of {where}: {inf.reason}"
        return inf
    h.path = h.origin_path = str(p)
    h.language = "triton"
    h.launcher_path, h.kernel_module, h.launcher_root = str(host.path), host.kernel_module, str(host.root)
    if h.oracle_path:
        h.oracle_path = str(p)
    h.notes.insert(0, f"launcher {host.qualname}() of {where} (it imports {p.name} as {host.kernel_module}); "
                      f"candidates replace {p.name} under it")
    return inf


def _from_attempts(p: Path, kernel: str, wrapper: str, attempts: list[dict[str, Any]], *, cached: bool, t0: float,
                   cache: Path | None, model: Any = None) -> Inference:
    """The first attempt (recording) that builds a harness, or every attempt's reason joined; with
    :attr:`Inference.cached` and the seconds it took (``Harness.inference``)."""
    reasons: list[str] = []
    inf = Inference(None)
    for a in attempts:
        inf = build(p, kernel, wrapper, a["recording"], a["where"], model)
        if inf.harness is not None:
            break
        reasons.append(inf.reason)
    inf.cached = cached
    inf.seconds = round(time.monotonic() - t0, 3)
    if inf.harness is not None:
        inf.harness.inference = {"cached": cached, "seconds": inf.seconds, "cache_file": str(cache) if cache else None}
    else:
        inf.reason = "; ".join(reasons)
    return inf


class NotInferred(HarnessError):
    """No harness could be inferred from a Python file (``missing=True``); ``recorded``: the launcher's tensor
    dtypes the recording saw (:func:`htam_core.harness.template.recorded_dtypes`), for the template that the
    "no harness" error shows."""

    def __init__(self, message: str, recorded: dict[str, str]) -> None:
        super().__init__(message, missing=True)
        self.recorded = recorded


def infer_harness(path: str | os.PathLike, kernel: str, model: Any = None, *, run_code: bool = True) -> Harness | None:
    """The discovery step of :func:`htam_core.harness.find_harness`: the inferred harness, or ``None`` when
    inference is off (``HTAM_INFER=0``), the file is not Python, or ``run_code=False`` and no recording of the
    file is cached (see :func:`infer`).

    Raises:
        NotInferred: (``missing=True``) nothing could be inferred; the message names what is missing.
    """
    p = Path(path)
    if p.suffix != ".py" or os.environ.get("HTAM_INFER") == "0":
        return None
    inf = infer(p, kernel, model, run_code=run_code)
    if inf.not_run:
        return None
    if inf.harness is None:
        raise NotInferred(f"no harness could be inferred from {p.name}: {inf.reason}", inf.dtypes)
    return inf.harness
