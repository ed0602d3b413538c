#!/usr/bin/env bash
# One command for the measured results: the naive-kernel suite (HTAM against random, flat memory,
# the ablations and exhaustive search) and the KernelBench runner, on this machine's GPU(s), within a minute
# budget. Everything goes under $OUT (default bench/results): per-part JSON, Markdown and the plot, plus
# <date>-<gpu>.md joining both parts. Without a GPU it still runs, in static mode, and says "not measured".
#
# Settings (environment variables; defaults fit one H200 in about 5 minutes):
#   HTAM_BENCH_MINUTES            total wall-clock budget in minutes                      (4.5)
#   HTAM_BENCH_SUITE_SHARE        fraction of the budget for the suite                    (0.6)
#   HTAM_BENCH_POLICIES           suite policies, comma-separated or "all"                (htam,random,flat,exhaustive)
#   HTAM_BENCH_KERNELS            suite kernels, comma-separated (empty: all 13)          ()
#   HTAM_BENCH_BUDGET             candidates per kernel and policy                        (8)
#   HTAM_BENCH_EXHAUSTIVE_BUDGET  candidates of the exhaustive policy                     (16)
#   HTAM_BENCH_TRIALS             timed trials per candidate in the suite                 (30)
#   HTAM_KB_PROBLEMS              problems.jsonl                                          (python bench/data_paths.py kernelbench)
#   HTAM_KB_LEVELS / HTAM_KB_IDS  levels and problem ids (empty ids: every start solution) (1 / )
#   HTAM_KB_STEPS                 HTAM steps per problem                                  (3)
#   HTAM_KB_TRIALS                KernelBench timing trials for eager and final           (100)
#   HTAM_KB_ANCHORS               torch.compile anchors beside HTAM (compile-default,compile-max-autotune[,-no-cudagraphs], all)  ()
#   HTAM_KB_COMPILE_TIMEOUT       per-problem limit of one anchor's compile, seconds      (180)
#   HTAM_KB_ENGINE                rules or llm (llm also needs HTAM_KB_LLM_MODEL, OPENAI_BASE_URL) (rules)
#   HTAM_BENCH_SKIP_SUITE=1, HTAM_BENCH_SKIP_KB=1 to run one part only
#   PYTHON                        interpreter                                             (python3)
# The device image keeps extra wheels in /tmp/site; it is put on PYTHONPATH when present.
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-$REPO/bench/results}"
PY="${PYTHON:-python3}"
MINUTES="${HTAM_BENCH_MINUTES:-4.5}"
SHARE="${HTAM_BENCH_SUITE_SHARE:-0.6}"
WORK="${HTAM_BENCH_WORK:-/tmp/htam-bench-work}"
mkdir -p "$OUT" "$WORK"
if [ -d /tmp/site ]; then export PYTHONPATH="/tmp/site:$REPO:${PYTHONPATH:-}"; else export PYTHONPATH="$REPO:${PYTHONPATH:-}"; fi
export HTAM_CACHE_DIR="${HTAM_CACHE_DIR:-$WORK/cache}"
HTAM=("$PY" -m htam_core.cli.main)

t0=$(date +%s)
budget_s=$("$PY" -c "print(int(float('$MINUTES') * 60))")
suite_min=$("$PY" -c "print(round(float('$MINUTES') * float('$SHARE'), 2))")
echo "run_gpu_bench: budget ${MINUTES} min (suite ${suite_min} min), out $OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no GPU: static mode"

rc=0
if [ "${HTAM_BENCH_SKIP_SUITE:-0}" != "1" ]; then
  args=(bench suite --suite "$REPO/bench/suite" --out "$OUT" --work "$WORK/suite"
        --budget "${HTAM_BENCH_BUDGET:-8}" --exhaustive-budget "${HTAM_BENCH_EXHAUSTIVE_BUDGET:-16}"
        --trials "${HTAM_BENCH_TRIALS:-30}" --policies "${HTAM_BENCH_POLICIES:-htam,random,flat,exhaustive}"
        --max-minutes "$suite_min")
  [ -n "${HTAM_BENCH_KERNELS:-}" ] && args+=(--kernels "$HTAM_BENCH_KERNELS")
  "${HTAM[@]}" "${args[@]}" || rc=$?
fi

if [ "${HTAM_BENCH_SKIP_KB:-0}" != "1" ]; then
  left_min=$("$PY" -c "import time; print(max(0.5, round(($budget_s - (int(time.time()) - $t0)) / 60 - 0.2, 2)))")
  problems="${HTAM_KB_PROBLEMS:-$("$PY" "$REPO/bench/data_paths.py" kernelbench)}"
  args=(bench kernelbench --problems "$problems" --levels "${HTAM_KB_LEVELS:-1}" --steps "${HTAM_KB_STEPS:-3}"
        --trials "${HTAM_KB_TRIALS:-100}" --engine "${HTAM_KB_ENGINE:-rules}"
        --start-solutions "$REPO/bench/kernelbench_solutions" --out "$OUT" --max-minutes "$left_min")
  [ -n "${HTAM_KB_IDS:-}" ] && args+=(--ids "$HTAM_KB_IDS")
  [ -n "${HTAM_KB_ANCHORS:-}" ] && args+=(--anchors "$HTAM_KB_ANCHORS" --compile-timeout "${HTAM_KB_COMPILE_TIMEOUT:-180}")
  [ -n "${HTAM_KB_LLM_MODEL:-}" ] && args+=(--llm-model "$HTAM_KB_LLM_MODEL")
  "${HTAM[@]}" "${args[@]}" || rc=$?
fi

# join the newest parts into <date>-<gpu>.md
"$PY" - "$OUT" <<'PYEOF'
import sys
from pathlib import Path
out = Path(sys.argv[1])
parts = {}
for kind in ("suite", "kernelbench"):
    hits = sorted(out.glob(f"*-{kind}.md"), key=lambda p: p.stat().st_mtime)
    if hits:
        parts[kind] = hits[-1]
if parts:
    stem = next(iter(parts.values())).name.rsplit("-", 1)[0]
    text = "# HTAM benchmark results\n\n" + "\n".join(p.read_text() for p in parts.values())
    (out / f"{stem}.md").write_text(text)
    print(f"run_gpu_bench: wrote {out / (stem + '.md')}")
PYEOF
echo "run_gpu_bench: done in $(( $(date +%s) - t0 )) s (exit $rc)"
exit $rc
