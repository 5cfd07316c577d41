// The shared webhook vectors (clients/webhook-vectors.json) through each SDK's helper: every case
// accepted or refused as the file says, for its reason. The server's signer makes the same headers
// (src/webhooks/sign.spec.ts).
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
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
