/**
 * Status bar model (pure, unit-tested): the `htam/status` notification and the client state -> text and tooltip.
 */

/** Payload of the server's `htam/status` notification (see README "Server contract"). */
export interface HtamStatus {
  server: "ready" | "busy";
  /** GPU name, or null when none is visible to the server. */
  gpu: string | null;
  /** One-line summary of the last profile of the kernel at the cursor, or null. */
  lastProfile: string | null;
}

/** Client-side state of the server process. */
export type ClientState = "starting" | "running" | "stopped" | "failed";

/** Everything the status bar shows. */
export interface StatusModel {
  client: ClientState;
  /** Last `htam/status` received, undefined when the server never sent one. */
  status?: HtamStatus;
  /** Why the server failed, when `client` is "failed". */
  failure?: string;
  /** Server version found by the pre-flight check. */
  version?: string;
}

/** Validate an `htam/status` payload; undefined when it is malformed (it is then ignored). */
export function parseStatus(params: unknown): HtamStatus | undefined {
  if (params === null || typeof params !== "object") {
    return undefined;
  }
  const p = params as Record<string, unknown>;
  if (p.server !== "ready" && p.server !== "busy") {
    return undefined;
  }
  const str = (v: unknown): string | null => (typeof v === "string" && v.trim() !== "" ? v : null);
  return { server: p.server, gpu: str(p.gpu), lastProfile: str(p.lastProfile) };
}

/** Text (with codicons) and tooltip of the status bar item. */
export function formatStatus(m: StatusModel): { text: string; tooltip: string } {
  const lines: string[] = [];
  let text: string;
  if (m.client === "failed") {
    text = "$(error) HTAM";
    lines.push(`Server failed: ${m.failure ?? "unknown reason"}`);
  } else if (m.client === "stopped") {
    text = "$(circle-slash) HTAM";
    lines.push("Server stopped");
  } else if (m.client === "starting") {
    text = "$(sync~spin) HTAM";
    lines.push("Server starting");
  } else {
    const busy = m.status?.server === "busy";
    text = busy ? "$(sync~spin) HTAM" : "$(pulse) HTAM";
    lines.push(`Server ${m.status ? m.status.server : "running"}${m.version ? ` (htam ${m.version})` : ""}`);
    if (m.status) {
      text += ` · ${m.status.gpu ?? "no GPU"}`;
      lines.push(`GPU: ${m.status.gpu ?? "none visible (static analysis only)"}`);
      if (m.status.lastProfile) {
        text += ` · ${m.status.lastProfile}`;
        lines.push(`Last profile: ${m.status.lastProfile}`);
      } else {
        lines.push("Last profile: none for this kernel");
      }
    }
  }
  lines.push("Click for HTAM output");
  return { text, tooltip: lines.join("\n") };
}
