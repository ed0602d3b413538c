/**
 * End-to-end test of the HTAM extension in a real VS Code: code-server in headless Chromium, driven by
 * playwright-core. Run through `npm run e2e` (scripts/e2e.sh), which installs
 * Node 24, code-server and Chromium first and builds the .vsix.
 *
 * Steps (each recorded in artifacts/summary.json; the first failure stops the run with exit code 1):
 *   install-vsix, start-code-server, open-workbench, open-cuda-file, extension-active, server-running,
 *   hover-cuda, code-actions-cuda, apply-action, open-triton-file, hover-triton, auto-optimize, open-last-report.
 * Nothing is skipped: no hover or no HTAM actions is a failure.
 *
 * Environment: HTAM_E2E_CODE_SERVER, HTAM_E2E_NODE_HOME, HTAM_E2E_CHROMIUM (from setup-e2e.sh),
 * HTAM_E2E_PYTHON (interpreter with htam installed; default the repository's .venv/bin/python, else python3),
 * HTAM_E2E_SERVER_PATH (sets htam.server.path: an `htam` executable instead of `python -m`),
 * HTAM_E2E_VSIX (default ../../htam-vscode.vsix), HTAM_E2E_OPTIMIZE_TIMEOUT_S (default 420),
 * HTAM_E2E_KEEP=1 keeps the temporary directory.
 */
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { BrowserContext, chromium, Locator, Page } from "playwright-core";

const EXT_ROOT = path.resolve(__dirname, "..", "..", "..");
const REPO_ROOT = path.resolve(EXT_ROOT, "..");
const ARTIFACTS = path.join(EXT_ROOT, "test", "e2e", "artifacts");
const FIXTURES = path.join(REPO_ROOT, "tests", "fixtures", "corpus");
const CUDA_FILE = "sgemm_naive.cu";
const CUDA_KERNEL = "sgemm_naive";
const CUDA_KERNEL_LINE = "__global__ void sgemm_naive(";
const TRITON_FILE = "vector_add_small_block.py";
const TRITON_KERNEL = "vadd_kernel";
const TRITON_KERNEL_LINE = "def vadd_kernel(";
/** The hover must show the recommended next step (server contract, README). */
const HOVER_NEXT_STEP = /next step/i;
/** Ranked HTAM action titles look like "HTAM 1 · Memory access → vectorize loads (float4) · +35% (7/9)". */
const HTAM_ACTION = /HTAM\s*\d+\s*·/;

interface StepRecord {
  step: string;
  ok: boolean;
  seconds: number;
  detail?: string;
}

const summary: {
  started: string;
  server?: string;
  steps: StepRecord[];
  progressSeen: string[];
  ok: boolean;
  cleanup?: string;
} = {
  started: new Date().toISOString(),
  steps: [],
  progressSeen: [],
  ok: false,
};
const t0 = Date.now();

