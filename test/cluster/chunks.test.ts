// One ladder encoded by two encoder nodes at once, on real Kafka, Cassandra and MinIO: a 48 s
// source (moving test pattern, continuous tone) whose HLS ladder is split into 6 s chunks of every
// rung. The node that takes the encode plans the chunks, encodes the audio, then chunks still
// queued; the other node takes chunks as soon as they are queued. The job completes at its
// estimate; chunks ran on both nodes; every rung of the output has every frame once, one frame
// duration apart across each join, at the same timestamps in every rung, and plays through (every
// playlist ended, EXTINF summing to the source's length). And a hosted video ingested from a URL
// (24 s, 480p): its stream is split too, ready (playable) from the rung encoded whole before the chunks are
// joined, and at the end every rung is listed, ended and whole.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, until } from "../harness.js";
import { decodedFrames, frameTimes, makeTestInput, parseHlsMaster, parseHlsMedia } from "../media.js";
import { startFleet, type Fleet } from "./fleet.js";

const SECONDS = 48;
const HOSTED_SECONDS = 24;
const FPS = 25;
let fleet: Fleet;
/** Tests passed: the fleet's logs are printed unless both did. */
let passed = 0;

beforeAll(async () => {
  // A 480p source: a hosted video's default ladder gives it two rungs (480p and 360p).
  const hosted = await makeTestInput(path.join(mkdtempSync(path.join(tmpdir(), "chunks-")), "hosted.mp4"), {
    seconds: HOSTED_SECONDS,
    width: 854,
    height: 480,
    fps: FPS,
    audio: true,
  });
  // A subtitle file for the ladder chunked whole: its cues are mapped to the chunks' first timestamp.
  const subs = path.join(path.dirname(hosted), "subs.vtt");
  writeFileSync(subs, "WEBVTT\n\n00:00:01.000 --> 00:00:03.000\nthe first words\n\n00:00:20.000 --> 00:00:22.000\nlater words\n");
  fleet = await startFleet({
    encoderNodes: 2,
    inputs: { long: SECONDS, hosted, subs },
    env: { MEDIA_ENCODER_CHUNK_SECONDS: "6", MEDIA_LOG_LEVEL: "info" },
  });
}, 240_000);
afterAll(async () => {
  await fleet?.stop(passed === 2);
}, 120_000);

