#!/bin/sh
# Runs suggest and optimize (rules, budget 2, static) on every case; logs under /tmp/probe2/<case>/.
# Usage (from the worktree root): sh bench/results/probe2-2026-12-07/run_all.sh [case ...]
HERE=bench/results/probe2-2026-12-07
PY=/work/main/.venv/bin/python
cases="$*"
[ -z "$cases" ] && cases=$(cd $HERE && ls -d c*/ | tr -d /)
for c in $cases; do
  f=$(ls $HERE/$c/*.cu)
  k=$(grep -o '__global__ void [a-z_0-9]*' "$f" | head -1 | awk '{print $3}')
  mkdir -p /tmp/probe2/logs /tmp/probe2/mem
  rm -rf /tmp/probe2/$c /tmp/probe2/mem/$c.db
  echo "== $c $k"
  PYTHONPATH=$PWD $PY -m htam_core.cli.main suggest "$f" --kernel "$k" --static --memory /tmp/probe2/mem/$c.db > /tmp/probe2/logs/$c.suggest 2>&1
  echo "suggest rc=$?"
  PYTHONPATH=$PWD $PY -m htam_core.cli.main optimize "$f" --kernel "$k" --engine rules --budget 2 --static --no-record \
     --memory /tmp/probe2/mem/$c.db --out /tmp/probe2/$c > /tmp/probe2/logs/$c.optimize 2>&1
  echo "optimize rc=$?"
done
