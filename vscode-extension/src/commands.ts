/**
 * The HTAM commands of the palette and editor context menu. Each sends `workspace/executeCommand`
 * to the server (contract in README "Server contract") and shows the result.
 */
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as vscode from "vscode";
import { ExecuteCommandParams, ExecuteCommandRequest, LanguageClient, WorkDoneProgress } from "vscode-languageclient/node";
import { API_KEY_SECRET, HtamClientManager } from "./client";
import { toProgressStep } from "./progress";
import { extractReport, ReportFiles, resultError, resultHeadline, resultToMarkdown } from "./results";

const LAST_REPORT_KEY = "htam.lastReport";

/** Register every `htam.ui.*` command. */
export function registerCommands(
  context: vscode.ExtensionContext,
  manager: HtamClientManager,
  log: vscode.LogOutputChannel,
): void {
  const reg = (id: string, fn: () => Promise<unknown>) =>
    context.subscriptions.push(
      vscode.commands.registerCommand(id, async () => {
        try {
          return await fn();
        } catch (err) {
          const msg = err instanceof Error ? err.message : String(err);
          log.error(`${id}: ${msg}`);
          void vscode.window.showErrorMessage(`HTAM: ${msg}`);
          return undefined;
        }
      }),
    );

  reg("htam.ui.autoOptimize", () => autoOptimize(context, manager, log));
  reg("htam.ui.profile", () => profile(manager, log));
  reg("htam.ui.showMemory", () => showMemory(context, manager));
  reg("htam.ui.openLastReport", () => openLastReport(context));
  reg("htam.ui.restartServer", () => manager.restart());
  reg("htam.ui.showOutput", () => {
    log.show();
    return Promise.resolve();
  });
  reg("htam.ui.setApiKey", async () => {
    const key = await vscode.window.showInputBox({
      title: "HTAM: LLM API key",
      prompt: "Stored in VS Code secret storage and passed only to the HTAM server process environment.",
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined || key.trim() === "") {
      return;
    }
    await context.secrets.store(API_KEY_SECRET, key.trim());
    await manager.restart();
    void vscode.window.showInformationMessage("HTAM: API key stored; server restarted.");
  });
  reg("htam.ui.clearApiKey", async () => {
    await context.secrets.delete(API_KEY_SECRET);
    await manager.restart();
    void vscode.window.showInformationMessage("HTAM: API key removed; server restarted.");
  });
}

function requireClient(manager: HtamClientManager): LanguageClient {
  const client = manager.current;
  if (!client) {
    throw new Error("the HTAM server is not running (see the HTAM output channel, or run HTAM: Restart language server).");
  }
  return client;
}

function cursorArgs(client: LanguageClient): [string, { line: number; character: number }] {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    throw new Error("open a CUDA or Triton file and put the cursor in a kernel.");
  }
  return [
    client.code2ProtocolConverter.asUri(editor.document.uri),
    client.code2ProtocolConverter.asPosition(editor.selection.active),
  ];
}

/**
 * Send an executeCommand request with a client-created work-done token. Server progress (on that token,
 * or on a token the server creates meanwhile) is relayed into `progress`; cancelling `token` sends
 * `$/cancelRequest` (and `window/workDoneProgress/cancel` for a server-created token).
 */
async function executeWithProgress(
  manager: HtamClientManager,
  client: LanguageClient,
  command: string,
  args: unknown[],
  progress: vscode.Progress<{ message?: string; increment?: number }>,
  token: vscode.CancellationToken,
): Promise<unknown> {
  const relay = manager.relay;
  const workDoneToken = randomUUID();
  const run = async (active?: { percentage: number }): Promise<unknown> => {
    let pct = 0;
    const sub = client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
      const step = toProgressStep(active?.percentage ?? pct, value);
      pct = step.percentage;
      if (active) {
        active.percentage = pct;
      }
      progress.report(step.report);
    });
    try {
      const params: ExecuteCommandParams = { command, arguments: args, workDoneToken };
      const result: unknown = await client.sendRequest(ExecuteCommandRequest.type, params, token);
      return result;
    } finally {
      sub.dispose();
    }
  };
  return relay ? relay.during(progress, token, run) : run();
}

