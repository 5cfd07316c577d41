// Content protection end to end, in both deployments: the rules at Create (each refused combination
// on its field), a DASH output in a real S3-compatible bucket protected for Widevine and PlayReady
// with keys from a SPEKE v2 key service (a real HTTPS peer that checks every request), a managed
// CMAF output whose Clear Key licenses the edge answers from that service's keys, and a key
// service that fails: the output fails with drm_key_unavailable and nothing is written.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { S3Blob } from "../../src/blob/index.js";
import { NetGuard } from "../../src/net-guard.js";
import { call, createS3Origin, errorDetails, ok, startHarness, waitForJob, type Auth, type Harness } from "../harness.js";
import { makeTestInput } from "../media.js";
import { findBoxes, readBoxes, readPssh, readTenc } from "../mp4-boxes.js";
import { makeTestCa, startMinio, type MinioPeer } from "../peers.js";
import { startSpekePeer, type SpekePeer } from "../speke-peer.js";
import { stream } from "../watch.js";

let h: Harness;
let minio: MinioPeer;
let speke: SpekePeer;
let failing: SpekePeer;
let key: Auth;
let bucketOut: S3Blob;
let outputOrigin: string;
let inputOrigin: string;

const WIDEVINE = "edef8ba9-79d6-4ace-a3c8-27dcd51d21ed";
const PLAYREADY = "9a04f079-9840-4286-ab92-e65be0885f95";
const CLEARKEY = "1077efec-c0b2-4d02-ace3-3c1e52e2fb4b";

beforeAll(async () => {
  const work = mkdtempSync(path.join(tmpdir(), "media-drm-"));
  const ca = makeTestCa();
  minio = await startMinio(ca, ["media-in", "media-out"]);
  speke = await startSpekePeer(ca);
  failing = await startSpekePeer(ca, { fail: "500" });
  h = await startHarness({ MEDIA_NET_ALLOW: "127.0.0.1/32", MEDIA_S3_ENDPOINT: minio.endpoint, MEDIA_TLS_CA_FILE: ca.caFile });
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  const guard = new NetGuard({ net: { allow: ["127.0.0.1/32"], tlsCaFile: ca.caFile } });
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
  bucketOut = at("media-out");
  const input = await makeTestInput(path.join(work, "in.mp4"), { width: 640, height: 360, fps: 25, seconds: 6, audio: true });
  await at("media-in").put("clips/in.mp4", input, "video/mp4");
  const origin = (name: string, bucket: string, permissions: string[]) => createS3Origin(h.base, key, minio, name, bucket, permissions);
  inputOrigin = await origin("inputs", "media-in", ["read"]);
  outputOrigin = await origin("outputs", "media-out", ["read", "write"]);
}, 240_000);

afterAll(async () => {
  await h?.server.close();
  await speke?.close();
  await failing?.close();
  await minio?.stop();
});

/** An object of the output bucket. */
async function read(key: string): Promise<Buffer> {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "drm-out-")), "object");
  await bucketOut.getToFile(key, file);
  return readFileSync(file);
}

const waitFor = (id: string, ms = 150_000) => waitForJob(h.base, id, key, { ms });

const h264 = { codec: "h264", width: 640, height: 360, quality: "economy" };
const job = (outputs: object[], extra: object = {}) => ({
  input_origin_id: inputOrigin,
  input_path: "clips/in.mp4",
  output_origin_id: outputOrigin,
  outputs,
  ...extra,
});

