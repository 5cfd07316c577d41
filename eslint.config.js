// Lint: a few rules that catch real bugs and keep the layers pointing one way, not style.
// Layers, bottom to top (a folder imports only from folders below it):
//   src/ (shared kernel) ← actors/ ← wire/ ← gateway/, delivery/ ← main/ (composition root)
//   src/, actors/job/messages.ts ← encoder-node/ ← main/
// One folder per entity under actors/ (job/, webhook-endpoint/, api-key/); an entity's messages
// file is its protocol, which the encoder nodes speak too.
// test/ and bin/ may import anything.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";
import importX from "eslint-plugin-import-x";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";

const TOP = ["./main", "./gateway", "./delivery", "./wire", "./actors", "./encoder-node"];
/** Folders a layer must not import: everything above it and its peers. */
const zone = (target, from, message) => ({ target, from, message });

export default defineConfig(
  // Generated code, dependencies, and tool folders (.cache, .infra, .venv-fuzz: binaries and third-party files).
  { ignores: ["node_modules/**", "src/gen/**", "test/conformance/gen/**", "data/**", ".*/**"] },
  {
    files: ["**/*.ts"],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: { allowDefaultProject: ["vitest.config.ts"] }, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@typescript-eslint": tseslint.plugin, "import-x": importX },
    settings: {
      "import-x/resolver-next": [createTypeScriptImportResolver({ project: "./tsconfig.json" })],
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "import-x/no-cycle": ["error", { maxDepth: Infinity }],
      "import-x/no-restricted-paths": [
        "error",
        {
          zones: [
            zone("./src", TOP, "the shared kernel (src/) imports nothing above it"),
            zone("./actors", ["./main", "./gateway", "./delivery", "./wire", "./encoder-node"], "actors/ import only the kernel (src/) and each other"),
            zone("./wire", ["./main", "./gateway", "./delivery", "./encoder-node"], "wire/ (records to wire messages) imports only src/ and actors/"),
            zone("./gateway", ["./main", "./delivery", "./encoder-node"], "gateway/ imports only src/, actors/ and wire/"),
            zone("./delivery", ["./main", "./gateway", "./encoder-node"], "delivery/ imports only src/, actors/ and wire/"),
            zone("./encoder-node", ["./main", "./gateway", "./delivery", "./wire"], "encoder-node/ imports only the kernel (src/) and the job's messages"),
            { target: "./encoder-node", from: "./actors", except: ["./job/messages.ts", "./scheduler/messages.ts"], message: "encoder-node/ speaks the job's and the encode queue's messages (actors/job/messages.ts, actors/scheduler/messages.ts), nothing else of the actors" },
            zone("./actors/job/messages.ts", ["./actors/host.ts", "./actors/outbox.ts", "./actors/commands.ts", "./actors/ledger.ts", "./actors/job/job.ts", "./actors/webhook-endpoint", "./actors/api-key"], "an entity's messages import only the kernel"),
            zone("./actors/scheduler/messages.ts", ["./actors/host.ts", "./actors/outbox.ts", "./actors/commands.ts", "./actors/ledger.ts", "./actors/job", "./actors/scheduler/scheduler.ts", "./actors/webhook-endpoint", "./actors/api-key", "./actors/video"], "an entity's messages import only the kernel"),
          ],
        },
      ],
    },
  },
  // The player page's script runs in browsers as it stands (ES2017, a classic script, no build).
  {
    files: ["gateway/player/*.js"],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 2017, sourceType: "script", globals: { ...globals.browser } },
    rules: { ...js.configs.recommended.rules, strict: ["error", "global"], "no-var": "off" },
  },
);
