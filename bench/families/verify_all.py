"""Verify every member of the kernel families against its reference, streaming one JSON line per kernel.

On a GPU machine this is the check the family suite needs before a sample-efficiency run: every starting
kernel must match its reference (a CUDA member's reference is only compiled on a CPU). Without a GPU the
Triton members run under the interpreter and the CUDA members are compiled only (``"compile-only"``).

    python bench/families/verify_all.py --out bench/results/families-verify.jsonl --max-seconds 480

Each line: ``{"kernel", "family", "lang", "status", "verified_on", "seconds", "messages"}``; a kernel already
in ``--out`` is skipped (resumable); the run stops cleanly before a kernel that would start after
``--max-seconds``. Progress goes to stderr. Exit 0 when every verified kernel was accepted (compile-only counts
as not wrong), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from htam_core.bench.families import load_families  # noqa: E402
from htam_core.harness.base import HarnessError  # noqa: E402
from htam_core.verify.check import resolve_harness, verify_candidate  # noqa: E402


def _done(out: Path) -> set[str]:
    if not out.is_file():
        return set()
    names = set()
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            names.add(json.loads(line)["kernel"])
        except (ValueError, KeyError):
            continue
    return names


def main(argv: list[str] | None = None) -> int:
    """Verify the members (all, or ``--kernels``/``--families``) and append one line each to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="JSON-lines file to append to (resumed from)")
    ap.add_argument("--max-seconds", type=float, default=480.0, help="stop before starting a kernel after this")
    ap.add_argument("--kernels", default="", help="comma-separated kernel names (default: all)")
    ap.add_argument("--families", default="", help="comma-separated families (default: all)")
    args = ap.parse_args(argv)
    os.environ.setdefault("HTAM_INFER", "1")
    suite = load_families(families=[f for f in args.families.split(",") if f] or None)
    want = {k for k in args.kernels.split(",") if k}
    members = [k for k in suite.kernels if not want or k.name in want]
    done = _done(args.out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    t0, bad = time.time(), 0
    for i, k in enumerate(members, 1):
        if k.name in done:
            continue
        if time.time() - t0 > args.max_seconds:
            print(f"[{i}/{len(members)}] budget of {args.max_seconds:.0f} s spent: stopping (resume with the same "
                  "command)", file=sys.stderr, flush=True)
            break
        t = time.time()
        try:
            v = verify_candidate(Path(k.path), resolve_harness(Path(k.path), kernel=k.name), timeout_s=300)
            row = {"status": v.status, "verified_on": v.verified_on, "messages": v.messages}
        except HarnessError as exc:
            row = {"status": "error", "verified_on": None, "messages": [str(exc).splitlines()[0]]}
        row = {"kernel": k.name, "family": k.family, "lang": k.kernel.language, **row,
               "seconds": round(time.time() - t, 2)}
        bad += row["status"] not in ("accepted", "unverified")
        with args.out.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        print(f"[{i}/{len(members)}] {k.name}: {row['status']} on {row['verified_on']} ({row['seconds']} s)",
              file=sys.stderr, flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
