/**
 * HTAM settings -> server initializationOptions (pure: no `vscode` import, unit-tested).
 *
 * The same shape answers `workspace/configuration` for section "htam" (see README "Server contract"),
 * so the server sees one format whether it reads its options at start-up or later.
 * Invalid values fall back to their defaults and are reported as warnings; the API key is never part of it.
 */

/** Engines the server accepts. */
export const ENGINES = ["rules", "llm"] as const;
export type Engine = (typeof ENGINES)[number];

/** The options sent as `initializationOptions` and as the `htam` configuration section. */
export interface InitializationOptions {
  engine: Engine;
  llm: {
    /** OpenAI-compatible base URL; null: the server's default. */
    baseUrl: string | null;
    /** Model name; null: the server's default. */
    model: string | null;
    /** Name of the environment variable that holds the API key (the key itself is never sent). */
    apiKeyEnv: string;
  };
  /** CUDA device index used for profiling. */
  gpuIndex: number;
  /** Candidates one auto-optimize run may try. */
  budget: number;
  /** HTAM memory (SQLite) path; null: the server's default. */
  memoryPath: string | null;
  /** Number of ranked steps offered as code actions. */
  topN: number;
  /** Force static profiling (compiler resource usage only) even when a GPU is present. */
  static: boolean;
}

/** Defaults (the server's too: htam_core/editor/settings.py); keep in sync with `contributes.configuration` in package.json (a unit test checks it). */
export const DEFAULTS: InitializationOptions = {
  engine: "rules",
  llm: { baseUrl: null, model: null, apiKeyEnv: "OPENAI_API_KEY" },
  gpuIndex: 0,
  budget: 8,
  memoryPath: null,
  topN: 5,
  static: false,
};

/** Reads one setting by its key relative to the `htam` section, e.g. "llm.baseUrl"; undefined when unset. */
export type SettingGetter = (key: string) => unknown;

/** Result of {@link toInitializationOptions}. */
export interface SettingsResult {
  options: InitializationOptions;
  /** One sentence per invalid setting, naming the setting, the bad value and the default used. */
  warnings: string[];
}

/** Path expansion context for `htam.memoryPath`. */
export interface PathContext {
  workspaceFolder?: string;
  home?: string;
}

function intIn(get: SettingGetter, key: string, min: number, max: number, dflt: number, warnings: string[]): number {
  const v = get(key);
  if (v === undefined || v === null) {
    return dflt;
  }
  if (typeof v === "number" && Number.isInteger(v) && v >= min && v <= max) {
    return v;
  }
  warnings.push(`htam.${key}: ${JSON.stringify(v)} is not an integer in [${min}, ${max}]; using ${dflt}.`);
  return dflt;
}

function bool(get: SettingGetter, key: string, dflt: boolean, warnings: string[]): boolean {
  const v = get(key);
  if (v === undefined || v === null) {
    return dflt;
  }
  if (typeof v === "boolean") {
    return v;
  }
  warnings.push(`htam.${key}: ${JSON.stringify(v)} is not true or false; using ${dflt}.`);
  return dflt;
}

function optionalString(get: SettingGetter, key: string, warnings: string[]): string | null {
  const v = get(key);
  if (v === undefined || v === null) {
    return null;
  }
  if (typeof v !== "string") {
    warnings.push(`htam.${key}: ${JSON.stringify(v)} is not a string; using the server default.`);
    return null;
  }
  const t = v.trim();
  return t === "" ? null : t;
}

function expand(p: string, ctx: PathContext): string {
  let out = p;
  if (ctx.home) {
    out = out.replace(/\$\{userHome\}/g, ctx.home);
    if (out === "~" || out.startsWith("~/")) {
      out = ctx.home + out.slice(1);
    }
  }
  if (ctx.workspaceFolder) {
    out = out.replace(/\$\{workspaceFolder\}/g, ctx.workspaceFolder);
  }
  return out;
}

/** Build the server options from the `htam.*` settings; never throws. */
export function toInitializationOptions(get: SettingGetter, ctx: PathContext = {}): SettingsResult {
  const warnings: string[] = [];
  let engine: Engine = DEFAULTS.engine;
  const rawEngine = get("engine");
  if (rawEngine !== undefined && rawEngine !== null) {
    if (typeof rawEngine === "string" && (ENGINES as readonly string[]).includes(rawEngine)) {
      engine = rawEngine as Engine;
    } else {
      warnings.push(`htam.engine: ${JSON.stringify(rawEngine)} is not one of ${ENGINES.join(", ")}; using ${DEFAULTS.engine}.`);
    }
  }
  let baseUrl = optionalString(get, "llm.baseUrl", warnings);
  if (baseUrl !== null && !/^https?:\/\/[^\s]+$/.test(baseUrl)) {
    warnings.push(`htam.llm.baseUrl: "${baseUrl}" is not an http(s) URL; using the server default.`);
    baseUrl = null;
  }
  const model = optionalString(get, "llm.model", warnings);
  let apiKeyEnv = optionalString(get, "llm.apiKeyEnv", warnings) ?? DEFAULTS.llm.apiKeyEnv;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(apiKeyEnv)) {
    warnings.push(`htam.llm.apiKeyEnv: "${apiKeyEnv}" is not an environment variable name; using ${DEFAULTS.llm.apiKeyEnv}.`);
    apiKeyEnv = DEFAULTS.llm.apiKeyEnv;
  }
  const memoryRaw = optionalString(get, "memoryPath", warnings);
  const options: InitializationOptions = {
    engine,
    llm: { baseUrl, model, apiKeyEnv },
    gpuIndex: intIn(get, "gpuIndex", 0, 63, DEFAULTS.gpuIndex, warnings),
    budget: intIn(get, "budget", 1, 64, DEFAULTS.budget, warnings),
    memoryPath: memoryRaw === null ? null : expand(memoryRaw, ctx),
    topN: intIn(get, "topN", 1, 20, DEFAULTS.topN, warnings),
    static: bool(get, "static", DEFAULTS.static, warnings),
  };
  return { options, warnings };
}

/**
 * A getter over a nested settings object as VS Code returns it for section "htam"
 * (e.g. `{llm: {baseUrl: ...}}`), for the `workspace/configuration` middleware and for tests.
 */
export function getterFromObject(obj: unknown): SettingGetter {
  return (key: string) => {
    let cur: unknown = obj;
    for (const part of key.split(".")) {
      if (cur === null || typeof cur !== "object") {
        return undefined;
      }
      cur = (cur as Record<string, unknown>)[part];
    }
    return cur;
  };
}
