"""The float64 reference of a CUDA start under the oracle rule: which outputs it serves and how it runs.

When a ``spec`` harness checks candidates against the starting kernel (the oracle rule) and launches that ``.cu``
kernel directly (an inferred ``main()``, or ``grid``/``block`` in ``htam.toml``), the outputs the start fills with a
long float32 sum (:class:`~htam_core.source.analysis.facts.LongSum`, read by the analysis layer) also get the
start's float64 twin (:func:`~htam_core.harness.promote64.float64_twin`) as a reference: the twin is written to the
cache (its ``#include "..."`` lines made absolute, so the start's own headers are found), launched like the start
with every float32 buffer and scalar given as float64 of the same values (write-only outputs poisoned, in-out ones
restored as for the start), and its outputs cast back to float32. :mod:`htam_core.verify.correctness` uses it only
for those outputs and only when they alone differ from the start (:mod:`htam_core.verify.long_sum_rule`).

No twin (one line in the harness's notes, the start stays the reference) for a host launcher (``launcher`` in
``htam.toml``: the launch is the file's own host code), a harness whose outputs are a launcher's return value, or a
kernel the promotion refuses; a start that is not a ``.cu`` file (a Python file) gets none and no note.

Idea source: checking a float32 kernel against the same algorithm run in double (Higham, "Accuracy and Stability
of Numerical Algorithms", ch. 4).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.promote64 import float64_twin
from htam_core.harness.trial import poison_
from htam_core.runtime.cache import cache_root

#: A launch of a file's kernel on a list of inputs (the runner's bind).
Bind = Callable[[list[Any]], Callable[[], Any]]


@dataclass
class Reference64:
    """The float64 reference a check gets (:func:`reference64`).

    Attributes:
        run: ``inputs -> outputs`` of the twin (float32 inputs cast to float64, outputs cast back), or ``None``.
        outputs: the positions in the harness's outputs of the long float32 sums it serves.
        notes: one line saying which reference those outputs use, or why there is no twin.
    """

    run: Callable[[list[Any]], list[Any]] | None = None
    outputs: tuple[int, ...] = ()
    notes: list[str] = field(default_factory=list)


def long_sum_outputs(h: Harness, text: str) -> tuple[int, ...]:
    """Positions in ``h.outputs`` of the outputs the start's kernel fills with a long float32 sum: the kernel's
    :attr:`~htam_core.source.analysis.facts.KernelFacts.long_sums` pointers, mapped through the launch's
    arguments (the kernel's ``i``-th parameter is the input named ``h.args[i]``)."""
    # start-up cost: the analysis layer (sympy, tree_sitter) loads only when an oracle harness is prepared
    from htam_core.source import parse_text
    from htam_core.source.analysis import analyze

    model = parse_text(text, "cuda")
    kernel = next((k for k in model.kernels if k.name == h.kernel), None)
    if kernel is None:
        return ()
    params = [p.name for p in kernel.params]
    names = {s.pointer for s in analyze(model, kernel).long_sums}
    args = {h.args[i] for i, p in enumerate(params) if p in names and i < len(h.args)}
    return tuple(k for k, o in enumerate(h.outputs) if o in args)


def _absolute_includes(text: str, origin: Path) -> str:
    """``#include "x.h"`` lines as ``#include "/abs/dir/x.h"`` when that file exists next to ``origin``."""
    def fix(m: re.Match[str]) -> str:
        p = origin.parent / m.group(2)
        return f'{m.group(1)}"{p.resolve()}"' if p.is_file() else m.group(0)
    return re.sub(r'^(\s*#\s*include\s*)"([^"]+)"', fix, text, flags=re.M)


def write_twin(path: Path, text: str) -> Path:
    """Write the twin ``text`` of the start ``path`` to the cache (``<htam cache>/twins/<hash>/<stem>.f64.cu``)."""
    text = _absolute_includes(text, path)
    out = cache_root() / "twins" / hashlib.sha256(text.encode()).hexdigest()[:24] / f"{path.stem}.f64.cu"
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.is_file():
        out.write_text(text, encoding="utf-8")
    return out


def promoted_harness(h: Harness) -> Harness:
    """``h`` with its float32 inputs (buffers and scalars) declared float64, for the twin's launch."""
    return dataclasses.replace(h, inputs=[dataclasses.replace(s, dtype="float64") if s.dtype == "float32" else s
                                          for s in h.inputs])


def _refused(h: Harness) -> str:
    if h.launcher:
        return "the start is launched through its own host code"
    if not h.outputs:
        return "the outputs are a launcher's return value"
    return ""


def reference64(h: Harness, bind_twin: Callable[[Harness, str], Bind], poison_idx: set[int],
                initial: Callable[[], dict[int, Any]]) -> Reference64:
    """The float64 reference of the oracle harness ``h`` (module docstring), or why there is none.

    Args:
        h: the harness (its :attr:`Harness.oracle_path` is the start).
        bind_twin: ``(promoted harness, twin path) -> bind``: the runner's direct launch of a file's kernel.
        poison_idx: the input positions of write-only outputs (poisoned before the twin's call).
        initial: ``() -> {position: tensor}``, the initial values of the in-out outputs of the latest input set.

    Returns:
        A :class:`Reference64`; never raises for a start it cannot promote (its notes say why).
    """
    if not h.uses_oracle or not (h.oracle_path or "").endswith(".cu"):
        return Reference64()
    start = Path(h.oracle_path)
    text = start.read_text(encoding="utf-8", errors="replace")
    outputs = long_sum_outputs(h, text)
    if not outputs:
        return Reference64()
    why = _refused(h)
    twin = float64_twin(text, h.kernel) if not why else None
    if twin is None or twin.text is None:
        reason = twin.reason if twin is not None else f"the float64 reference is not built: {why}; the start stays " \
                                                      "the reference"
        return Reference64(notes=[reason])
    h64 = promoted_harness(h)
    try:
        bind = bind_twin(h64, str(write_twin(start, twin.text)))
    except HarnessError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "it does not compile"
        return Reference64(notes=[f"the float64 reference is not built: its twin failed ({first}); the start stays "
                                  "the reference"])
    names = [s.name for s in h.inputs]
    out_pos = [names.index(o) for o in h.outputs]
    return Reference64(_runner(bind, out_pos, poison_idx, initial), outputs,
                       [f"outputs {', '.join(h.outputs[k] for k in outputs)}: long float32 sums, also checked against "
                        "the float64 reference of the start"])


def _runner(bind: Bind, out_pos: list[int], poison_idx: set[int],
            initial: Callable[[], dict[int, Any]]) -> Callable[[list[Any]], list[Any]]:
    """``inputs -> outputs`` of the twin's launch ``bind``: float32 tensors and floats given as float64, write-only
    outputs poisoned, in-out ones set to their initial values, outputs cast back to their own dtypes."""
    import torch

    def run(inputs: list[Any]) -> list[Any]:
        xs = [t.detach().to(torch.float64) if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t
              for t in inputs]
        for i in poison_idx:
            poison_(xs[i])
        for i, init in initial().items():
            xs[i] = init.detach().to(torch.float64 if init.dtype == torch.float32 else init.dtype).clone()
        bind(xs)()
        return [xs[i].to(inputs[i].dtype) if isinstance(inputs[i], torch.Tensor) else xs[i] for i in out_pos]
    return run
