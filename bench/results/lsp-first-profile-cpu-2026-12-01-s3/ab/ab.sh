#!/bin/bash
cd /tmp
PY=/work/wt/twostage/.venv/bin/python; B=/work/wt/twostage/bench/bench_lsp_gpu.py
for mode in "" "--open-at-start"; do
  tag=${mode:+-open}
  echo "== $(date -u +%T) main$tag $(uptime)"; PYTHONPATH=/tmp/s3/mainpkgs timeout 300 $PY $B --cpu --out /tmp/s3/ab3-main$tag --repeats 3 --max-seconds 200 $mode > /tmp/s3/ab3-main$tag.log 2>&1
  echo "== $(date -u +%T) s3$tag $(uptime)"; timeout 300 $PY $B --cpu --out /tmp/s3/ab3-s3$tag --repeats 3 --max-seconds 200 $mode > /tmp/s3/ab3-s3$tag.log 2>&1
done
echo "== $(date -u +%T) end $(uptime)"