function log(msg: string): void {
  process.stdout.write(`[e2e +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
}

class StepFailure extends Error {}

let page: Page | undefined;

async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const start = Date.now();
  log(`step ${name} ...`);
  try {
    const value = await fn();
    const detail = typeof value === "string" ? value : undefined;
    summary.steps.push({ step: name, ok: true, seconds: (Date.now() - start) / 1000, detail });
    log(`step ${name} ok${detail ? `: ${detail.slice(0, 300)}` : ""}`);
    return value;
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    summary.steps.push({ step: name, ok: false, seconds: (Date.now() - start) / 1000, detail });
    log(`step ${name} FAILED: ${detail}`);
    if (page) {
      await page.screenshot({ path: path.join(ARTIFACTS, `failure-${name}.png`) }).catch(() => undefined);
    }
    throw new StepFailure(`${name}: ${detail}`);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Thrown by an {@link until} probe to stop waiting at once (other probe errors mean "not yet"). */
class Abort extends Error {}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, intervalMs = 500): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch((e: unknown) => {
      if (e instanceof Abort) {
        throw e;
      }
      return undefined;
    });
    if (v !== undefined) {
      return v;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
    }
    await sleep(intervalMs);
  }
}

function pickPython(): string {
  if (process.env.HTAM_E2E_PYTHON) {
    return process.env.HTAM_E2E_PYTHON;
  }
  const repoVenv = path.resolve(EXT_ROOT, "..", ".venv", "bin", "python");
  if (fs.existsSync(repoVenv)) {
    return repoVenv;
  }
  return execFileSync("sh", ["-c", "command -v python3"], { encoding: "utf8" }).trim();
}

/** Every process this run starts, killed as whole process groups at the end. */
const groups: ChildProcess[] = [];
let context: BrowserContext | undefined;

async function killGroup(child: ChildProcess, name: string): Promise<string> {
  if (child.pid === undefined) {
    return `${name}: never started`;
  }
  const pgid = child.pid;
  const alive = () => {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!alive()) {
    return `${name} (pgid ${pgid}): already gone`;
  }
  process.kill(-pgid, "SIGTERM");
  for (let i = 0; i < 50 && alive(); i++) {
    await sleep(100);
  }
  if (alive()) {
    process.kill(-pgid, "SIGKILL");
    await sleep(200);
    return `${name} (pgid ${pgid}): SIGKILL after 5 s; alive now: ${alive()}`;
  }
  return `${name} (pgid ${pgid}): terminated`;
}

/**
 * Processes started by this run that left code-server's process group (e.g. server workers that call
 * setsid): found by the HTAM_E2E_RUN marker every descendant inherits in its environment.
 */
function strayProcesses(marker: string): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) {
      continue;
    }
    try {
      const env = fs.readFileSync(`/proc/${entry}/environ`, "utf8");
      if (env.split("\0").includes(`HTAM_E2E_RUN=${marker}`)) {
        out.push(Number(entry));
      }
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

async function killStrays(marker: string): Promise<string> {
  const first = strayProcesses(marker);
  for (const pid of first) {
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
  await sleep(first.length > 0 ? 2000 : 0);
  const left = strayProcesses(marker);
  for (const pid of left) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  return `processes outside the group: ${first.length} found, ${left.length} needed SIGKILL`;
}

async function cleanup(): Promise<void> {
  const notes: string[] = [];
  if (context) {
    await context.close().catch((e: unknown) => notes.push(`browser close: ${String(e)}`));
    context = undefined;
    notes.push("browser closed");
  }
  for (const child of groups.splice(0)) {
    notes.push(await killGroup(child, "code-server"));
  }
  if (run.tmp) {
    notes.push(await killStrays(run.tmp));
  }
  summary.cleanup = notes.join("; ");
  log(`cleanup: ${summary.cleanup}`);
}

function editorLine(p: Page, text: string): Locator {
  return p.locator(".monaco-editor .view-lines .view-line").filter({ hasText: text }).first();
}

async function runCommand(p: Page, title: string): Promise<void> {
  await p.keyboard.press("F1");
  const input = p.locator(".quick-input-widget input").first();
  await input.waitFor({ state: "visible", timeout: 10000 });
  await input.fill(`>${title}`);
  await p
    .locator(".quick-input-widget .monaco-list-row")
    .filter({ hasText: title.replace(/^.*?:\s*/, "") })
    .first()
    .waitFor({ state: "visible", timeout: 10000 });
  await p.keyboard.press("Enter");
}

async function openFile(p: Page, name: string, lineText: string): Promise<void> {
  await p.keyboard.press("Control+P");
  const input = p.locator(".quick-input-widget input").first();
  await input.waitFor({ state: "visible", timeout: 10000 });
  await input.fill(name);
  await p.locator(".quick-input-widget .monaco-list-row").filter({ hasText: name }).first().waitFor({ timeout: 10000 });
  await p.keyboard.press("Enter");
  await p.locator(".tab.active").filter({ hasText: name }).waitFor({ timeout: 15000 });
  await editorLine(p, lineText).waitFor({ timeout: 15000 });
}

/** Put the cursor at line:column (1-based) with Go to Line. */
async function gotoLine(p: Page, line: number, column: number): Promise<void> {
  await p.locator(".monaco-editor .view-lines").first().click();
  await p.keyboard.press("Control+G");
  const input = p.locator(".quick-input-widget input").first();
  await input.waitFor({ state: "visible", timeout: 10000 });
  await input.fill(`:${line}:${column}`);
  await p.keyboard.press("Enter");
  await sleep(300);
}

function findLine(file: string, lineText: string, word: string): { line: number; column: number } {
  const lines = fs.readFileSync(file, "utf8").split("\n");
  const i = lines.findIndex((l) => l.includes(lineText));
  if (i < 0) {
    throw new Error(`"${lineText}" not found in ${file}`);
  }
  return { line: i + 1, column: lines[i].indexOf(word) + 2 };
}

/** Hover the kernel name with the mouse (keyboard "Show Hover" as a second way); returns the hover text. */
async function hoverKernel(p: Page, lineText: string, kernel: string, file: string, timeoutMs: number): Promise<string> {
  const pos = findLine(file, lineText, kernel);
  const hover = p.locator(".monaco-hover").filter({ hasText: HOVER_NEXT_STEP }).first();
  let attempt = 0;
  return until(`a hover with the recommended next step over ${kernel}`, timeoutMs, async () => {
    attempt++;
    const token = editorLine(p, lineText).locator("span span").filter({ hasText: new RegExp(`^${kernel}$`) }).first();
    await p.mouse.move(5, 5);
    await sleep(200);
    if (attempt % 2 === 1 && (await token.count()) > 0) {
      await token.hover();
    } else {
      await gotoLine(p, pos.line, pos.column);
      await p.keyboard.press("Control+K");
      await p.keyboard.press("Control+I");
    }
    try {
      await hover.waitFor({ state: "visible", timeout: 4000 });
      return (await hover.innerText()).trim();
    } catch {
      return undefined;
    }
  }, 1000);
}

/** Open Quick Fix (Ctrl+.) on the kernel, falling back to the Refactor menu; returns the HTAM titles. */
async function openActions(p: Page, file: string, lineText: string, kernel: string, timeoutMs: number): Promise<string[]> {
  const pos = findLine(file, lineText, kernel);
  let attempt = 0;
  return until("ranked HTAM actions in the Quick Fix / Refactor menu", timeoutMs, async () => {
    attempt++;
    await p.keyboard.press("Escape");
    await gotoLine(p, pos.line, pos.column);
    if (attempt % 2 === 1) {
      await p.keyboard.press("Control+Period");
    } else {
      await runCommand(p, "Refactor...");
    }
    const widget = p.locator(".action-widget").first();
    try {
      await widget.waitFor({ state: "visible", timeout: 5000 });
      await p.locator(".action-widget .monaco-list-row").filter({ hasText: HTAM_ACTION }).first().waitFor({ timeout: 5000 });
    } catch {
      return undefined;
    }
    const rows = await p.locator(".action-widget .monaco-list-row").allInnerTexts();
    const htam = rows.map((r) => r.replace(/\s+/g, " ").trim()).filter((r) => HTAM_ACTION.test(r));
    return htam.length > 0 ? htam : undefined;
  }, 1000);
}

async function main(): Promise<void> {
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const codeServer = process.env.HTAM_E2E_CODE_SERVER;
  const nodeHome = process.env.HTAM_E2E_NODE_HOME;
  const chromiumPath = process.env.HTAM_E2E_CHROMIUM ?? "/usr/bin/chromium";
  if (!codeServer || !nodeHome) {
    throw new Error("HTAM_E2E_CODE_SERVER and HTAM_E2E_NODE_HOME are unset: run through `npm run e2e` (scripts/e2e.sh).");
  }
  const vsix = process.env.HTAM_E2E_VSIX ?? path.join(EXT_ROOT, "htam-vscode.vsix");
  const python = pickPython();
  const optimizeTimeout = Number(process.env.HTAM_E2E_OPTIMIZE_TIMEOUT_S ?? "420") * 1000;

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "htam-e2e-"));
  const home = path.join(tmp, "home");
  const userData = path.join(tmp, "user-data");
  run.tmp = tmp;
  run.userData = userData;
  const extDir = path.join(tmp, "extensions");
  const ws = path.join(tmp, "workspace");
  for (const d of [home, path.join(userData, "User"), extDir, ws]) {
    fs.mkdirSync(d, { recursive: true });
  }
  for (const f of [CUDA_FILE, TRITON_FILE]) {
    const src = path.join(FIXTURES, f);
    if (!fs.existsSync(src)) {
      throw new Error(`fixture ${src} is missing (tests/fixtures/corpus is copied from the shared corpus)`);
    }
    fs.copyFileSync(src, path.join(ws, f));
  }
  const cudaPath = path.join(ws, CUDA_FILE);
  const tritonPath = path.join(ws, TRITON_FILE);
  const cudaOriginal = fs.readFileSync(cudaPath, "utf8");
  const tritonOriginal = fs.readFileSync(tritonPath, "utf8");
  fs.writeFileSync(
    path.join(userData, "User", "settings.json"),
    JSON.stringify(
      {
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "workbench.enableExperiments": false,
        "telemetry.telemetryLevel": "off",
        "security.workspace.trust.enabled": false,
        "extensions.ignoreRecommendations": true,
        "extensions.autoCheckUpdates": false,
        "update.mode": "none",
        "git.enabled": false,
        "editor.hover.delay": 150,
        "editor.minimap.enabled": false,
        "window.commandCenter": false,
        "chat.disableAIFeatures": true,
        "htam.pythonPath": python,
        "htam.engine": "rules",
        "htam.budget": Number(process.env.HTAM_E2E_BUDGET ?? "3"),
        "htam.memoryPath": path.join(tmp, "htam-memory.sqlite"),
        "htam.trace.server": "messages",
        ...(process.env.HTAM_E2E_SERVER_PATH ? { "htam.server.path": process.env.HTAM_E2E_SERVER_PATH } : {}),
      },
      null,
      2,
    ),
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, ".config"),
    XDG_DATA_HOME: path.join(home, ".local", "share"),
    XDG_CACHE_HOME: path.join(home, ".cache"),
    XDG_RUNTIME_DIR: path.join(tmp, "run"),
    PATH: `${path.join(nodeHome, "bin")}:${process.env.PATH ?? ""}`,
    TRITON_INTERPRET: process.env.TRITON_INTERPRET ?? "1",
    HTAM_E2E_RUN: tmp,
  };
  fs.mkdirSync(env.XDG_RUNTIME_DIR!, { recursive: true, mode: 0o700 });
  summary.server = process.env.HTAM_E2E_SERVER_PATH
    ? `${process.env.HTAM_E2E_SERVER_PATH} serve (htam.server.path)`
    : `${python} -m htam_core.cli.main serve`;
  log(`temp dir ${tmp}; server ${summary.server}; vsix ${vsix}`);

  await step("install-vsix", () => {
    if (!fs.existsSync(vsix)) {
      throw new Error(`${vsix} not found: run npm run package`);
    }
    const out = execFileSync(
      codeServer,
      ["--user-data-dir", userData, "--extensions-dir", extDir, "--install-extension", vsix],
      { env, encoding: "utf8", timeout: 120000 },
    );
    const installed = fs.readdirSync(extDir).filter((d) => d.startsWith("htam.htam-vscode"));
    if (installed.length === 0) {
      throw new Error(`extension not in ${extDir}: ${out}`);
    }
    return Promise.resolve(installed.join(", "));
  });

  const port = await freePort();
  const csLog = fs.openSync(path.join(ARTIFACTS, "code-server.log"), "w");
  await step("start-code-server", async () => {
    const child = spawn(
      codeServer,
      [
        "--auth", "none",
        "--bind-addr", `127.0.0.1:${port}`,
        "--disable-workspace-trust",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-getting-started-override",
        "--log", "trace",
        "--user-data-dir", userData,
        "--extensions-dir", extDir,
        ws,
      ],
      { env, detached: true, stdio: ["ignore", csLog, csLog] },
    );
    groups.push(child);
    await until("code-server /healthz", 60000, async () => {
      if (child.exitCode !== null) {
        throw new Abort(`code-server exited with ${child.exitCode}`);
      }
      const r = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
      return r?.ok ? true : undefined;
    });
    return `port ${port}, pgid ${child.pid}`;
  });

  context = await chromium.launchPersistentContext(path.join(tmp, "chromium"), {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1500, height: 950 },
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const p = context.pages()[0] ?? (await context.newPage());
  page = p;
  const shot = (name: string) => p.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });

  await step("open-workbench", async () => {
    await p.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await p.locator(".monaco-workbench").waitFor({ timeout: 60000 });
    await p.locator(".explorer-folders-view .monaco-list-row").filter({ hasText: CUDA_FILE }).first().waitFor({ timeout: 60000 });
    await shot("01-workbench");
    return "workbench loaded";
  });

  await step("open-cuda-file", async () => {
    await openFile(p, CUDA_FILE, CUDA_KERNEL_LINE);
    await shot("02-cuda-open");
    return CUDA_FILE;
  });

  const statusItem = p.locator(".statusbar-item").filter({ hasText: /HTAM/ }).first();
  await step("extension-active", async () => {
    await statusItem.waitFor({ state: "visible", timeout: 60000 });
    return (await statusItem.innerText()).trim();
  });

  await step("server-running", async () => {
    // The item shows $(error) when a pre-flight check or the start failed; its tooltip says why.
    const text = await until("the HTAM server to start (status bar leaves 'starting')", 90000, async () => {
      const html = await statusItem.innerHTML();
      if (html.includes("codicon-sync") && html.includes("spin")) {
        return undefined;
      }
      return html;
    });
    if (text.includes("codicon-error")) {
      await shot("03-server-failed");
      const toasts = await p.locator(".notifications-toasts .notification-toast").allInnerTexts();
      throw new Error(`server failed to start: ${toasts.join(" | ").replace(/\s+/g, " ")}`);
    }
    await shot("03-server-running");
    return (await statusItem.innerText()).trim();
  });

  await step("hover-cuda", async () => {
    const text = await hoverKernel(p, CUDA_KERNEL_LINE, CUDA_KERNEL, cudaPath, 120000);
    await shot("04-hover-cuda");
    return text.replace(/\s+/g, " ");
  });

  await step("code-actions-cuda", async () => {
    const titles = await openActions(p, cudaPath, CUDA_KERNEL_LINE, CUDA_KERNEL, 90000);
    if (!titles.some((t) => /HTAM\s*1\s*·/.test(t))) {
      throw new Error(`no "HTAM 1 ·" action among ${JSON.stringify(titles)}`);
    }
    await shot("05-code-actions-cuda");
    return titles.join(" | ");
  });

  await step("apply-action", async () => {
    await p.locator(".action-widget .monaco-list-row").filter({ hasText: HTAM_ACTION }).first().click();
    const changed = await until("the applied action to change sgemm_naive.cu on disk", 120000, async () => {
      await p.keyboard.press("Control+S");
      const now = fs.readFileSync(cudaPath, "utf8");
      return now !== cudaOriginal ? now : undefined;
    }, 1500);
    await shot("06-action-applied");
    fs.writeFileSync(path.join(ARTIFACTS, "sgemm_naive.after-action.cu"), changed);
    const added = changed.split("\n").filter((l) => !cudaOriginal.includes(l)).length;
    return `${added} new or changed lines on disk`;
  });

  await step("open-triton-file", async () => {
    await openFile(p, TRITON_FILE, TRITON_KERNEL_LINE);
    return TRITON_FILE;
  });

  await step("hover-triton", async () => {
    const text = await hoverKernel(p, TRITON_KERNEL_LINE, TRITON_KERNEL, tritonPath, 120000);
    await shot("07-hover-triton");
    return text.replace(/\s+/g, " ");
  });

  await step("auto-optimize", async () => {
    await p.keyboard.press("Escape");
    const pos = findLine(tritonPath, TRITON_KERNEL_LINE, TRITON_KERNEL);
    await gotoLine(p, pos.line + 2, 5);
    await runCommand(p, "HTAM: Auto-optimize kernel at cursor");
    const toast = p.locator(".notifications-toasts .notification-toast").filter({ hasText: /auto-optimizing/i }).first();
    await toast.waitFor({ state: "visible", timeout: 30000 });
    await shot("08-auto-optimize-progress");
    let shotDone = false;
    // Without a GPU nothing is verified on a GPU and measured, so the server must NOT apply the best candidate:
    // it says so in its final message and the file stays as it was. With a GPU, a measured win is one edit.
    const outcome = await until("auto-optimize to finish (its final message, or an edit on disk)", optimizeTimeout, async () => {
      const texts = await p.locator(".notifications-toasts .notification-toast").allInnerTexts().catch(() => []);
      for (const t of texts.map((s) => s.replace(/\s+/g, " ").trim())) {
        if (/auto-optimizing/i.test(t) && !summary.progressSeen.includes(t)) {
          summary.progressSeen.push(t);
          log(`progress: ${t}`);
          if (!shotDone && /\d+\s*\/\s*\d+/.test(t)) {
            shotDone = true;
            await shot("08b-auto-optimize-step");
          }
        }
      }
      const errors = await p
        .locator(".notifications-toasts .notification-toast")
        .filter({ has: p.locator(".codicon-error") })
        .allInnerTexts()
        .catch(() => []);
      if (errors.length > 0) {
        throw new Abort(`error notification: ${errors.join(" | ").replace(/\s+/g, " ")}`);
      }
      const now = fs.readFileSync(tritonPath, "utf8");
      if (now !== tritonOriginal) {
        return { changed: now, message: "" };
      }
      const done = texts.map((s) => s.replace(/\s+/g, " ").trim()).find((t) => /auto-optimize of .*(not applied|applied as one edit|no better candidate)/i.test(t));
      return done ? { changed: "", message: done } : undefined;
    }, 700);
    await sleep(1500);
    await shot("09-auto-optimize-done");
    if (outcome.changed) {
      fs.writeFileSync(path.join(ARTIFACTS, "vector_add_small_block.after-optimize.py"), outcome.changed);
      if (!/applied as one edit/i.test((await p.locator(".notifications-toasts .notification-toast").allInnerTexts()).join(" "))) {
        throw new Error("the file changed on disk without the server saying a measured candidate was applied");
      }
    } else if (/not applied/i.test(outcome.message)) {
      if (fs.readFileSync(tritonPath, "utf8") !== tritonOriginal) {
        throw new Error("the file changed although nothing was applied");
      }
    }
    if (summary.progressSeen.length === 0) {
      throw new Error("no progress notification text was seen");
    }
    const final = await p.locator(".notifications-toasts .notification-toast").allInnerTexts();
    return `progress messages: ${summary.progressSeen.length}; final: ${final.join(" | ").replace(/\s+/g, " ")}`;
  });

  await step("open-last-report", async () => {
    await p.keyboard.press("Escape");
    await runCommand(p, "HTAM: Open last report");
    const tab = p.locator(".tab").filter({ hasText: /report\.md/ }).first();
    await tab.waitFor({ state: "visible", timeout: 30000 });
    await sleep(1000);
    await shot("10-last-report");
    const tabs = await p.locator(".tab").allInnerTexts();
    return tabs.map((t) => t.trim()).join(" | ");
  });

  summary.ok = true;
}

/** The run's temporary directory: removed after a pass unless HTAM_E2E_KEEP=1, kept after a failure. */
const run: { tmp?: string; userData?: string } = {};

function copyLogs(userData: string | undefined): void {
  if (!userData) {
    return;
  }
  const logsDir = path.join(userData, "logs");
  if (!fs.existsSync(logsDir)) {
    return;
  }
  const walk = (d: string): string[] =>
    fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
  for (const f of walk(logsDir)) {
    if (/HTAM|exthost\.log|remoteagent\.log/i.test(path.basename(f))) {
      fs.copyFileSync(f, path.join(ARTIFACTS, `log-${path.basename(f)}`));
    }
  }
}

async function entry(): Promise<number> {
  const onSignal = (sig: NodeJS.Signals) => {
    log(`received ${sig}: cleaning up`);
    void cleanup().then(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let code = 0;
  try {
    await main();
  } catch (err) {
    code = 1;
    if (!(err instanceof StepFailure)) {
      log(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      summary.steps.push({ step: "harness", ok: false, seconds: 0, detail: String(err) });
    }
  } finally {
    await cleanup();
    copyLogs(run.userData);
    fs.writeFileSync(path.join(ARTIFACTS, "summary.json"), JSON.stringify(summary, null, 2));
    if (run.tmp && summary.ok && process.env.HTAM_E2E_KEEP !== "1") {
      fs.rmSync(run.tmp, { recursive: true, force: true });
    } else if (run.tmp) {
      log(`kept ${run.tmp}`);
    }
  }
  const passed = summary.steps.filter((s) => s.ok).length;
  log(`${summary.ok ? "PASS" : "FAIL"}: ${passed}/${summary.steps.length} steps ok; artifacts in ${ARTIFACTS}`);
  return code;
}

void entry().then((code) => process.exit(code));
