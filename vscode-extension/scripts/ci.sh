#!/usr/bin/env bash
# CI entry point of the VS Code extension: npm ci, typecheck, lint, unit tests, package (.vsix),
# and, when HTAM_E2E=1, the end-to-end test in code-server + headless Chromium.
# Callable from anywhere: bash vscode-extension/scripts/ci.sh. Prints the time of each stage.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "ci.sh: Node.js >= 20 and npm are needed for the extension's checks (not found on PATH)" >&2
  exit 2
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
  echo "ci.sh: Node >= 20 is needed (found $(node --version))" >&2
  exit 2
fi

stage() {
  local name="$1"; shift
  local start=$SECONDS
  echo "::group::$name"
  local rc=0
  "$@" || rc=$?
  echo "::endgroup::"
  if [ "$rc" -ne 0 ]; then
    echo "[ci] $name: FAILED (exit $rc) after $((SECONDS - start)) s: $*" >&2
    exit "$rc"
  fi
  echo "[ci] $name: ok in $((SECONDS - start)) s"
}

stage "npm ci" npm ci --no-audit --no-fund
stage "typecheck" npm run --silent typecheck
stage "lint" npm run --silent lint
stage "unit tests" npm test --silent
stage "package" npm run --silent package
ls -l htam-vscode.vsix
if [ "${HTAM_E2E:-0}" = "1" ]; then
  stage "e2e" npm run --silent e2e
else
  echo "[ci] e2e: not run (set HTAM_E2E=1)"
fi