async function autoOptimize(context: vscode.ExtensionContext, manager: HtamClientManager, log: vscode.LogOutputChannel): Promise<unknown> {
  const client = requireClient(manager);
  const args = cursorArgs(client);
  const document = vscode.window.activeTextEditor?.document;
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: "HTAM: auto-optimizing", cancellable: true },
    async (progress, token) => {
      progress.report({ message: "starting" });
      try {
        return { value: await executeWithProgress(manager, client, "htam.autoOptimize", args, progress, token) };
      } catch (err) {
        if (token.isCancellationRequested) {
          return { cancelled: true };
        }
        throw err;
      }
    },
  );
  if ("cancelled" in result) {
    log.info("auto-optimize cancelled");
    void vscode.window.showInformationMessage("HTAM: auto-optimize cancelled.");
    return undefined;
  }
  log.info(`auto-optimize result: ${JSON.stringify(result.value)}`);
  const error = resultError(result.value);
  if (error) {
    // The server has shown the message itself (window/showMessage).
    log.error(`auto-optimize failed: ${error}`);
    return result.value;
  }
  // The edit arrives as workspace/applyEdit before the response; save so the change lands on disk.
  if (document && document.isDirty && !document.isClosed) {
    await document.save();
  }
  const report = extractReport(result.value, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
  if (report) {
    await context.workspaceState.update(LAST_REPORT_KEY, report);
    // Not awaited: the command finishes without waiting for a click. The server's own message has the summary.
    void vscode.window
      .showInformationMessage(`HTAM: auto-optimize report: ${report.report}`, "Open Report")
      .then((choice) => (choice === "Open Report" ? openLastReport(context) : undefined));
  }
  return result.value;
}

async function profile(manager: HtamClientManager, log: vscode.LogOutputChannel): Promise<unknown> {
  const client = requireClient(manager);
  const args = cursorArgs(client);
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: "HTAM: profiling", cancellable: true },
    (progress, token) => executeWithProgress(manager, client, "htam.profile", args, progress, token),
  );
  log.info(`profile result: ${JSON.stringify(result)}`);
  const error = resultError(result);
  if (error) {
    log.error(`profile failed: ${error}`);
    return result;
  }
  const headline = resultHeadline(result);
  if (headline) {
    void vscode.window.showInformationMessage(`HTAM: ${headline}`);
  }
  return result;
}

async function showMemory(context: vscode.ExtensionContext, manager: HtamClientManager): Promise<unknown> {
  const client = requireClient(manager);
  const result: unknown = await client.sendRequest(ExecuteCommandRequest.type, { command: "htam.showMemory", arguments: [] });
  const dir = context.globalStorageUri;
  await vscode.workspace.fs.createDirectory(dir);
  const file = vscode.Uri.joinPath(dir, "htam-memory.md");
  await vscode.workspace.fs.writeFile(file, new TextEncoder().encode(resultToMarkdown(result)));
  await vscode.commands.executeCommand("markdown.showPreview", file);
  return result;
}

async function openLastReport(context: vscode.ExtensionContext): Promise<void> {
  const report = context.workspaceState.get<ReportFiles>(LAST_REPORT_KEY);
  if (!report) {
    void vscode.window.showInformationMessage("HTAM: no auto-optimize report yet. Run HTAM: Auto-optimize kernel at cursor first.");
    return;
  }
  if (!fs.existsSync(report.report)) {
    throw new Error(`the last report ${report.report} no longer exists.`);
  }
  await vscode.commands.executeCommand("markdown.showPreview", vscode.Uri.file(report.report));
  if (report.plot && fs.existsSync(report.plot)) {
    await vscode.commands.executeCommand("vscode.open", vscode.Uri.file(report.plot), { viewColumn: vscode.ViewColumn.Beside, preview: false });
  }
}
