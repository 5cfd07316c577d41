// Each SDK's tour (clients/<language>/examples) run as its users run it, against a live embedded
// server: an S3 origin on a MinIO peer, a job followed with Watch to completion, a refused request
// naming its field, a clip uploaded in parts (interrupted, then resumed) until it plays, a list read
// page by page, and the job's real webhook delivery received over HTTPS and verified with the SDK's
// helper. Each tour prints one JSON line of what it saw; the same checks hold for every language.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromBinary } from "@bufbuild/protobuf";
import { ROOT, startHarness, type Harness } from "../harness.js";
import { createMediaClient } from "../../clients/typescript/src/index.js";
import { CreateJobResponseSchema, OutputType } from "../../clients/typescript/src/gen/media/v1/job_pb.js";
import { OriginPermission } from "../../clients/typescript/src/gen/media/v1/origin_pb.js";
import { VideoCodec } from "../../clients/typescript/src/gen/media/v1/preset_pb.js";
import { makeTestInput } from "../media.js";
import { makeTestCa, serveFile, startMinio, type HttpsPeer, type MinioPeer, type TestCa } from "../peers.js";

const run = promisify(execFile);
let h: Harness;
let ca: TestCa;
let minio: MinioPeer;
let web: HttpsPeer;
let env: Record<string, string>;

beforeAll(async () => {
  // The Go generators and modules and the Python venv: quick once done.
  await run("bash", [path.join(ROOT, "clients/setup.sh")], { cwd: ROOT });
  const work = mkdtempSync(path.join(tmpdir(), "media-sdks-"));
  ca = makeTestCa();
  minio = await startMinio(ca, ["sdk-out"]);
  const input = await makeTestInput(path.join(work, "in.mp4"), { seconds: 1, width: 320, height: 240, fps: 25, audio: true });
  web = await serveFile(ca, input);
  // The clip to upload: the same second of video, padded past one 5 MiB part so it goes in two.
  const clip = path.join(work, "clip.mp4");
  writeFileSync(clip, Buffer.concat([readFileSync(input), Buffer.alloc(6 * 1024 * 1024)]));
  h = await startHarness({ MEDIA_NET_ALLOW: "127.0.0.1/32", MEDIA_TLS_CA_FILE: ca.caFile, MEDIA_S3_ENDPOINT: minio.endpoint });
  env = {
    MEDIA_URL: h.base,
    MEDIA_API_KEY: h.boot.api_key,
    MEDIA_ORGANIZATION_ID: h.boot.organization_id,
    S3_BUCKET: "sdk-out",
    S3_ACCESS_KEY_ID: minio.admin.accessKeyId,
    S3_SECRET_ACCESS_KEY: minio.admin.secretAccessKey,
    INPUT_URL: `${web.url}/in.mp4`,
    CLIP: clip,
    WEBHOOK_TLS_CERT: ca.certFile,
    WEBHOOK_TLS_KEY: ca.keyFile,
  };
}, 300_000);

afterAll(async () => {
  await h?.server.close();
  await web?.stop();
  await minio?.stop();
  ca?.remove();
});

/** What every tour must have seen, whatever its language. */
function expectTour(seen: any, sdk: string): void {
  expect(seen.sdk).toBe(sdk);
  expect(seen.origin_id).toMatch(/^ori_/);
  expect(seen.refused).toEqual({ code: "invalid_argument", fields: ["outputs"] });
  expect(seen.job_id).toMatch(/^job_/);
  expect(seen.job_status).toBe("completed");
  expect(seen.watch_events[0]).toBe("snapshot");
  expect(seen.watch_events.at(-1)).toBe("completed");
  expect(seen.interrupted).toBe(true);
  expect(seen.parts_before_resume).toBe(1);
  expect(seen.video_id).toMatch(/^vid_/);
  expect(seen.video_status).toBe("ready");
  expect(seen.playback_url).toMatch(/^http.*\.m3u8/);
  expect(seen.listed_videos).toContain(seen.video_id);
  expect(seen.key_pages).toBeGreaterThanOrEqual(2);
  expect(seen.listed_keys).toBeGreaterThanOrEqual(3);
  expect(seen.webhook).toEqual({ type: "job.succeeded", job_id: seen.job_id, id: expect.stringMatching(/^evt_/) });
  expect(seen.tampered).toBe("mismatch");
}

