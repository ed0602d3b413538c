"""The oracle rule: with no reference, a candidate is checked against the starting kernel.

When a harness gives no reference (an inferred harness: the developer's file has a ``main()`` or a
``__main__`` block but no torch expression of the right answer), the right answer is what the kernel the
candidate was derived from computes: the **starting kernel is the oracle**. Both run through the same
preparer on the same inputs, with the same seeds and the same guards (write-only outputs poisoned before
each run, in-out outputs starting from their initial value, NaN/Inf and input mutation refused, the
scaled-input trials of :func:`htam_core.verify.correctness.check_correctness`).

:class:`OracleReference` is the rule in one place: it takes a prepared candidate and a prepared start and
gives the candidate's :class:`~htam_core.harness.runner.Prepared` whose reference is the start. Runs inside a
worker process (it launches kernels). Idea source: differential testing against a trusted version of the
same program (the usual "golden model" check).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from htam_core.harness.base import Harness, HarnessError

if TYPE_CHECKING:
    from htam_core.harness.runner import Prepared

#: What a pass means under the oracle rule, for reports and hovers.
ORACLE_AGAINST = "the starting kernel"


class OracleReference:
    """The starting kernel of ``start_path`` used as the reference of ``kernel``.

    Args:
        start_path: the starting kernel's file (the file the optimization started from, never a candidate).
        kernel: the kernel's name.

    Raises:
        HarnessError: ``start_path`` does not exist.
    """

    def __init__(self, start_path: str | Path, kernel: str) -> None:
        self.start_path = Path(start_path)
        self.kernel = kernel
        if not self.start_path.is_file():
            raise HarnessError(f"the starting kernel {self.start_path} (the oracle of {kernel}) does not exist; "
                               "give a reference or verify with --against START_FILE")

    def wrap(self, candidate: Prepared, start: Prepared) -> Prepared:
        """``candidate`` with its reference replaced by ``start``'s kernel.

        The reference call gets a clone of the inputs made before the candidate runs (so in-out buffers hold
        their initial value) and runs the start kernel the way the candidate runs: its write-only outputs are
        poisoned first, and its outputs are the same buffers.
        """
        trial = dataclasses.replace(candidate.trial, run_reference=start.trial.run_candidate)
        out = dataclasses.replace(candidate, trial=trial)
        out.notes = [*candidate.notes, f"reference: {ORACLE_AGAINST} ({self.start_path.name})"]
        return out


def prepare_with_oracle(h: Harness, device: str,
                        prepare_one: Callable[[Harness, str], Prepared] | None = None) -> Prepared:
    """Prepare ``h`` (its :attr:`Harness.path` is the candidate) with the starting kernel as its reference.

    An inferred CUDA direct launch reads the candidate's own launch configuration from its ``main()`` when it
    still parses (a transform that retunes the block size changes what runs); the start keeps the one inferred.
    A ``grid`` written in ``htam.toml`` is the user's and is kept.

    Args:
        h: a harness with ``oracle_path`` set and no ``reference``.
        device: ``"cuda"`` or ``"cpu"``.
        prepare_one: how one file is prepared (default :func:`htam_core.harness.runner.prepare_spec`).

    Raises:
        HarnessError: no starting kernel, or either file cannot be prepared.
    """
    from htam_core.harness.runner import prepare_spec

    prep = prepare_one or prepare_spec
    if not h.oracle_path:
        raise HarnessError(f"{h.source or Path(h.path).name}: no reference and no starting kernel to compare with")
    oracle = OracleReference(h.oracle_path, h.kernel)
    cand_h = _relaunched(h)
    start = prep(dataclasses.replace(h, path=str(oracle.start_path)), device)
    return oracle.wrap(prep(cand_h, device), start)


def _relaunched(h: Harness) -> Harness:
    """``h`` with the grid, block and shared bytes the candidate's ``main()`` launches with (CUDA direct launch)."""
    if h.kind != "inferred" or h.language != "cuda" or h.grid is None or Path(h.path).resolve() == Path(h.oracle_path or "").resolve():
        return h
    from htam_core.harness.infer_cuda import infer_cuda_harness

    try:
        again = infer_cuda_harness(h.path, h.kernel)
    except (HarnessError, OSError):
        return h
    if again.grid is None or [i.name for i in again.inputs] != [i.name for i in h.inputs]:
        return h
    return dataclasses.replace(h, grid=again.grid, block=again.block, shared_bytes=again.shared_bytes)

