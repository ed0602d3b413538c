/**
 * Owns the language client: interpreter discovery, pre-flight checks, start/stop/restart,
 * the `htam/status` notification and the `workspace/configuration` translation.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import { findOnPath, resolveInterpreter } from "./interpreter";
import { activePythonFromExtension } from "./pythonExtension";
import { preflight, RunResult, Runner } from "./preflight";
import { buildServerEnv, buildServerLaunch } from "./serverCommand";
import { getterFromObject, InitializationOptions, toInitializationOptions } from "./settings";
import { ProgressRelay } from "./progressRelay";
import { HtamStatus, parseStatus } from "./status";

/** Secret storage key of the LLM API key. */
export const API_KEY_SECRET = "htam.llm.apiKey";

/** Document selector: CUDA sources and headers, and Python files (the server answers empty for files without kernels). */
export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "cuda-cpp" },
  { scheme: "file", pattern: "**/*.cu" },
  { scheme: "file", pattern: "**/*.cuh" },
  { scheme: "file", language: "python" },
];

/** Settings whose change needs a server restart (the rest reach the server through workspace/configuration). */
export const RESTART_SETTINGS = ["htam.pythonPath", "htam.server.path", "htam.server.args", "htam.llm.apiKeyEnv"];

const runProcess: Runner = (command, args, timeoutMs) =>
  new Promise<RunResult>((resolve) => {
    execFile(command, args, { timeout: timeoutMs, encoding: "utf8", maxBuffer: 4 << 20 }, (error, stdout, stderr) => {
      if (error && typeof error.code === "string") {
        resolve({ code: null, stdout, stderr, spawnError: error.code });
        return;
      }
      resolve({
        code: error ? (typeof error.code === "number" ? error.code : null) : 0,
        stdout,
        stderr,
        timedOut: error?.killed === true,
      });
    });
  });

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function workspaceFolderPath(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

/** Current settings as initializationOptions, warnings logged. */
export function currentOptions(log: vscode.LogOutputChannel): InitializationOptions {
  const cfg = vscode.workspace.getConfiguration("htam");
  const { options, warnings } = toInitializationOptions((k) => cfg.get(k), {
    workspaceFolder: workspaceFolderPath(),
    home: os.homedir(),
  });
  for (const w of warnings) {
    log.warn(w);
  }
  return options;
}

/** Events the UI listens to. */
export interface ClientEvents {
  onState(state: "starting" | "running" | "stopped" | "failed", detail?: string, version?: string): void;
  onStatus(status: HtamStatus): void;
}

/** Starts and restarts the HTAM language client. */
export class HtamClientManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private relayInstall: vscode.Disposable | undefined;
  /** Routes server-created progress into the running command's notification (set while running). */
  relay: ProgressRelay | undefined;
  private starting: Promise<void> | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly events: ClientEvents,
  ) {}

  /** The running client, or undefined. */
  get current(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  /** Start the server (no-op while a start is in progress). */
  start(): Promise<void> {
    if (!this.starting) {
      this.starting = this.doStart().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  /** Stop then start. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Stop the server if it runs. */
  async stop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    this.relay = undefined;
    this.relayInstall?.dispose();
    this.relayInstall = undefined;
    if (c) {
      try {
        await c.stop(5000);
      } catch (err) {
        this.log.warn(`stopping the server: ${String(err)}`);
      }
      await c.dispose();
      this.events.onState("stopped");
    }
  }

  private fail(message: string, detail?: string): void {
    this.log.error(message + (detail ? `\n${detail}` : ""));
    this.events.onState("failed", message);
    void vscode.window.showErrorMessage(`HTAM: ${message}`, "Open Settings", "Show Output").then((choice) => {
      if (choice === "Open Settings") {
        void vscode.commands.executeCommand("workbench.action.openSettings", "htam.");
      } else if (choice === "Show Output") {
        this.log.show();
      }
    });
  }

  private async doStart(): Promise<void> {
    this.events.onState("starting");
    const cfg = vscode.workspace.getConfiguration("htam");
    const serverPath = cfg.get<string>("server.path", "").trim();
    const serverArgs = cfg.get<string[]>("server.args", []);
    let python: string | undefined;
    if (serverPath === "") {
      const resource = vscode.window.activeTextEditor?.document.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
      const found = resolveInterpreter({
        settingPath: cfg.get<string>("pythonPath", ""),
        pythonExtensionPath: await activePythonFromExtension(resource, this.log),
        workspaceFolder: workspaceFolderPath(),
        home: os.homedir(),
        findOnPath: (name) => findOnPath(name, process.env.PATH, isExecutable),
        exists: (f) => fs.existsSync(f),
      });
      if (!found.ok) {
        this.fail(found.reason);
        return;
      }
      python = found.path;
      this.log.info(`Python interpreter: ${found.path} (from ${found.source})`);
    }
    const launch = buildServerLaunch(python, serverPath, serverArgs);
    const expected = (this.context.extension.packageJSON as { htam?: { expectedServerVersion?: string } }).htam
      ?.expectedServerVersion;
    const check = await preflight(launch, expected ?? "0.1", runProcess);
    if (!check.ok) {
      this.fail(check.message, check.detail);
      return;
    }
    this.log.info(`htam ${check.version}: starting ${launch.command} ${launch.serveArgs.join(" ")}`);

    const options = currentOptions(this.log);
    const storedKey = await this.context.secrets.get(API_KEY_SECRET);
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.serveArgs,
      // No `transport` key: TransportKind.stdio would append "--stdio", which `htam serve` does not take.
      options: { env: buildServerEnv(process.env, options.llm.apiKeyEnv, storedKey), cwd: workspaceFolderPath() },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      initializationOptions: options,
      outputChannel: this.log,
      // Trace lines are logged at the "trace" level: set the HTAM channel's log level to Trace to see them.
      traceOutputChannel: this.log,
      synchronize: { configurationSection: "htam" },
      // A failed initialize is reported once (see fail()); retrying the same command would fail the same way.
      initializationFailedHandler: () => false,
      middleware: {
        workspace: {
          // Answer workspace/configuration for section "htam" in the initializationOptions shape.
          configuration: async (params, token, next): Promise<unknown[] | ResponseError<void>> => {
            const result = await next(params, token);
            if (!Array.isArray(result)) {
              return result;
            }
            return params.items.map((item, i) =>
              item.section === "htam"
                ? toInitializationOptions(getterFromObject(result[i]), {
                    workspaceFolder: workspaceFolderPath(),
                    home: os.homedir(),
                  }).options
                : (result[i] as unknown),
            );
          },
        },
      },
    };
    const client = new LanguageClient("htam", "HTAM", serverOptions, clientOptions);
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        this.events.onState("stopped");
      }
    });
    client.onNotification("htam/status", (params: unknown) => {
      const status = parseStatus(params);
      if (status) {
        this.events.onStatus(status);
      } else {
        this.log.warn(`ignored malformed htam/status: ${JSON.stringify(params)}`);
      }
    });
    this.client = client;
    try {
      await client.start();
      this.relay = new ProgressRelay(client);
      this.relayInstall = this.relay.install();
      this.events.onState("running", undefined, check.version);
    } catch (err) {
      this.client = undefined;
      // Stop the client's automatic restarts: the same command would fail the same way.
      await client.dispose().catch(() => undefined);
      this.fail(
        `the server exited during start-up (${err instanceof Error ? err.message : String(err)}). Its stderr is in the HTAM output channel.`,
      );
    }
  }

  dispose(): void {
    void this.stop();
  }
}
