"""The measured-space table and the policy replay: the table builder in static mode (resume, time
budget), the replay evaluator (a candidate missing from the table is reported, never guessed), the budget
claim (a run at budget 2 is the first two steps of the run at budget 8) and the CLI replay from a committed
table."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from htam_core.bench.space import SpaceConfig, build_space, kernels_of_suite, load_manifest, synthesize_table
from htam_core.bench.suite import SuiteTask, run_suite_task
from htam_core.optimize.replay import NOT_IN_TABLE, Table, read_table, table_comparison

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixtures" / "synthetic_space_static.jsonl"


@pytest.fixture
def at_repo(monkeypatch):
    """The table's kernel paths are relative to the repository root."""
    monkeypatch.chdir(REPO)


def _transpose() -> list:
    return [k for k in kernels_of_suite(REPO / "bench" / "suite") if k.name == "transpose_naive"]


def test_build_space_static_streams_and_resumes(tmp_path, at_repo):
    out = tmp_path / "t.jsonl"
    lines: list[str] = []
    res = build_space(SpaceConfig(kernels=_transpose(), out=str(out), depth=1, max_candidates=2, static=True),
                      log=lines.append)
    assert res["kernels_done"] == 1 and res["candidates"] == 2 and res["stopped"] is None
    header, rows, _ = read_table(out)
    assert header["measured"] is False
    nodes = [r for r in rows if r["type"] == "node"]
    assert len(nodes) == 3  # start + 2 candidates
    assert [n["depth"] for n in nodes] == [0, 1, 1]
    assert all(n["speedup_vs_start"] is None for n in nodes)  # static: not measured, never guessed
    assert all(n["evaluation"]["profile"] is not None for n in nodes)  # the policies rank from it
    assert any("candidate 2/2" in ln and "ETA" in ln for ln in lines)
    again = build_space(SpaceConfig(kernels=_transpose(), out=str(out), depth=1, max_candidates=2, static=True),
                        log=lambda m: None)
    assert again["measured"] == 0 and again["kernels_done"] == 1
    assert len(out.read_text().splitlines()) == len(rows) + 1  # nothing appended


def test_build_space_time_budget_stops_cleanly_and_resume_reuses_rows(tmp_path, at_repo):
    out = tmp_path / "t.jsonl"
    res = build_space(SpaceConfig(kernels=_transpose(), out=str(out), depth=1, max_candidates=2, static=True,
                                  max_minutes=1e-6), log=lambda m: None)
    assert res["stopped"] == "time" and res["kernels_done"] == 0
    res2 = build_space(SpaceConfig(kernels=_transpose(), out=str(out), depth=1, max_candidates=1, static=True),
                       log=lambda m: None)
    assert res2["kernels_done"] == 1


def test_manifest_errors_are_one_line(tmp_path):
    from htam_core.bench.space import SpaceError

    (tmp_path / "m.json").write_text(json.dumps([{"file": "nope.cu", "kernel": "k", "family": "f"}]))
    with pytest.raises(SpaceError, match="does not exist"):
        load_manifest(tmp_path / "m.json")
    assert {k.family for k in load_manifest(REPO / "bench" / "suite" / "manifest.json")} >= {"matmul", "row-norm"}


def _synthetic(tmp_path: Path) -> Path:
    syn = tmp_path / "syn.jsonl"
    synthesize_table(FIXTURE, syn, lambda path: 1.5 if "launch_bounds" in path else 1.0)
    return syn


def _task(tmp_path: Path, table: Path, kernel_id: str, budget: int, policy: str = "htam-cold") -> dict:
    name = kernel_id.split("::")[1]
    return SuiteTask(kernel=name, path=kernel_id.split("::")[0], policy_name=policy, budget=budget,
                     out_dir=str(tmp_path / f"run-{budget}"), memory_path=str(tmp_path / f"m-{budget}.sqlite3"),
                     replay_table=str(table), replay_kernel=kernel_id, use_ncu=False).to_json()


