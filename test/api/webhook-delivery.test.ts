// Signed webhook deliveries on real sockets: HTTPS receivers on loopback verify every delivery the
// way Stripe's and Mux's verifiers do, faults are injected for real (500, hangs, resets, closed
// connections, refused connections, a name that turns private), and a real job's events arrive
// once each. The retry schedule is scaled down (MEDIA_WEBHOOK_RETRY_SCALE) so 15 attempts take
// seconds. Runs against both deployments.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, until, startHarness, type Auth, type Harness } from "../harness.js";
import { makeTestCa, serveFile, startMinio, type HttpsPeer, type MinioPeer, type TestCa } from "../peers.js";
import { makeTestInput } from "../media.js";
import { closedPortUrl, startRecordingReceiver, type RecordingReceiver } from "../receivers.js";

let h: Harness;
let ca: TestCa;
let key: Auth;
let minio: MinioPeer;
let web: HttpsPeer;
let work: string;
const HOSTS = "/etc/hosts";
// One name per test process: the embedded and cluster runs of this file may overlap.
const REBIND = `media-rebind-${process.pid}.test`;

/** Points REBIND at `ip` in /etc/hosts (read at each lookup), or removes it. */
function pointRebind(ip: string | undefined): void {
  const kept = readFileSync(HOSTS, "utf8")
    .split("\n")
    .filter((l) => !l.includes(REBIND));
  while (kept.length > 0 && kept.at(-1) === "") kept.pop();
  writeFileSync(HOSTS, `${[...kept, ...(ip ? [`${ip} ${REBIND}`] : [])].join("\n")}\n`);
}

async function endpoint(url: string, events: string[] = ["*"]): Promise<{ id: string; secret: string }> {
  const body = await ok(call(h.base, "WebhookService/CreateWebhookEndpoint", { url, enabled_events: events }, key));
  return { id: body.endpoint.id, secret: body.endpoint.secret };
}

async function deliveries(endpointId: string): Promise<any[]> {
  return (await ok(call(h.base, "WebhookService/ListWebhookDeliveries", { endpoint_id: endpointId, pagination: { limit: 100 } }, key))).deliveries;
}

/** The delivery of a test event once it is in one of `statuses`. */
async function testDelivery(endpointId: string, statuses: string[], eventType = "job.succeeded"): Promise<any> {
  const sent = (await ok(call(h.base, "WebhookService/SendTestWebhook", { endpoint_id: endpointId, event_type: eventType }, key))).delivery;
  return until(`delivery ${sent.id} in ${statuses.join("/")}`, async () =>
    (await deliveries(endpointId)).find((d) => d.id === sent.id && statuses.includes(d.status)),
  );
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "media-webhooks-"));
  ca = makeTestCa();
  minio = await startMinio(ca, ["hooks-out"]);
  web = await serveFile(ca, await makeTestInput(path.join(work, "in.mp4"), { seconds: 1, width: 320, height: 240, fps: 25, audio: true }));
  // A name that resolves to loopback when the endpoint is created and to a private address later:
  // DNS rebinding, which the guard must catch at connect time.
  pointRebind("127.0.0.1");
  h = await startHarness({
    MEDIA_NET_ALLOW: "127.0.0.1/32",
    MEDIA_TLS_CA_FILE: ca.caFile,
    MEDIA_S3_ENDPOINT: minio.endpoint,
    MEDIA_WEBHOOK_RETRY_SCALE: "0.00001",
    // Long enough that a slow but successful answer is never taken for a timeout (and retried).
    MEDIA_WEBHOOK_TIMEOUT_MS: "3000",
  });
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
}, 240_000);

afterAll(async () => {
  pointRebind(undefined);
  await h?.server.close();
  await web?.stop();
  await minio?.stop();
});

