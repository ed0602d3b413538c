/**
 * Routes server work-done progress into the notification of the HTAM command in flight.
 *
 * The client offers a `workDoneToken` with each command; a server that creates its own token instead
 * (`window/workDoneProgress/create`) is handled too: while an HTAM command runs, such progress is relayed
 * into that command's notification, and cancelling the notification also sends
 * `window/workDoneProgress/cancel`. Outside a command, server progress shows in the status bar as usual.
 */
import * as vscode from "vscode";
import {
  LanguageClient,
  ProgressToken,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
} from "vscode-languageclient/node";
import { toProgressStep, WorkDoneValue } from "./progress";

type Sink = vscode.Progress<{ message?: string; increment?: number }>;

interface ActiveCommand {
  sink: Sink;
  token: vscode.CancellationToken;
  percentage: number;
}

/** One per client; see module doc. */
export class ProgressRelay {
  private readonly active: ActiveCommand[] = [];

  constructor(private readonly client: LanguageClient) {}

  /** Replace the client's default `window/workDoneProgress/create` handler; call after `client.start()`. */
  install(): vscode.Disposable {
    return this.client.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
      this.attach(params.token);
    });
  }

  /**
   * Relay `token`'s progress into the command's notification until its "end" (one handler per token:
   * vscode-jsonrpc allows no second one). `onEnd` runs after the end value.
   */
  follow(token: ProgressToken, command: ActiveCommand, onEnd?: () => void): vscode.Disposable {
    const sub = this.client.onProgress(WorkDoneProgress.type, token, (value) => {
      const step = toProgressStep(command.percentage, value);
      command.percentage = step.percentage;
      command.sink.report(step.report);
      if ((value as WorkDoneValue).kind === "end") {
        sub.dispose();
        onEnd?.();
      }
    });
    return sub;
  }

  /** Run `fn` with `sink` as the target of server-created progress. */
  async during<T>(sink: Sink, token: vscode.CancellationToken, fn: (command: ActiveCommand) => Promise<T>): Promise<T> {
    const command: ActiveCommand = { sink, token, percentage: 0 };
    this.active.push(command);
    try {
      return await fn(command);
    } finally {
      this.active.splice(this.active.indexOf(command), 1);
    }
  }

  private attach(token: ProgressToken): void {
    const command = this.active[this.active.length - 1];
    if (command) {
      const onCancel = command.token.onCancellationRequested(() => {
        void this.client.sendNotification(WorkDoneProgressCancelNotification.type, { token });
      });
      this.follow(token, command, () => {
        onCancel.dispose();
      });
      return;
    }
    // No HTAM command in flight (e.g. a code action resolving with the LLM engine): status bar progress.
    void vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: "HTAM" }, (progress) => {
      let pct = 0;
      return new Promise<void>((resolve) => {
        const sub = this.client.onProgress(WorkDoneProgress.type, token, (v) => {
          const step = toProgressStep(pct, v);
          pct = step.percentage;
          progress.report(step.report);
          if ((v as WorkDoneValue).kind === "end") {
            sub.dispose();
            resolve();
          }
        });
      });
    });
  }
}