def test_replay_budget_prefix_and_missing_candidates(tmp_path, at_repo):
    syn = _synthetic(tmp_path)
    kid = next(iter(Table(syn).done))
    r8 = run_suite_task(_task(tmp_path, syn, kid, 8))
    r2 = run_suite_task(_task(tmp_path, syn, kid, 2))
    assert r8["status"] == "ok" and r8["measured"] is True
    # the loop's choices do not depend on its budget: budget 2 is the first two steps of budget 8
    assert [(s["strategy"], s["speedup_vs_start"]) for s in r2["steps"]] == \
        [(s["strategy"], s["speedup_vs_start"]) for s in r8["steps"][:2]]
    for s in r8["steps"]:
        if s["status"] == NOT_IN_TABLE:
            assert s["speedup_vs_start"] is None and s["time_ms"] is None  # reported, never guessed
    best = Table(syn).best_speedup(kid)
    assert best is not None and best >= 1.5


def test_replay_reports_a_candidate_missing_from_the_table(tmp_path, at_repo):
    header, rows, skipped = read_table(FIXTURE)
    kid = next(r["kernel"] for r in rows if r.get("type") == "kernel_done")
    cut = tmp_path / "cut.jsonl"
    keep = [r for r in rows if r.get("type") != "node" or r["kernel"] != kid or r["depth"] == 0]
    cut.write_text("\n".join(json.dumps(x) for x in [header, *keep]) + "\n")
    syn = tmp_path / "syn.jsonl"
    synthesize_table(cut, syn, lambda path: 2.0)
    r = run_suite_task(_task(tmp_path, syn, kid, 2))
    assert [s["status"] for s in r["steps"]] == [NOT_IN_TABLE, NOT_IN_TABLE]
    assert r["best_speedup"] is None or r["best_speedup"] == pytest.approx(1.0)


def test_table_comparison_uses_the_timer_spread():
    def ev(ms: float, spread: float) -> dict:
        return {"per_set_ms": [ms, ms], "profile": {"extra": {"timing": {"per_set": [{"spread": spread}] * 2}}}}

    c = table_comparison(ev(1.0, 0.03), ev(0.96, 0.04))
    assert c.speedup == pytest.approx(1 / 0.96)
    assert c.spread == pytest.approx(0.05)
    assert c.status == "neutral"  # 4.2 % inside the 5 % spread
    assert table_comparison(ev(1.0, 0.0), ev(0.9, 0.0)).status == "win"
    assert table_comparison({"per_set_ms": []}, ev(1.0, 0.0)) is None


def test_cli_replays_from_a_committed_table(tmp_path, at_repo, capsys):
    from htam_core.cli.main import main

    kids = sorted(Table(FIXTURE).done)[:2]
    rc = main(["bench", "replay", "--table", str(FIXTURE), "--out", str(tmp_path), "--policies",
               "htam,htam-cold,random", "--seeds", "2", "--budget", "2", "--kernels", ",".join(kids)])
    assert rc == 0
    md = (tmp_path / "synthetic_space_static-replay.md").read_text()
    assert "Static table" in md and "| htam |" in md and "| random |" in md
    doc = json.loads((tmp_path / "synthetic_space_static-replay.json").read_text())
    assert {r["seed"] for r in doc["rows"] if r["policy"] == "random"} == {0, 1}
    assert all(r["trials_to_90"] is None for r in doc["rows"])  # nothing measured: nothing claimed


def test_family_manifest_with_llmc_entries(tmp_path):
    (tmp_path / "fam").mkdir()
    (tmp_path / "fam" / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1.f; }\n")
    (tmp_path / "llmc").mkdir()
    (tmp_path / "llmc" / "gelu.cu").write_text("__global__ void gelu1(float* x) { x[0] = 0.f; }\n")
    (tmp_path / "fam" / "manifest.json").write_text(json.dumps({
        "families": {"elementwise": {"title": "ew", "llmc": [{"path": "gelu.cu", "kernel": "gelu1"}]}},
        "kernels": [{"file": "k.cu", "kernel": "k", "family": "elementwise", "lang": "cuda"}]}))
    ks = load_manifest(tmp_path / "fam" / "manifest.json")
    assert [k.name for k in ks] == ["k"]  # no llm.c folder given: its kernels are left out
    ks = load_manifest(tmp_path / "fam" / "manifest.json", tmp_path / "llmc")
    assert [(k.name, k.family) for k in ks] == [("k", "elementwise"), ("gelu1", "elementwise")]
    assert all(Path(k.path).resolve().is_file() for k in ks)