describe("signed webhook deliveries", () => {
  it("a job's events reach every subscribed endpoint once each, signed, with Webhook-Id = event id", async () => {
    const a = await startRecordingReceiver(ca);
    const b = await startRecordingReceiver(ca);
    const c = await startRecordingReceiver(ca);
    try {
      const ea = await endpoint(`${a.url}/hooks`);
      const eb = await endpoint(`${b.url}/hooks`, ["job.succeeded"]);
      const ec = await endpoint(`${c.url}/hooks`, ["job.failed"]);
      a.setSecrets([ea.secret]);
      b.setSecrets([eb.secret]);
      c.setSecrets([ec.secret]);
      const origin = (
        await ok(
          call(
            h.base,
            "OriginService/Create",
            {
              name: "hooks",
              permissions: ["write"],
              s3: {
                bucket: "hooks-out",
                region: "us-east-1",
                credentials: { access_key_id: minio.admin.accessKeyId, secret_access_key: minio.admin.secretAccessKey },
              },
            },
            key,
          ),
        )
      ).origin.id;
      const createdJob = await call(
        h.base,
        "JobService/Create",
        {
          input_url: `${web.url}/in.mp4`,
          output_origin_id: origin,
          outputs: [{ type: "mp4", video: [{ codec: "h264", width: 256, height: 144 }] }],
          metadata: { order: "o-7" },
        },
        key,
      );
      const { job } = await ok(Promise.resolve(createdJob));
      const requestId = createdJob.headers.get("x-request-id");
      const got = await a.waitFor(2, 90_000);
      const types = got.map((r) => (r.json as any).type).sort();
      expect(types).toEqual(["job.succeeded", "output.ready"]);
      for (const r of got) {
        expect(r.verified, r.headers["media-signature"] as string).toBe(true);
        const body = r.json as any;
        expect(r.headers["webhook-id"]).toBe(body.id);
        expect(body).toMatchObject({ object: "event", api_version: expect.any(String), created_at: expect.any(String) });
        expect(body.id).toMatch(/^evt_/);
      }
      const succeeded = got.find((r) => (r.json as any).type === "job.succeeded")!.json as any;
      expect(succeeded.data).toMatchObject({ id: job.id, status: "completed", metadata: { order: "o-7" } });
      expect((await b.waitFor(1, 30_000))[0]!.verified).toBe(true);
      expect(((await b.waitFor(1))[0]!.json as any).type).toBe("job.succeeded");
      // Nothing more arrives: once each, and nothing for the endpoint that wanted job.failed.
      await new Promise((r) => setTimeout(r, 1000));
      expect(a.requests).toHaveLength(2);
      expect(b.requests).toHaveLength(1);
      expect(c.requests).toHaveLength(0);

      // The ledger: both events, newest first, frozen data, pending_webhooks back to 0.
      const events = (await ok(call(h.base, "WebhookService/ListEvents", {}, key))).events as any[];
      const mine = events.filter((e) => JSON.parse(e.data).id === job.id || JSON.parse(e.data).job_id === job.id);
      expect(mine.map((e) => e.type).sort()).toEqual(["job.succeeded", "output.ready"]);
      // The events name the request that caused them: the job's Create.
      expect(requestId).toMatch(/^req_/);
      expect(mine.every((e) => e.request_id === requestId)).toBe(true);
      await until("pending_webhooks 0", async () => {
        const e = (await ok(call(h.base, "WebhookService/RetrieveEvent", { id: succeeded.id }, key))).event;
        return e.pending_webhooks === 0 ? e : undefined;
      });
      const delivered = await deliveries(ea.id);
      expect(delivered.filter((d) => d.status === "succeeded")).toHaveLength(2);
      expect(delivered[0]).toMatchObject({ attempt: 1, response_status: 200, webhook_endpoint_id: ea.id });
      expect("next_attempt_at" in delivered[0]).toBe(false);
    } finally {
      await Promise.all([a.stop(), b.stop(), c.stop()]);
    }
  });

  it("signs with both secrets during a rotation's overlap", async () => {
    const r = await startRecordingReceiver(ca);
    try {
      const e = await endpoint(`${r.url}/rotating`);
      const rotated = (await ok(call(h.base, "WebhookService/RotateWebhookSecret", { id: e.id }, key))).endpoint;
      expect(rotated.secret).not.toBe(e.secret);
      r.setSecrets([rotated.secret, e.secret]);
      await testDelivery(e.id, ["succeeded"]);
      const [req] = await r.waitFor(1);
      expect(req!.verified).toBe(true);
      expect([...req!.verifiedBy].sort()).toEqual([0, 1]);
      expect((req!.headers["media-signature"] as string).match(/v1=/g)).toHaveLength(2);
    } finally {
      await r.stop();
    }
  });

  it("fault injection: 500, hang, reset, close and refused each give their record, then retries deliver", async () => {
    const r = await startRecordingReceiver(ca);
    try {
      const e = await endpoint(`${r.url}/faults`);
      r.setSecrets([e.secret]);
      const cases: [Parameters<RecordingReceiver["respondNext"]>[0], Record<string, unknown>][] = [
        [
          { status: 500, body: "boom" },
          { response_status: 500, error_message: expect.stringContaining("500") },
        ],
        ["hang", { transport_error: "timeout" }],
        ["reset", { transport_error: "connection_reset" }],
        ["close", { transport_error: "connection_closed" }],
      ];
      for (const [behaviour, expected] of cases) {
        r.clear();
        r.respondNext(behaviour);
        r.respond("ok");
        // The first attempt fails as injected; the record shows it until the retry succeeds.
        const sent = (await ok(call(h.base, "WebhookService/SendTestWebhook", { endpoint_id: e.id, event_type: "output.ready" }, key))).delivery;
        const done = await until("the retry", async () => (await deliveries(e.id)).find((d) => d.id === sent.id && d.status === "succeeded"));
        expect(done.attempt).toBe(2);
        const reqs = await r.waitFor(2);
        expect(reqs[0]!.headers["webhook-id"]).toBe(reqs[1]!.headers["webhook-id"]);
        expect(reqs[1]!.headers["webhook-attempt"]).toBe("2");
        void expected;
      }
      // The failure records themselves: a receiver that keeps failing shows the latest attempt.
      for (const [behaviour, expected] of cases) {
        r.respond(behaviour);
        const sent = (await ok(call(h.base, "WebhookService/SendTestWebhook", { endpoint_id: e.id, event_type: "output.ready" }, key))).delivery;
        const failed = await until("a failed attempt", async () => (await deliveries(e.id)).find((d) => d.id === sent.id && d.status !== "pending"));
        expect(failed).toMatchObject({ status: expect.stringMatching(/failed|exhausted/), ...expected });
      }
      r.respond("ok");
      const refused = await endpoint(await closedPortUrl());
      const d = await testDelivery(refused.id, ["failed", "exhausted"]);
      expect(d.transport_error).toBe("connection_refused");
      expect("response_status" in d).toBe(false);
      expect("latency_ms" in d).toBe(false);
    } finally {
      await r.stop();
    }
  });

  it("a host name that turns private is blocked at connect time (ssrf_blocked)", async () => {
    const r = await startRecordingReceiver(ca);
    try {
      const port = new URL(r.url).port;
      const e = await endpoint(`https://${REBIND}:${port}/hook`);
      pointRebind("10.255.255.1");
      const d = await testDelivery(e.id, ["failed", "exhausted"]);
      expect(d.transport_error).toBe("ssrf_blocked");
      expect(r.requests).toHaveLength(0);
    } finally {
      pointRebind("127.0.0.1");
      await r.stop();
    }
  });

  it("exhausted after the 15th failed attempt; three exhausted deliveries in a row disable the endpoint; a recovered receiver gets every event", async () => {
    const r = await startRecordingReceiver(ca, { behaviour: { status: 503 } });
    try {
      const e = await endpoint(`${r.url}/down`);
      r.setSecrets([e.secret]);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++)
        ids.push((await ok(call(h.base, "WebhookService/SendTestWebhook", { endpoint_id: e.id, event_type: "job.failed" }, key))).delivery.id);
      const exhausted = await until("three exhausted deliveries", async () => {
        const all = (await deliveries(e.id)).filter((d) => ids.includes(d.id));
        return all.length === 3 && all.every((d) => d.status === "exhausted") ? all : undefined;
      });
      for (const d of exhausted) {
        expect(d.attempt).toBe(15);
        expect("next_attempt_at" in d).toBe(false);
        expect(r.requests.filter((q) => q.headers["webhook-id"] === d.event_id)).toHaveLength(15);
      }
      const disabled = (await ok(call(h.base, "WebhookService/RetrieveWebhookEndpoint", { id: e.id }, key))).endpoint;
      expect(disabled).toMatchObject({ status: "disabled", disabled_reason: "auto_failures" });
      const health = (await ok(call(h.base, "WebhookService/GetEndpointHealth", { id: e.id }, key))).health;
      expect(health).toMatchObject({ total_attempts: 45, failed: 45, success_rate: 0 });

      // The receiver recovers and the endpoint is enabled again: a resent event arrives.
      r.respond("ok");
      r.clear();
      await ok(call(h.base, "WebhookService/UpdateWebhookEndpoint", { id: e.id, status: "enabled" }, key));
      await testDelivery(e.id, ["succeeded"]);
      expect((await r.waitFor(1))[0]!.verified).toBe(true);
    } finally {
      await r.stop();
    }
  });
});
