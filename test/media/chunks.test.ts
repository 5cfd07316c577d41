// One ladder encoded in chunks and joined, against the same ladder encoded whole, with real ffmpeg:
// an 18 s source (moving test pattern, continuous 440 Hz tone) split into four chunks of the
// ladder's rungs (every rung, or the upper rungs of a hosted stream), each encoded on its own as an
// encoder node would, their segments put where the whole's go, and joined. Every rung of the join has every frame once at the whole's
// timestamps, the same segment boundaries and EXTINF sums, PSNR within 0.2 dB of the whole's; the
// audio (encoded once, whole) has no gap; the master lists every rung, measured.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { execFile } from "node:child_process";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromJson } from "@bufbuild/protobuf";
import { chunkFiles, chunkRenditions, joinChunks, type ChunkRendition } from "../../encoder-node/chunks.js";
import { parseMediaPlaylist, runPlan, writeHlsMaster } from "../../encoder-node/ffmpeg.js";
import { chunkSpans, planOutput } from "../../encoder-node/plan.js";
import { probe, type ProbeResult } from "../../encoder-node/probe.js";
import { OutputSpecSchema } from "../../src/gen/media/v1/job_pb.js";
import { ladderOutputSpec } from "../../src/hosting.js";
import { frameTimes, makeTestInput, parseHlsMaster } from "../media.js";

const run = promisify(execFile);
const root = mkdtempSync(path.join(tmpdir(), "chunks-"));
const SECONDS = 18;
const FPS = 30;
let input: { file: string; probe: ProbeResult };

