"""The committed results under ``bench/results/`` fit in a repository and stay readable.

* The files total well under 20 MB and none is a large uncompressed file: raw JSONL, replay documents and logs
  are committed gzip-compressed (``bench/results/README.md``).
* A replay of a committed measured-space table, read through its ``.gz`` and through the name without it, gives
  the rows of the committed replay document (the 2026-12-04 kernel-left-out replay of the filled4 table) for
  the policies that need no warm memory, on a kernel whose candidates and ranking no later change touched: a
  replay reads each candidate's text hash in the table, so a kernel whose transforms or ranking changed since the
  table was measured (``stencil1d_r3`` now gets the shared-memory stencil tile first, ``transpose_fp16`` other
  tile variants; since 2026-12-06 ``jacobi2d`` and most CUDA kernels get ``__ldg`` on their read-only inputs that
  are not ``const __restrict__``, a candidate the table never measured; since 2026-12-07 ``gemv_kernel``'s block-size
  step tries the larger tile first) is "not in the table" there, by design. The kernel replayed is
  ``swish_rows_kernel``, the one whose replay still equals the committed rows for both policies.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.types.files import read_data_text

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
TABLE = RESULTS / "2026-12-02-nvidia-h200-space-c12-filled4.jsonl.gz"
REPLAY = RESULTS / "2026-12-04-filled4-replay-family-left-out" / "kernel-replay.json.gz"
#: the fields of a replay row that the table and the policy decide (wall times and paths are not compared)
FIELDS = ("status", "target", "curve", "trials", "trials_to_90", "not_in_table", "strategies")


def _sizes() -> dict[str, int]:
    out = {}
    for root, _dirs, files in os.walk(RESULTS):
        for f in files:
            p = Path(root) / f
            out[str(p.relative_to(REPO))] = p.stat().st_size
    return out


def test_results_fit_in_a_repository() -> None:
    sizes = _sizes()
    assert sizes, "bench/results is empty"
    assert sum(sizes.values()) < 15 * 2**20, f"bench/results holds {sum(sizes.values()) / 2**20:.1f} MiB"
    big = {p: s for p, s in sizes.items() if s > 200_000 and not p.endswith((".gz", ".png"))}
    assert not big, f"commit these gzip-compressed (gzip -9 -n FILE): {big}"


@pytest.mark.parametrize("table", [TABLE, TABLE.with_suffix("")], ids=["gz", "name-without-gz"])
def test_replay_of_committed_table_gives_committed_rows(table: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the table's kernel paths are relative to the repository root
    out = tmp_path / "out"
    rc = main(["bench", "replay", "--table", str(table.relative_to(REPO)), "--policies", "htam-cold,random",
               "--seeds", "1", "--kernels", "swish_rows_kernel", "--out", str(out)])
    assert rc == 0
    mine = json.loads((out / "2026-12-02-nvidia-h200-space-c12-filled4-replay.json").read_text(encoding="utf-8"))
    committed = json.loads(read_data_text(REPLAY))
    theirs = {(r["kernel"], r["policy"], r["seed"]): r for r in committed["rows"]}
    assert len(mine["rows"]) == 2
    for row in mine["rows"]:
        ref = theirs[(row["kernel"], row["policy"], row["seed"])]
        assert {f: row[f] for f in FIELDS} == {f: ref[f] for f in FIELDS}, row["kernel"]
    assert any(r["trials_to_90"] for r in mine["rows"]), "a replay that never reached a target compares nothing"
