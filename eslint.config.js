// Lint: a few rules that catch real bugs and keep the layers pointing one way, not style.
// Layers, bottom to top (a folder imports only from folders below it):
//   src/ (shared kernel) ← actors/ ← wire/ ← gateway/, delivery/ ← main/ (composition root)
//   src/, actors/job/messages.ts ← encoder-node/ ← main/
// One folder per entity under actors/ (api-key/, job/, scheduler/, video/, webhook-endpoint/); an
// entity's messages.ts is its protocol (its reference, records, commands, replies and tables):
// outside its folder nothing else of it is imported, but by main/ (which registers behaviours),
// specs and test/. The encoder nodes speak the job's and the queue's protocols too.
// No import cycles, type-only imports included (scripts/eslint/no-import-cycle.js).
// test/ and bin/ may import anything.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";
import importX from "eslint-plugin-import-x";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";
import noImportCycle from "./scripts/eslint/no-import-cycle.js";

const TOP = ["./main", "./gateway", "./delivery", "./wire", "./actors", "./encoder-node"];
/** Folders a layer must not import: everything above it and its peers. */
const zone = (target, from, message) => ({ target, from, message });
const LAYERS = [
  zone("./src", TOP, "the shared kernel (src/) imports nothing above it"),
  zone("./actors", ["./main", "./gateway", "./delivery", "./wire", "./encoder-node"], "actors/ import only the kernel (src/) and each other"),
  zone("./wire", ["./main", "./gateway", "./delivery", "./encoder-node"], "wire/ (records to wire messages) imports only src/ and actors/"),
  zone("./gateway", ["./main", "./delivery", "./encoder-node"], "gateway/ imports only src/, actors/ and wire/"),
  zone("./delivery", ["./main", "./gateway", "./encoder-node"], "delivery/ imports only src/, actors/ and wire/"),
  zone("./encoder-node", ["./main", "./gateway", "./delivery", "./wire"], "encoder-node/ imports only the kernel (src/) and the job's messages"),
  {
    target: "./encoder-node",
    from: "./actors",
    except: ["./job/messages.ts", "./scheduler/messages.ts"],
    message:
      "encoder-node/ speaks the job's and the encode queue's messages (actors/job/messages.ts, actors/scheduler/messages.ts), nothing else of the actors",
  },
  // The web console runs in browsers and speaks to the service only through the generated clients.
  zone("./console", ["./main", "./gateway", "./delivery", "./wire", "./actors", "./encoder-node"], "console/ calls the API; it imports only src/gen"),
  { target: "./console", from: "./src", except: ["./gen"], message: "console/ imports only the generated clients and messages of src/gen" },
];
/** The entities: one folder each under actors/, its protocol in messages.ts. */
const ENTITIES = ["api-key", "job", "scheduler", "video", "webhook-endpoint"];
const PROTOCOL_FILES = ["./entity.ts", ...ENTITIES.map((e) => `./${e}/messages.ts`)];
/** An entity's messages import only the kernel, the entity reference and other entities' messages. */
const PROTOCOLS = ENTITIES.map((e) => ({
  target: `./actors/${e}/messages.ts`,
  from: "./actors",
  except: PROTOCOL_FILES,
  message: "an entity's messages import only the kernel (src/), actors/entity.ts and other entities' messages",
}));
/** Outside an entity's folder, only its messages: callers ask by reference; main/ registers the behaviour. */
const ENTITY_BOUNDARIES = ENTITIES.map((e) => ({
  target: ["./src", "./wire", "./gateway", "./delivery", "./encoder-node", "./actors/*.ts", ...ENTITIES.filter((o) => o !== e).map((o) => `./actors/${o}`)],
  from: `./actors/${e}`,
  except: ["./messages.ts"],
  message: `outside actors/${e}/ import only its protocol, actors/${e}/messages.ts (ask and tell take its reference; main/ registers the behaviour)`,
}));
// Generated code, dependencies, and tool folders (.cache, .infra, .venv-fuzz: binaries and third-party files).
// local/no-import-cycle gets the same list, so it follows no import into them.
const IGNORES = [
  "node_modules/**",
  "src/gen/**",
  "clients/typescript/src/gen/**",
  "clients/go/**",
  "clients/python/**",
  "test/conformance/gen/**",
  "data/**",
  ".*/**",
];

