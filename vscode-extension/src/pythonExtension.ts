/**
 * The active interpreter of the Python extension (ms-python.python), when it is installed.
 * Uses its public `environments` API, falling back to the older `settings.getExecutionDetails`.
 */
import * as vscode from "vscode";

interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(env: { path: string }): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
  };
  settings?: {
    getExecutionDetails(resource?: vscode.Uri): { execCommand?: string[] };
  };
}

/** Path of the Python extension's active interpreter for `resource`, or undefined (absent, inactive, none chosen). */
export async function activePythonFromExtension(
  resource: vscode.Uri | undefined,
  log: vscode.LogOutputChannel,
): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    if (api?.environments) {
      const active = api.environments.getActiveEnvironmentPath(resource);
      const resolved = await api.environments.resolveEnvironment(active);
      const exe = resolved?.executable?.uri?.fsPath;
      if (exe) {
        return exe;
      }
    }
    const cmd = api?.settings?.getExecutionDetails(resource).execCommand;
    return cmd && cmd.length === 1 ? cmd[0] : undefined;
  } catch (err) {
    log.warn(`Python extension did not report an interpreter: ${String(err)}`);
    return undefined;
  }
}
