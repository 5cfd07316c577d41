// Legacy webhooks on real sockets: the app-level webhook (signed with X-Webhook-Signature) and a
// job's webhook_url, fed by a real job; a failed post is retried on the (scaled) legacy schedule.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, until, startHarness, type Auth, type Harness } from "../harness.js";
import { makeTestCa, serveFile, startMinio, type HttpsPeer, type MinioPeer, type TestCa } from "../peers.js";
import { makeTestInput } from "../media.js";
import { startRecordingReceiver } from "../receivers.js";

let h: Harness;
let ca: TestCa;
let key: Auth;
let minio: MinioPeer;
let web: HttpsPeer;
let work: string;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "media-legacy-"));
  ca = makeTestCa();
  minio = await startMinio(ca, ["legacy-out"]);
  web = await serveFile(ca, await makeTestInput(path.join(work, "in.mp4"), { seconds: 3, width: 320, height: 240, fps: 25, audio: true }));
  h = await startHarness({
    MEDIA_NET_ALLOW: "127.0.0.1/32",
    MEDIA_TLS_CA_FILE: ca.caFile,
    MEDIA_S3_ENDPOINT: minio.endpoint,
    MEDIA_WEBHOOK_RETRY_SCALE: "0.00001",
  });
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
}, 240_000);

afterAll(async () => {
  await h?.server.close();
  await web?.stop();
  await minio?.stop();
});

describe("legacy webhooks", () => {
  it("the app webhook gets its subscribed events signed; the job's webhook_url gets every event; a failed post is retried", async () => {
    const appHook = await startRecordingReceiver(ca);
    const jobHook = await startRecordingReceiver(ca);
    try {
      const token = await h.token(h.boot.user_email);
      const portal: Auth = { bearer: token, org: h.boot.organization_id };
      const updated = await ok(
        call(
          h.base,
          "AppService/Update",
          { id: h.boot.app_id, webhook: { url: `${appHook.url}/legacy`, events: ["job.completed", "output.completed"], regenerate_secret: true } },
          portal,
        ),
      );
      const secret = updated.webhook_secret as string;
      expect(secret).toMatch(/^whsec_/);
      appHook.setSecrets([secret]);
      // The first post to the app's hook fails: it comes again after the (scaled) minute.
      appHook.respondNext({ status: 502 });
      const origin = (
        await ok(
          call(
            h.base,
            "OriginService/Create",
            {
              name: "legacy",
              permissions: ["write"],
              s3: {
                bucket: "legacy-out",
                region: "us-east-1",
                credentials: { access_key_id: minio.admin.accessKeyId, secret_access_key: minio.admin.secretAccessKey },
              },
            },
            key,
          ),
        )
      ).origin.id;
      const { job } = await ok(
        call(
          h.base,
          "JobService/Create",
          {
            input_url: `${web.url}/in.mp4`,
            output_origin_id: origin,
            outputs: [{ type: "mp4", video: [{ codec: "h264", width: 256, height: 144 }] }],
            webhook_url: `${jobHook.url}/per-job`,
          },
          key,
        ),
      );
      const got = await appHook.waitFor(3, 90_000);
      const delivered = got.filter((r) => r.behaviour === "ok");
      expect(delivered.map((r) => (r.json as any).event).sort()).toEqual(["job.completed", "output.completed"]);
      for (const r of got) {
        expect(r.legacyVerified).toBe(true);
        expect(r.headers["x-webhook-signature"]).toMatch(/^[0-9a-f]{64}$/);
        expect(r.json).toMatchObject({ job_id: job.id, app_id: h.boot.app_id, timestamp: expect.any(String) });
      }
      const completed = delivered.find((r) => (r.json as any).event === "job.completed")!.json as any;
      expect(completed.data).toMatchObject({ id: job.id, status: "completed" });
      const output = delivered.find((r) => (r.json as any).event === "output.completed")!.json as any;
      expect(output.data).toMatchObject({ status: "completed", id: expect.stringMatching(/^out_/) });

      // The per-job URL: every event, unsigned (a job has no secret), progress included.
      await until("job.completed at the job's webhook_url", async () =>
        jobHook.requests.some((r) => (r.json as any).event === "job.completed") ? true : undefined,
      );
      // A moment more for a duplicate, which must not come.
      await new Promise((r) => setTimeout(r, 1500));
      const events = jobHook.requests.map((r) => (r.json as any).event);
      expect(events).toContain("job.completed");
      expect(events).toContain("output.completed");
      expect(events).toContain("job.progress");
      expect(events.filter((e) => e === "job.completed")).toHaveLength(1);
      expect(jobHook.requests.every((r) => r.headers["x-webhook-signature"] === undefined)).toBe(true);
    } finally {
      await Promise.all([appHook.stop(), jobHook.stop()]);
    }
  });
});
