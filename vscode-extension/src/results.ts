/**
 * Interpretation of `workspace/executeCommand` results (pure, unit-tested).
 * The server's result shapes are documented in README "Server contract"; these readers accept
 * camelCase and snake_case keys and plain strings, so small server changes do not break the client.
 */
import * as path from "node:path";

function pick(obj: Record<string, unknown>, keys: string[]): unknown {
  for (const k of keys) {
    if (obj[k] !== undefined && obj[k] !== null) {
      return obj[k];
    }
  }
  return undefined;
}

/** Markdown to show for a command result: a string as is, else its markdown/summary/message field, else JSON. */
export function resultToMarkdown(result: unknown): string {
  if (result === null || result === undefined) {
    return "_The server returned no result._";
  }
  if (typeof result === "string") {
    return result;
  }
  if (typeof result === "object") {
    const md = pick(result as Record<string, unknown>, ["markdown", "summary", "message", "text"]);
    if (typeof md === "string") {
      return md;
    }
  }
  return "```json\n" + JSON.stringify(result, null, 2) + "\n```";
}

/** The server's error text when the command failed (`{error: "..."}`; the server has shown it already). */
export function resultError(result: unknown): string | undefined {
  if (result !== null && typeof result === "object") {
    const e = (result as Record<string, unknown>).error;
    if (typeof e === "string" && e !== "") {
      return e;
    }
  }
  return undefined;
}

/** First line of a result's Markdown, without Markdown markers, for a notification ("" for an object without text). */
export function resultHeadline(result: unknown, maxLen = 200): string {
  if (result !== null && typeof result === "object" && resultToMarkdown(result).startsWith("```json")) {
    return "";
  }
  const first =
    resultToMarkdown(result)
      .split(/\r?\n/)
      .map((l) => l.replace(/^[#>*\-\s`]+/, "").replace(/[*_`]/g, "").trim())
      .find((l) => l !== "") ?? "";
  return first.length > maxLen ? first.slice(0, maxLen - 1) + "…" : first;
}

/** Files of an auto-optimize report. */
export interface ReportFiles {
  /** Absolute path of report.md. */
  report: string;
  /** Absolute path of the speedup plot (speedup.png), when known. */
  plot?: string;
  /** One-line summary from the server, when given. */
  summary?: string;
}

/**
 * Find report.md and the speedup plot in an `htam.autoOptimize` result.
 * Accepts `reportPath` (file or directory), `reportDir`, `report`, `plotPath`/`plot`/`speedupPlot`
 * (camelCase or snake_case). Without an explicit plot, `speedup.png` next to report.md is assumed.
 * Relative paths are resolved against `base` (the server's working directory: the first workspace folder).
 * Returns undefined when the result names no report.
 */
export function extractReport(result: unknown, base?: string): ReportFiles | undefined {
  if (result === null || typeof result !== "object") {
    return undefined;
  }
  const r = result as Record<string, unknown>;
  const raw = pick(r, ["reportPath", "report_path", "reportDir", "report_dir", "report", "outDir", "out_dir"]);
  if (typeof raw !== "string" || raw === "") {
    return undefined;
  }
  const abs = (p: string) => {
    const local = p.startsWith("file://") ? decodeURIComponent(p.slice("file://".length)) : p;
    return base && !path.isAbsolute(local) ? path.resolve(base, local) : local;
  };
  const where = abs(raw);
  const report = where.toLowerCase().endsWith(".md") ? where : path.join(where, "report.md");
  const plotRaw = pick(r, ["plotPath", "plot_path", "speedupPlot", "speedup_plot", "plot"]);
  const plot = typeof plotRaw === "string" && plotRaw !== "" ? abs(plotRaw) : path.join(path.dirname(report), "speedup.png");
  const summary = pick(r, ["summary", "message"]);
  return { report, plot, summary: typeof summary === "string" ? summary : undefined };
}