def test_group_aggregates_pool_families_and_refuse_an_unknown_one():
    """Tuned and held-out families are reported together (reporting only): the figures over two families are
    those of their kernels pooled, per seed, then over seeds."""
    from htam_core.bench.replay import ReplayError, group_aggregates, policy_table

    def row(kernel: str, family: str, policy: str, seed: int, t90: int | None, final: float) -> dict:
        return {"kernel": kernel, "family": family, "policy": policy, "seed": seed, "target": 2.0,
                "trials_to_90": t90, "curve": [final] * 8, "not_in_table": 1}

    rows = [row("a", "f1", "htam", 0, 1, 2.0), row("b", "f2", "htam", 0, None, 1.0), row("c", "f3", "htam", 0, 3, 2.0),
            row("a", "f1", "random", 0, 2, 2.0), row("b", "f2", "random", 0, 4, 2.0),
            row("a", "f1", "random", 1, 4, 2.0), row("b", "f2", "random", 1, 6, 2.0)]
    doc = {"families": ["f1", "f2", "f3"], "policies": ["htam", "random"], "rows": rows, "budget": 8}
    g = group_aggregates(doc, ["f1", "f2"])
    assert g["htam"]["kernels"] == 2 and g["htam"]["mean_trials_to_90"] == pytest.approx((1 + 9) / 2)
    assert g["htam"]["geomean_at"]["8"] == pytest.approx(2.0 ** 0.5)
    assert g["random"]["mean_trials_to_90"] == pytest.approx((3 + 5) / 2)  # mean over seeds of the seed means
    assert g["random"]["spread"]["mean_trials_to_90"] == [3, 5]
    table = policy_table(g, 8)
    # kernel b never reaches 90 %: the mean and median it entered (as budget + 1 = 9) are lower bounds
    assert table[0].startswith("| policy |") and table[2].startswith("| htam | 2/2 | ≥ 5.00 | ≥ 5.0 |")
    with pytest.raises(ReplayError, match="no family f9"):
        group_aggregates(doc, ["f1", "f9"])


def test_a_kernel_measured_again_after_its_file_changed_replays_once(tmp_path, monkeypatch):
    """The 2026-12-02 H200 table holds two starts of ``bmm_kernel`` (its file changed and was measured again):
    the replay ran it twice under one key and refused. One kernel, its tree from the last start, its best there."""
    from htam_core.bench.replay import _kernels

    kid = "k.py::k"
    lines = [{"type": "header", "version": 1, "measured": True},
             {"type": "node", "kernel": kid, "family": "f", "key": "old", "parent": None, "speedup_vs_start": None},
             {"type": "node", "kernel": kid, "family": "f", "key": "oldc", "parent": "old", "speedup_vs_start": 3.0},
             {"type": "node", "kernel": kid, "family": "f", "key": "new", "parent": None, "speedup_vs_start": None},
             {"type": "node", "kernel": kid, "family": "f", "key": "newc", "parent": "new", "speedup_vs_start": 1.5}]
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(d) + "\n" for d in lines))
    table = Table(p)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text("# the kernel's file\n")
    kernels, left_out = _kernels(table, None)
    assert [k["id"] for k in kernels] == [kid] and left_out == []
    assert [r["key"] for r in table.kernel_rows(kid)] == ["new", "newc"]
    assert table.best_speedup(kid) == 1.5


