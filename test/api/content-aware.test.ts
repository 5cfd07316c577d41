// Content-aware encoding through the API: a job whose HLS output has content_aware, its input in a
// real S3-compatible bucket (MinIO), encoded by the embedded encoder node with the trial encodes
// scored by libvmaf. The completed job shows the ladder the analysis chose in the output's
// content_aware (rungs and analysis time, read-only: a caller's own values are not echoed), with
// strict JSON; progress rises through the analysis; bad combinations are refused on their fields.
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { S3Blob } from "../../src/blob/index.js";
import { NetGuard } from "../../src/net-guard.js";
import { call, createS3Origin, errorDetails, ok, startHarness, waitForJob, type Auth, type Harness } from "../harness.js";
import { makeTestCa, startMinio, type MinioPeer } from "../peers.js";
import { stream } from "../watch.js";

const run = promisify(execFile);
let h: Harness;
let minio: MinioPeer;
let key: Auth;
let inputOrigin: string;
let outputOrigin: string;

beforeAll(async () => {
  const work = mkdtempSync(path.join(tmpdir(), "media-content-aware-"));
  const ca = makeTestCa();
  minio = await startMinio(ca, ["media-in", "media-out"]);
  // A textured still with a small moving patch: what a talking head looks like to an encoder.
  const input = path.join(work, "in.mp4");
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i"],
    "color=c=0x4a5560:s=640x360:r=25:d=6,noise=alls=40:allf=u,gblur=sigma=1.2[bg];color=c=0xc8a080:s=120x150:r=25:d=6[face];[bg][face]overlay=x='260+8*sin(t*1.3)':y='100+4*sin(t*2)'",
    ...["-c:v", "libx264", "-preset", "veryfast", "-crf", "14", "-pix_fmt", "yuv420p", input],
  ]);
  h = await startHarness({ MEDIA_NET_ALLOW: "127.0.0.1/32", MEDIA_S3_ENDPOINT: minio.endpoint, MEDIA_TLS_CA_FILE: ca.caFile });
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  const guard = new NetGuard({ net: { allow: ["127.0.0.1/32"], tlsCaFile: ca.caFile } });
  const bucket = new S3Blob(
    {
      scheme: "s3",
      bucket: "media-in",
      region: "us-east-1",
      endpoint: minio.endpoint,
      accessKeyId: minio.admin.accessKeyId,
      secretAccessKey: minio.admin.secretAccessKey,
    },
    guard,
  );
  await bucket.put("clips/in.mp4", input, "video/mp4");
  inputOrigin = await createS3Origin(h.base, key, minio, "inputs", "media-in", ["read"]);
  outputOrigin = await createS3Origin(h.base, key, minio, "outputs", "media-out", ["read", "write"]);
}, 240_000);

afterAll(async () => {
  await h?.server.close();
  await minio?.stop();
});

const RUNG_FIELDS = [
  "name",
  "width",
  "height",
  "target_vmaf",
  "crf",
  "max_bitrate_kbps",
  "predicted_vmaf",
  "predicted_bitrate_kbps",
  "measured_vmaf",
  "bitrate_kbps",
];

describe("content_aware", { timeout: 240_000 }, () => {
  it("a completed job shows each variant's chosen CRF, predicted and measured VMAF, and the analysis time", async () => {
    const created = await ok(
      call(
        h.base,
        "JobService/Create",
        {
          input_origin_id: inputOrigin,
          input_path: "clips/in.mp4",
          output_origin_id: outputOrigin,
          outputs: [
            {
              type: "hls",
              video: [
                { codec: "h264", width: 640, height: 360 },
                { codec: "h264", width: 320, height: 180, quality: "premium" },
              ],
              disable_audio: true,
              // The caller's rungs are read-only: not echoed.
              content_aware: { enabled: true, target_vmaf: 0, max_bitrate_kbps: 4000, rungs: [{ name: "forged", crf: 1 }], analysis_seconds: 99 },
            },
          ],
        },
        key,
      ),
    );
    const id = created.job.id;
    const watched = await stream(h.base, "JobService/Watch", { id }, key);
    const job = watched.messages.at(-1)!.body.job;
    expect(job.status, JSON.stringify(job)).toBe("completed");
    // Progress moved while the analysis ran, before the encode: never backwards.
    const progress = watched.messages.map((m: any) => m.body.job.outputs[0]?.progress ?? 0);
    expect(progress.every((p: number, i: number) => i === 0 || p >= progress[i - 1]!)).toBe(true);
    expect(progress.filter((p: number) => p > 0 && p < 20).length).toBeGreaterThan(0);
    const ca = job.outputs[0].spec.content_aware;
    expect(ca.analysis_seconds).toBeGreaterThan(0);
    expect(ca.analysis_seconds).toBeLessThan(99);
    expect(ca.rungs.map((r: any) => [r.name, r.width, r.height, r.target_vmaf])).toEqual([
      ["640x360", 640, 360, 93],
      ["320x180", 320, 180, 96],
    ]);
    for (const r of ca.rungs) {
      expect(Object.keys(r)).toEqual(RUNG_FIELDS);
      expect(r.crf).toBeGreaterThanOrEqual(12);
      expect(r.crf).toBeLessThanOrEqual(45);
      expect(r.max_bitrate_kbps).toBe(4000);
      expect(r.predicted_vmaf).toBeGreaterThan(80);
      expect(r.predicted_vmaf).toBeLessThanOrEqual(100);
      expect(r.predicted_bitrate_kbps).toBeGreaterThan(0);
      // The final encode over the analysis's samples lands near the prediction.
      expect(Math.abs(r.measured_vmaf - r.predicted_vmaf)).toBeLessThan(3);
      expect(r.bitrate_kbps).toBeGreaterThan(0);
    }
    // The same job from Get, as Watch ended with it.
    expect((await ok(call(h.base, "JobService/Get", { id }, key))).job.outputs[0].spec.content_aware).toEqual(ca);
    await waitForJob(h.base, id, key);
  });

  it("refuses a variant's own rate and out-of-range bounds on their fields", async () => {
    const r = await call(
      h.base,
      "JobService/Create",
      {
        input_origin_id: inputOrigin,
        input_path: "clips/in.mp4",
        output_origin_id: outputOrigin,
        outputs: [
          {
            type: "mp4",
            video: [{ codec: "h264", bitrate: 2000, h264: { crf: 20 } }],
            content_aware: { enabled: true, min_bitrate_kbps: 5000, max_bitrate_kbps: 1000, target_vmaf: 120 },
          },
        ],
      },
      key,
    );
    expect(r.status).toBe(400);
    expect((await errorDetails(r.body)).fieldViolations.map((v) => v.field)).toEqual([
      "outputs[0].content_aware.min_bitrate_kbps",
      "outputs[0].content_aware.target_vmaf",
      "outputs[0].video[0].bitrate",
      "outputs[0].video[0].h264.crf",
    ]);
  });
});
