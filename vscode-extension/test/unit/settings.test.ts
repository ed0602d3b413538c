import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { DEFAULTS, getterFromObject, toInitializationOptions } from "../../src/settings";

const none = () => undefined;

describe("toInitializationOptions", () => {
  it("gives the defaults when nothing is set", () => {
    const r = toInitializationOptions(none);
    assert.deepEqual(r.options, DEFAULTS);
    assert.deepEqual(r.warnings, []);
  });

  it("maps every setting to the server's option names", () => {
    const settings = {
      engine: "llm",
      llm: { baseUrl: "http://127.0.0.1:8000/v1", model: "qwen2.5-coder", apiKeyEnv: "MY_KEY" },
      gpuIndex: 3,
      budget: 20,
      memoryPath: "${workspaceFolder}/.htam/memory.sqlite",
      topN: 7,
      static: true,
    };
    const r = toInitializationOptions(getterFromObject(settings), { workspaceFolder: "/ws", home: "/home/u" });
    assert.deepEqual(r.warnings, []);
    assert.deepEqual(r.options, {
      engine: "llm",
      llm: { baseUrl: "http://127.0.0.1:8000/v1", model: "qwen2.5-coder", apiKeyEnv: "MY_KEY" },
      gpuIndex: 3,
      budget: 20,
      memoryPath: "/ws/.htam/memory.sqlite",
      topN: 7,
      static: true,
    });
  });

  it("turns empty strings into null (server default) and expands ~", () => {
    const r = toInitializationOptions(getterFromObject({ llm: { baseUrl: "  ", model: "" }, memoryPath: "~/m.db" }), { home: "/home/u" });
    assert.equal(r.options.llm.baseUrl, null);
    assert.equal(r.options.llm.model, null);
    assert.equal(r.options.memoryPath, "/home/u/m.db");
  });

  it("reports invalid values and falls back to defaults", () => {
    const r = toInitializationOptions(
      getterFromObject({
        engine: "gpt",
        llm: { baseUrl: "ftp://x", apiKeyEnv: "1-BAD" },
        gpuIndex: -1,
        budget: 2.5,
        topN: "5",
        static: "yes",
      }),
    );
    assert.deepEqual(r.options, DEFAULTS);
    assert.equal(r.warnings.length, 7);
    for (const key of ["engine", "llm.baseUrl", "llm.apiKeyEnv", "gpuIndex", "budget", "topN", "static"]) {
      assert.ok(r.warnings.some((w) => w.startsWith(`htam.${key}:`)), `warning for ${key}`);
    }
  });

  it("never carries an API key", () => {
    const r = toInitializationOptions(getterFromObject({ llm: { apiKey: "sk-secret" } }));
    assert.ok(!JSON.stringify(r.options).includes("sk-secret"));
  });
});

describe("package.json contributes.configuration", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "..", "package.json"), "utf8")) as {
    contributes: { configuration: { properties: Record<string, { default: unknown; description?: string; markdownDescription?: string; type: string }> } };
  };
  const props = pkg.contributes.configuration.properties;

  it("declares every documented setting with a type, default and description", () => {
    for (const key of [
      "htam.pythonPath", "htam.engine", "htam.llm.baseUrl", "htam.llm.model", "htam.llm.apiKeyEnv", "htam.gpuIndex",
      "htam.budget", "htam.memoryPath", "htam.topN", "htam.static", "htam.server.path", "htam.server.args", "htam.trace.server",
    ]) {
      const p = props[key];
      assert.ok(p, `${key} declared`);
      assert.ok(p.type, `${key} type`);
      assert.ok("default" in p, `${key} default`);
      assert.ok(p.description || p.markdownDescription, `${key} description`);
    }
  });

  it("has the same defaults as the settings module", () => {
    const fromPkg: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(props)) {
      fromPkg[k.replace(/^htam\./, "")] = v.default;
    }
    const nested = {
      engine: fromPkg["engine"],
      llm: { baseUrl: fromPkg["llm.baseUrl"], model: fromPkg["llm.model"], apiKeyEnv: fromPkg["llm.apiKeyEnv"] },
      gpuIndex: fromPkg["gpuIndex"],
      budget: fromPkg["budget"],
      memoryPath: fromPkg["memoryPath"],
      topN: fromPkg["topN"],
      static: fromPkg["static"],
    };
    const r = toInitializationOptions(getterFromObject(nested));
    assert.deepEqual(r.warnings, []);
    assert.deepEqual(r.options, DEFAULTS);
  });
});
