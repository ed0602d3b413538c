/**
 * LSP work-done progress -> VS Code progress (pure, unit-tested).
 * LSP reports an absolute percentage; `vscode.Progress.report` takes an increment.
 */

/** The LSP `$/progress` value (WorkDoneProgressBegin | Report | End). */
export interface WorkDoneValue {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
  percentage?: number;
}

/** What to pass to `progress.report`, plus the new absolute percentage to remember. */
export interface ProgressStep {
  report: { message?: string; increment?: number };
  percentage: number;
}

/**
 * Convert one server progress value.
 * @param previous the absolute percentage reported so far (0..100)
 */
export function toProgressStep(previous: number, value: WorkDoneValue): ProgressStep {
  const parts = [value.kind === "begin" ? value.title : undefined, value.message].filter(
    (s): s is string => typeof s === "string" && s !== "",
  );
  const report: { message?: string; increment?: number } = {};
  if (parts.length > 0) {
    report.message = parts.join(": ");
  }
  let percentage = previous;
  if (typeof value.percentage === "number" && Number.isFinite(value.percentage)) {
    const next = Math.max(0, Math.min(100, value.percentage));
    if (next > previous) {
      report.increment = next - previous;
      percentage = next;
    }
  } else if (value.kind === "end" && previous < 100) {
    report.increment = 100 - previous;
    percentage = 100;
  }
  return { report, percentage };
}
