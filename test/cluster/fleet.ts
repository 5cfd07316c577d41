// A cluster of encoder nodes with work to do, for the scheduling and chaos suites: real Kafka and
// Cassandra, a MinIO bucket for outputs, an https peer serving inputs, and two apps (the bootstrap
// app and a second one) with an API key each, whose jobs the suites submit and follow.
import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { S3Client, GetObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import https from "node:https";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { launchCluster, type LocalCluster } from "../../main/launcher.js";
import { loadConfig } from "../../src/config.js";
import { testIssuer } from "../issuer.js";
import { call, clusterEnv, createS3Origin, dropKeyspace, freePort, freshKeyspace, ok, readBootstrap, tempDataDir, type Auth } from "../harness.js";
import { ffprobeJson, makeTestInput } from "../media.js";
import { makeTestCa, serveFile, startMinio, type HttpsPeer, type MinioPeer, type TestCa } from "../peers.js";

export interface Fleet {
  readonly cluster: LocalCluster;
  readonly base: string;
  readonly ca: TestCa;
  readonly minio: MinioPeer;
  readonly env: Record<string, string>;
  /** The bootstrap app's key, and a second app's. */
  readonly a: Auth & { readonly app: string; readonly origin: string };
  readonly b: Auth & { readonly app: string; readonly origin: string };
  /** Input URLs by name. */
  readonly inputs: Record<string, string>;
  submit(
    who: Auth & { readonly origin: string },
    input: string,
    priority?: "economy" | "standard" | "premium",
    extra?: Record<string, unknown>,
  ): Promise<string>;
  job(id: string, who: Auth): Promise<any>;
  /** Copies every file under an output's folder (the folder of its s3:// output_url) from MinIO to a local folder: the local path of the main file. */
  download(outputUrl: string): Promise<string>;
  /** Reads an output (its s3:// output_url) back from MinIO and probes it with ffprobe: its duration in seconds (throws if undecodable). */
  decodable(outputUrl: string): Promise<number>;
  stop(passed: boolean): Promise<void>;
}

export const BUCKET = "fleet-out";
const MANAGED_BUCKET = "fleet-managed";

export async function startFleet(options: {
  readonly encoderNodes: number;
  /** Inputs by name: a test pattern of this many seconds (320x240, 25 fps, a tone), or a file to serve. */
  readonly inputs: Record<string, number | string>;
  readonly env?: Record<string, string>;
  /** Managed hosting (VideoService uploads) in a bucket of the fleet's MinIO. */
  readonly hosting?: boolean;
}): Promise<Fleet> {
  const keyspace = freshKeyspace();
  const dataDir = tempDataDir();
  const ca = makeTestCa();
  const minio = await startMinio(ca, options.hosting ? [BUCKET, MANAGED_BUCKET] : [BUCKET]);
  const work = mkdtempSync(path.join(tmpdir(), "media-fleet-"));
  const peers: HttpsPeer[] = [];
  const inputs: Record<string, string> = {};
  for (const [name, seconds] of Object.entries(options.inputs)) {
    const file =
      typeof seconds === "string" ? seconds : await makeTestInput(path.join(work, `${name}.mp4`), { seconds, width: 320, height: 240, fps: 25, audio: true });
    const peer = await serveFile(ca, file);
    peers.push(peer);
    inputs[name] = `${peer.url}/${name}.mp4`;
  }
  const issuer = await testIssuer();
  const env = clusterEnv(dataDir, keyspace, {
    ...issuer.env,
    MEDIA_NET_ALLOW: "127.0.0.1/32",
    MEDIA_TLS_CA_FILE: ca.caFile,
    MEDIA_S3_ENDPOINT: minio.endpoint,
    MEDIA_WEBHOOK_RETRY_SCALE: "0.001",
    MEDIA_RATE_LIMIT_KEY: "off",
    MEDIA_LOG_LEVEL: process.env.MEDIA_TEST_LOG_LEVEL ?? "warn",
    ...(options.hosting
      ? {
          MEDIA_MANAGED_S3_BUCKET: MANAGED_BUCKET,
          MEDIA_MANAGED_S3_ENDPOINT: minio.endpoint,
          MEDIA_MANAGED_S3_ACCESS_KEY_ID: minio.admin.accessKeyId,
          MEDIA_MANAGED_S3_SECRET_ACCESS_KEY: minio.admin.secretAccessKey,
        }
      : {}),
    ...options.env,
  });
  const cluster = await launchCluster({ gateways: 1, actorHosts: 1, encoderNodes: options.encoderNodes, basePort: freePort(), env });
  const base = `http://127.0.0.1:${cluster.gateways[0]!.port}`;
  const boot = readBootstrap(dataDir);
  const portal: Auth = { bearer: await issuer.token(boot.user_email), org: boot.organization_id };
  const a = { bearer: boot.api_key, org: boot.organization_id, app: boot.app_id };
  const appB = (await ok(call(base, "AppService/Create", { name: "Second app" }, portal))).app.id as string;
  const keyB = (await ok(call(base, "APIKeyService/Create", { name: "second", app_id: appB }, portal))).secret as string;
  const b = { bearer: keyB, org: boot.organization_id, app: appB };
  const originA = await createS3Origin(base, a, minio, "out-a", BUCKET, ["write"]);
  const originB = await createS3Origin(base, b, minio, "out-b", BUCKET, ["write"]);
  const s3 = new S3Client({
    endpoint: minio.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: minio.admin,
    requestHandler: new NodeHttpHandler({ httpsAgent: new https.Agent({ ca: readFileSync(ca.caFile) }) }),
  });
  return {
    cluster,
    base,
    ca,
    minio,
    env,
    a: { ...a, origin: originA },
    b: { ...b, origin: originB },
    inputs,
    // As a client should: an unavailable answer (a restart under way) is retried, unchanged, with the same Idempotency-Key.
    async submit(who, input, priority = "standard", extra = {}) {
      const body = {
        input_url: input,
        output_origin_id: who.origin,
        priority,
        outputs: [{ type: "mp4", video: [{ codec: "h264", width: 256, height: 192 }] }],
        ...extra,
      };
      const auth = { ...who, headers: { "idempotency-key": randomUUID() } };
      const deadline = Date.now() + 180_000;
      for (;;) {
        const r = await call(base, "JobService/Create", body, auth).catch((e: unknown) => ({ status: 0, body: String(e) }));
        if (r.status === 200) return r.body.job.id as string;
        if ((r.status !== 503 && r.status !== 0) || Date.now() > deadline) throw new Error(`JobService/Create: ${r.status} ${JSON.stringify(r.body)}`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    },
    async job(id, who) {
      return (await ok(call(base, "JobService/Get", { id }, who))).job;
    },
    async download(outputUrl) {
      const key = outputUrl.replace(`s3://${BUCKET}/`, "");
      const prefix = key.slice(0, key.lastIndexOf("/") + 1);
      const local = path.join(work, `tree-${randomUUID()}`);
      let token: string | undefined;
      do {
        const page = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix, ContinuationToken: token }));
        for (const o of page.Contents ?? []) {
          const file = path.join(local, o.Key!.slice(prefix.length));
          mkdirSync(path.dirname(file), { recursive: true });
          const object = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: o.Key! }));
          writeFileSync(file, await object.Body!.transformToByteArray());
        }
        token = page.NextContinuationToken;
      } while (token);
      return path.join(local, key.slice(prefix.length));
    },
    async decodable(outputUrl) {
      const key = outputUrl.replace(`s3://${BUCKET}/`, "");
      const object = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      const file = path.join(work, `out-${key.replace(/[^A-Za-z0-9._-]/g, "_")}`);
      writeFileSync(file, await object.Body!.transformToByteArray());
      return Number((await ffprobeJson(file)).format.duration ?? 0);
    },
    async stop(passed) {
      if (!passed || process.env.MEDIA_TEST_KEEP_LOGS === "1") {
        for (const p of cluster.processes) {
          const file = path.join(dataDir, `${p.role}-${p.index}.log`);
          writeFileSync(file, p.output());
          console.log(`── ${p.role}-${p.index} (whole output in ${file}) ──\n${p.output().slice(-4000)}`);
        }
      }
      await cluster.stop();
      await Promise.all(peers.map((p) => p.stop()));
      await minio.stop();
      s3.destroy();
      if (passed) await dropKeyspace(keyspace);
      else console.log(`fleet kept: keyspace ${keyspace}, data folder ${dataDir}`);
    },
  };
}

/** Epoch ms of a spec timestamp (RFC 3339 string). */
export const ms = (t: string | null | undefined): number => (t ? Date.parse(t) : Number.NaN);
