import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { expandPath, findOnPath, InterpreterInputs, resolveInterpreter } from "../../src/interpreter";

function inputs(over: Partial<InterpreterInputs>, files: string[] = [], onPath: Record<string, string> = {}): InterpreterInputs {
  return {
    findOnPath: (n) => onPath[n],
    exists: (f) => files.includes(f),
    workspaceFolder: "/ws",
    home: "/home/u",
    ...over,
  };
}

describe("resolveInterpreter", () => {
  it("uses htam.pythonPath first when the file exists", () => {
    const r = resolveInterpreter(
      inputs({ settingPath: "/opt/py/bin/python", pythonExtensionPath: "/ext/python" }, ["/opt/py/bin/python", "/ext/python"], {
        python3: "/usr/bin/python3",
      }),
    );
    assert.deepEqual(r, { ok: true, path: "/opt/py/bin/python", source: "setting" });
  });

  it("reports a setting that names a missing file instead of falling back", () => {
    const r = resolveInterpreter(inputs({ settingPath: "/nope/python" }, [], { python3: "/usr/bin/python3" }));
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.reason : "", /htam\.pythonPath.*\/nope\/python/);
  });

  it("resolves relative, ~ and ${workspaceFolder} settings", () => {
    assert.equal(expandPath(".venv/bin/python", "/ws", "/home/u"), "/ws/.venv/bin/python");
    assert.equal(expandPath("~/venv/bin/python", "/ws", "/home/u"), "/home/u/venv/bin/python");
    assert.equal(expandPath("${workspaceFolder}/v/bin/python", "/ws", "/home/u"), "/ws/v/bin/python");
    const r = resolveInterpreter(inputs({ settingPath: ".venv/bin/python" }, ["/ws/.venv/bin/python"]));
    assert.deepEqual(r, { ok: true, path: "/ws/.venv/bin/python", source: "setting" });
  });

  it("looks a bare setting name up on PATH", () => {
    const r = resolveInterpreter(inputs({ settingPath: "python3.11" }, [], { "python3.11": "/usr/bin/python3.11" }));
    assert.deepEqual(r, { ok: true, path: "/usr/bin/python3.11", source: "setting" });
    const missing = resolveInterpreter(inputs({ settingPath: "python9" }, [], {}));
    assert.equal(missing.ok, false);
  });

  it("uses the Python extension's interpreter when no setting is given", () => {
    const r = resolveInterpreter(inputs({ settingPath: "  ", pythonExtensionPath: "/ext/python" }, ["/ext/python"], { python3: "/usr/bin/python3" }));
    assert.deepEqual(r, { ok: true, path: "/ext/python", source: "python-extension" });
  });

  it("falls back to python3 then python on PATH", () => {
    const gone = resolveInterpreter(inputs({ pythonExtensionPath: "/ext/gone" }, [], { python3: "/usr/bin/python3", python: "/usr/bin/python" }));
    assert.deepEqual(gone, { ok: true, path: "/usr/bin/python3", source: "path" });
    const onlyPython = resolveInterpreter(inputs({}, [], { python: "/usr/bin/python" }));
    assert.deepEqual(onlyPython, { ok: true, path: "/usr/bin/python", source: "path" });
  });

  it("says why when there is no Python at all", () => {
    const r = resolveInterpreter(inputs({}, [], {}));
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.reason : "", /No Python interpreter found/);
  });
});

describe("findOnPath", () => {
  it("returns the first executable match in PATH order (posix)", () => {
    const exe = new Set(["/b/python3", "/c/python3"]);
    assert.equal(findOnPath("python3", "/a::/b:/c", (f) => exe.has(f), "linux"), "/b/python3");
    assert.equal(findOnPath("python3", undefined, () => true, "linux"), undefined);
    assert.equal(findOnPath("python", "/a:/b", (f) => exe.has(f), "linux"), undefined);
  });

  it("tries PATHEXT on Windows", () => {
    const exe = new Set(["C:\\Py\\python.EXE"]);
    assert.equal(findOnPath("python", "C:\\X;C:\\Py", (f) => exe.has(f), "win32"), "C:\\Py\\python.EXE");
  });
});