describe("the drm object at Create", () => {
  it("names the field of each combination this build refuses", async () => {
    const refused = async (body: object) => {
      const r = await call(h.base, "JobService/Create", body, key);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      return (await errorDetails(r.body)).fieldViolations.map((v) => v.field);
    };
    expect(await refused(job([{ type: "mp4", video: [h264], drm: { systems: ["widevine"], key_provider_url: speke.url } }]))).toEqual(["outputs[0].drm"]);
    expect(await refused(job([{ type: "dash", video: [h264], drm: { scheme: "cenc", systems: ["clearkey"] } }]))).toEqual(["outputs[0].drm.systems[0]"]);
    expect(await refused(job([{ type: "hls", video: [h264], drm: {} }]))).toEqual(["outputs[0].drm.scheme"]);
    expect(await refused(job([{ type: "adaptive", video: [h264], drm: { scheme: "cenc", systems: ["widevine"], key_provider_url: speke.url } }]))).toEqual([
      "outputs[0].drm.scheme",
    ]);
    expect(await refused(job([{ type: "dash", video: [h264], drm: { systems: ["fairplay"], key_provider_url: speke.url } }]))).toEqual([
      "outputs[0].drm.systems[0]",
    ]);
    expect(await refused(job([{ type: "dash", video: [h264], drm: { systems: ["widevine"] } }]))).toEqual(["outputs[0].drm.key_provider_url"]);
    expect(await refused(job([{ type: "dash", video: [h264], drm: { systems: ["widevine"], key_provider_url: "http://127.0.0.1/speke" } }]))).toEqual([
      "outputs[0].drm.key_provider_url",
    ]);
    const r = await call(
      h.base,
      "VideoService/CreateUpload",
      { app_id: h.boot.app_id, filename: "a.mp4", content_type: "video/mp4", size_bytes: 1000, drm: { scheme: "cbcs" } },
      key,
    );
    expect(r.status).toBe(400);
    expect((await errorDetails(r.body)).fieldViolations.map((v) => `${v.field}: ${v.description}`)).toEqual([
      "drm.systems: needs at least one of clearkey, widevine, playready, fairplay",
    ]);
  });
});

