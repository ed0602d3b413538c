/**
 * Checks run before the server starts, so a failure says why (pure apart from the injected runner; unit-tested):
 * no Python, `htam` not installed, `htam` executable missing, or a version mismatch.
 */
import { ServerLaunch } from "./serverCommand";
import { formatVersion, parseHtamVersion, versionMismatch } from "./version";

/** Result of running a process. `spawnError` is the errno code when it could not start (e.g. "ENOENT"). */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  spawnError?: string;
  timedOut?: boolean;
}

/** Runs `command args` and resolves with its output; never rejects. */
export type Runner = (command: string, args: string[], timeoutMs: number) => Promise<RunResult>;

/** Why the server cannot start. */
export type PreflightFailure = "no-python" | "not-installed" | "no-server-executable" | "version-mismatch" | "check-failed";

/** Outcome of {@link preflight}. */
export type PreflightResult =
  | { ok: true; version: string }
  | { ok: false; kind: PreflightFailure; message: string; detail?: string };

function lastLines(text: string, n = 6): string {
  return text.trim().split(/\r?\n/).slice(-n).join("\n");
}

/**
 * Check that the server can start and has a compatible version.
 * @param launch from buildServerLaunch
 * @param expected expected "major.minor" (package.json `htam.expectedServerVersion`)
 * @param run process runner
 * @param timeoutMs per check (the `--version` check imports the CLI, which can take seconds)
 */
export async function preflight(launch: ServerLaunch, expected: string, run: Runner, timeoutMs = 60000): Promise<PreflightResult> {
  const python = launch.isPython && launch.importCheckArgs !== undefined;
  // Python: one process imports htam_core and prints its version; the `htam` executable: --version.
  const args = python && launch.importCheckArgs ? launch.importCheckArgs : launch.versionArgs;
  const r = await run(launch.command, args, timeoutMs);
  if (r.spawnError) {
    return python
      ? {
          ok: false,
          kind: "no-python",
          message: `Cannot run the Python interpreter ${launch.command} (${r.spawnError}). Set htam.pythonPath to a Python 3.11+ interpreter.`,
        }
      : {
          ok: false,
          kind: "no-server-executable",
          message: `Cannot run the htam executable "${launch.command}" from htam.server.path (${r.spawnError}). Fix the setting or clear it.`,
        };
  }
  if (python && r.code !== 0 && /No module named ['"]?htam_core/.test(r.stderr)) {
    return {
      ok: false,
      kind: "not-installed",
      message: `htam is not installed in ${launch.command}. Run: ${launch.command} -m pip install htam (or pip install -e . in the HTAM checkout), or set htam.pythonPath to an interpreter that has it.`,
      detail: lastLines(r.stderr),
    };
  }
  const version = r.code === 0 ? (parseHtamVersion(r.stdout) ?? parseHtamVersion(r.stderr)) : undefined;
  if (!version) {
    return {
      ok: false,
      kind: "check-failed",
      message: `"${launch.command} ${args.join(" ")}" did not print a version (exit ${r.code ?? (r.timedOut ? "timeout" : "signal")}).`,
      detail: lastLines(r.stderr || r.stdout),
    };
  }
  const mismatch = versionMismatch(version, expected);
  if (mismatch) {
    return { ok: false, kind: "version-mismatch", message: mismatch };
  }
  return { ok: true, version: formatVersion(version) };
}
