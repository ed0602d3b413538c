"""Nsight Compute counters: run ``ncu`` on one kernel and parse its CSV into structured fields.

Command::

    ncu --clock-control none --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis
        --section LaunchStats --section SourceCounters --apply-rules yes --csv --page details
        --print-units base -k regex:^NAME($|[<(]) -c LAUNCHES --target-processes all --log-file OUT.csv CMD...

``--clock-control none`` keeps the GPU's normal boost clocks (ncu locks them to base by default,
which would make its durations disagree with event timing). ncu's default cache control flushes
caches before each profiled launch.

The CSV of ``--page details`` has one row per (launch, section, metric) with the columns
``"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",
"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"`` followed, in
current versions, by ``"Rule Name","Rule Type","Rule Description","Estimated Speedup Type",
"Estimated Speedup"``: rows with a rule name are the rules that fired (e.g. ``SOLBottleneck``,
``AchievedOccupancy``) with their estimated speedup in percent. The parser is driven by the header
(python :mod:`csv`), so column order and extra columns do not matter.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from htam_core.harness.base import Harness
from htam_core.harness.runner import prepare
from htam_core.harness.trial import BASE_SEED
from htam_core.runtime.children import child_env, set_parent_death_signal

SECTIONS: tuple[str, ...] = ("SpeedOfLight", "Occupancy", "MemoryWorkloadAnalysis", "LaunchStats", "SourceCounters")

_TIME_UNITS = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3, "ns": 1e-6, "us": 1e-3, "ms": 1.0}
_PREFIX = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def find_ncu() -> str | None:
    """Path of ``ncu`` (``PATH``, then ``$CUDA_HOME/bin``, then ``/usr/local/cuda/bin``), or ``None``."""
    found = shutil.which("ncu")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and Path(home, "bin", "ncu").is_file():
            return str(Path(home, "bin", "ncu"))
    return None


def kernel_filter(name: str) -> str:
    """ncu ``-k`` value selecting the kernel ``name`` (and its template instances) but not longer names."""
    return f"regex:^{re.escape(name)}($|[<(])"


def ncu_command(cmd: list[str], kernel: str, *, launch_count: int = 5, launch_skip: int = 0,
                log_file: str | None = None, ncu: str = "ncu") -> list[str]:
    """The ncu command line that profiles ``kernel`` in the program ``cmd``."""
    args = [ncu, "--clock-control", "none"]
    for s in SECTIONS:
        args += ["--section", s]
    args += ["--apply-rules", "yes", "--csv", "--page", "details", "--print-units", "base",
             "-k", kernel_filter(kernel), "-c", str(launch_count), "--target-processes", "all"]
    if launch_skip:
        args += ["-s", str(launch_skip)]
    if log_file:
        args += ["--log-file", log_file]
    return args + list(cmd)


def _num(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan", "-"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


@dataclass
class NcuRule:
    """A rule that fired: name, type (``OPT``, ``WRN``, ``INF``), section, message, estimated speedup %."""

    rule: str
    type: str
    section: str
    message: str
    estimated_speedup_pct: float | None = None
    speedup_type: str | None = None


@dataclass
class NcuLaunch:
    """One profiled launch of the kernel.

    Attributes:
        id: ncu's launch id.
        kernel_name: as ncu prints it.
        block_size, grid_size: as printed (``"(256, 1, 1)"``).
        device: ``"0"`` etc.
        metrics: ``{section: {metric name: {"value": float | str, "unit": str}}}``.
        rules: rules that fired.
    """

    id: str
    kernel_name: str
    block_size: str = ""
    grid_size: str = ""
    device: str = ""
    metrics: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    rules: list[NcuRule] = field(default_factory=list)

    def metric(self, section_part: str, name: str) -> tuple[float | None, str]:
        """Numeric value and unit of ``name`` in the first section whose name contains ``section_part``."""
        for sec, ms in self.metrics.items():
            if section_part.lower() in sec.lower() and name in ms:
                m = ms[name]
                v = m["value"]
                return (v if isinstance(v, float) else None), m["unit"]
        return None, ""

    # -- structured fields ------------------------------------------------------------------
    @property
    def duration_ms(self) -> float | None:
        """``Duration`` (SpeedOfLight) in ms."""
        v, unit = self.metric("Speed Of Light", "Duration")
        return None if v is None else v * _TIME_UNITS.get(unit, 1e-6 if unit == "" else 1.0)

    @property
    def sol_memory_pct(self) -> float | None:
        """``Memory Throughput`` % of peak (SpeedOfLight)."""
        return self.metric("Speed Of Light", "Memory Throughput")[0]

    @property
    def sol_compute_pct(self) -> float | None:
        """``Compute (SM) Throughput`` % of peak (SpeedOfLight)."""
        return self.metric("Speed Of Light", "Compute (SM) Throughput")[0]

    @property
    def dram_throughput_pct(self) -> float | None:
        """``DRAM Throughput`` % of peak (SpeedOfLight)."""
        return self.metric("Speed Of Light", "DRAM Throughput")[0]

    @property
    def dram_bytes_per_s(self) -> float | None:
        """``Memory Throughput`` in bytes/s (MemoryWorkloadAnalysis), unit prefixes resolved."""
        v, unit = self.metric("Memory Workload", "Memory Throughput")
        if v is None:
            return None
        m = re.fullmatch(r"([KkMGTP]?)byte/s(econd)?", unit.strip())
        return v * _PREFIX[m.group(1)] if m else None

    @property
    def achieved_occupancy(self) -> float | None:
        """``Achieved Occupancy`` as a fraction 0..1 (Occupancy)."""
        v = self.metric("Occupancy", "Achieved Occupancy")[0]
        return None if v is None else v / 100.0

    @property
    def theoretical_occupancy(self) -> float | None:
        """``Theoretical Occupancy`` as a fraction 0..1 (Occupancy)."""
        v = self.metric("Occupancy", "Theoretical Occupancy")[0]
        return None if v is None else v / 100.0

    @property
    def registers(self) -> int | None:
        """``Registers Per Thread`` (LaunchStats)."""
        v = self.metric("Launch Statistics", "Registers Per Thread")[0]
        return None if v is None else int(v)

    def to_summary(self) -> dict[str, Any]:
        """The structured fields plus the rules, as JSON."""
        return {
            "id": self.id, "kernel_name": self.kernel_name, "block_size": self.block_size, "grid_size": self.grid_size,
            "duration_ms": self.duration_ms, "sol_memory_pct": self.sol_memory_pct,
            "sol_compute_pct": self.sol_compute_pct, "dram_throughput_pct": self.dram_throughput_pct,
            "dram_bytes_per_s": self.dram_bytes_per_s, "achieved_occupancy": self.achieved_occupancy,
            "theoretical_occupancy": self.theoretical_occupancy, "registers": self.registers,
            "rules": [asdict(r) for r in self.rules],
        }


def parse_ncu_csv(text: str) -> list[NcuLaunch]:
    """Parse ncu's ``--csv --page details`` output (other lines, e.g. ``==PROF==``, are skipped).

    Returns:
        One :class:`NcuLaunch` per profiled launch, in ID order.

    Raises:
        ValueError: no ncu CSV header was found (the message quotes ncu's own error lines).
    """
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"') and '"Metric Name"' in ln), None)
    if start is None:
        errs = [ln for ln in lines if "ERROR" in ln or "error" in ln][:10]
        raise ValueError("no ncu CSV found in the output" + (": " + " | ".join(errs) if errs else
                                                            " (did the kernel filter match any launch?)"))
    body = [ln for ln in lines[start:] if ln.startswith('"')]
    launches: dict[str, NcuLaunch] = {}
    for row in csv.DictReader(io.StringIO("\n".join(body))):
        lid = row.get("ID", "")
        la = launches.get(lid)
        if la is None:
            la = launches[lid] = NcuLaunch(lid, row.get("Kernel Name", ""), row.get("Block Size", ""),
                                           row.get("Grid Size", ""), row.get("Device", ""))
        section = row.get("Section Name", "") or ""
        rule = (row.get("Rule Name") or "").strip()
        if rule:
            la.rules.append(NcuRule(rule, (row.get("Rule Type") or "").strip(), section,
                                    (row.get("Rule Description") or "").strip(),
                                    _num(row.get("Estimated Speedup") or ""),
                                    (row.get("Estimated Speedup Type") or "").strip() or None))
            continue
        name = (row.get("Metric Name") or "").strip()
        if not name:
            continue
        raw = row.get("Metric Value") or ""
        num = _num(raw)
        la.metrics.setdefault(section, {})[name] = {"value": num if num is not None else raw,
                                                    "unit": (row.get("Metric Unit") or "").strip()}
    return sorted(launches.values(), key=lambda la: int(la.id) if la.id.isdigit() else 0)


def summarize(launches: list[NcuLaunch]) -> dict[str, Any]:
    """Median of each structured field over the launches, the union of the rules (highest estimated
    speedup kept per rule) and the duration min/median/max in ms."""
    if not launches:
        return {}
    keys = ("duration_ms", "sol_memory_pct", "sol_compute_pct", "dram_throughput_pct", "dram_bytes_per_s",
            "achieved_occupancy", "theoretical_occupancy", "registers")
    sums = [la.to_summary() for la in launches]
    out: dict[str, Any] = {"launches": len(launches), "kernel_name": launches[0].kernel_name,
                           "block_size": launches[0].block_size, "grid_size": launches[0].grid_size}
    for k in keys:
        vals = [s[k] for s in sums if s[k] is not None]
        out[k] = statistics.median(vals) if vals else None
    durs = [s["duration_ms"] for s in sums if s["duration_ms"] is not None]
    out["duration_ms_stats"] = {"min": min(durs), "median": statistics.median(durs), "max": max(durs)} if durs else None
    rules: dict[str, NcuRule] = {}
    for la in launches:
        for r in la.rules:
            old = rules.get(r.rule)
            if old is None or (r.estimated_speedup_pct or 0) > (old.estimated_speedup_pct or 0):
                rules[r.rule] = r
    out["rules"] = [asdict(r) for r in sorted(rules.values(), key=lambda r: -(r.estimated_speedup_pct or 0))]
    return out


def run_ncu(cmd: list[str], kernel: str, *, launch_count: int = 5, launch_skip: int = 0, timeout_s: float = 300.0,
            cwd: str | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` under ncu filtered to ``kernel`` and return :func:`summarize` plus per-launch data.

    ``env`` is filtered through :func:`~htam_core.runtime.children.child_env` (default: the caller's
    environment, filtered): ncu and the program it runs never see a secret.

    Raises:
        RuntimeError: ncu is missing, failed, or profiled no launch of the kernel (the message holds
            ncu's own lines).
    """
    ncu = find_ncu()
    if ncu is None:
        raise RuntimeError("ncu (Nsight Compute) is not on PATH")
    with tempfile.TemporaryDirectory(prefix="htam-ncu-") as tmp:
        log = str(Path(tmp) / "ncu.csv")
        full = ncu_command(cmd, kernel, launch_count=launch_count, launch_skip=launch_skip, log_file=log, ncu=ncu)
        proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout_s, cwd=cwd,
                              env=child_env() if env is None else child_env(env),
                              preexec_fn=set_parent_death_signal)
        text = Path(log).read_text(errors="replace") if Path(log).exists() else ""
        try:
            launches = parse_ncu_csv(text)
        except ValueError as e:
            tail = "\n".join((text + "\n" + proc.stderr + proc.stdout).splitlines()[-15:])
            raise RuntimeError(f"ncu gave no counters for {kernel} (exit {proc.returncode}): {e}\n{tail}") from e
    if not launches:
        raise RuntimeError(f"ncu profiled no launch of {kernel}")
    s = summarize(launches)
    s["per_launch"] = [la.to_summary() for la in launches]
    s["command"] = " ".join(full[:-len(cmd)]) + " <program>"
    s["program_exit_code"] = proc.returncode
    return s