describe("keys from a SPEKE v2 key service", () => {
  it("protects a DASH output in the caller's bucket for Widevine and PlayReady with the service's keys", async () => {
    const before = speke.requests.length;
    const created = await ok(
      call(
        h.base,
        "JobService/Create",
        job([
          { type: "dash", video: [h264], drm: { scheme: "cenc", systems: ["widevine", "playready"], key_provider_url: speke.url, resource_id: "course-7" } },
        ]),
        key,
      ),
    );
    const done = await waitFor(created.job.id);
    expect(done.status, `${done.error_code}: ${done.outputs[0]?.error_code}: ${done.outputs[0]?.error_message}`).toBe("completed");
    const seen = speke.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.problem).toBeUndefined();
    expect(seen[0]!.contentId).toBe("course-7");
    expect(seen[0]!.contentKeys.map((k) => k.scheme)).toEqual(["cenc", "cenc"]);
    expect(new Set(seen[0]!.drmSystems.map((s) => s.systemId))).toEqual(new Set([WIDEVINE, PLAYREADY]));
    expect(seen[0]!.usageRules.map((r) => r.intendedTrackType).sort()).toEqual(["AUDIO", "SD"]);
    // Every init segment is protected with one of the service's keys and signals exactly the asked systems.
    const mpdKey = done.outputs[0].output_url.replace(/^s3:\/\/media-out\//, "");
    const mpd = await read(mpdKey);
    const ids = [...mpd.toString().matchAll(/<Representation [^>]*id="([^"]+)"/g)].map((m) => m[1]!);
    const inits = [
      ...new Set([...mpd.toString().matchAll(/initialization="([^"]+)"/g)].flatMap((m) => ids.map((id) => m[1]!.replace("$RepresentationID$", id)))),
    ];
    const kids = new Set(seen[0]!.contentKeys.map((k) => k.kid));
    let protectedInits = 0;
    for (const init of inits) {
      const bytes = await read(path.posix.join(path.posix.dirname(mpdKey), init)).catch(() => undefined);
      if (!bytes) continue;
      const boxes = readBoxes(bytes);
      const tenc = readTenc(findBoxes(boxes, "moov/trak/mdia/minf/stbl/stsd/*/sinf/schi/tenc")[0]!);
      expect(tenc.isProtected).toBe(true);
      expect(kids.has(tenc.kid)).toBe(true);
      expect(speke.keys.has(tenc.kid)).toBe(true);
      expect(new Set(findBoxes(boxes, "moov/pssh").map((b) => readPssh(b).systemId))).toEqual(new Set([WIDEVINE, PLAYREADY]));
      protectedInits++;
    }
    expect(protectedInits).toBe(2);
    expect(mpd.toString()).toContain(`urn:uuid:${WIDEVINE}`);
    expect(mpd.toString()).toContain(`urn:uuid:${PLAYREADY}`);
    expect(mpd.toString()).not.toContain(CLEARKEY);
  }, 200_000);

  it("a managed output's Clear Key licenses are the service's keys, and only under the token", async () => {
    const created = await ok(
      call(
        h.base,
        "JobService/Create",
        {
          input_origin_id: inputOrigin,
          input_path: "clips/in.mp4",
          managed: true,
          outputs: [{ type: "adaptive", video: [h264], drm: { systems: ["clearkey"], key_provider_url: speke.url } }],
        },
        key,
      ),
    );
    const done = await waitFor(created.job.id);
    expect(done.status, `${done.error_code}: ${done.outputs[0]?.error_code}: ${done.outputs[0]?.error_message}`).toBe("completed");
    const watched = await stream(h.base, "VideoService/Watch", { id: created.video_id }, key);
    const video = watched.messages.at(-1)!.body.video;
    expect(video.status).toBe("ready");
    const dir = video.playback_url.slice(0, video.playback_url.lastIndexOf("/") + 1);
    const mpd = await (await fetch(`${dir}manifest.mpd`)).text();
    const kids = [...new Set([...mpd.matchAll(/default_KID="([0-9a-fA-F-]{36})"/g)].map((m) => m[1]!.replace(/-/g, "").toLowerCase()))];
    expect(kids.length).toBe(2);
    const body = JSON.stringify({ kids: kids.map((k) => Buffer.from(k, "hex").toString("base64url")), type: "temporary" });
    const r = await fetch(`${dir}drm/clearkey`, { method: "POST", body });
    expect(r.status).toBe(200);
    const license = (await r.json()) as { keys: { kty: string; kid: string; k: string }[]; type: string };
    expect(license.type).toBe("temporary");
    for (const k of license.keys) {
      expect(k.kty).toBe("oct");
      expect(Buffer.from(k.k, "base64url").toString("hex")).toBe(speke.keys.get(Buffer.from(k.kid, "base64url").toString("hex")));
    }
    expect(license.keys).toHaveLength(2);
    expect((await fetch(`${dir.replace(/\/bcdn_token=[^/]*/, "")}drm/clearkey`, { method: "POST", body })).status).toBeGreaterThanOrEqual(400);
    // The job's own record never shows a key.
    expect(JSON.stringify(done)).not.toMatch(new RegExp([...speke.keys.values()].join("|")));
  }, 200_000);

  it("a key service that fails fails the output with drm_key_unavailable, before anything is written", async () => {
    const created = await ok(
      call(
        h.base,
        "JobService/Create",
        job([{ type: "dash", video: [h264], path_template: "drm-failed/{job_id}", drm: { systems: ["widevine"], key_provider_url: failing.url } }]),
        key,
      ),
    );
    const done = await waitFor(created.job.id);
    expect(done.status).toBe("failed");
    expect(done.error_code).toBe("drm_key_unavailable");
    expect(done.outputs[0].status).toBe("failed");
    expect(done.outputs[0].error_code).toBe("drm_key_unavailable");
    expect(done.outputs[0].error_message).toMatch(/127\.0\.0\.1/);
    expect(done.outputs[0].output_url ?? "").toBe("");
    expect(await bucketOut.head(`drm-failed/${created.job.id}/manifest.mpd`)).toBeUndefined();
    expect(failing.requests.length).toBeGreaterThan(0);
  }, 200_000);
});