def _moved_table(tmp_path: Path, moved: list[str]) -> Path:
    """The fixture with the files of ``moved`` (kernel ids) recorded under a folder that is not there, as a
    table built from a carried llm.c copy records them."""
    out = tmp_path / "moved.jsonl"
    lines = []
    for line in FIXTURE.read_text().splitlines():
        for kid in moved:
            path = kid.rsplit("::", 1)[0]
            line = line.replace(f'"{kid}"', f'"{".gone/llmc/" + Path(path).name}::{kid.rsplit("::", 1)[1]}"')
        lines.append(line)
    out.write_text("\n".join(lines) + "\n")
    return out


def test_replay_reads_moved_llmc_files_from_llmc_and_leaves_out_what_it_cannot_find(tmp_path, at_repo, capsys,
                                                                                 monkeypatch):
    from htam_core.cli.main import main

    monkeypatch.delenv("HTAM_LLMC", raising=False)
    a, b = sorted(Table(FIXTURE).done)[:2]
    table = _moved_table(tmp_path, [a])
    llmc = tmp_path / "llmc"
    llmc.mkdir()
    shutil.copy(a.rsplit("::", 1)[0], llmc)
    args = ["bench", "replay", "--table", str(table), "--policies", "htam-cold", "--budget", "1",
            "--kernels", f"{a.rsplit('::', 1)[1]},{b.rsplit('::', 1)[1]}"]

    assert main([*args, "--out", str(tmp_path / "found"), "--llmc", str(llmc)]) == 0
    doc = json.loads((tmp_path / "found" / "moved-replay.json").read_text())
    assert {r["status"] for r in doc["rows"]} == {"ok"} and len(doc["rows"]) == 2
    assert doc["kernels_left_out"] == []

    assert main([*args, "--out", str(tmp_path / "lost"), "--fresh"]) == 0
    err = capsys.readouterr().err
    assert "1 kernel(s) left out, their files are not here: .gone/llmc/" in err and "--llmc DIR" in err
    doc = json.loads((tmp_path / "lost" / "moved-replay.json").read_text())
    assert [r["kernel"] for r in doc["rows"]] == [b] and doc["kernels_left_out"][0].startswith(".gone/llmc/")
    assert "Left out, their files were not found: 1" in (tmp_path / "lost" / "moved-replay.md").read_text()

    only = _moved_table(tmp_path, [a, b])
    rc = main(["bench", "replay", "--table", str(only), "--policies", "htam-cold", "--budget", "1",
               "--kernels", f"{a.rsplit('::', 1)[1]},{b.rsplit('::', 1)[1]}", "--out", str(tmp_path / "none")])
    assert rc == 2 and "none of the table's kernel files is here" in capsys.readouterr().err


# -- the replay report's wording (new-user trial) --------------------------------------------------------------
_BUILD = {"out": "/root/out/run/space/table.jsonl", "depth": 2, "max_candidates": 3, "max_minutes": 8.4,
          "static": None, "trials": 20, "work": None}


