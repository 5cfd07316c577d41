// The outbox across kill -9 of the actor host, on real Kafka and Cassandra. One gateway, one
// encoder node and one actor host that kills itself (MEDIA_FAILPOINT) right after a job entry is
// durable and before any of its intents runs: first after the entry that hands the job to the
// encoders (probed), then, in its successor, after the entry that ends the job. A third host
// takes over. Then every effect still happened: the encode task, the Watch update of the end (on
// the updates topic, which only the relay publishes), the ledger deliveries to a signed endpoint
// and the legacy posts to the app's webhook and the job's webhook_url: one ledger event and one
// delivery each, and each post once unless the host that made it was killed before it could
// record the answer (webhooks are at least once).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { topicsFor } from "../../actors/commands.js";
import { launchCluster, type ClusterProcess, type LocalCluster } from "../../main/launcher.js";
import { loadConfig } from "../../src/config.js";
import { testIssuer } from "../issuer.js";
import { call, clusterEnv, dropKeyspace, freePort, freshKeyspace, ok, readBootstrap, tempDataDir, until, type Auth } from "../harness.js";
import { makeTestInput } from "../media.js";
import { makeTestCa, serveFile, startMinio, type HttpsPeer, type MinioPeer, type TestCa } from "../peers.js";
import { startRecordingReceiver, type RecordingReceiver } from "../receivers.js";
import { kafkajsOptions } from "./endpoints.js";

const keyspace = freshKeyspace();
const dataDir = tempDataDir();
let ca: TestCa;
let minio: MinioPeer;
let web: HttpsPeer;
let cluster: LocalCluster | undefined;
let consumer: kafkajs.Consumer | undefined;
const receivers: RecordingReceiver[] = [];
const spawned: ClusterProcess[] = [];
let passed = false;

beforeAll(async () => {
  ca = makeTestCa();
  minio = await startMinio(ca, ["outbox-out"]);
  const work = mkdtempSync(path.join(tmpdir(), "media-outbox-"));
  web = await serveFile(ca, await makeTestInput(path.join(work, "in.mp4"), { seconds: 2, width: 320, height: 240, fps: 25, audio: true }));
}, 240_000);

afterAll(async () => {
  if (!passed && cluster) {
    for (const p of [...cluster.actorHosts, ...spawned, ...cluster.encoderNodes, ...cluster.gateways])
      console.log(`── ${p.role}-${p.index} ──\n${p.output().slice(-6000)}`);
    for (const [i, r] of receivers.entries())
      console.log(`receiver ${i}: ${r.requests.map((q) => `${(q.json as any)?.type ?? (q.json as any)?.event} ${q.behaviour}`).join(", ")}`);
  }
  await consumer?.disconnect();
  await cluster?.stop();
  await Promise.all(receivers.map((r) => r.stop()));
  await web?.stop();
  await minio?.stop();
  if (passed) await dropKeyspace(keyspace);
  else console.log(`outbox test failed: keyspace ${keyspace} and data folder ${dataDir} kept`);
}, 120_000);

/** Resolves when the process has died of SIGKILL. */
async function killed(p: ClusterProcess, what: string): Promise<void> {
  await until(what, async () => (p.child.signalCode === "SIGKILL" ? true : undefined), 120_000);
}

