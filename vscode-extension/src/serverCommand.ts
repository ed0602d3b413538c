/**
 * How the server process is started (pure, unit-tested): the command line and its environment.
 */

/** The executable and arguments of the server and of the pre-flight checks. */
export interface ServerLaunch {
  /** Executable: the `htam` script (htam.server.path) or a Python interpreter. */
  command: string;
  /** Arguments that start the language server over stdio. */
  serveArgs: string[];
  /** Arguments that print "htam X.Y.Z" (`htam --version`). */
  versionArgs: string[];
  /**
   * Python only: `import htam_core` and print "htam <htam_core.__version__>", the string `htam --version`
   * prints, in one fast process (`--version` through the CLI imports every subcommand).
   */
  importCheckArgs?: string[];
  /** True when `command` is a Python interpreter. */
  isPython: boolean;
}

/**
 * Build the launch description.
 * @param python interpreter path (ignored when `serverPath` is non-empty)
 * @param serverPath value of htam.server.path (the `htam` executable), may be empty
 * @param extraArgs value of htam.server.args, appended after `serve`
 */
export function buildServerLaunch(python: string | undefined, serverPath: string, extraArgs: readonly string[]): ServerLaunch {
  const extra = extraArgs.filter((a) => typeof a === "string");
  if (serverPath.trim() !== "") {
    return { command: serverPath.trim(), serveArgs: ["serve", ...extra], versionArgs: ["--version"], isPython: false };
  }
  if (!python) {
    throw new Error("buildServerLaunch: no interpreter and no htam.server.path");
  }
  const mod = ["-m", "htam_core.cli.main"];
  return {
    command: python,
    serveArgs: [...mod, "serve", ...extra],
    versionArgs: [...mod, "--version"],
    importCheckArgs: ["-c", "import htam_core; print('htam', htam_core.__version__)"],
    isPython: true,
  };
}

/**
 * Environment of the server process: the extension host's environment plus the API key from
 * secret storage under the variable named by htam.llm.apiKeyEnv (only when a key is stored),
 * and PYTHONUNBUFFERED so logs reach the output channel promptly.
 */
export function buildServerEnv(
  base: NodeJS.ProcessEnv,
  apiKeyEnv: string,
  storedKey: string | undefined,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, PYTHONUNBUFFERED: "1" };
  if (storedKey !== undefined && storedKey !== "") {
    env[apiKeyEnv] = storedKey;
  }
  return env;
}
