#!/usr/bin/env bash
# End-to-end test of the extension in code-server + headless Chromium (see test/e2e/run.ts).
# Installs Node 24, code-server and Chromium (cached, scripts/setup-e2e.sh), builds the .vsix, runs the driver.
# Artifacts (screenshots, summary.json, logs): test/e2e/artifacts/. Exit code 0 only when every step passed.
# A failed setup stops here with setup-e2e.sh's exit status, after its message naming the failing command.
set -euo pipefail
cd "$(dirname "$0")/.."
# Not `eval "$(scripts/setup-e2e.sh)"`: eval of a failed substitution succeeds, and the driver would then
# report unset variables instead of the setup's failure.
rc=0
exports="$(bash scripts/setup-e2e.sh)" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "e2e.sh: scripts/setup-e2e.sh failed (exit $rc); its failing command and log lines are above" >&2
  exit "$rc"
fi
eval "$exports"
npm run --silent compile
npm run --silent package >/dev/null
exec node out/test/e2e/run.js
