/**
 * Entry point of the HTAM extension: output channel, status bar, commands, and the language client.
 */
import * as vscode from "vscode";
import { HtamClientManager, RESTART_SETTINGS } from "./client";
import { registerCommands } from "./commands";
import { formatStatus, StatusModel } from "./status";

let manager: HtamClientManager | undefined;

/** Called by VS Code on the first CUDA or Python file, or a workspace with .cu/.cuh files. */
export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("HTAM", { log: true });
  context.subscriptions.push(log);

  const item = vscode.window.createStatusBarItem("htam.status", vscode.StatusBarAlignment.Left, 50);
  item.name = "HTAM";
  item.command = "htam.ui.showOutput";
  context.subscriptions.push(item);
  const model: StatusModel = { client: "starting" };
  const render = () => {
    const { text, tooltip } = formatStatus(model);
    item.text = text;
    item.tooltip = tooltip;
    item.backgroundColor = model.client === "failed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
    item.show();
  };
  render();

  manager = new HtamClientManager(context, log, {
    onState(state, detail, version) {
      model.client = state;
      model.failure = detail;
      if (version) {
        model.version = version;
      }
      if (state !== "running") {
        model.status = undefined;
      }
      render();
    },
    onStatus(status) {
      model.status = status;
      render();
    },
  });
  context.subscriptions.push(manager);
  registerCommands(context, manager, log);

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (RESTART_SETTINGS.some((s) => e.affectsConfiguration(s))) {
        log.info("server settings changed: restarting");
        void manager?.restart();
      }
    }),
  );
  await manager.start();
}

/** Stops the server process. */
export async function deactivate(): Promise<void> {
  await manager?.stop();
  manager = undefined;
}