beforeAll(async () => {
  const file = await makeTestInput(path.join(root, "source.mp4"), { seconds: SECONDS, width: 640, height: 360, fps: FPS, audio: true });
  input = { file, probe: await probe(file) };
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Mean PSNR (dB) of an encoded rung against the source scaled to its size. */
async function psnr(playlist: string, width: number, height: number): Promise<number> {
  const { stderr } = await run(
    "ffmpeg",
    ["-hide_banner", "-nostdin", "-i", input.file, "-i", playlist, "-lavfi", `[0:v]scale=${width}:${height}[ref];[ref][1:v]psnr`, "-f", "null", "-"],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const average = /PSNR .* average:([0-9.]+)/.exec(stderr)?.[1];
  if (!average) throw new Error(`no PSNR in: ${stderr.slice(-500)}`);
  return Number(average);
}

describe("a ladder encoded in chunks", { timeout: 180_000 }, () => {
  let whole: ReturnType<typeof planOutput>;
  beforeAll(async () => {
    const spec = fromJson(OutputSpecSchema, ladderOutputSpec([360, 240, 180], input.probe.video, true));
    whole = planOutput(spec, input, { outputId: "out_1", workDir: path.join(root, "whole") });
    await runPlan(whole, {});
  }, 120_000);

  // Every rung in chunks (the audio whole), and a hosted stream's (its lowest rung whole too).
  for (const wholeLowestRung of [false, true])
    it(`joins into the ladder encoded whole${wholeLowestRung ? " beside its lowest rung encoded whole" : ""}: every frame once, the same boundaries, PSNR within 0.2 dB, the audio without a gap`, async () => {
      await joinedAgainstWhole(wholeLowestRung);
    });

  async function joinedAgainstWhole(wholeLowestRung: boolean): Promise<void> {
    const spec = fromJson(OutputSpecSchema, ladderOutputSpec([360, 240, 180], input.probe.video, true));
    const signal = new AbortController().signal;
    const modeOpts = wholeLowestRung ? { wholeLowestRung: true } : {};
    const main = planOutput(spec, input, { outputId: "out_1", workDir: path.join(root, `joined-${wholeLowestRung}`), chunked: true, ...modeOpts });
    expect(main.chunked?.rest.map((r) => r.name)).toEqual(wholeLowestRung ? ["640x360", "426x240"] : ["640x360", "426x240", "320x180"]);
    await runPlan(main, {});
    const spans = chunkSpans(main.durationMs, main.chunked!.segmentSeconds, 4);
    expect(spans).toEqual([{ start: 0, end: 4 }, { start: 4, end: 8 }, { start: 8, end: 12 }, { start: 12 }]);
    const chunks: ChunkRendition[][] = [];
    for (const [k, span] of spans.entries()) {
      const plan = planOutput(spec, input, { outputId: "out_1", workDir: path.join(root, `chunk-${wholeLowestRung}-${k}`), chunk: span, ...modeOpts });
      await runPlan(plan, {});
      chunks.push(await chunkRenditions(plan, signal));
      // What storage would hold: every chunk's segments beside the rung encoded whole.
      for (const rel of await chunkFiles(plan)) {
        mkdirSync(path.dirname(path.join(main.dir, rel)), { recursive: true });
        copyFileSync(path.join(plan.dir, rel), path.join(main.dir, rel));
      }
    }
    await joinChunks(main, chunks);
    await writeHlsMaster(main.dir, main.hlsMaster!, signal);

    const master = parseHlsMaster(readFileSync(path.join(main.dir, main.main), "utf8"));
    const wholeMaster = parseHlsMaster(readFileSync(path.join(whole.dir, whole.main), "utf8"));
    expect(master.variants.map((v) => v.uri)).toEqual(wholeMaster.variants.map((v) => v.uri));
    expect(master.variants.map((v) => v.attributes.CODECS)).toEqual(wholeMaster.variants.map((v) => v.attributes.CODECS));
    for (const [i, v] of master.variants.entries()) {
      const joined = path.join(main.dir, v.uri);
      const reference = path.join(whole.dir, v.uri);
      const text = readFileSync(joined, "utf8");
      expect(text).toMatch(/#EXT-X-ENDLIST\s*$/);
      // The same segments, each as long as the whole's.
      const ours = parseMediaPlaylist(text).segments;
      const theirs = parseMediaPlaylist(readFileSync(reference, "utf8")).segments;
      expect(ours.map((s) => s.uri)).toEqual(theirs.map((s) => s.uri));
      for (const [j, s] of ours.entries()) expect(s.duration).toBeCloseTo(theirs[j]!.duration, 3);
      // Every frame once, at the timestamps of the lowest rung of the ladder encoded whole.
      const times = await frameTimes(joined);
      expect(times).toHaveLength(SECONDS * FPS);
      // (A split ladder's streams all start 1 s in, the whole's where ffmpeg puts them: times from the first frame.)
      const wholeTimes = await frameTimes(path.join(whole.dir, wholeMaster.variants.at(-1)!.uri));
      const from = (ts: number[]) => ts.map((t) => (t - ts[0]!).toFixed(3));
      const [ourFrom, wholeFrom] = [from(times), from(wholeTimes)];
      const moved = ourFrom.flatMap((t, k) => (t === wholeFrom[k] ? [] : [`frame ${k}: ${t} joined, ${wholeFrom[k]} whole`]));
      expect(moved).toEqual([]);
      // The picture as good as the whole's; its measured bandwidth close to it.
      const [width, height] = v.attributes.RESOLUTION!.split("x").map(Number) as [number, number];
      const [a, b] = [await psnr(joined, width, height), await psnr(reference, width, height)];
      expect(Math.abs(a - b), `${v.uri}: PSNR ${a} joined, ${b} whole`).toBeLessThanOrEqual(0.2);
      const bandwidth = Number(v.attributes["AVERAGE-BANDWIDTH"]);
      expect(bandwidth / Number(wholeMaster.variants[i]!.attributes["AVERAGE-BANDWIDTH"])).toBeGreaterThan(0.9);
      expect(bandwidth / Number(wholeMaster.variants[i]!.attributes["AVERAGE-BANDWIDTH"])).toBeLessThan(1.1);
    }
    // The audio is encoded once, whole: the tone runs through every join without a silence (an AAC
    // frame lost or primed at a join would be 21 ms of it).
    const audio = path.join(main.dir, master.media.find((m) => m.TYPE === "AUDIO")!.URI!);
    const { stderr } = await run("ffmpeg", ["-hide_banner", "-nostdin", "-i", audio, "-af", "silencedetect=n=-50dB:d=0.005", "-f", "null", "-"]);
    // (The tone starts at a zero sample and AAC pads its end: silence there is no join's.)
    const silences = [...stderr.matchAll(/silence_start: ([0-9.e-]+)/g)].map((m) => Number(m[1]));
    expect(silences.filter((t) => t > 0.5 && t < SECONDS - 0.5)).toEqual([]);
    expect((await frameTimes(path.join(main.dir, master.variants.at(-1)!.uri))).length).toBe(SECONDS * FPS);
  }
});
