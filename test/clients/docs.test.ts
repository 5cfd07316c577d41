// docs/clients.md as a user reads it: every line of its blocks marked `<!-- tested -->` (curl and
// buf curl, one call of every service) runs against a live server and succeeds; and its claim about
// codecs holds: a Connect client generated from proto/ reads our answers with the binary codec and
// misreads them with protobuf JSON (the service writes the spec's lowercase enum names).
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, startHarness, type Harness } from "../harness.js";
import { createMediaClient } from "../../clients/typescript/src/index.js";
import { HealthStatus } from "../../clients/typescript/src/gen/media/v1/health_pb.js";

const run = promisify(execFile);
let h: Harness;

/** The lines of every fenced block right after a `<!-- tested -->` marker. */
function testedLines(markdown: string): string[] {
  const lines: string[] = [];
  for (const m of markdown.matchAll(/<!-- tested -->\n```sh\n([\s\S]*?)```/g)) lines.push(...m[1]!.split("\n").filter((l) => l.trim() !== ""));
  return lines;
}

const lines = testedLines(readFileSync(path.join(ROOT, "docs/clients.md"), "utf8"));

beforeAll(async () => {
  h = await startHarness();
}, 120_000);

afterAll(async () => {
  await h?.server.close();
});

describe("docs/clients.md", () => {
  it("has curl and buf curl lines for every service", () => {
    const services = ["Health", "Organization", "App", "APIKey", "User", "Origin", "Preset", "Job", "Video", "Webhook"];
    for (const tool of ["curl -sS", "npx buf curl"]) {
      for (const s of services)
        expect(
          lines.some((l) => l.startsWith(tool) && l.includes(`/media.v1.${s}Service/`)),
          `${tool} ${s}Service`,
        ).toBe(true);
    }
  });

  it.each(lines.map((line) => [line.replace(/ -H "Authorization[^"]*"/, "").slice(0, 110), line]))(
    "runs: %s",
    async (_name, line) => {
      const env = { ...process.env, MEDIA_URL: h.base, MEDIA_API_KEY: h.boot.api_key, MEDIA_ORGANIZATION_ID: h.boot.organization_id };
      const { stdout } = await run("bash", ["-euo", "pipefail", "-c", line], { cwd: ROOT, env }).catch((e: { stdout: string; stderr: string }) => {
        throw new Error(`failed: ${line}\n${e.stdout}\n${e.stderr}`);
      });
      const answer = JSON.parse(stdout);
      expect(answer.code, stdout).toBeUndefined();
      // The service's JSON has lowercase enums; buf curl renders the binary answer as protobuf JSON.
      if (line.includes("HealthService")) expect(answer.status).toBe(line.startsWith("curl") ? "healthy" : "HEALTH_STATUS_HEALTHY");
    },
    60_000,
  );

  it("is right about codecs: a generated client reads our answers in binary, not with protobuf JSON", async () => {
    const binary = createMediaClient({ baseUrl: h.base });
    expect((await binary.health.check({})).status).toBe(HealthStatus.HEALTHY);
    // connect-es reads protobuf JSON ignoring what it does not know: the lowercase "healthy" is
    // dropped without a word and the status reads as unspecified (a strict reader refuses it).
    const json = createMediaClient({ baseUrl: h.base, useJson: true, maxAttempts: 1 });
    expect((await json.health.check({})).status).toBe(HealthStatus.UNSPECIFIED);
  });
});
