"""The ranker never loads torch: the editor ranks on a cold start without paying for it (seconds)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from htam_core.memory import Outcome, load_knowledge, open_store, state_from_profile
from htam_core.memory.ranker import Ranker
from htam_core.source.model import KernelFeatures
from htam_core.types.profile import Bottleneck, Profile

profile = Profile("k", mode="gpu", device="NVIDIA H200", bottleneck=Bottleneck("memory-bound"))
state = state_from_profile(profile)
store = open_store(sys.argv[1])
for i, sp in enumerate((1.5, 0.8, 1.1, 0.9)):
    store.record([], state, "vectorize_loads", Outcome(sp, True, True, "win" if sp > 1 else "loss"), f"k{i}",
                 "NVIDIA H200", variant="vec=4")
kb = load_knowledge()
for ablation in (None, "random"):
    steps = Ranker(kb, store, ablation=ablation).rank(state, ["cuda_block_size"], KernelFeatures(loads=2, stores=1),
                                                      "cuda", profile, top=5)
    assert steps and any(s.trials for s in Ranker(kb, store).rank(state, [], KernelFeatures(loads=2, stores=1),
                                                                  "cuda", profile, top=40))
Ranker(kb, store).rank_variants(state, [], "vectorize_loads", ["vec=4", None], KernelFeatures(loads=2, stores=1),
                                "cuda", profile)
store.close()
print("torch" in sys.modules)
"""


def test_importing_the_ranker_and_ranking_does_not_load_torch(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "m.sqlite3")], cwd=REPO, text=True,
                         capture_output=True, timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False", out.stdout