describe("a ladder split across two encoder nodes", () => {
  it("completes at its estimate with chunks from both nodes, every frame once, continuous at every join", async () => {
    const id = await fleet.submit(fleet.a, fleet.inputs.long!, "standard", {
      outputs: [
        {
          type: "hls",
          video: [
            { codec: "h264", width: 320, height: 240 },
            { codec: "h264", width: 256, height: 192 },
            { codec: "h264", width: 192, height: 144 },
          ],
          audio: [{ codec: "aac", bitrate_kbps: 64 }],
          subtitle_tracks: [{ source: "url", url: fleet.inputs.subs, format: "vtt", language: "en" }],
        },
      ],
    });
    const job = await until(
      "the job's end",
      async () => {
        const j = await fleet.job(id, fleet.a);
        return ["completed", "failed", "partial", "canceled"].includes(j.status) ? j : undefined;
      },
      180_000,
    );
    expect(job.error_message ?? "").toBe("");
    expect(job.status).toBe("completed");
    expect(job.total_actual_cost).toBe(job.total_estimated_cost);

    // Both nodes encoded chunks of it.
    const chunkLines = fleet.cluster.encoderNodes.map(
      (n) =>
        n
          .output()
          .split("\n")
          .filter((l) => l.includes("chunk encoded") && l.includes(id)).length,
    );
    expect(chunkLines.reduce((a, b) => a + b, 0)).toBe(SECONDS / 6);
    expect(
      chunkLines.every((n) => n > 0),
      `chunks per node: ${chunkLines.join(", ")}`,
    ).toBe(true);

    const main = await fleet.download(job.outputs[0].output_url);
    const master = parseHlsMaster(readFileSync(main, "utf8"));
    expect(master.variants.map((v) => v.attributes.RESOLUTION)).toEqual(["320x240", "256x192", "192x144"]);
    const lowest = path.join(path.dirname(main), master.variants.at(-1)!.uri);
    const reference = await frameTimes(lowest);
    expect(reference).toHaveLength(SECONDS * FPS);
    // The subtitles' WebVTT segments map their local 0 to where the video starts (read back by the
    // node that took the encode, which encoded no video of this ladder).
    const subs = master.media.find((m) => m.TYPE === "SUBTITLES");
    expect(subs).toBeDefined();
    const subMedia = path.join(path.dirname(main), subs!.URI!);
    const vtt = readFileSync(path.join(path.dirname(subMedia), parseHlsMedia(readFileSync(subMedia, "utf8")).segments[0]!.uri), "utf8");
    expect(vtt).toContain(`X-TIMESTAMP-MAP=MPEGTS:${Math.round(reference[0]! * 90_000)},LOCAL:00:00:00.000`);
    // Continuous across the joins: each frame one frame duration after the one before.
    const gaps = reference.flatMap((t, k) => (k === 0 || Math.abs(t - reference[k - 1]! - 1 / FPS) < 0.001 ? [] : [`frame ${k} at ${t}`]));
    expect(gaps).toEqual([]);
    for (const v of master.variants) {
      expect(Number(v.attributes.BANDWIDTH)).toBeGreaterThan(0);
      const playlist = path.join(path.dirname(main), v.uri);
      const media = parseHlsMedia(readFileSync(playlist, "utf8"));
      expect(media.endList).toBe(true);
      expect(media.segments.reduce((sum, s) => sum + s.duration, 0)).toBeCloseTo(SECONDS, 2);
      const times = await frameTimes(playlist);
      expect(
        times.map((t) => t.toFixed(3)),
        v.uri,
      ).toEqual(reference.map((t) => t.toFixed(3)));
    }
    passed++;
  }, 300_000);

  it("a hosted video's stream: split too, ready from the rung encoded whole, and whole at the end", async () => {
    const auth = fleet.a;
    const created = await ok(call(fleet.base, "VideoService/CreateFromUrl", { app_id: auth.app, url: fleet.inputs.hosted }, auth));
    const id = created.video.id as string;
    const seen: { status: string; encoded: boolean; renditions: number }[] = [];
    const video = await until(
      "the video encoded",
      async () => {
        const v = (await ok(call(fleet.base, "VideoService/Get", { id }, auth))).video;
        seen.push({ status: v.status, encoded: v.encoded_at !== undefined, renditions: (v.renditions ?? []).length });
        if (v.status === "error") throw new Error(`the video failed: ${v.error_message}`);
        return v.encoded_at !== undefined ? v : undefined;
      },
      180_000,
    );
    // Ready (playable) before every rendition was done: with the rung encoded whole.
    expect(seen.some((s) => s.status === "ready" && !s.encoded)).toBe(true);
    expect(video.renditions.map((r: { resolution: string }) => r.resolution).sort()).toEqual(["360p", "480p"]);
    const master = parseHlsMaster(await (await fetch(video.playback_url)).text());
    expect(master.variants).toHaveLength(2);
    for (const v of master.variants) {
      const url = new URL(v.uri, video.playback_url).toString();
      const media = parseHlsMedia(await (await fetch(url)).text());
      expect(media.endList).toBe(true);
      expect(media.segments.reduce((sum, s) => sum + s.duration, 0)).toBeCloseTo(HOSTED_SECONDS, 2);
      expect(await decodedFrames(url)).toBe(HOSTED_SECONDS * FPS);
    }
    const split = fleet.cluster.encoderNodes.map(
      (n) =>
        n
          .output()
          .split("\n")
          .filter((l) => l.includes("chunk encoded") && l.includes(video.job_id)).length,
    );
    // A hosted video's segments are 4 s: chunks of about 6 s are two segments, 8 s.
    expect(split.reduce((a, b) => a + b, 0)).toBe(HOSTED_SECONDS / 8);
    passed++;
  }, 300_000);
});
