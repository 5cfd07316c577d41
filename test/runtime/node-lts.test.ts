// Runs test/runtime/node-lts-smoke.sh: `media serve` under Node 22, the other supported LTS line, from the npm
// registry's `node` package (installed once into .cache/node-lts/), health, an authenticated call
// with the bootstrap key, graceful stop. NODE_LTS_VERSION overrides the pinned version.
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const script = path.join(path.dirname(fileURLToPath(import.meta.url)), "node-lts-smoke.sh");

function run(): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile("bash", [script], { env: process.env, maxBuffer: 16 * 1024 * 1024, timeout: 290_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

describe("runtime: Node.js LTS", () => {
  it("serves health and an authenticated call, then stops cleanly", async () => {
    const { code, output } = await run();
    expect(code, output).toBe(0);
    expect(output).toContain("node-lts-smoke: ok");
  }, 300_000);
});