/** The playlist the tour's video answered plays: the master is served under its signed URL. */
async function expectPlays(seen: any): Promise<void> {
  const master = await fetch(seen.playback_url);
  expect(master.status).toBe(200);
  expect(await master.text()).toMatch(/^#EXTM3U/);
}

async function tour(command: string, args: string[], cwd: string, extra: Record<string, string> = {}): Promise<any> {
  const { stdout, stderr } = await run(command, args, { cwd, env: { ...process.env, ...env, ...extra }, timeout: 240_000, maxBuffer: 16 << 20 }).catch((e) => {
    throw new Error(`${command} ${args.join(" ")} failed: ${e.stderr || e.message}`);
  });
  const last = stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(last);
  } catch {
    throw new Error(`the tour printed no JSON line: ${stdout}\n${stderr}`);
  }
}

describe("the SDK tours against a live server", () => {
  it("TypeScript: clients/typescript/examples/tour.ts", async () => {
    const seen = await tour(path.join(ROOT, "node_modules/.bin/tsx"), ["examples/tour.ts"], path.join(ROOT, "clients/typescript"));
    expectTour(seen, "typescript");
    await expectPlays(seen);
  }, 240_000);

  it("Go: clients/go/examples/tour (connect-go, built with the Go toolchain)", async () => {
    const bin = path.join(mkdtempSync(path.join(tmpdir(), "media-go-tour-")), "tour");
    await run("go", ["build", "-o", bin, "./examples/tour"], { cwd: path.join(ROOT, "clients/go"), env: { ...process.env, GOFLAGS: "-mod=readonly" } });
    const seen = await tour(bin, [], path.join(ROOT, "clients/go"));
    expectTour(seen, "go");
    await expectPlays(seen);
  }, 240_000);

  it("Python: clients/python/examples/tour.py (connectrpc from PyPI, in the venv clients/setup.sh makes)", async () => {
    const seen = await tour(path.join(ROOT, ".venv-clients/bin/python"), ["examples/tour.py"], path.join(ROOT, "clients/python"));
    expectTour(seen, "python");
    await expectPlays(seen);
  }, 240_000);
});

describe("the TypeScript SDK's retries", () => {
  it("retries a create whose answer was lost under the same Idempotency-Key, and the service makes one job", async () => {
    // The first create reaches the service, which makes the job; its answer is replaced by a 503,
    // as a proxy that lost it would. The SDK tries again with the same key and gets that job back.
    const keys: string[] = [];
    const made: string[] = [];
    const lossy: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (!String(input).endsWith("/media.v1.JobService/Create")) return res;
      keys.push(new Headers(init?.headers).get("idempotency-key") ?? "");
      if (res.status === 200) made.push(fromBinary(CreateJobResponseSchema, new Uint8Array(await res.clone().arrayBuffer())).job!.id);
      if (keys.length > 1) return res;
      return new Response(JSON.stringify({ code: "unavailable", message: "the answer was lost" }), {
        status: 503,
        headers: { "content-type": "application/json" },
      });
    };
    const client = createMediaClient({ baseUrl: h.base, apiKey: h.boot.api_key, organizationId: h.boot.organization_id, fetch: lossy, backoffMs: 10 });
    const origin = await client.origins.create({
      name: "retries",
      permissions: [OriginPermission.WRITE],
      s3: { bucket: "sdk-out", region: "us-east-1", credentials: { accessKeyId: minio.admin.accessKeyId, secretAccessKey: minio.admin.secretAccessKey } },
    });
    const created = await client.jobs.create({
      inputUrl: env.INPUT_URL!,
      outputOriginId: origin.origin!.id,
      outputs: [{ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, width: 320, height: 180 }] }],
    });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(made).toEqual([created.job!.id, created.job!.id]);
  });
});
