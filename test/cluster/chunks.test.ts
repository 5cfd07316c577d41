// One ladder encoded by two encoder nodes at once, on real Kafka, Cassandra and MinIO: a 48 s
// source (moving test pattern, continuous tone) whose HLS ladder is split into 6 s chunks. The
// node that takes the encode plans the chunks, encodes the lowest rung and the audio, then chunks
// still queued; the other node takes chunks as soon as they are queued. The job completes at its
// estimate; chunks ran on both nodes; every rung of the output has every frame once, timestamps
// continuous across each join and lined up with the rung encoded whole, and plays through (every
// playlist ended, EXTINF summing to the source's length).
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../harness.js";
import { parseHlsMaster, parseHlsMedia } from "../media.js";
import { startFleet, type Fleet } from "./fleet.js";

const run = promisify(execFile);
const SECONDS = 48;
const FPS = 25;
let fleet: Fleet;
let passed = false;

beforeAll(async () => {
  fleet = await startFleet({
    encoderNodes: 2,
    inputs: { long: SECONDS },
    env: { MEDIA_ENCODER_CHUNK_SECONDS: "6", MEDIA_LOG_LEVEL: "info" },
  });
}, 240_000);
afterAll(async () => {
  await fleet?.stop(passed);
}, 120_000);

async function frameTimes(playlist: string): Promise<number[]> {
  const { stdout } = await run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", playlist], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => Number.parseFloat(l));
}

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
    const whole = path.join(path.dirname(main), master.variants.at(-1)!.uri);
    const reference = await frameTimes(whole);
    expect(reference).toHaveLength(SECONDS * FPS);
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
    passed = true;
  }, 300_000);
});
