// A hosted video's stream published while it encodes, with real ffmpeg: what the publisher stores
// is a stream a player can load at every moment (every playlist it stores names only stored
// segments, the master only stored playlists with segments), it is playable before the encode
// ends, the later rungs join the master only once complete, and at the end every playlist ends
// with EXT-X-ENDLIST, starts at 0, and decodes whole.
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromJson } from "@bufbuild/protobuf";
import { parseMediaPlaylist, runPlan, writeGrowingHlsMaster } from "../../encoder-node/ffmpeg.js";
import { planOutput } from "../../encoder-node/plan.js";
import { probe, type ProbeResult } from "../../encoder-node/probe.js";
import { ProgressivePublisher, START_AT_ZERO } from "../../encoder-node/progressive.js";
import type { RenditionResult } from "../../actors/job/messages.js";
import { OutputSpecSchema } from "../../src/gen/media/v1/job_pb.js";
import { ladderOutputSpec } from "../../src/hosting.js";
import { decodedFrames, makeTestInput, parseHlsMaster } from "../media.js";

const exec = promisify(execFile);
const root = mkdtempSync(path.join(tmpdir(), "progressive-"));
let input: { file: string; probe: ProbeResult };

beforeAll(async () => {
  const file = await makeTestInput(path.join(root, "source.mp4"), { seconds: 12, width: 1280, height: 720, fps: 30, audio: true });
  input = { file, probe: await probe(file) };
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("a progressive stream", { timeout: 120_000 }, () => {
  it("is loadable at every moment, playable before its encode ends, and whole at the end", async () => {
    const spec = fromJson(OutputSpecSchema, ladderOutputSpec([720, 480, 360], input.probe.video, true));
    const plan = planOutput(spec, input, { outputId: "out_1", workDir: path.join(root, "work", "out_1"), progressive: true });
    expect(plan.progressive?.first).toEqual(["640x360/index.m3u8", "audio_0/index.m3u8"]);
    const storage = path.join(root, "storage");
    const stored = (rel: string) => path.join(storage, rel);
    const problems: string[] = [];
    const masters: string[][] = [];
    const published: { at: number; complete: RenditionResult[] }[] = [];
    let encodeEnded = 0;
    const publisher = new ProgressivePublisher(plan, {
      put: async (rel, file) => {
        // What a player reads must name only what is there already.
        if (rel === plan.main) {
          const master = parseHlsMaster(readFileSync(file, "utf8"));
          const playlists = [...master.variants.map((v) => v.uri), ...master.media.map((m) => m.URI ?? "")];
          for (const p of playlists) {
            if (!existsSync(stored(p))) problems.push(`the master named ${p} before it was stored`);
            else if (parseMediaPlaylist(readFileSync(stored(p), "utf8")).segments.length === 0) problems.push(`the master named ${p} with no segment`);
          }
          masters.push(master.variants.map((v) => v.uri));
        } else if (rel.endsWith(".m3u8")) {
          const text = readFileSync(file, "utf8");
          if (!text.includes(START_AT_ZERO)) problems.push(`${rel} was stored without EXT-X-START`);
          for (const s of parseMediaPlaylist(text).segments)
            if (!existsSync(stored(path.posix.join(path.posix.dirname(rel), s.uri)))) problems.push(`${rel} named ${s.uri} before it was stored`);
        }
        mkdirSync(path.dirname(stored(rel)), { recursive: true });
        copyFileSync(file, stored(rel));
      },
      writeMaster: (playlists, to) => writeGrowingHlsMaster(plan, playlists, to, undefined, new AbortController().signal),
      onPublished: async (complete) => void published.push({ at: Date.now(), complete }),
      scratch: path.join(root, "work", "out_1.published"),
    });
    await runPlan(plan, { whileRunning: () => publisher.sync() });
    encodeEnded = Date.now();
    await publisher.finish();

    expect(problems).toEqual([]);
    // Playable with the first rung alone, before the encode ended; then every rung, once complete.
    expect(masters[0]).toEqual(["640x360/index.m3u8"]);
    expect(masters.at(-1)).toEqual(["1280x720/index.m3u8", "854x480/index.m3u8", "640x360/index.m3u8"]);
    expect(published[0]!.complete).toEqual([]);
    expect(published[0]!.at).toBeLessThan(encodeEnded);
    expect(
      published
        .at(-1)!
        .complete.map((r) => r.name)
        .sort(),
    ).toEqual(["1280x720", "640x360", "854x480"]);
    expect(published.at(-1)!.complete.every((r) => r.sizeBytes > 0)).toBe(true);
    // At the end: every stored playlist ends, starts at 0, and decodes whole.
    for (const p of ["640x360", "854x480", "1280x720", "audio_0"]) {
      const text = readFileSync(stored(`${p}/index.m3u8`), "utf8");
      expect(text).toContain("#EXT-X-ENDLIST");
      expect(text).toContain("#EXT-X-PLAYLIST-TYPE:EVENT");
      expect(text).toContain(START_AT_ZERO);
      const seconds = parseMediaPlaylist(text).segments.reduce((s, x) => s + x.duration, 0);
      expect(Math.abs(seconds - 12)).toBeLessThan(0.1);
    }
    for (const p of ["640x360", "854x480", "1280x720"]) expect(await decodedFrames(stored(`${p}/index.m3u8`))).toBe(360);
    // A short first segment, lined up across the rungs; the audio's segments whole. The audio is
    // encoded by a process of its own, in step with the video: their first segments start together.
    const durations = (p: string) => parseMediaPlaylist(readFileSync(stored(`${p}/index.m3u8`), "utf8")).segments.map((s) => Number(s.duration.toFixed(1)));
    for (const p of ["640x360", "854x480", "1280x720"]) expect(durations(p), p).toEqual([1, 3, 4, 4]);
    expect(durations("audio_0")).toEqual([4, 4, 4, 0]);
    // The source's first frame and first sample both at 0: the video's first timestamp is the
    // audio's plus AAC's priming (1,024 samples at 48 kHz), as when one process encodes both.
    const start = async (file: string) => {
      const { stdout } = await exec("ffprobe", ["-v", "error", "-show_entries", "format=start_time", "-of", "csv=p=0", stored(file)]);
      return Number(stdout.trim());
    };
    expect((await start("640x360/seg_00000.ts")) - (await start("audio_0/seg_00000.ts"))).toBeCloseTo(1024 / input.probe.audio!.sampleRate, 3);
  });

  it("ends what it published when the encode stops after it was playable", async () => {
    const spec = fromJson(OutputSpecSchema, ladderOutputSpec([720, 360], input.probe.video, true));
    const plan = planOutput(spec, input, { outputId: "out_2", workDir: path.join(root, "work", "out_2"), progressive: true });
    const storage = path.join(root, "storage2");
    const stop = new AbortController();
    const publisher = new ProgressivePublisher(plan, {
      put: async (rel, file) => {
        mkdirSync(path.dirname(path.join(storage, rel)), { recursive: true });
        copyFileSync(file, path.join(storage, rel));
      },
      writeMaster: (playlists, to) => writeGrowingHlsMaster(plan, playlists, to, undefined, stop.signal),
      onPublished: async () => stop.abort(),
      scratch: path.join(root, "work", "out_2.published"),
    });
    await expect(runPlan(plan, { signal: stop.signal, whileRunning: () => publisher.sync() })).rejects.toThrow(/canceled/);
    expect(publisher.isPlayable).toBe(true);
    const before = readFileSync(path.join(storage, "640x360/index.m3u8"), "utf8");
    expect(before).not.toContain("#EXT-X-ENDLIST");
    await publisher.end();
    const after = readFileSync(path.join(storage, "640x360/index.m3u8"), "utf8");
    expect(after.trimEnd().endsWith("#EXT-X-ENDLIST")).toBe(true);
    expect(parseMediaPlaylist(after).segments).toEqual(parseMediaPlaylist(before).segments);
  });
});