// ── encoder-node/ (issue #42): the rooms of the encoder and the way their imports point ──────────
// planners (plan.ts, planners/, renditions.ts, video-args.ts, hdr.ts: pure) ← executors (ffmpeg.ts, packager.ts,
// probe.ts, ...) and manifests/ ← steps/ ← tasks/ ← node.ts (the lease loop). Planners import no
// file system, no process and no executor (types excepted: a plan names a ProbeResult); plans and
// facts are readonly in their types, and encoder-node/pipeline.spec.ts deep-freezes every plan.
const ENCODER_PLANNERS = [
  "encoder-node/plan.ts",
  "encoder-node/planners/**/*.ts",
  "encoder-node/renditions.ts",
  "encoder-node/video-args.ts",
  "encoder-node/hdr.ts",
];
const ENCODER_EXECUTORS = [
  "executor",
  "packager",
  "probe",
  "progressive",
  "vmaf",
  "content-aware",
  "thumbnails",
  "subtitle-tracks",
  "recogniser",
  "chunks",
  "codec-sniff",
  "prerequisites",
];
// ffmpeg.ts and subtitles.ts serve callers outside the pipeline: an executor, then manifests/.
const ENCODER_FACADES = ["./encoder-node/ffmpeg.ts", "./encoder-node/subtitles.ts"];
const ENCODER_ABOVE_PLANNERS = [...ENCODER_EXECUTORS, "ffmpeg", "subtitles", "node", "lease", "reports"];
const encoderRoom = (target, from, message) => zone(target, from, `encoder-node/: ${message}`);
const ENCODER_ROOMS = [
  encoderRoom(
    "./encoder-node/manifests",
    ["./encoder-node/steps", "./encoder-node/tasks", "./encoder-node/node.ts", "./encoder-node/lease.ts", "./encoder-node/reports.ts"],
    "manifests/ write from plan and facts; they know no step, task or loop",
  ),
  encoderRoom("./encoder-node/steps", ["./encoder-node/tasks", "./encoder-node/node.ts"], "an output's steps know no task and no loop"),
  encoderRoom("./encoder-node/tasks", ["./encoder-node/node.ts"], "a task knows nothing of the lease loop that runs it"),
  encoderRoom(
    ENCODER_EXECUTORS.map((e) => `./encoder-node/${e}.ts`),
    ["./encoder-node/steps", "./encoder-node/tasks", "./encoder-node/node.ts"],
    "an executor reports facts; it knows no step, task or loop",
  ),
  encoderRoom(
    [...ENCODER_EXECUTORS.map((e) => `./encoder-node/${e}.ts`), "./encoder-node/manifests"],
    ENCODER_FACADES,
    "ffmpeg.ts and subtitles.ts run an executor and then the manifests, for callers outside the pipeline; neither side imports them",
  ),
];
const ENCODER_FILES = ["encoder-node/**/*.ts"];
const ENCODER_SPECS = ["**/*.spec.ts", "**/*.fixtures.ts"];
const encoderBlocks = [
  // Specs too: no file in encoder-node/ passes 500 lines.
  { files: ENCODER_SPECS.map((g) => `encoder-node/${g}`), rules: { "max-lines": ["error", { max: 500 }] } },
  {
    files: ENCODER_FILES,
    ignores: ENCODER_SPECS,
    rules: {
      "import-x/no-restricted-paths": ["error", { zones: [...LAYERS, ...PROTOCOLS, ...ENTITY_BOUNDARIES, ...ENCODER_ROOMS] }],
      // A file that passes 500 lines is asking to be split along a real seam (docs/STYLE.md); a
      // function over 150 is one the next feature should split (the longest, thumbnails.ts's
      // renderOne, has 130).
      "max-lines": ["error", { max: 500 }],
      "max-lines-per-function": ["error", { max: 150, skipBlankLines: true, skipComments: true }],
    },
  },
  // The node loop stays one a newcomer reads at a sitting: leasing, drain and health, nothing else.
  { files: ["encoder-node/node.ts"], rules: { "max-lines": ["error", { max: 250 }] } },
  {
    files: ENCODER_PLANNERS,
    ignores: ENCODER_SPECS,
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          paths: ["node:fs", "node:fs/promises", "node:child_process", "fs", "fs/promises", "child_process"].map((name) => ({
            name,
            message: "planners are pure: no file system, no processes",
          })),
          patterns: [
            {
              regex: `(^|/)(${ENCODER_ABOVE_PLANNERS.join("|")})\\.js$`,
              allowTypeImports: true,
              message: "planners import no executor: executors take plans, planners never call them",
            },
            { regex: "(^|/)(manifests|steps|tasks)/", message: "planners import nothing above them" },
          ],
        },
      ],
    },
  },
  // One small planner per concern: a planner that passes 60 lines is doing two things.
  {
    files: ENCODER_PLANNERS,
    ignores: ENCODER_SPECS,
    rules: { "max-lines-per-function": ["error", { max: 60, skipBlankLines: true, skipComments: true }] },
  },
];

export default defineConfig(
  { ignores: IGNORES },
  {
    files: ["**/*.ts", "console/src/**/*.tsx"],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: { allowDefaultProject: ["vitest.config.ts"] }, tsconfigRootDir: import.meta.dirname, ecmaFeatures: { jsx: true } },
    },
    plugins: { "@typescript-eslint": tseslint.plugin, "import-x": importX, local: { rules: { "no-import-cycle": noImportCycle } } },
    settings: {
      "import-x/resolver-next": [createTypeScriptImportResolver({ project: "./tsconfig.json" })],
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "import-x/no-cycle": ["error", { maxDepth: Infinity }],
      // import-x/no-cycle skips type-only imports; this one follows them too (scripts/eslint/no-import-cycle.js).
      "local/no-import-cycle": ["error", { root: import.meta.dirname, ignores: IGNORES }],
      "import-x/no-restricted-paths": ["error", { zones: [...LAYERS, ...PROTOCOLS, ...ENTITY_BOUNDARIES] }],
    },
  },
  // Specs and fixtures may reach into any entity (a spec of the wire mapping runs a job's decisions).
  {
    files: ["**/*.spec.ts", "**/*.fixtures.ts"],
    rules: { "import-x/no-restricted-paths": ["error", { zones: [...LAYERS, ...PROTOCOLS] }] },
  },
  // The player page's script runs in browsers as it stands (ES2017, a classic script, no build).
  {
    files: ["gateway/player/*.js"],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 2017, sourceType: "script", globals: { ...globals.browser } },
    rules: { ...js.configs.recommended.rules, strict: ["error", "global"], "no-var": "off" },
  },
  ...encoderBlocks,
);
