import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { toProgressStep } from "../../src/progress";
import { extractReport, resultError, resultHeadline, resultToMarkdown } from "../../src/results";
import { formatStatus, parseStatus } from "../../src/status";

describe("status", () => {
  it("validates htam/status payloads", () => {
    assert.deepEqual(parseStatus({ server: "busy", gpu: "NVIDIA H200", lastProfile: "sgemm_naive 1.2 ms" }), {
      server: "busy",
      gpu: "NVIDIA H200",
      lastProfile: "sgemm_naive 1.2 ms",
    });
    assert.deepEqual(parseStatus({ server: "ready" }), { server: "ready", gpu: null, lastProfile: null });
    assert.equal(parseStatus({ server: "up" }), undefined);
    assert.equal(parseStatus(null), undefined);
  });

  it("formats each client state", () => {
    assert.match(formatStatus({ client: "starting" }).text, /sync~spin/);
    assert.match(formatStatus({ client: "failed", failure: "no Python" }).tooltip, /no Python/);
    const running = formatStatus({ client: "running", version: "0.1.0", status: { server: "ready", gpu: null, lastProfile: "k 2.0 ms" } });
    assert.equal(running.text, "$(pulse) HTAM · no GPU · k 2.0 ms");
    assert.match(running.tooltip, /htam 0\.1\.0/);
    // Without any htam/status notification the item still works.
    assert.equal(formatStatus({ client: "running" }).text, "$(pulse) HTAM");
  });
});

describe("progress", () => {
  it("turns absolute percentages into increments", () => {
    const a = toProgressStep(0, { kind: "begin", title: "Auto-optimize", message: "step 1/8", percentage: 0 });
    assert.deepEqual(a, { report: { message: "Auto-optimize: step 1/8" }, percentage: 0 });
    const b = toProgressStep(0, { kind: "report", message: "step 3/8 memory → vectorize, best 1.4x", percentage: 37.5 });
    assert.deepEqual(b, { report: { message: "step 3/8 memory → vectorize, best 1.4x", increment: 37.5 }, percentage: 37.5 });
    const back = toProgressStep(50, { kind: "report", percentage: 40 });
    assert.deepEqual(back, { report: {}, percentage: 50 });
    assert.deepEqual(toProgressStep(50, { kind: "end", message: "done" }), { report: { message: "done", increment: 50 }, percentage: 100 });
  });
});

describe("results", () => {
  it("finds report.md and the plot", () => {
    assert.deepEqual(extractReport({ reportPath: "/r/run1/report.md", summary: "best 1.8x" }), {
      report: "/r/run1/report.md",
      plot: "/r/run1/speedup.png",
      summary: "best 1.8x",
    });
    assert.deepEqual(extractReport({ report_dir: "/r/run2", plot_path: "/r/run2/plot.png" }), {
      report: "/r/run2/report.md",
      plot: "/r/run2/plot.png",
      summary: undefined,
    });
    assert.equal(extractReport("done"), undefined);
    assert.equal(extractReport({ bestSpeedup: 2 }), undefined);
  });

  it("renders results as Markdown and a headline", () => {
    assert.equal(resultToMarkdown("# Memory\n\nx"), "# Memory\n\nx");
    assert.equal(resultToMarkdown({ markdown: "**m**" }), "**m**");
    assert.match(resultToMarkdown({ a: 1 }), /```json/);
    assert.equal(resultHeadline("\n## Best: **1.8x** speedup\nmore"), "Best: 1.8x speedup");
    assert.equal(resultHeadline({ summary: "ok" }), "ok");
    assert.equal(resultHeadline({ profiles: [] }), "");
  });

  it("recognises a failed command and the server's report key", () => {
    assert.equal(resultError({ error: "no kernel at the cursor" }), "no kernel at the cursor");
    assert.equal(resultError({ error: null, kernel: "k" }), undefined);
    assert.equal(resultError("text"), undefined);
    const r = extractReport({ kernel: "k", report: "/runs/k/report.md", summary: "best 1.5x", applied: true });
    assert.equal(r?.report, "/runs/k/report.md");
    assert.equal(r?.plot, "/runs/k/speedup.png");
    const rel = extractReport({ report: "htam-out/k/report.md", plotPath: "htam-out/k/p.png" }, "/ws");
    assert.deepEqual([rel?.report, rel?.plot], ["/ws/htam-out/k/report.md", "/ws/htam-out/k/p.png"]);
  });
});
