// JobService end to end on real parts: inputs and outputs in a real S3-compatible server (MinIO) on
// loopback, https inputs from a local HTTPS server, real ffprobe and ffmpeg in the encoder node,
// Watch streams read as a strict JSON client reads them. Runs against both deployments.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GcsBlob, parseServiceAccount, S3Blob } from "../../src/blob/index.js";
import { NetGuard } from "../../src/net-guard.js";
import { call, ok, errorDetails, forgetIdempotencyKey, startHarness, TARGET, waitForJob, type Auth, type Harness } from "../harness.js";
import {
  makeTestCa,
  serviceAccountJson,
  startFakeGcs,
  startHttpsPeer,
  startMinio,
  type GcsPeer,
  type HttpsPeer,
  type MinioPeer,
  type TestCa,
} from "../peers.js";
import { parseHlsMaster, parseHlsMedia, parseMpd } from "../media.js";
import { stream, type StreamMessage } from "../watch.js";

const run = promisify(execFile);
let h: Harness;
let ca: TestCa;
let minio: MinioPeer;
let gcs: GcsPeer;
let guard: NetGuard;
let web: HttpsPeer;
let key: Auth;
let work: string;
let bucketIn: S3Blob;
let bucketOut: S3Blob;
let inputOrigin: string;
let outputOrigin: string;
const writer = { accessKeyId: "media-writer", secretAccessKey: "media-writer-secret-0123" };

/** A test pattern with a tone, small and quick to encode. */
async function makeInput(file: string, seconds: number, size = "640x360", preset = "ultrafast"): Promise<void> {
  await run("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `testsrc2=size=${size}:rate=25:duration=${seconds}`,
    "-f",
    "lavfi",
    "-i",
    `sine=frequency=440:duration=${seconds}`,
    "-c:v",
    "libx264",
    "-preset",
    preset,
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-shortest",
    file,
  ]);
}

async function ffprobe(file: string): Promise<any> {
  const { stdout } = await run("ffprobe", ["-v", "error", "-print_format", "json", "-show_format", "-show_streams", file]);
  return JSON.parse(stdout);
}

async function createOrigin(name: string, bucket: string, permissions: string[], creds = minio.admin): Promise<string> {
  const body = await ok(
    call(
      h.base,
      "OriginService/Create",
      { name, permissions, s3: { bucket, region: "us-east-1", credentials: { access_key_id: creds.accessKeyId, secret_access_key: creds.secretAccessKey } } },
      key,
    ),
  );
  return body.origin.id;
}

const mp4Output = (over: object = {}) => ({
  type: "mp4",
  video: [{ codec: "h264", width: 320, height: 180 }],
  audio: [{ codec: "aac", bitrate_kbps: 64 }],
  ...over,
});

/** Polls Get until the job is terminal (or in `until`). */
const waitFor = (id: string, until?: (job: any) => boolean, ms = 90_000): Promise<any> => waitForJob(h.base, id, key, { ...(until ? { until } : {}), ms });