def ncu_harness_target(harness: dict[str, Any], calls: int = 3, launch_count: int = 3,
                       timeout_s: float = 300.0) -> dict[str, Any]:
    """Worker target: profile a harness's kernel under ncu by running this module as a child program
    (``python -m htam_core.measure.ncu --run-harness FILE``) that launches it ``calls`` times."""
    with tempfile.TemporaryDirectory(prefix="htam-ncu-h-") as tmp:
        hj = Path(tmp) / "harness.json"
        hj.write_text(json.dumps(harness))
        cmd = [sys.executable, "-m", "htam_core.measure.ncu", "--run-harness", str(hj), str(calls)]
        env = child_env()
        env.pop("TRITON_INTERPRET", None)
        return run_ncu(cmd, harness["kernel"], launch_count=launch_count, launch_skip=1, timeout_s=timeout_s, env=env)


def _run_harness_main(path: str, calls: int) -> None:  # pragma: no cover - runs under ncu on a GPU
    import torch

    h = Harness.from_json(json.loads(Path(path).read_text()))
    p = prepare(h, "cuda")
    fn = p.bind(p.trial.make_inputs(BASE_SEED, 0, 1.0))
    for _ in range(calls + 1):
        fn()
    torch.cuda.synchronize()


if __name__ == "__main__" and len(sys.argv) >= 4 and sys.argv[1] == "--run-harness":
    _run_harness_main(sys.argv[2], int(sys.argv[3]))
