// The encode pipeline end to end with its executors faked (pipeline.fixtures.ts): the tasks, the
// output steps, the planners and the manifests are the real ones; ffmpeg, ffprobe, libvmaf, the key
// provider and storage are not. Runs in milliseconds. Asserts the reports the job hears and the
// manifests stored. Every plan is deep-frozen as planOutput returns it: a step or executor that
// assigned into one after planning would throw here.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { JobCommand, JobCommandOf } from "../actors/job/messages.js";
import { BlobError } from "../src/blob/index.js";
import { EncryptionScheme, OutputType, SubtitleKind, SubtitleSource } from "../src/gen/media/v1/job_pb.js";
import { SegmentFormat, VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { MediaError } from "./media-errors.js";
import { deepFreeze, harness, jobOf, outputOf, type Step } from "./pipeline.fixtures.js";
import type { OutputPlan } from "./plan.js";
import { ReportError } from "./reports.js";
import { runTask } from "./tasks/index.js";

const frozen = vi.hoisted(() => [] as OutputPlan[]);
vi.mock("./plan.js", async (original) => {
  const plan = await original<typeof import("./plan.js")>();
  return { ...plan, planOutput: (...args: Parameters<typeof plan.planOutput>) => frozen[frozen.push(deepFreeze(plan.planOutput(...args))) - 1]! };
});

const root = mkdtempSync(path.join(tmpdir(), "pipeline-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const dir = () => mkdtempSync(path.join(root, `${n++}-`));

const ladder = [
  { codec: VideoCodec.H264, resolution: "480p" },
  { codec: VideoCodec.H264, resolution: "720p" },
];
const hls = (over: object = {}) => outputOf("out_1", { type: OutputType.HLS, video: ladder, hls: { segmentDurationSeconds: 4 }, ...over });
const encode = { kind: "encode", jobId: "job_1" } as const;
const signal = () => new AbortController().signal;
const completed = (sent: readonly JobCommand[]) => sent.find((c): c is JobCommandOf<"output_completed"> => c.type === "output_completed")!;
const failed = (sent: readonly JobCommand[]) => sent.find((c): c is JobCommandOf<"output_failed"> => c.type === "output_failed")!;
const streamInfs = (master: string) => master.split("\n").filter((l) => l.startsWith("#EXT-X-STREAM-INF:"));

describe("the encode pipeline, executors faked", () => {
  it("a plain HLS ladder: started, the output completed with its renditions, finished; the master measured from the segments", async () => {
    const h = harness(dir(), jobOf([hls()]));
    await runTask(h.context, encode, signal());
    expect(h.types()).toEqual(["encode_started", "output_completed", "encode_finished"]);
    const done = completed(h.sent);
    expect(done.main).toBe("index.m3u8");
    expect(done.renditions?.map((r) => [r.name, r.width, r.height])).toEqual([
      ["480p", 854, 480],
      ["720p", 1280, 720],
    ]);
    // 1000-byte segments of 4 s: 2000 bit/s, plus the audio group's 400.
    expect(streamInfs(h.text("out/out_1/index.m3u8"))).toEqual([
      '#EXT-X-STREAM-INF:BANDWIDTH=2400,AVERAGE-BANDWIDTH=2400,CODECS="avc1.64001F,mp4a.40.2",RESOLUTION=854x480,FRAME-RATE=30.000,AUDIO="audio"',
      '#EXT-X-STREAM-INF:BANDWIDTH=2400,AVERAGE-BANDWIDTH=2400,CODECS="avc1.64001F,mp4a.40.2",RESOLUTION=1280x720,FRAME-RATE=30.000,AUDIO="audio"',
    ]);
    expect(h.progress.every((c) => c.type === "output_progress")).toBe(true);
    expect(h.plans).toHaveLength(1);
    expect(Object.isFrozen(h.plans[0]!.hlsMaster!.variants[0])).toBe(true);
  });

  it("a hosted video's stream, published as it grows: playable (output_published) before it completes, the growing master then the final one", async () => {
    const h = harness(dir(), jobOf([hls()], { managed: { videoId: "vid_1" } }));
    await runTask(h.context, encode, signal());
    expect(h.types()).toEqual(["encode_started", "output_published", "output_completed", "encode_finished"]);
    const published = h.sent.find((c): c is JobCommandOf<"output_published"> => c.type === "output_published")!;
    expect(published.renditions.map((r) => r.name)).toEqual(["480p", "720p"]);
    expect(h.plans[0]!.progressive).toBeDefined();
    // Every playlist as published starts at 0.
    expect(h.text("out/out_1/480p/index.m3u8")).toContain("#EXT-X-START:TIME-OFFSET=0.001,PRECISE=YES");
    expect(streamInfs(h.text("out/out_1/index.m3u8"))).toHaveLength(2);
  });

  it("a hosted stream that fails once playable: its playlists end where they are, and the output fails", async () => {
    const h = harness(dir(), jobOf([hls()], { managed: { videoId: "vid_1" } }), { growing: true });
    await runTask(h.context, encode, signal());
    expect(h.types()).toEqual(["encode_started", "output_published", "output_failed", "encode_finished"]);
    expect(h.text("out/out_1/480p/index.m3u8").trimEnd().endsWith("#EXT-X-ENDLIST")).toBe(true);
    expect(failed(h.sent).failure).toEqual({ code: "internal", message: "ffmpeg died" });
  });

  it("a split ladder: chunks planned, the others' chunks joined into each rung's playlist, the master measured from what they stored", async () => {
    const three = [...ladder, { codec: VideoCodec.H264, resolution: "1080p" }];
    const h = harness(dir(), jobOf([hls({ video: three })]), { env: { MEDIA_ENCODER_CHUNK_SECONDS: "8" } });
    await runTask(h.context, encode, signal());
    expect(h.types()).toEqual(["encode_started", "chunks_planned", "look", "output_completed", "encode_finished"]);
    const planned = h.sent.find((c): c is JobCommandOf<"chunks_planned"> => c.type === "chunks_planned")!;
    expect(planned.spans.length).toBeGreaterThanOrEqual(2);
    const joined = h.text("out/out_1/720p/index.m3u8");
    expect(joined.split("\n").filter((l) => l.startsWith("seg_"))).toHaveLength(2 * planned.spans.length);
    expect(joined).toContain("#EXT-X-PLAYLIST-TYPE:VOD");
    // Chunked rungs: 3000-byte segments of 4 s and the chunks' codec string.
    expect(streamInfs(h.text("out/out_1/index.m3u8"))[0]).toContain('BANDWIDTH=6400,AVERAGE-BANDWIDTH=6400,CODECS="avc1.640028,mp4a.40.2"');
    // What the chunks stored, and the joined playlist uploaded from here.
    expect(completed(h.sent).renditions?.[1]?.sizeBytes).toBe(3000 * 2 * planned.spans.length + Buffer.byteLength(joined));
  });

  it("DRM: keys first, their sealed record with the output; cbcs packaged and aes_128 alike", async () => {
    for (const drm of [
      { over: { hls: { segmentDurationSeconds: 4, segmentFormat: SegmentFormat.FMP4 }, drm: { scheme: EncryptionScheme.CBCS, systems: [] } }, scheme: "cbcs" },
      { over: { drm: { scheme: EncryptionScheme.AES_128 } }, scheme: "aes128" },
    ]) {
      const h = harness(dir(), jobOf([hls(drm.over)]));
      await runTask(h.context, encode, signal());
      expect(h.types()).toEqual(["encode_started", "output_completed", "encode_finished"]);
      const keys = completed(h.sent).drm!;
      expect([keys.scheme, keys.kids.length > 0, keys.sealed.length > 0]).toEqual([drm.scheme, true, true]);
      expect(streamInfs(h.text("out/out_1/index.m3u8"))).toHaveLength(2);
    }
  });

  it("content-aware: the analysis's rates planned, each rung's measured VMAF reported", async () => {
    const h = harness(dir(), jobOf([hls({ contentAware: { enabled: true } })]));
    await runTask(h.context, encode, signal());
    expect(h.types()).toEqual(["encode_started", "output_completed", "encode_finished"]);
    expect(completed(h.sent).renditions?.map((r) => [r.contentAware?.crf, r.contentAware?.measuredVmaf])).toEqual([
      [23, 94],
      [24, 94],
    ]);
    expect(h.plans[0]!.commands[0]!.join(" ")).toContain("-crf:v:0 23");
  });

  it("captions: a WebVTT file, a subtitle rendition in the master, the track reported", async () => {
    const track = {
      source: SubtitleSource.URL,
      url: "https://example.test/en.vtt",
      language: "en",
      name: "English",
      kind: SubtitleKind.CAPTIONS,
      isDefault: true,
    };
    const h = harness(dir(), jobOf([hls({ subtitleTracks: [track] })]));
    await runTask(h.context, encode, signal());
    expect(h.types()).toEqual(["encode_started", "output_completed", "encode_finished"]);
    expect(completed(h.sent).subtitles?.map((s) => [s.language, s.key])).toEqual([["en", "out/out_1/subtitles/track_0.vtt"]]);
    const master = h.text("out/out_1/index.m3u8");
    expect(master).toContain('#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",LANGUAGE="en",DEFAULT=YES');
    expect(streamInfs(master).every((l) => l.endsWith('SUBTITLES="subs"'))).toBe(true);
    // The timestamp map starts at the first media timestamp the executor reported (1 s).
    expect(h.text("out/out_1/subtitles/track_0/index.m3u8")).toContain("#EXTM3U");
    expect([...h.stored.keys()].some((k) => k.startsWith("out/out_1/subtitles/track_0/") && h.text(k).includes("MPEGTS:90000"))).toBe(true);
  });

  it("DASH: the MPD finished (minBufferTime) and its text adaptation set added", async () => {
    const track = { source: SubtitleSource.URL, url: "https://example.test/en.vtt", language: "en", name: "English", kind: SubtitleKind.SUBTITLES };
    const h = harness(dir(), jobOf([outputOf("out_1", { type: OutputType.DASH, video: ladder, dash: { minBufferTimeSeconds: 3 }, subtitleTracks: [track] })]));
    await runTask(h.context, encode, signal());
    expect(h.types()).toEqual(["encode_started", "output_completed", "encode_finished"]);
    const mpd = h.text("out/out_1/manifest.mpd");
    expect(mpd).toContain('minBufferTime="PT3S"');
    expect(mpd).toContain('lang="en"');
  });

  it("thumbnails after the outputs, then the end", async () => {
    const h = harness(dir(), jobOf([hls()], { thumbnails: [{}] }));
    await runTask(h.context, encode, signal());
    expect(h.types()).toEqual(["encode_started", "output_completed", "thumbnails_done", "encode_finished"]);
    expect(h.text("thumbs/thumb_0.jpg")).toBe("jpg");
  });

  describe("a failure at each step", () => {
    // plan: no executor fails, the plan itself refuses (a clip that starts past the input's end).
    const cases: [Step | "plan", Error, string[], string | undefined][] = [
      ["input", new BlobError("unreachable", "https://example.test/in.mp4 answered 503"), ["encode_started", "encode_finished"], undefined],
      ["plan", new Error("unused"), ["encode_started", "output_failed", "thumbnails_done", "encode_finished"], "input_unsupported"],
      [
        "analysis",
        new MediaError("encode_failed", "trial encode failed"),
        ["encode_started", "output_failed", "thumbnails_done", "encode_finished"],
        "encode_failed",
      ],
      [
        "tracks",
        new MediaError("subtitle_unreachable", "en.vtt answered 404"),
        ["encode_started", "output_failed", "thumbnails_done", "encode_finished"],
        "subtitle_unreachable",
      ],
      [
        "keys",
        new MediaError("drm_key_unavailable", "the key service answered 500"),
        ["encode_started", "output_failed", "thumbnails_done", "encode_finished"],
        "drm_key_unavailable",
      ],
      [
        "encode",
        new MediaError("encode_failed", "ffmpeg exited with code 1"),
        ["encode_started", "output_failed", "thumbnails_done", "encode_finished"],
        "encode_failed",
      ],
      // A chunk failed on another node as often as it may: the split ladder's output fails at the join.
      [
        "join",
        new Error("chunk 2 failed: ffmpeg exited with code 1"),
        ["encode_started", "chunks_planned", "look", "output_failed", "thumbnails_done", "encode_finished"],
        "encode_failed",
      ],
      [
        "measure",
        new MediaError("encode_failed", "libvmaf failed"),
        ["encode_started", "output_failed", "thumbnails_done", "encode_finished"],
        "encode_failed",
      ],
      // Denied: the job's storage refuses everything, so no thumbnails are tried.
      ["upload", new Error("unused"), ["encode_started", "output_failed", "encode_finished"], "output_write_denied"],
      ["thumbnails", new MediaError("input_unsupported", "no video"), ["encode_started", "output_completed", "encode_finished"], undefined],
    ];
    it.each(cases)("%s", async (step, error, types, code) => {
      const spec =
        step === "analysis" || step === "measure"
          ? hls({ contentAware: { enabled: true } })
          : step === "keys"
            ? hls({ drm: { scheme: EncryptionScheme.AES_128 } })
            : step === "join"
              ? hls({ video: [...ladder, { codec: VideoCodec.H264, resolution: "1080p" }] })
              : hls();
      const job = jobOf([spec], { thumbnails: [{}], ...(step === "plan" ? { clip: { startSeconds: 3600, endSeconds: 0 } } : {}) });
      const env: Record<string, string> = step === "join" ? { MEDIA_ENCODER_CHUNK_SECONDS: "8" } : {};
      const h = harness(dir(), job, { env, ...(step === "plan" ? {} : { fail: step }), error });
      await runTask(h.context, encode, signal());
      expect(h.types()).toEqual(types);
      if (code) expect(failed(h.sent).failure.code).toBe(code);
      if (step === "input") expect(h.sent.at(-1)).toMatchObject({ failure: { code: "input_unreachable" } });
      // Keys come before any encode: nothing was run, nothing left clear.
      if (step === "keys" || step === "plan") expect(h.plans).toHaveLength(0);
      if (step === "join") expect(failed(h.sent).failure.message).toBe("chunk 2 failed: ffmpeg exited with code 1");
    });

    it("a report the job does not take: the task throws, to run again", async () => {
      const h = harness(dir(), jobOf([hls()]), { fail: "report" });
      await expect(runTask(h.context, encode, signal())).rejects.toBeInstanceOf(ReportError);
    });
  });

  it("plans are frozen from their making: every kind the paths above planned, none assigned into", () => {
    expect(frozen.every((p) => Object.isFrozen(p) && Object.isFrozen(p.commands) && p.commands.every(Object.isFrozen))).toBe(true);
    expect(new Set(frozen.map((p) => p.kind ?? "file"))).toEqual(new Set(["hls", "dash", "packaged"]));
  });
});
