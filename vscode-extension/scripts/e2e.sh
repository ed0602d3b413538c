#!/usr/bin/env bash
# End-to-end test of the extension in code-server + headless Chromium (see test/e2e/run.ts).
# Installs Node 24, code-server and Chromium (cached, scripts/setup-e2e.sh), builds the .vsix, runs the driver.
# Artifacts (screenshots, summary.json, logs): test/e2e/artifacts/. Exit code 0 only when every step passed.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/setup-e2e.sh)"
npm run --silent compile
npm run --silent package >/dev/null
exec node out/test/e2e/run.js