/** Every amount on the wire equals the sum of its breakdown lines, to the micro-euro. */
function expectMoneyAddsUp(job: any) {
  const micros = (x: number | undefined) => Math.round((x ?? 0) * 1e6);
  const lines = job.cost_breakdown.lines as any[];
  if ("total_estimated_cost" in job) expect(lines.reduce((s, l) => s + micros(l.estimated_amount_eur), 0)).toBe(micros(job.total_estimated_cost));
  if ("total_actual_cost" in job) expect(lines.reduce((s, l) => s + micros(l.actual_amount_eur), 0)).toBe(micros(job.total_actual_cost));
  // The breakdown's totals are "number or null"; the job's are omitted until known.
  expect(job.cost_breakdown.total_estimated_cost).toBe(job.total_estimated_cost ?? null);
  expect(job.cost_breakdown.total_actual_cost).toBe(job.total_actual_cost ?? null);
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "media-jobs-"));
  ca = makeTestCa();
  minio = await startMinio(ca, ["media-in", "media-out", "media-r2"]);
  gcs = await startFakeGcs(["media-gcs"]);
  await minio.mc("admin", "user", "add", "peer", writer.accessKeyId, writer.secretAccessKey);
  await minio.mc("admin", "policy", "attach", "peer", "readwrite", "--user", writer.accessKeyId);
  await makeInput(path.join(work, "in.mp4"), 2);
  await makeInput(path.join(work, "long.mp4"), 30, "1280x720");
  writeFileSync(path.join(work, "corrupt.mp4"), Buffer.from("this is not a video file at all, only text".repeat(100)));
  web = await startHttpsPeer(ca, (req, res) => {
    const name = (req.url ?? "/").slice(1);
    try {
      const data = readFileSync(path.join(work, path.basename(name)));
      res.writeHead(200, { "content-type": "video/mp4", "content-length": data.length }).end(data);
    } catch {
      res.writeHead(404).end();
    }
  });
  h = await startHarness({
    MEDIA_NET_ALLOW: "127.0.0.1/32",
    MEDIA_S3_ENDPOINT: minio.endpoint,
    MEDIA_GCS_API_ENDPOINT: gcs.endpoint,
    MEDIA_TLS_CA_FILE: ca.caFile,
  });
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  guard = new NetGuard({ net: { allow: ["127.0.0.1/32"], tlsCaFile: ca.caFile } });
  const at = (bucket: string) =>
    new S3Blob(
      {
        scheme: "s3",
        bucket,
        region: "us-east-1",
        endpoint: minio.endpoint,
        accessKeyId: minio.admin.accessKeyId,
        secretAccessKey: minio.admin.secretAccessKey,
      },
      guard,
    );
  bucketIn = at("media-in");
  bucketOut = at("media-out");
  await bucketIn.put("clips/in.mp4", path.join(work, "in.mp4"), "video/mp4");
  await bucketIn.put("clips/long.mp4", path.join(work, "long.mp4"), "video/mp4");
  inputOrigin = await createOrigin("inputs", "media-in", ["read"]);
  outputOrigin = await createOrigin("outputs", "media-out", ["read", "write"]);
}, 240_000);

afterAll(async () => {
  await h?.server.close();
  await web?.stop();
  await minio?.stop();
  await gcs?.stop();
});

