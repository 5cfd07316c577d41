// The shared webhook vectors (clients/webhook-vectors.json) through each SDK's helper: every case
// accepted or refused as the file says, for its reason. The server's signer makes the same headers
// (src/webhooks/sign.spec.ts).
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../harness.js";
import { verifyWebhook, WebhookVerificationError } from "../../clients/typescript/src/index.js";

interface Case {
  name: string;
  header: string;
  body: string;
  secrets: string[];
  now: number;
  tolerance_seconds: number;
  valid: boolean;
  reason?: string;
}
const vectors = JSON.parse(readFileSync(path.join(ROOT, "clients/webhook-vectors.json"), "utf8")) as { verifying: Case[] };

describe("the TypeScript webhook helper passes the shared vectors", () => {
  it.each(vectors.verifying)("$name", (v) => {
    const verdict = (() => {
      try {
        const event = verifyWebhook(Buffer.from(v.body, "utf8"), v.header, v.secrets, { nowSeconds: v.now, toleranceSeconds: v.tolerance_seconds });
        return { valid: true, type: event.type };
      } catch (e) {
        if (!(e instanceof WebhookVerificationError)) throw e;
        return { valid: false, reason: e.reason };
      }
    })();
    expect(verdict).toEqual(v.valid ? { valid: true, type: "job.succeeded" } : { valid: false, reason: v.reason });
  });

  it("refuses to verify without a secret, rather than accepting anything", () => {
    expect(() => verifyWebhook("{}", "t=1,v1=00", [])).toThrow(TypeError);
    expect(() => verifyWebhook("{}", "t=1,v1=00", [""])).toThrow(TypeError);
  });
});

// The Go and Python helpers, each with its own toolchain and test runner (go test, pytest).
describe("the Go and Python webhook helpers pass the shared vectors", () => {
  const run = promisify(execFile);
  beforeAll(async () => {
    await run("bash", [path.join(ROOT, "clients/setup.sh")], { cwd: ROOT });
  }, 600_000);

  it("Go: go test (clients/go/webhook_test.go)", async () => {
    const { stdout } = await run("go", ["test", "-count=1", "-run", "TestWebhookVectors", "-v", "."], { cwd: path.join(ROOT, "clients/go") });
    expect(stdout.match(/--- PASS: TestWebhookVectors\//g)?.length).toBe(vectors.verifying.length);
    expect(stdout).not.toContain("--- FAIL");
  }, 120_000);

  it("Python: pytest (clients/python/tests/test_webhooks.py)", async () => {
    const { stdout } = await run(path.join(ROOT, ".venv-clients/bin/python"), ["-m", "pytest", "-q", "tests/test_webhooks.py"], {
      cwd: path.join(ROOT, "clients/python"),
    });
    expect(stdout).toContain(`${vectors.verifying.length + 1} passed`);
  }, 120_000);
});
