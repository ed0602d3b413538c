"""The profile of one kernel: the *state* HTAM ranks from.

The JSON form is the contract of ``htam profile --json`` (see README). Every measured field is
``None`` unless it was measured on a GPU: nothing is guessed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

#: Bottleneck classes, in the order the classifier reports them. See ``classify.py`` for thresholds.
#: ``cannot-launch``: the launch needs more threads, registers or shared memory per block than the target
#: allows (or than its ``__launch_bounds__``), so it never runs; the profile's ``extra["launch"]`` says why.
BOTTLENECK_CLASSES: tuple[str, ...] = (
    "cannot-launch",
    "memory-bound",
    "compute-bound",
    "latency-bound",
    "occupancy-limited",
    "launch-overhead-bound",
    "register-spill",
    "unknown",
)


@dataclass
class TimeStats:
    """Kernel time over the timed trials, in milliseconds."""

    min: float
    median: float
    max: float


@dataclass
class Bottleneck:
    """A bottleneck class with its evidence.

    Attributes:
        cls: one of :data:`BOTTLENECK_CLASSES` (JSON key ``class``).
        evidence: human-readable facts that led there, each naming its metric or ncu rule
            (``"sm__throughput 12% of peak (ncu SpeedOfLight)"``).
        secondary: further classes that also apply, most important first.
    """

    cls: str = "unknown"
    evidence: list[str] = field(default_factory=list)
    secondary: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON form: ``{"class", "evidence", "secondary"}``."""
        return {"class": self.cls, "evidence": list(self.evidence), "secondary": list(self.secondary)}


@dataclass
class Profile:
    """A profile of one kernel, static or measured.

    Attributes:
        kernel: kernel name.
        mode: ``"gpu"`` when measured, ``"static"`` when only compiled.
        device: device name (``"NVIDIA H200"``) or the static target (``"sm_90 (static)"``).
        time_ms: min/median/max kernel time in ms, or ``None``.
        registers: registers per thread (ptxas), or ``None`` when the compile failed.
        spill_bytes: spill stores + loads in bytes (ptxas), or ``None``.
        shared_bytes: static shared memory per block in bytes, or ``None``.
        theoretical_occupancy: active warps / max warps per SM, 0..1, for the launch's block size.
        achieved_occupancy: measured (ncu ``sm__warps_active``), 0..1, or ``None``.
        sol: ``{"memory_pct", "compute_pct"}`` speed-of-light percentages, or ``None``: ncu's when it ran,
            else the roofline estimate of :func:`htam_core.measure.gpu.roofline_sol` (``extra["sol_source"]``
            says which).
        bandwidth_bytes_per_s: achieved DRAM bandwidth in bytes/s, or ``None``.
        flops_per_s: achieved FLOP/s, or ``None``.
        roofline_fraction: achieved / attainable at this arithmetic intensity, 0..1, or ``None``.
        bottleneck: class and evidence.
        harness: how the kernel was run (``"htam.toml"``, ``"kernelbench"``, ``"cu-main"``) or ``None``.
        warnings: anything the user should know (static only, stale, missing harness ...).
        block_size: threads per block used for occupancy, or ``None`` when unknown.
        stack_bytes: per-thread stack frame in bytes (ptxas), or ``None``.
        ncu_rules: ncu rules that fired: ``[{"rule", "message", "estimated_speedup_pct"}]``.
        extra: any other structured data (raw ncu metrics, compile command ...).
    """

    kernel: str
    mode: Literal["gpu", "static"] = "static"
    device: str = "sm_90 (static)"
    time_ms: TimeStats | None = None
    registers: int | None = None
    spill_bytes: int | None = None
    shared_bytes: int | None = None
    theoretical_occupancy: float | None = None
    achieved_occupancy: float | None = None
    sol: dict[str, float] | None = None
    bandwidth_bytes_per_s: float | None = None
    flops_per_s: float | None = None
    roofline_fraction: float | None = None
    bottleneck: Bottleneck = field(default_factory=Bottleneck)
    harness: str | None = None
    warnings: list[str] = field(default_factory=list)
    block_size: int | None = None
    stack_bytes: int | None = None
    ncu_rules: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``htam profile --json`` object."""
        d = asdict(self)
        d["bottleneck"] = self.bottleneck.to_json()
        return d

    def shared_text(self) -> str | None:
        """The shared memory of a block in words: the compiler's static bytes, plus the launch's dynamic bytes when
        the static profile read a launch that passes some (``extra["dynamic_shared"]``): ``"0 bytes static + 1024
        dynamic (launch, line 33)"``, or the launch's expression when it is not a constant. ``None`` when the
        static bytes are unknown. Shared by the CLI and the editor, so both say what the occupancy counts."""
        if self.shared_bytes is None:
            return None
        dyn = self.extra.get("dynamic_shared") or {}
        if not dyn or dyn.get("bytes") == 0:
            return f"{self.shared_bytes} bytes"
        if dyn.get("bytes") is None:
            return (f"{self.shared_bytes} bytes static + dynamic `{dyn.get('expr')}` (launch, line {dyn.get('line')}: "
                    "not a constant, not counted)")
        return f"{self.shared_bytes} bytes static + {dyn['bytes']} dynamic (launch, line {dyn.get('line')})"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Profile:
        """Inverse of :meth:`to_json`."""
        d = dict(d)
        b = d.pop("bottleneck", None) or {}
        t = d.pop("time_ms", None)
        known = set(cls.__dataclass_fields__)
        p = cls(**{k: v for k, v in d.items() if k in known})
        p.bottleneck = Bottleneck(b.get("class", "unknown"), list(b.get("evidence", [])),
                                  list(b.get("secondary", [])))
        p.time_ms = TimeStats(**t) if t else None
        return p