def _report_doc(tmp_path: Path, *, kernels_opt: list[str] | None = None, n_kernels: int = 2,
                random_reaches: frozenset = frozenset({(0, 0)}), leave_out: str = "kernel") -> dict:
    """A results document as :func:`run_replay` makes it, from a hand-made measured table (best 2x on every
    kernel) and made-up runs at budget 2: ``htam`` reaches 90 % at trial 1 on every kernel, ``htam-cold``
    never; ``random`` (3 seeds) at trial 1 on the (seed, kernel index) pairs of ``random_reaches``, never
    otherwise, and asks for one candidate the table lacks in seed 0."""
    from htam_core.bench.replay import ReplayConfig, summarize

    ids = [f"k{i}.py::k{i}" for i in range(n_kernels)]
    lines = [{"type": "header", "version": 1, "measured": True, "config": _BUILD,
              "environment": {"date": "2026-12-01", "gpu": "NVIDIA H200", "gpu_count": 1}}]
    for kid in ids:
        lines += [{"type": "node", "kernel": kid, "family": "f", "key": "s", "parent": None, "speedup_vs_start": None},
                  {"type": "node", "kernel": kid, "family": "f", "key": "c", "parent": "s", "speedup_vs_start": 2.0}]
    table_path = tmp_path / "t.jsonl"
    table_path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    table = Table(table_path)
    kernels = [{"id": kid, "name": kid.split("::")[1], "path": kid.split("::")[0], "family": "f"} for kid in ids]

    def res(kid: str, policy: str, seed: int, sps: list, missing: int = 0) -> dict:
        steps = [{"speedup_vs_start": s, "status": NOT_IN_TABLE if i < missing else "ok"} for i, s in enumerate(sps)]
        return {"kernel_id": kid, "policy": policy, "seed": seed, "status": "ok", "steps": steps}

    results = [res(kid, "htam", 0, [2.0, 2.0]) for kid in ids]
    results += [res(kid, "htam-cold", 0, [1.0, 1.0]) for kid in ids]
    for seed in range(3):
        results += [res(kid, "random", seed, [2.0 if (seed, i) in random_reaches else 1.0, 1.0],
                        missing=int(seed == 0 and i == 0)) for i, kid in enumerate(ids)]
    doc = summarize(table, kernels, ["htam", "htam-cold", "random"], results, 2)
    doc["config"] = asdict(ReplayConfig(table=str(table_path), work=str(tmp_path / "w"), kernels=kernels_opt,
                                        budget=2, seeds=3, warm_leave_out=leave_out))
    doc["kernels_left_out"] = []
    doc["table"] = {"path": str(table_path), "measured": True, "environment": table.header.get("environment"),
                    "config": table.header.get("config")}
    return doc


