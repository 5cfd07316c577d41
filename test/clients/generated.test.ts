// Each SDK's generated code (committed under its gen/) is what its buf.gen.yaml makes from proto/
// today: regenerated into a temporary folder and compared file by file. A proto change without a
// regeneration fails here, naming the command.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../harness.js";

const run = promisify(execFile);

/** Every file under `dir`, relative to it, with its text. */
function tree(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.parentPath.includes("__pycache__")) continue;
    const full = path.join(entry.parentPath, entry.name);
    files.set(path.relative(dir, full), readFileSync(full, "utf8"));
  }
  return files;
}

beforeAll(async () => {
  await run("bash", [path.join(ROOT, "clients/setup.sh")], { cwd: ROOT });
}, 600_000);

describe("the SDKs' generated code is fresh", () => {
  it.each([
    ["typescript", "clients/typescript/src/gen"],
    ["go", "clients/go/gen"],
    ["python", "clients/python/media_sdk/gen"],
  ])(
    "%s (%s)",
    async (sdk, gen) => {
      const out = mkdtempSync(path.join(tmpdir(), `media-gen-${sdk}-`));
      try {
        await run(path.join(ROOT, "node_modules/.bin/buf"), ["generate", "--template", `clients/${sdk}/buf.gen.yaml`, "-o", out], { cwd: ROOT });
        const fresh = tree(path.join(out, gen));
        const committed = tree(path.join(ROOT, gen));
        expect(fresh.size).toBeGreaterThan(10);
        const stale = [...new Set([...fresh.keys(), ...committed.keys()])].filter((f) => fresh.get(f) !== committed.get(f));
        expect(stale, `${gen} is stale: run npx buf generate --template clients/${sdk}/buf.gen.yaml`).toEqual([]);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