describe("outbox across kill -9 of the actor host", () => {
  it("runs every intent of the entries a crash left behind: the next task, the Watch update, ledger deliveries and legacy posts, once each", async () => {
    const issuer = await testIssuer();
    const env = clusterEnv(dataDir, keyspace, {
      ...issuer.env,
      MEDIA_COMMAND_PARTITIONS: "2",
      MEDIA_NET_ALLOW: "127.0.0.1/32",
      MEDIA_TLS_CA_FILE: ca.caFile,
      MEDIA_S3_ENDPOINT: minio.endpoint,
      MEDIA_WEBHOOK_RETRY_SCALE: "0.001",
      MEDIA_FAILPOINT: "job-encode-task,job-settled",
      MEDIA_LOG_LEVEL: process.env.MEDIA_TEST_LOG_LEVEL ?? "warn",
    });
    const basePort = freePort();
    cluster = await launchCluster({ gateways: 1, actorHosts: 1, encoderNodes: 1, basePort, env });
    const base = `http://127.0.0.1:${cluster.gateways[0]!.port}`;
    const boot = readBootstrap(dataDir);
    const key: Auth = { bearer: boot.api_key, org: boot.organization_id };
    const portal: Auth = { bearer: await issuer.token(boot.user_email), org: boot.organization_id };

    // Every update and task of the deployment, from the start, read straight from Kafka.
    const topics = topicsFor(loadConfig(env).cluster.topicPrefix);
    const seen: { topic: string; value: any }[] = [];
    /** The encode task of a job, as its job's task intent enqueues it (a command to the encode queue). */
    const isEncodeTask = (jobId: string) => (m: { topic: string; value: any }) =>
      m.topic === topics.commands &&
      m.value.type === "encode_queue" &&
      m.value.command.type === "enqueue" &&
      m.value.command.task.jobId === jobId &&
      m.value.command.task.kind === "encode";
    const kafka = new kafkajs.Kafka({ ...kafkajsOptions("outbox-test"), logLevel: kafkajs.logLevel.NOTHING });
    consumer = kafka.consumer({ groupId: `outbox-test-${keyspace}` });
    await consumer.connect();
    await consumer.subscribe({ topics: [topics.updates, topics.commands], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ topic, message }) => void seen.push({ topic, value: JSON.parse(message.value!.toString()) }) });

    const endpointHook = await startRecordingReceiver(ca);
    const appHook = await startRecordingReceiver(ca);
    const jobHook = await startRecordingReceiver(ca);
    receivers.push(endpointHook, appHook, jobHook);
    const endpoint = await ok(call(base, "WebhookService/CreateWebhookEndpoint", { url: `${endpointHook.url}/signed`, enabled_events: ["*"] }, key));
    endpointHook.setSecrets([endpoint.endpoint.secret]);
    const app = await ok(
      call(
        base,
        "AppService/Update",
        { id: boot.app_id, webhook: { url: `${appHook.url}/legacy`, events: ["job.completed", "output.completed"], regenerate_secret: true } },
        portal,
      ),
    );
    appHook.setSecrets([app.webhook_secret]);
    const origin = (
      await ok(
        call(
          base,
          "OriginService/Create",
          {
            name: "out",
            permissions: ["write"],
            s3: {
              bucket: "outbox-out",
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
        base,
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
    // The probe runs; the entry that calls for the encode task is durable, and the host dies.
    await killed(cluster.actorHosts[0]!, "the first actor host to die after the probed entry");
    expect(seen.some(isEncodeTask(job.id))).toBe(false);

    // Its successor runs the task the crash left behind; the encode ends, and it dies in turn.
    const second = await cluster.spawn("actor-host");
    spawned.push(second);
    await until("the encode task, published by the successor", async () => (seen.some(isEncodeTask(job.id)) ? true : undefined), 120_000);
    await killed(second, "the second actor host to die after the settled entry");
    expect(seen.some((m) => m.topic === topics.updates && m.value.id === job.id && m.value.state.job.status === "completed")).toBe(false);
    expect(endpointHook.requests.some((r) => (r.json as any)?.type === "job.succeeded")).toBe(false);

    // The third host finds the settled entry by its outbox marker and runs its intents.
    spawned.push(await cluster.spawn("actor-host"));
    const done = await until(
      "the job's end on the updates topic",
      async () => seen.find((m) => m.topic === topics.updates && m.value.id === job.id && m.value.state.job.status === "completed"),
      120_000,
    );
    // Updates carry no credentials.
    expect(done.value.state.job.outputOrigin.sealedCredentials).toBe("");
    const got = (hook: RecordingReceiver, field: "type" | "event", name: string) => hook.requests.some((r) => (r.json as any)?.[field] === name);
    await until(
      "job.succeeded and output.ready at the endpoint",
      async () => (got(endpointHook, "type", "job.succeeded") && got(endpointHook, "type", "output.ready") ? true : undefined),
      60_000,
    );
    for (const hook of [appHook, jobHook]) {
      await until(
        "job.completed and output.completed at the legacy hooks",
        async () => (got(hook, "event", "job.completed") && got(hook, "event", "output.completed") ? true : undefined),
        60_000,
      );
    }
    // A moment more for duplicates, which must not come.
    await new Promise((r) => setTimeout(r, 3000));
    const count = (hook: RecordingReceiver, field: "type" | "event", name: string) => hook.requests.filter((r) => (r.json as any)?.[field] === name).length;
    // The end's effects ran only on the third host: each once. Output effects ran on the second,
    // and a post it made but had not yet journaled when it was killed is made again (webhooks
    // are at least once; Webhook-Id and the legacy body's job_id and event let receivers drop it).
    expect(count(endpointHook, "type", "job.succeeded")).toBe(1);
    expect(count(endpointHook, "type", "output.ready")).toBeGreaterThanOrEqual(1);
    expect(count(endpointHook, "type", "output.ready")).toBeLessThanOrEqual(2);
    expect(endpointHook.requests).toHaveLength(count(endpointHook, "type", "job.succeeded") + count(endpointHook, "type", "output.ready"));
    expect(endpointHook.requests.every((r) => r.verified)).toBe(true);
    // One delivery per event and endpoint however often the fan-out ran, each succeeded.
    // (An outcome is journaled just after the receiver answers.)
    const statuses = async () =>
      (await ok(call(base, "WebhookService/ListWebhookDeliveries", { endpoint_id: endpoint.endpoint.id }, key))).deliveries.map((d: any) => d.status as string);
    await until(
      "both deliveries recorded as succeeded",
      async () => ((await statuses()).every((st: string) => st === "succeeded") ? true : undefined),
      30_000,
    ).catch(async (e: unknown) => {
      console.log(JSON.stringify((await call(base, "WebhookService/ListWebhookDeliveries", { endpoint_id: endpoint.endpoint.id }, key)).body, null, 1));
      throw e;
    });
    expect(await statuses()).toEqual(["succeeded", "succeeded"]);
    expect(count(appHook, "event", "job.completed")).toBe(1);
    expect(count(appHook, "event", "output.completed")).toBeGreaterThanOrEqual(1);
    expect(count(appHook, "event", "output.completed")).toBeLessThanOrEqual(2);
    expect(appHook.requests.every((r) => r.legacyVerified)).toBe(true);
    expect(count(jobHook, "event", "job.completed")).toBe(1);
    expect(count(jobHook, "event", "output.completed")).toBeGreaterThanOrEqual(1);
    expect(count(jobHook, "event", "output.completed")).toBeLessThanOrEqual(2);

    const after = await ok(call(base, "JobService/Get", { id: job.id }, key));
    expect(after.job.status).toBe("completed");
    const events = await ok(call(base, "WebhookService/ListEvents", {}, key));
    // The one job of this deployment has one ledger event of its end, however often its entry ran.
    expect(events.events.filter((e: any) => e.type === "job.succeeded")).toHaveLength(1);
    passed = true;
  });
});
