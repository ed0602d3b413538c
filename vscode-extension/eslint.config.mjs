// Flat config: eslint recommended + typescript-eslint recommended (type-aware) for the extension sources and tests.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "out/", "dist/", "test/e2e/artifacts/", "eslint.config.mjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      eqeqeq: ["error", "always"],
      curly: "error",
    },
  },
  {
    // node:test's describe/it return promises that the runner awaits itself.
    files: ["test/unit/**/*.ts"],
    rules: { "@typescript-eslint/no-floating-promises": "off" },
  },
);
