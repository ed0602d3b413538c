import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { preflight, RunResult, Runner } from "../../src/preflight";
import { buildServerEnv, buildServerLaunch } from "../../src/serverCommand";

/** A runner that answers from a table keyed by the first argument, and records calls. */
function fake(table: Record<string, RunResult>): Runner & { calls: string[][] } {
  const calls: string[][] = [];
  const run = (command: string, args: string[]) => {
    calls.push([command, ...args]);
    const key = args.includes("--version") ? "version" : "import";
    return Promise.resolve(table[key] ?? { code: 0, stdout: "htam 0.1.0\n", stderr: "" });
  };
  return Object.assign(run, { calls });
}

const py = buildServerLaunch("/usr/bin/python3", "", []);

describe("buildServerLaunch", () => {
  it("runs the CLI module through the interpreter", () => {
    const l = buildServerLaunch("/py", "", ["--log", "x"]);
    assert.deepEqual(l.serveArgs, ["-m", "htam_core.cli.main", "serve", "--log", "x"]);
    assert.deepEqual(l.versionArgs, ["-m", "htam_core.cli.main", "--version"]);
    assert.deepEqual(l.importCheckArgs, ["-c", "import htam_core; print('htam', htam_core.__version__)"]);
    assert.equal(l.command, "/py");
  });
  it("prefers htam.server.path", () => {
    const l = buildServerLaunch("/py", " /opt/bin/htam ", []);
    assert.equal(l.command, "/opt/bin/htam");
    assert.deepEqual(l.serveArgs, ["serve"]);
    assert.equal(l.isPython, false);
  });
  it("puts a stored key only under the configured variable", () => {
    const env = buildServerEnv({ PATH: "/bin" }, "MY_KEY", "sk-1");
    assert.equal(env.MY_KEY, "sk-1");
    assert.equal(env.PATH, "/bin");
    assert.equal(buildServerEnv({}, "MY_KEY", undefined).MY_KEY, undefined);
  });
});

describe("preflight", () => {
  it("passes with a matching version", async () => {
    const run = fake({ import: { code: 0, stdout: "htam 0.1.3\n", stderr: "" } });
    assert.deepEqual(await preflight(py, "0.1", run), { ok: true, version: "0.1.3" });
    assert.equal(run.calls.length, 1);
    assert.deepEqual(run.calls[0].slice(0, 2), ["/usr/bin/python3", "-c"]);
    const exe = fake({ version: { code: 0, stdout: "htam 0.1.0\n", stderr: "" } });
    assert.deepEqual(await preflight(buildServerLaunch(undefined, "/bin/htam", []), "0.1", exe), { ok: true, version: "0.1.0" });
    assert.deepEqual(exe.calls, [["/bin/htam", "--version"]]);
  });

  it("says when the interpreter cannot run", async () => {
    const r = await preflight(py, "0.1", fake({ import: { code: null, stdout: "", stderr: "", spawnError: "ENOENT" } }));
    assert.equal(r.ok ? "" : r.kind, "no-python");
  });

  it("says when htam is not installed", async () => {
    const stderr = "Traceback (most recent call last):\n  File \"<string>\", line 1\nModuleNotFoundError: No module named 'htam_core'\n";
    const r = await preflight(py, "0.1", fake({ import: { code: 1, stdout: "", stderr } }));
    assert.equal(r.ok ? "" : r.kind, "not-installed");
    assert.match(r.ok ? "" : r.message, /pip install htam/);
  });

  it("says when the versions do not match", async () => {
    const r = await preflight(py, "0.1", fake({ import: { code: 0, stdout: "htam 0.2.0", stderr: "" } }));
    assert.equal(r.ok ? "" : r.kind, "version-mismatch");
  });

  it("says when htam.server.path cannot run", async () => {
    const launch = buildServerLaunch(undefined, "/missing/htam", []);
    const r = await preflight(launch, "0.1", fake({ version: { code: null, stdout: "", stderr: "", spawnError: "ENOENT" } }));
    assert.equal(r.ok ? "" : r.kind, "no-server-executable");
  });

  it("reports a --version that prints no version, with the stderr tail", async () => {
    const r = await preflight(py, "0.1", fake({ import: { code: 1, stdout: "", stderr: "ImportError: boom" } }));
    assert.equal(r.ok ? "" : r.kind, "check-failed");
    assert.equal(r.ok ? "" : r.detail, "ImportError: boom");
  });
});