/** Downloads an object of the output bucket to a local file. */
async function fetchOut(url: string): Promise<string> {
  const key = url.replace(/^s3:\/\/media-out\//, "");
  const file = path.join(work, key.replace(/\//g, "_"));
  await bucketOut.getToFile(key, file);
  return file;
}

describe("JobService", () => {
  // A Create that failed without an answer (an ask timed out while Kafka or Cassandra restarted)
  // may still have made its job; the gateway then releases the key's claim so the retry runs
  // again. The retry must meet that job, not make a second one charged again: the chaos suite saw
  // one. Here the claim is released by hand (embedded: the test reaches the store).
  it.skipIf(TARGET === "cluster")(
    "a Create retried with its Idempotency-Key after an answer was lost meets the job the first call made",
    async () => {
      const body = {
        input_origin_id: inputOrigin,
        input_path: "clips/in.mp4",
        output_origin_id: outputOrigin,
        outputs: [mp4Output()],
        metadata: { case: "lost-answer" },
      };
      const headers = { "idempotency-key": "lost-answer-1" };
      const first = await ok(call(h.base, "JobService/Create", body, { ...key, headers }));
      await forgetIdempotencyKey(h, key, "media.v1.JobService/Create", "lost-answer-1");
      const retried = await call(h.base, "JobService/Create", body, { ...key, headers });
      expect(retried.status).toBe(200);
      expect(retried.headers.get("idempotent-replayed")).toBeNull(); // it ran again, and met the same job
      expect(retried.body.job.id).toBe(first.job.id);
      expect(retried.body.job.outputs.map((o: { id: string }) => o.id)).toEqual(first.job.outputs.map((o: { id: string }) => o.id));
      const listed = (await ok(call(h.base, "JobService/List", { pagination: { limit: 100 } }, key))).jobs as { metadata: Record<string, string> }[];
      expect(listed.filter((j) => j.metadata.case === "lost-answer")).toHaveLength(1);
      await waitForJob(h.base, first.job.id, key);
    },
    120_000,
  );

  it("encodes an mp4 and an HLS ladder from an origin input, with thumbnails; Watch sees snapshot, updates and the end", async () => {
    const created = await ok(
      call(
        h.base,
        "JobService/Create",
        {
          input_origin_id: inputOrigin,
          input_path: "clips/in.mp4",
          output_origin_id: outputOrigin,
          outputs: [
            mp4Output(),
            {
              type: "hls",
              video: [
                { codec: "h264", width: 640, height: 360 },
                { codec: "h264", width: 320, height: 180 },
              ],
              audio: [{ codec: "aac", bitrate_kbps: 64 }],
            },
          ],
          thumbnails: [
            { mode: "single", width: 160 },
            { mode: "sprite", count: 4, width: 80 },
          ],
          metadata: { customer: "c-1" },
        },
        key,
      ),
    );
    const job0 = created.job;
    expect(job0).toMatchObject({
      object: "job",
      status: "pending",
      progress: 0,
      outputs: [],
      input_metadata: null,
      priority: "standard",
      currency: "EUR",
      metadata: { customer: "c-1" },
    });
    expect(job0.video_id).toBeNull(); // "string or null": null for jobs delivering to an origin
    expect("total_estimated_cost" in job0).toBe(false);
    expect(job0.input_origin).toMatchObject({ id: inputOrigin, provider: "s3", path: "clips/in.mp4", bucket: "media-in" });
    expect(job0.clip).toBeNull();
    expect(job0.output_path_template).toBeNull(); // "string or null": not given

    const watched = await stream(h.base, "JobService/Watch", { id: job0.id }, key);
    expect(watched.error).toBeUndefined();
    const kinds = watched.messages.map((m) => m.body.event_type);
    expect(kinds[0]).toBe("snapshot");
    expect(kinds.at(-1)).toBe("completed");
    expect(kinds.slice(1, -1).every((k) => k === "updated")).toBe(true);
    expect(kinds.length).toBeGreaterThan(3);
    // Updates only move forward.
    const versions = watched.messages.map((m) => Date.parse(m.body.job.updated_at));
    expect([...versions].sort((a, b) => a - b)).toEqual(versions);

    const job = watched.messages.at(-1)!.body.job;
    expect(job).toMatchObject({ status: "completed", progress: 100, error_code: "", error_message: "" });
    expect(job.input_metadata).toMatchObject({ duration_ms: expect.any(Number), video: { codec: "h264", width: 640, height: 360 }, audio: { codec: "aac" } });
    expect(Math.abs(job.input_metadata.duration_ms - 2000)).toBeLessThan(200);
    for (const t of ["probed_at", "started_at", "completed_at", "created_at", "updated_at"]) expect(typeof job[t]).toBe("string");
    expect(job.confirmed_at).toBeNull();
    expect(job.execution.total_duration_ms).toBeGreaterThan(0);
    expect(job.execution.encode_duration_ms).toBeGreaterThan(0);
    expect(job.outputs).toHaveLength(2);
    expectMoneyAddsUp(job);
    expect(job.total_actual_cost).toBe(job.total_estimated_cost);
    expect(job.fees).toEqual([expect.objectContaining({ fee_type: "processing", unit: "job", quantity: 1, currency: "EUR" })]);

    // The mp4: h264 at the asked size, moov first (faststart), about 2 s.
    const [mp4, hls] = job.outputs;
    expect(mp4.status).toBe("completed");
    expect(mp4.output_url).toMatch(new RegExp(`^s3://media-out/${job.id}/${mp4.id}/`));
    expect(mp4.spec.effective_path_template).toBe("{job_id}/{output_id}");
    const file = await fetchOut(mp4.output_url);
    const probed = await ffprobe(file);
    const video = probed.streams.find((s: any) => s.codec_type === "video");
    expect(video).toMatchObject({ codec_name: "h264", width: 320, height: 180 });
    expect(Math.abs(Number(probed.format.duration) - 2)).toBeLessThan(0.2);
    const bytes = readFileSync(file);
    expect(bytes.indexOf("moov")).toBeLessThan(bytes.indexOf("mdat"));
    expect(mp4.output_size_bytes).toBe(bytes.length);

    // The HLS ladder: every playlist and segment the master names exists in the bucket.
    expect(hls.output_url).toMatch(/\.m3u8$/);
    const masterKey = hls.output_url.replace("s3://media-out/", "");
    const master = readFileSync(await fetchOut(hls.output_url), "utf8");
    const playlists = master.split("\n").filter((l) => l && !l.startsWith("#"));
    const audioUris = [...master.matchAll(/URI="([^"]+)"/g)].map((m) => m[1]!);
    expect(playlists.length).toBeGreaterThanOrEqual(2);
    let segments = 0;
    for (const p of [...playlists, ...audioUris]) {
      const playlistKey = path.posix.join(path.posix.dirname(masterKey), p);
      const text = readFileSync(await fetchOut(`s3://media-out/${playlistKey}`), "utf8");
      for (const s of text.split("\n").filter((l) => l && !l.startsWith("#"))) {
        expect(await bucketOut.head(path.posix.join(path.posix.dirname(playlistKey), s)), s).toBeDefined();
        segments++;
      }
    }
    expect(segments).toBeGreaterThan(0);

    // The thumbnail.
    expect(job.thumbnail_results).toHaveLength(2);
    expect(job.thumbnail_results[0]).toMatchObject({ mode: "single", index: 0, thumbnail_index: 0, width: 160, format: "jpg" });
    expect(job.thumbnail_results[1]).toMatchObject({ mode: "sprite", thumbnail_index: 1 });
    // The sprite's WebVTT index sits beside the image and names it.
    const spriteKey = job.thumbnail_results[1].url.replace("s3://media-out/", "") as string;
    const vtt = readFileSync(await fetchOut(`s3://media-out/${spriteKey.replace(/\.[a-z]+$/, ".vtt")}`), "utf8");
    expect(vtt.startsWith("WEBVTT")).toBe(true);
    expect(vtt).toContain(path.posix.basename(spriteKey));
    expect(await bucketOut.head(job.thumbnail_results[0].url.replace("s3://media-out/", ""))).toBeDefined();
    // The signed URL reads the image over HTTPS without credentials, for a while.
    const signedUrl = job.thumbnail_results[0].signed_url as string;
    expect(signedUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/media-out\/.*X-Amz-Signature=/);
    const image = await guard.request(signedUrl);
    const chunks: Buffer[] = [];
    for await (const c of image.body) chunks.push(c as Buffer);
    expect(image.status).toBe(200);
    expect(Buffer.concat(chunks).subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    const forged = await guard.request(signedUrl.replace(/X-Amz-Signature=(.)/, (_: string, c: string) => `X-Amz-Signature=${c === "0" ? "1" : "0"}`));
    forged.body.resume();
    expect(forged.status).toBe(403);

    // A subscriber that connects after the end still sees the final state, and the stream ends.
    const late = await stream(h.base, "JobService/Watch", { id: job.id }, key);
    expect(late.messages.map((m) => m.body.event_type)).toEqual(["snapshot", "completed"]);
    expect(late.messages[1]!.body.job.status).toBe("completed");
  });

  it("reads https inputs through the network guard, webm/vp9 and a preset by slug", async () => {
    const { job } = await ok(
      call(
        h.base,
        "JobService/Create",
        {
          input_url: `${web.url}/in.mp4`,
          output_origin_id: outputOrigin,
          outputs: [
            { type: "webm", video: [{ codec: "vp9", width: 320, height: 180 }], audio: [{ codec: "opus", bitrate_kbps: 64 }] },
            { preset: "system_web_mp4_720p" },
          ],
          output_path_template: "{date}/{job_id}/{format}-{codec}-{output_id}",
          clip: { start_seconds: 0.5, end_seconds: 1.5 },
        },
        key,
      ),
    );
    expect(job.output_path_template).toBe("{date}/{job_id}/{format}-{codec}-{output_id}");
    expect(job.clip).toEqual({ start_seconds: 0.5, end_seconds: 1.5 });
    const done = await waitFor(job.id);
    expect(done.status, JSON.stringify(done)).toBe("completed");
    const [webm, preset] = done.outputs;
    expect(webm.output_url).toContain(`/webm-vp9-${webm.id}/`);
    const probed = await ffprobe(await fetchOut(webm.output_url));
    expect(probed.streams.map((s: any) => s.codec_name).sort()).toEqual(["opus", "vp9"]);
    expect(Math.abs(Number(probed.format.duration) - 1)).toBeLessThan(0.25);
    expect(preset.spec.preset).toBe("system_web_mp4_720p");
    expect(preset.spec.type).toBe("mp4");
    const p2 = await ffprobe(await fetchOut(preset.output_url));
    expect(p2.streams.find((s: any) => s.codec_type === "video").codec_name).toBe("h264");
  });

  it("writes DASH to a GCS origin and CMAF (HLS and DASH over shared segments) to an R2 origin; every named segment exists", async () => {
    const account = serviceAccountJson();
    const gcsOrigin = (
      await ok(
        call(
          h.base,
          "OriginService/Create",
          { name: "gcs-out", permissions: ["read", "write"], gcs: { bucket: "media-gcs", credentials: { service_account_json: account } } },
          key,
        ),
      )
    ).origin.id;
    const r2Origin = (
      await ok(
        call(
          h.base,
          "OriginService/Create",
          {
            name: "r2-out",
            permissions: ["write"],
            base_path: "renditions",
            r2: {
              bucket: "media-r2",
              endpoint: minio.endpoint,
              credentials: { access_key_id: minio.admin.accessKeyId, secret_access_key: minio.admin.secretAccessKey },
            },
          },
          key,
        ),
      )
    ).origin.id;
    const ladder = {
      video: [
        { codec: "h264", width: 640, height: 360 },
        { codec: "h264", width: 320, height: 180 },
      ],
      audio: [{ codec: "aac", bitrate_kbps: 64 }],
    };
    const dash = (
      await ok(call(h.base, "JobService/Create", { input_url: `${web.url}/in.mp4`, output_origin_id: gcsOrigin, outputs: [{ type: "dash", ...ladder }] }, key))
    ).job;
    const cmaf = (
      await ok(
        call(h.base, "JobService/Create", { input_url: `${web.url}/in.mp4`, output_origin_id: r2Origin, outputs: [{ type: "adaptive", ...ladder }] }, key),
      )
    ).job;

    const gcsBlob = new GcsBlob({ bucket: "media-gcs", account: (parseServiceAccount(account) as { account: never }).account, endpoint: gcs.endpoint }, guard);
    const r2Blob = new S3Blob(
      {
        scheme: "r2",
        bucket: "media-r2",
        region: "auto",
        endpoint: minio.endpoint,
        accessKeyId: minio.admin.accessKeyId,
        secretAccessKey: minio.admin.secretAccessKey,
      },
      guard,
    );
    const text = async (blob: GcsBlob | S3Blob, key: string) => {
      const file = path.join(work, `fetched-${key.replace(/\//g, "_")}`);
      await blob.getToFile(key, file);
      return readFileSync(file, "utf8");
    };
    /** Every file an MPD names exists beside it. */
    const expectMpdComplete = async (blob: GcsBlob | S3Blob, mpdKey: string) => {
      const mpd = parseMpd(await text(blob, mpdKey));
      expect(
        mpd.representations
          .filter((r) => r.contentType === "video")
          .map((r) => r.height)
          .sort(),
      ).toEqual([180, 360]);
      expect(mpd.representations.some((r) => r.contentType === "audio")).toBe(true);
      for (const r of mpd.representations) {
        expect(r.files.length).toBeGreaterThan(1);
        for (const f of r.files) expect(await blob.head(path.posix.join(path.posix.dirname(mpdKey), f)), f).toBeDefined();
      }
    };

    const dashDone = await waitFor(dash.id);
    expect(dashDone.status, JSON.stringify(dashDone)).toBe("completed");
    expect(dashDone.output_origin).toMatchObject({ id: gcsOrigin, provider: "gcs", bucket: "media-gcs" });
    expect(dashDone.outputs[0].output_url).toMatch(/^gs:\/\/media-gcs\/.*\.mpd$/);
    await expectMpdComplete(gcsBlob, dashDone.outputs[0].output_url.replace("gs://media-gcs/", ""));

    const cmafDone = await waitFor(cmaf.id);
    expect(cmafDone.status, JSON.stringify(cmafDone)).toBe("completed");
    const main = cmafDone.outputs[0].output_url as string;
    expect(main.startsWith(`r2://media-r2/renditions/${cmaf.id}/`)).toBe(true);
    const masterKey = main.replace("r2://media-r2/", "");
    const dir = path.posix.dirname(masterKey);
    // Both manifests over the same fragmented-MP4 segments: the HLS master is the main file, the MPD sits beside it.
    await expectMpdComplete(r2Blob, `${dir}/manifest.mpd`);
    const master = parseHlsMaster(await text(r2Blob, masterKey));
    expect(master.variants).toHaveLength(2);
    for (const v of master.variants) {
      const media = parseHlsMedia(await text(r2Blob, path.posix.join(dir, v.uri)));
      expect(media.init).toBeDefined();
      expect(media.segments.length).toBeGreaterThan(0);
      for (const seg of [media.init!, ...media.segments.map((x) => x.uri)]) {
        expect(seg.endsWith(".m4s"), seg).toBe(true);
        expect(await r2Blob.head(path.posix.join(dir, seg)), seg).toBeDefined();
      }
    }
  });

  it("reads s3:// and gs:// input URLs with the credentials of the app's origin for that bucket; presets by id", async () => {
    const account = serviceAccountJson();
    await ok(
      call(
        h.base,
        "OriginService/Create",
        { name: "gcs-in", permissions: ["read", "write"], gcs: { bucket: "media-gcs", credentials: { service_account_json: account } } },
        key,
      ),
    );
    const gcsBlob = new GcsBlob({ bucket: "media-gcs", account: (parseServiceAccount(account) as { account: never }).account, endpoint: gcs.endpoint }, guard);
    await gcsBlob.put("sources/in.mp4", path.join(work, "in.mp4"), "video/mp4");
    const viaS3 = (
      await ok(
        call(
          h.base,
          "JobService/Create",
          { input_url: "s3://media-in/clips/in.mp4", output_origin_id: outputOrigin, outputs: [{ preset: "pst_system_web_mp4_720p" }] },
          key,
        ),
      )
    ).job;
    const viaGs = (
      await ok(call(h.base, "JobService/Create", { input_url: "gs://media-gcs/sources/in.mp4", output_origin_id: outputOrigin, outputs: [mp4Output()] }, key))
    ).job;
    expect(viaS3.input_origin).toBeNull();
    for (const id of [viaS3.id, viaGs.id]) {
      const done = await waitFor(id);
      expect(done.status, JSON.stringify(done)).toBe("completed");
      expect(done.input_metadata.video).toMatchObject({ width: 640, height: 360 });
    }
    const noOrigin = await call(
      h.base,
      "JobService/Create",
      { input_url: "s3://no-such-bucket/a.mp4", output_origin_id: outputOrigin, outputs: [mp4Output()] },
      key,
    );
    expect(noOrigin.status).toBe(400);
    expect((await errorDetails(noOrigin.body)).fieldViolations[0]!.field).toBe("input_url");
  });

  it("delayed start waits in awaiting_confirmation with an estimate; Confirm runs it, once", async () => {
    const { job } = await ok(
      call(h.base, "JobService/Create", { input_url: `${web.url}/in.mp4`, output_origin_id: outputOrigin, outputs: [mp4Output()], delayed_start: true }, key),
    );
    const waiting = await waitFor(job.id, (j) => j.status === "awaiting_confirmation");
    // A subscriber sees the snapshot at once, though nothing else will happen until Confirm.
    const watching = new AbortController();
    const asked = Date.now();
    const snapshot = await new Promise<StreamMessage>((resolve, reject) => {
      stream(h.base, "JobService/Watch", { id: job.id }, key, resolve, watching.signal).catch((e: unknown) =>
        watching.signal.aborted ? undefined : reject(e),
      );
    });
    watching.abort();
    expect(snapshot.body).toMatchObject({ event_type: "snapshot", job: { id: job.id, status: "awaiting_confirmation" } });
    expect(snapshot.receivedAt - asked).toBeLessThan(1000);
    expect(waiting.total_estimated_cost).toBeGreaterThan(0);
    expect("total_actual_cost" in waiting).toBe(false);
    expect(waiting.outputs).toHaveLength(1);
    expect(waiting.cost_breakdown.lines.every((l: any) => "estimated_amount_eur" in l && !("actual_amount_eur" in l))).toBe(true);
    const confirmed = (await ok(call(h.base, "JobService/Confirm", { id: job.id }, key))).job;
    expect(confirmed.status).toBe("processing");
    expect(typeof confirmed.confirmed_at).toBe("string");
    const r = await call(h.base, "JobService/Confirm", { id: job.id }, key);
    expect(r.body.code).toBe("failed_precondition");
    expect((await waitFor(job.id)).status).toBe("completed");
  });

  it("failures carry the right error_code and charge nothing", async () => {
    const create = async (input: object, outputs = [mp4Output()], origin = outputOrigin) =>
      (await ok(call(h.base, "JobService/Create", { ...input, output_origin_id: origin, outputs }, key))).job.id as string;
    const unreachable = await create({ input_url: "https://127.0.0.1:1/nothing.mp4" });
    const missing = await create({ input_url: `${web.url}/no-such-file.mp4` });
    const corrupt = await create({ input_url: `${web.url}/corrupt.mp4` });
    const forbidden = await create({ input_url: "https://10.255.255.1/private.mp4" });
    const cases: [string, string][] = [
      [unreachable, "input_unreachable"],
      [missing, "input_unreachable"],
      [corrupt, "input_invalid"],
      [forbidden, "input_forbidden"],
    ];
    for (const [id, code] of cases) {
      const job = await waitFor(id);
      expect(job.status, JSON.stringify(job)).toBe("failed");
      expect(job.error_code).toBe(code);
      expect(job.error_message).not.toBe("");
      expect(job.total_actual_cost).toBe(0);
      expect(job.fees).toEqual([]);
      expectMoneyAddsUp(job);
    }
  });

  it("a write the bucket refuses at encode time fails the output with output_write_denied", async () => {
    const origin = await createOrigin("writer", "media-out", ["read", "write"], writer);
    const { job } = await ok(
      call(h.base, "JobService/Create", { input_url: `${web.url}/in.mp4`, output_origin_id: origin, outputs: [mp4Output()], delayed_start: true }, key),
    );
    await waitFor(job.id, (j) => j.status === "awaiting_confirmation");
    await minio.mc("admin", "policy", "detach", "peer", "readwrite", "--user", writer.accessKeyId);
    await minio.mc("admin", "policy", "attach", "peer", "readonly", "--user", writer.accessKeyId);
    await ok(call(h.base, "JobService/Confirm", { id: job.id }, key));
    const done = await waitFor(job.id);
    expect(done.status).toBe("failed");
    expect(done.error_code).toBe("output_write_denied");
    expect(done.outputs[0]).toMatchObject({ status: "failed", error_code: "output_write_denied" });
    expect(done.total_actual_cost).toBe(0);
  });

  it("rejects an impossible codec/container pair and other bad specs at Create, naming the field", async () => {
    const bad = async (body: object, field: string) => {
      const r = await call(
        h.base,
        "JobService/Create",
        { input_url: `${web.url}/in.mp4`, output_origin_id: outputOrigin, outputs: [mp4Output()], ...body },
        key,
      );
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      const d = await errorDetails(r.body);
      expect(d.fieldViolations.map((v) => v.field)).toContain(field);
    };
    await bad({ outputs: [{ type: "webm", video: [{ codec: "h264" }] }] }, "outputs[0].video[0].codec");
    await bad({ outputs: [] }, "outputs");
    await bad({ outputs: [mp4Output({ video: [{ codec: "h264", h264: { crf: 60 } }] })] }, "outputs[0].video[0].h264.crf");
    await bad({ input_url: "ftp://example.com/a.mp4" }, "input_url");
    await bad({ output_origin_id: "" }, "output_origin_id");
    await bad({ output_origin_id: inputOrigin }, "output_origin_id");
    await bad({ output_path_template: "{job_id}/{nope}" }, "output_path_template");
    await bad({ thumbnails: Array.from({ length: 6 }, () => ({ mode: "single" })) }, "thumbnails");
    await bad({ idempotency_key: "k".repeat(129) }, "idempotency_key");
    await bad({ metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, "v"])) }, "metadata");
    await bad({ clip: { start_seconds: 2, end_seconds: 1 } }, "clip.end_seconds");
    await bad({ outputs: [{ preset: "no_such_preset" }] }, "outputs[0].preset");
    // Managed outputs go to managed hosting: an output origin as well is a contradiction.
    await bad({ managed: true }, "output_origin_id");
  });

  it("the idempotency key returns the first job for the same body and refuses a different one", async () => {
    const body = { input_url: `${web.url}/in.mp4`, output_origin_id: outputOrigin, outputs: [mp4Output()], idempotency_key: "order-42", delayed_start: true };
    const first = (await ok(call(h.base, "JobService/Create", body, key))).job;
    const again = (await ok(call(h.base, "JobService/Create", body, key))).job;
    expect(again.id).toBe(first.id);
    const other = await call(h.base, "JobService/Create", { ...body, metadata: { changed: "yes" } }, key);
    expect(other.status).toBe(409);
    expect(other.body.code).toBe("already_exists");
    await ok(call(h.base, "JobService/Cancel", { id: first.id }, key));
  });

  it("cancel during an encode stops ffmpeg within 2 seconds; the fee and nothing else is charged", async () => {
    const { job } = await ok(
      call(
        h.base,
        "JobService/Create",
        {
          input_origin_id: inputOrigin,
          input_path: "clips/long.mp4",
          output_origin_id: outputOrigin,
          outputs: [{ type: "mp4", video: [{ codec: "h264", width: 1280, height: 720, h264: { encoder_preset: "slower" } }] }],
        },
        key,
      ),
    );
    await waitFor(job.id, (j) => j.status === "processing" && j.progress > 0);
    const running = async () =>
      (
        await run("pgrep", ["-f", `ffmpeg.*${job.id}`]).then(
          (r) => r.stdout,
          () => "",
        )
      ).trim();
    expect(await running()).not.toBe("");
    const canceled = (await ok(call(h.base, "JobService/Cancel", { id: job.id }, key))).job;
    const at = Date.now();
    expect(canceled.status).toBe("canceled");
    expect(canceled.outputs[0].status).toBe("canceled");
    while ((await running()) !== "" && Date.now() - at < 2000) await new Promise((r) => setTimeout(r, 50));
    expect(await running()).toBe("");
    expect(Date.now() - at).toBeLessThan(2000);
    expectMoneyAddsUp(canceled);
    expect(canceled.total_actual_cost).toBe(canceled.fees[0].amount);
    const again = await call(h.base, "JobService/Cancel", { id: job.id }, key);
    expect(again.body.code).toBe("failed_precondition");
  });

  it("lists jobs newest first with a status filter", async () => {
    const all = (await ok(call(h.base, "JobService/List", { pagination: { limit: 100 } }, key))).jobs as any[];
    expect(all.length).toBeGreaterThanOrEqual(8);
    const created = all.map((j) => Date.parse(j.created_at));
    expect([...created].sort((a, b) => b - a)).toEqual(created);
    const failed = (await ok(call(h.base, "JobService/List", { status: "failed" }, key))).jobs as any[];
    expect(failed.length).toBeGreaterThanOrEqual(4);
    expect(failed.every((j) => j.status === "failed")).toBe(true);
    const page = await ok(call(h.base, "JobService/List", { pagination: { limit: 2 } }, key));
    expect(page.jobs).toHaveLength(2);
    expect(page.pagination.next_cursor).not.toBe("");
  });
});
