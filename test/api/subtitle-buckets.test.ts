// Provided subtitle files at s3:// and gs:// URLs, read with the job's own origins (input, input
// URL's, output with read permission) from MinIO and fake-gcs-server; a bucket none of them reads is
// refused at Create, a missing object fails its output. Runs against both deployments.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GcsBlob, parseServiceAccount, S3Blob, type BlobStore } from "../../src/blob/index.js";
import { NetGuard } from "../../src/net-guard.js";
import { call, createS3Origin, errorDetails, ok, startHarness, waitForJob, type Auth, type Harness } from "../harness.js";
import { makeTestCa, serviceAccountJson, startFakeGcs, startMinio, type GcsPeer, type MinioPeer } from "../peers.js";

const run = promisify(execFile);
let h: Harness;
let minio: MinioPeer;
let gcs: GcsPeer;
let key: Auth;
let work: string;
let bucketOut: S3Blob;
let gcsBlob: GcsBlob;
let inputOrigin: string;
let outputOrigin: string;

const VTT = "WEBVTT\n\n00:00.500 --> 00:01.500\nHello\n";
const SRT = "1\r\n00:00:01,000 --> 00:00:01,800\r\n<i>Bonjour</i>\r\n";
const GS_VTT = "WEBVTT\n\n00:00.200 --> 00:00.900\nHallo\n";

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "media-subtitle-buckets-"));
  const input = path.join(work, "in.mp4");
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=2"],
    ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", input],
  ]);
  const file = (name: string, text: string) => {
    writeFileSync(path.join(work, name), text);
    return path.join(work, name);
  };
  const ca = makeTestCa();
  minio = await startMinio(ca, ["media-in", "media-out"]);
  gcs = await startFakeGcs(["media-gcs"]);
  h = await startHarness({
    MEDIA_NET_ALLOW: "127.0.0.1/32",
    MEDIA_S3_ENDPOINT: minio.endpoint,
    MEDIA_GCS_API_ENDPOINT: gcs.endpoint,
    MEDIA_TLS_CA_FILE: ca.caFile,
  });
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  const guard = new NetGuard({ net: { allow: ["127.0.0.1/32"], tlsCaFile: ca.caFile } });
  const s3 = (bucket: string) =>
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
  const bucketIn = s3("media-in");
  bucketOut = s3("media-out");
  const account = serviceAccountJson();
  gcsBlob = new GcsBlob({ bucket: "media-gcs", account: (parseServiceAccount(account) as { account: never }).account, endpoint: gcs.endpoint }, guard);
  await bucketIn.put("talks/in.mp4", input, "video/mp4");
  // Outside the input origin's base path: an s3:// URL names the whole key.
  await bucketIn.put("captions/en.vtt", file("en.vtt", VTT), "text/vtt");
  await bucketOut.put("captions/fr.srt", file("fr.srt", SRT), "application/x-subrip");
  await gcsBlob.put("sources/in.mp4", input, "video/mp4");
  await gcsBlob.put("captions/de.vtt", file("de.vtt", GS_VTT), "text/vtt");
  const credentials = { access_key_id: minio.admin.accessKeyId, secret_access_key: minio.admin.secretAccessKey };
  inputOrigin = (
    await ok(
      call(
        h.base,
        "OriginService/Create",
        { name: "inputs", permissions: ["read"], base_path: "talks", s3: { bucket: "media-in", region: "us-east-1", credentials } },
        key,
      ),
    )
  ).origin.id;
  outputOrigin = await createS3Origin(h.base, key, minio, "outputs", "media-out", ["read", "write"]);
  await ok(
    call(
      h.base,
      "OriginService/Create",
      { name: "gcs", permissions: ["read"], gcs: { bucket: "media-gcs", credentials: { service_account_json: account } } },
      key,
    ),
  );
}, 240_000);

afterAll(async () => {
  await h?.server.close();
  await minio?.stop();
  await gcs?.stop();
});

const mp4 = (...urls: string[]) => ({
  type: "mp4",
  video: [{ codec: "h264", width: 320, height: 180 }],
  subtitle_tracks: urls.map((url) => ({ source: "url", url })),
});

/** A result's WebVTT file, read from the bucket its s3:// or gs:// URL names. */
async function read(blob: BlobStore, url: string): Promise<string> {
  const file = path.join(work, `out_${url.replace(/[^a-z0-9.]/gi, "_")}`);
  await blob.getToFile(url.replace(/^[a-z0-9]+:\/\/[^/]+\//, ""), file);
  return readFileSync(file, "utf8");
}

describe("subtitle files in the job's buckets", () => {
  it("reads s3:// files with the input origin (whole key, not under its base path) and the readable output origin", async () => {
    const created = await ok(
      call(
        h.base,
        "JobService/Create",
        {
          input_origin_id: inputOrigin,
          input_path: "in.mp4",
          output_origin_id: outputOrigin,
          outputs: [mp4("s3://media-in/captions/en.vtt", "s3://media-out/captions/fr.srt")],
        },
        key,
      ),
    );
    const job = await waitForJob(h.base, created.job.id, key);
    expect(job.status, JSON.stringify(job.outputs.map((o: any) => o.error_message))).toBe("completed");
    const results = job.subtitle_results as any[];
    expect(results.map((r) => [r.track_index, r.source])).toEqual([
      [0, "url"],
      [1, "url"],
    ]);
    expect(await read(bucketOut, results[0].url)).toContain("00:00:00.500 --> 00:00:01.500\nHello");
    expect(await read(bucketOut, results[1].url)).toContain("00:00:01.000 --> 00:00:01.800\n<i>Bonjour</i>");
  });

  it("reads gs:// files with the input URL's origin; a missing object fails its output with subtitle_unreachable", async () => {
    const created = await ok(
      call(
        h.base,
        "JobService/Create",
        {
          input_url: "gs://media-gcs/sources/in.mp4",
          output_origin_id: outputOrigin,
          outputs: [mp4("gs://media-gcs/captions/de.vtt"), mp4("gs://media-gcs/captions/missing.vtt")],
        },
        key,
      ),
    );
    const job = await waitForJob(h.base, created.job.id, key);
    expect(job.status).toBe("partial");
    expect(job.outputs.map((o: any) => o.error_code)).toEqual(["", "subtitle_unreachable"]);
    expect(job.outputs[1].error_message).toMatch(/subtitle track 0/);
    expect(job.subtitle_results).toHaveLength(1);
    expect(await read(bucketOut, job.subtitle_results[0].url)).toContain("00:00:00.200 --> 00:00:00.900\nHallo");
  });

  it("refuses at Create a bucket no origin of the job reads, even one another origin of the app reads", async () => {
    const res = await call(
      h.base,
      "JobService/Create",
      {
        input_origin_id: inputOrigin,
        input_path: "in.mp4",
        output_origin_id: outputOrigin,
        outputs: [mp4("s3://elsewhere/en.vtt", "gs://media-gcs/captions/de.vtt", "s3://media-in/captions/en.vtt")],
      },
      key,
    );
    expect(res.status).toBe(400);
    const violations = (await errorDetails(res.body)).fieldViolations;
    expect(violations.map((v) => v.field)).toEqual(["outputs[0].subtitle_tracks[0].url", "outputs[0].subtitle_tracks[1].url"]);
    expect(violations[0]!.description).toMatch(/^no origin of the job reads bucket elsewhere \(.* read s3:\/\/media-in, s3:\/\/media-out\); .*input_origin_id/);
    expect(violations[1]!.description).toMatch(/^no origin of the job reads bucket media-gcs /);
  });
});
