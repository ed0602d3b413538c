#!/bin/bash
# For each case and each candidate of `htam optimize --out /tmp/tprobe/<case>`: overlay the candidate's files on a
# copy of the case folder, run the program's own __main__ under TRITON_INTERPRET=1 (CPU), and compare the launcher's
# outputs with the start's on the sizes of probe_outputs.py (exact equality and max abs difference).
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/work/main/.venv/bin/python
OUT=${OUT:-/tmp/tprobe}
for c in "$@"; do
  for cand in "$OUT/${CANDS_OF:-$c}"/candidates/0*; do
    name=$(basename "$cand"); w=$(mktemp -d)
    cp "$HERE/$c"/*.py "$w"/ && cp "$cand"/*.py "$w"/
    # the layernorm variant (reference through x.shape) stands for layernorm.py in the comparison
    [ -f "$cand/layernorm_shape_ref.py" ] && cp "$cand/layernorm_shape_ref.py" "$w/layernorm.py"
    main=$(awk -v c="$c" '$1==c{print $2}' "$HERE/cases.txt" | xargs basename)
    [ "$c" = softmax_loop ] && main=run_softmax.py
    mres=$(cd "$w" && TRITON_INTERPRET=1 timeout 300 $PY "$main" 2>&1 | tail -1 | cut -c1-160)
    TRITON_INTERPRET=1 timeout 300 $PY "$HERE/probe_outputs.py" "$c" "$w" "$OUT/$c-$name.pt" >/dev/null 2>&1
    cmp=$($PY - "$OUT/$c-00-start.pt" "$OUT/$c-$name.pt" <<'PYEOF'
import sys, torch
a, b = torch.load(sys.argv[1], weights_only=False), torch.load(sys.argv[2], weights_only=False)
parts = []
for k in a:
    x, y = a[k], b.get(k)
    if isinstance(x, str) or isinstance(y, str):
        parts.append(f"{k}:{'same-error' if x == y else 'ERR ' + str(y)[:80]}")
    elif torch.equal(x, y):
        parts.append(f"{k}:equal")
    else:
        parts.append(f"{k}:maxdiff={(x.float() - y.float()).abs().max().item():.2e}")
print(" ".join(parts))
PYEOF
)
    echo "$c | $name | __main__: $mres | vs start: $cmp"
    rm -rf "$w"
  done
done