def _row(md: str, policy: str) -> list[str]:
    """The cells of ``policy``'s line in the report's first (all kernels) per-policy table."""
    line = next(ln for ln in md.split("## Per policy")[1].splitlines() if ln.startswith(f"| {policy} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_replay_report_formats_steps_not_in_table(tmp_path):
    from htam_core.bench.replay import replay_markdown

    md = replay_markdown(_report_doc(tmp_path))
    assert "0.3333" not in md
    # random: 1 missing step in seed 0, none in seeds 1 and 2 (mean 1/3) out of 4 steps per seed
    assert _row(md, "random")[-1] == "0.33 (8.3%)"
    assert _row(md, "htam")[-1] == "0 (0.0%)"


def test_replay_report_says_never_within_the_budget_and_lower_bounds(tmp_path):
    """A policy that never reaches 90 % is "never (within budget N)", not "not measured", in the mean and the
    median alike; a figure a never-reaching kernel entered is marked as a lower bound."""
    from htam_core.bench.replay import replay_markdown

    doc = _report_doc(tmp_path)
    md = replay_markdown(doc)
    cold = _row(md, "htam-cold")
    assert cold[2] == cold[3] == "never (within budget 2)"
    rnd = _row(md, "random")
    # seed 0: kernel a at trial 1, kernel b never (counts as 3): mean 2, median 2; seeds 1, 2: never (3)
    assert rnd[2] == "≥ 2.67 [2.00–never]" and rnd[3] == "≥ 2.7 [2.0–never]"
    assert "not measured" not in rnd[3]
    assert _row(md, "htam")[2:4] == ["1.00", "1.0"]
    assert "counts as 3 trials (more than the budget) in the mean and in the median alike" in md
    assert doc["aggregates"]["random"]["median_trials_to_90"] == pytest.approx(8 / 3)
    # seed 0 reaches 90 % on both kernels (median 1), seeds 1 and 2 on neither: the median over seeds mixes a
    # finite median with never-reached ones, which was "not measured"
    mixed = _row(replay_markdown(_report_doc(tmp_path, random_reaches=frozenset({(0, 0), (0, 1)}))), "random")
    assert mixed[2] == "≥ 2.33 [1.00–never]" and mixed[3] == "≥ 2.3 [1.0–never]"


def test_replay_report_header_words_the_build_settings_and_relative_paths(tmp_path, monkeypatch):
    from htam_core.bench.replay import replay_markdown

    doc = _report_doc(tmp_path)
    monkeypatch.chdir(tmp_path)
    head = replay_markdown(doc).split("## Targets")[0]
    assert "{" not in head and "/root/out" not in head and str(tmp_path) not in head
    assert ("- Table: `t.jsonl` (measured on NVIDIA H200, 2026-12-01); built with max_candidates = 3, "
            "max_minutes = 8.4, trials = 20 (other settings at their defaults).") in head
    doc["table"]["config"] = {"out": "x.jsonl", "depth": 2, "max_candidates": 10, "max_minutes": None,
                              "static": None, "trials": 50, "work": None}
    assert "built with `htam bench space`'s default settings (depth = 2, max_candidates = 10, trials = 50)" \
        in replay_markdown(doc)


def test_replay_report_says_the_warm_memory_comes_from_the_replayed_kernels_only(tmp_path):
    from htam_core.bench.replay import replay_markdown

    every = replay_markdown(_report_doc(tmp_path))
    assert ("leave-one-out over the 2 replayed kernels: on each kernel, the records of htam-cold, random "
            "(every seed) on the other 1 replayed kernel, never the kernel's own (--warm-leave-out kernel") in every
    assert "Only the kernels chosen" not in every
    chosen = replay_markdown(_report_doc(tmp_path, kernels_opt=["k0", "k1"]))
    assert "Only the kernels chosen with --kernels were replayed, so the memory was built from them alone" in chosen
    one = replay_markdown(_report_doc(tmp_path, kernels_opt=["k0"], n_kernels=1))
    assert "With one kernel replayed that memory was empty: htam started as cold as htam-cold." in one
    fam = replay_markdown(_report_doc(tmp_path, leave_out="family"))
    assert "leave-one-family-out over the 2 replayed kernels" in fam and "never the kernel's own family" in fam
    assert "Every replayed kernel is of one family (f), so that memory was empty" in fam


def test_warm_imports_leave_out_the_kernel_or_its_whole_family():
    """The warm memory of kernel a0 (family a): every export but a0's under "kernel", only family b's under
    "family"; anything else is refused in one line."""
    from htam_core.bench.replay import ReplayError, warm_imports

    family_of = {"a0": "a", "a1": "a", "b0": "b", "b1": "b"}
    exports = [(kid, f"{kid}-{t}.json") for kid in family_of for t in ("cold", "rnd0")]
    k = {"id": "a0", "family": "a"}
    assert warm_imports(k, exports, family_of, "kernel") == sorted(p for kid, p in exports if kid != "a0")
    assert warm_imports(k, exports, family_of) == ["b0-cold.json", "b0-rnd0.json", "b1-cold.json", "b1-rnd0.json"]
    assert warm_imports({"id": "c0", "family": "c"}, exports, family_of) == sorted(p for _, p in exports)
    with pytest.raises(ReplayError, match="--warm-leave-out takes family or kernel"):
        warm_imports(k, exports, family_of, "nothing")


def test_replay_report_states_intervals_and_paired_counts(tmp_path):
    """The report document of the replay tests (htam reaches 90 % at trial 1 on both kernels, htam-cold never,
    i.e. 3 trials at budget 2; random on kernel 0 in seed 0 only): the intervals and pairs are known."""
    from htam_core.bench.replay import replay_markdown

    doc = _report_doc(tmp_path)
    agg = doc["aggregates"]
    assert agg["htam"]["mean_trials_to_90_ci"] == [1.0, 1.0]
    assert agg["htam-cold"]["mean_trials_to_90_ci"] == [3.0, 3.0]
    lo, hi = agg["random"]["mean_trials_to_90_ci"]  # per kernel: 7/3 and 3
    assert 7 / 3 <= lo <= hi <= 3.0
    pairs = {(p["first"], p["second"]): p for p in doc["paired"]}
    assert set(pairs) == {("htam", "htam-cold"), ("htam", "random")}  # the pairs of the policies replayed
    cold = pairs[("htam", "htam-cold")]
    assert (cold["better"], cold["worse"], cold["tied"]) == (2, 0, 0)
    assert cold["mean_difference"] == -2.0 and cold["mean_difference_ci"] == [-2.0, -2.0]
    assert cold["sign_test_p"] == 0.5
    md = replay_markdown(doc)
    assert _row(md, "htam")[4] == "1.00–1.00" and _row(md, "htam-cold")[4] == "3.00–3.00"
    assert "percentile bootstrap over the measured kernels (10,000 resamples, numpy seed 0)" in md
    assert "## Paired, kernel by kernel" in md
    assert "| htam | htam-cold | the warm memory | 2 | 2 | 0 | 0 | -2.00 [-2.00, -2.00] | 0.5 |" in md
    # a document written before the intervals existed still renders
    for a in doc["aggregates"].values():
        a.pop("mean_trials_to_90_ci")
    del doc["paired"]
    old = replay_markdown(doc)
    assert _row(old, "htam")[4] == "not computed" and "## Paired" not in old


def test_cli_replay_says_when_it_overwrites_an_earlier_report(tmp_path, at_repo, capsys):
    from htam_core.cli.main import main

    kid = sorted(Table(FIXTURE).done)[0]
    args = ["bench", "replay", "--table", str(FIXTURE), "--out", str(tmp_path), "--policies", "htam-cold",
            "--budget", "1", "--kernels", kid]
    assert main(args) == 0
    assert "overwrote" not in capsys.readouterr().err
    assert main(args) == 0
    err = capsys.readouterr().err
    assert f"overwrote {tmp_path / 'synthetic_space_static-replay.json'} and synthetic_space_static-replay.md" in err
    md = (tmp_path / "synthetic_space_static-replay.md").read_text()
    assert "Only the kernels chosen with --kernels were replayed" not in md  # htam-cold alone: no warm memory
    assert "- Warm memory: none of the replayed policies starts from one." in md


def test_synthesize_refuses_a_table_with_a_line_that_is_not_a_table_line(tmp_path):
    from htam_core.bench.space import SpaceError

    bad = tmp_path / "bad.jsonl"
    bad.write_text(FIXTURE.read_text() + "{\"type\": \"node\", \"kern")  # torn by a crash
    n = len(FIXTURE.read_text().splitlines()) + 1
    with pytest.raises(SpaceError, match=f"bad.jsonl: line {n} is not a table line"):
        synthesize_table(bad, tmp_path / "syn.jsonl", lambda path: 2.0)
    assert not (tmp_path / "syn.jsonl").exists()


def test_replay_warm_memory_leaves_out_the_kernels_family(tmp_path, at_repo):
    """Two elementwise kernels and a transpose: under the default (family) the warm run of an elementwise kernel
    imports the transpose's records only; under "kernel" the other elementwise kernel's too."""
    from htam_core.bench.replay import ReplayConfig, run_replay

    names = ["axpy_tiny_block", "bias_relu_residual", "transpose_naive"]
    imported = {}
    for mode in ("family", "kernel"):
        doc = run_replay(ReplayConfig(table=str(FIXTURE), work=str(tmp_path / mode), policies=["htam"],
                                      kernels=names, budget=1, seeds=1, memory_from=["htam-cold"],
                                      warm_leave_out=mode), log=lambda m: None)
        imported[mode] = {r["kernel_id"].split("::")[1]: r.get("memory_records_imported") for r in doc["results"]
                          if r["policy"] == "htam"}
        assert doc["config"]["warm_leave_out"] == mode
    cold = {r["kernel_id"].split("::")[1]: r for r in doc["results"] if r["policy"] == "htam-cold"}
    assert all(isinstance(n, int) for m in imported.values() for n in m.values())
    assert imported["family"]["transpose_naive"] == imported["kernel"]["transpose_naive"]  # alone in its family
    assert imported["family"]["axpy_tiny_block"] < imported["kernel"]["axpy_tiny_block"]
    assert imported["family"]["axpy_tiny_block"] == imported["family"]["bias_relu_residual"]  # both: transpose's
    assert cold  # the teachers ran once per kernel
