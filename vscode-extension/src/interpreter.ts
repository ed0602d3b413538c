/**
 * Python interpreter discovery for the HTAM server (pure: no `vscode` import, unit-tested).
 *
 * Order: the `htam.pythonPath` setting, else the Python extension's active interpreter
 * (ms-python.python, when installed), else `python3` then `python` on `PATH`.
 * A setting that names a missing file is an error: it is never silently skipped.
 */
import * as path from "node:path";

/** Where the chosen interpreter came from (shown in the output channel and error messages). */
export type InterpreterSource = "setting" | "python-extension" | "path";

/** Inputs of {@link resolveInterpreter}; filesystem and PATH lookups are injected for testing. */
export interface InterpreterInputs {
  /** Value of `htam.pythonPath` (may be empty, relative to the workspace, or start with `~`). */
  settingPath?: string;
  /** Active interpreter reported by the Python extension, or undefined when it is absent or has none. */
  pythonExtensionPath?: string;
  /** First workspace folder's filesystem path, used for relative paths and `${workspaceFolder}`. */
  workspaceFolder?: string;
  /** User home directory, used for `~`. */
  home?: string;
  /** Returns the absolute path of an executable found on PATH, or undefined. */
  findOnPath: (name: string) => string | undefined;
  /** True when a file exists at the absolute path. */
  exists: (file: string) => boolean;
}

/** Outcome of {@link resolveInterpreter}. */
export type InterpreterResult =
  | { ok: true; path: string; source: InterpreterSource }
  | { ok: false; reason: string };

/** Expand `~`, `${workspaceFolder}` and `${userHome}`, and make a relative path absolute against the workspace. */
export function expandPath(raw: string, workspaceFolder?: string, home?: string): string {
  let p = raw.trim();
  if (home) {
    p = p.replace(/\$\{userHome\}/g, home);
    if (p === "~" || p.startsWith("~/")) {
      p = path.join(home, p.slice(1));
    }
  }
  if (workspaceFolder) {
    p = p.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  }
  if (!path.isAbsolute(p) && workspaceFolder && (p.includes("/") || p.includes("\\"))) {
    p = path.resolve(workspaceFolder, p);
  }
  return p;
}

/**
 * Choose the interpreter that runs `htam serve`.
 * Returns `{ok: false, reason}` with a user-facing sentence when nothing usable is found.
 */
export function resolveInterpreter(inputs: InterpreterInputs): InterpreterResult {
  const setting = inputs.settingPath?.trim() ?? "";
  if (setting !== "") {
    const expanded = expandPath(setting, inputs.workspaceFolder, inputs.home);
    if (path.isAbsolute(expanded)) {
      if (inputs.exists(expanded)) {
        return { ok: true, path: expanded, source: "setting" };
      }
      return {
        ok: false,
        reason: `htam.pythonPath is set to "${setting}", but no file exists at ${expanded}. Fix the setting or clear it to use the active interpreter.`,
      };
    }
    const onPath = inputs.findOnPath(expanded);
    if (onPath) {
      return { ok: true, path: onPath, source: "setting" };
    }
    return {
      ok: false,
      reason: `htam.pythonPath is set to "${setting}", which is not found on PATH. Give an absolute path or clear the setting.`,
    };
  }
  const fromExtension = inputs.pythonExtensionPath?.trim();
  if (fromExtension && inputs.exists(fromExtension)) {
    return { ok: true, path: fromExtension, source: "python-extension" };
  }
  for (const name of ["python3", "python"]) {
    const found = inputs.findOnPath(name);
    if (found) {
      return { ok: true, path: found, source: "path" };
    }
  }
  return {
    ok: false,
    reason:
      "No Python interpreter found: htam.pythonPath is empty, the Python extension reports no active interpreter, and neither python3 nor python is on PATH. Install Python 3.11+ with `pip install htam`, or set htam.pythonPath.",
  };
}

/**
 * Look an executable up in a PATH string (pure apart from the injected `isExecutable`).
 * `pathVar` uses the platform delimiter; on Windows the PATHEXT extensions are tried.
 */
export function findOnPath(
  name: string,
  pathVar: string | undefined,
  isExecutable: (file: string) => boolean,
  platform: NodeJS.Platform = process.platform,
  pathExt = ".EXE;.CMD;.BAT",
): string | undefined {
  if (!pathVar) {
    return undefined;
  }
  const delimiter = platform === "win32" ? ";" : ":";
  const join = (dir: string, file: string) => (platform === "win32" ? path.win32.join(dir, file) : path.posix.join(dir, file));
  const exts = platform === "win32" ? ["", ...pathExt.split(";").filter((e) => e !== "")] : [""];
  for (const dir of pathVar.split(delimiter)) {
    if (dir === "") {
      continue;
    }
    for (const ext of exts) {
      const candidate = join(dir, name + ext);
      if (isExecutable(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}
