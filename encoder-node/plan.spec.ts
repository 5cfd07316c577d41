// planOutput without running ffmpeg: sizes, names, rate control, keyframes and audio.
import { describe, expect, it } from "vitest";
import { EncodingMode, OutputType } from "../src/gen/media/v1/job_pb.js";
import { AudioCodec, BitrateMode, QualityTier, VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { MediaError } from "./media-errors.js";
import { planOutput, tierTargetKbps } from "./plan.js";
import { after, graph, plan, probe, spec } from "./plan.fixtures.js";

describe("planOutput: sizes and names", () => {
  it("names files by resolution, scales by height keeping the aspect, and picks the largest as main", () => {
    const p = plan(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, resolution: "480p" },
          { codec: VideoCodec.H264, resolution: "1080p" },
          { codec: VideoCodec.H264, resolution: "720p" },
        ],
      }),
    );
    expect(p.renditions?.map((r) => [r.file, r.width, r.height])).toEqual([
      ["480p.mp4", 854, 480],
      ["1080p.mp4", 1920, 1080],
      ["720p.mp4", 1280, 720],
    ]);
    expect(p.main).toBe("1080p.mp4");
    expect(p.dir).toBe("/work/out_1");
    // One decode split three ways; the 1080p rung needs no scaling.
    expect(graph(p.commands[0]!)).toBe(
      "[0:v:0]split=3[s0][s1][s2];[s0]scale=854:480:flags=bicubic,setsar=1,format=yuv420p[v0];[s1]format=yuv420p[v1];[s2]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v2]",
    );
  });

  it("never upscales a named resolution, keeps custom sizes exactly, and names them WxH", () => {
    const p = plan(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, resolution: "1080p" },
          { codec: VideoCodec.H264, width: 640, height: 360 },
          { codec: VideoCodec.H264, width: 400 },
        ],
      }),
      probe({}, { width: 1280, height: 720 }),
    );
    expect(p.renditions?.map((r) => [r.file, r.width, r.height])).toEqual([
      ["1080p.mp4", 1280, 720],
      ["640x360.mp4", 640, 360],
      ["400x226.mp4", 400, 226],
    ]);
  });

  it("uses the short side for portrait inputs and honours rotation and non-square pixels", () => {
    const portrait = plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }), probe({}, { width: 1080, height: 1920 }));
    expect([portrait.renditions![0]!.width, portrait.renditions![0]!.height]).toEqual([720, 1280]);
    const rotated = plan(
      spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }),
      probe({}, { width: 1920, height: 1080, rotation: -90 }),
    );
    expect([rotated.renditions![0]!.width, rotated.renditions![0]!.height]).toEqual([720, 1280]);
    const anamorphic = plan(
      spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution: "480p" }] }),
      probe({}, { width: 720, height: 480, sampleAspectRatio: 32 / 27 }),
    );
    expect([anamorphic.renditions![0]!.width, anamorphic.renditions![0]!.height]).toEqual([854, 480]);
  });

  it("keeps file names unique when two variants share a size", () => {
    const p = plan(
      spec({
        type: OutputType.MKV,
        video: [
          { codec: VideoCodec.H264, resolution: "720p" },
          { codec: VideoCodec.H265, resolution: "720p" },
          { codec: VideoCodec.H265, resolution: "720p" },
        ],
      }),
    );
    expect(p.renditions?.map((r) => r.file)).toEqual(["720p_h264.mkv", "720p_h265_1.mkv", "720p_h265_2.mkv"]);
  });

  it("lowers the frame rate with the fps filter but never raises it", () => {
    const p = plan(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, resolution: "720p", framerate: 24 },
          { codec: VideoCodec.H264, resolution: "480p", framerate: 60 },
        ],
      }),
    );
    expect(graph(p.commands[0]!)).toContain("[s0]fps=24,scale=1280:720");
    expect(graph(p.commands[0]!)).toContain("[s1]scale=854:480");
    expect(p.renditions?.map((r) => r.frameRate)).toEqual([24, 30]);
  });
});

describe("planOutput: encoder settings", () => {
  it("uses the quality tier's CRF and preset when unset, and the codec options when set", () => {
    const cmd = plan(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, resolution: "720p", quality: QualityTier.PREMIUM },
          {
            codec: VideoCodec.H264,
            resolution: "480p",
            h264: { crf: 30, encoderPreset: "veryfast", profile: "main", level: "3.1", tune: "film", bframes: 0, refs: 2, keyint: 48 },
          },
        ],
      }),
    ).commands[0]!;
    expect([after(cmd, "-crf:v:0"), after(cmd, "-preset:v:0")]).toEqual(["20", "slow"]);
    // Each file is its own output: the second variant is stream 0 of its file too.
    const second = cmd.slice(cmd.indexOf("[v1]"));
    expect([
      after(second, "-crf:v:0"),
      after(second, "-preset:v:0"),
      after(second, "-profile:v:0"),
      after(second, "-level:v:0"),
      after(second, "-tune:v:0"),
    ]).toEqual(["30", "veryfast", "main", "3.1", "film"]);
    expect([after(second, "-bf:v:0"), after(second, "-refs:v:0"), after(second, "-g:v:0")]).toEqual(["0", "2", "48"]);
  });

  it("writes cbr and vbr with VBV and a chosen target when the variant has no bitrate", () => {
    const cmd = plan(
      spec({
        type: OutputType.MKV,
        video: [
          { codec: VideoCodec.H264, resolution: "720p", bitrate: 3000, h264: { bitrateMode: BitrateMode.CBR } },
          { codec: VideoCodec.H264, resolution: "480p", h264: { bitrateMode: BitrateMode.VBR, maxBitrateKbps: 2500, bufferSizeKbps: 4000 } },
        ],
      }),
    ).commands[0]!;
    expect([after(cmd, "-b:v:0"), after(cmd, "-minrate:v:0"), after(cmd, "-maxrate:v:0"), after(cmd, "-bufsize:v:0"), after(cmd, "-x264-params:v:0")]).toEqual([
      "3000k",
      "3000k",
      "3000k",
      "3000k",
      "nal-hrd=cbr",
    ]);
    const second = cmd.slice(cmd.indexOf("[v1]"));
    const target = tierTargetKbps("h264", 854, 480, 30);
    expect([after(second, "-b:v:0"), after(second, "-maxrate:v:0"), after(second, "-bufsize:v:0")]).toEqual([`${target}k`, "2500k", "4000k"]);
  });

  it("writes each codec with its encoder: x265 tagged hvc1, vp9 with row-mt, SVT-AV1 capped CRF", () => {
    const cmd = plan(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H265, resolution: "720p", h265: { profile: "main10", bframes: 4 } },
          { codec: VideoCodec.VP9, resolution: "480p", vp9: { crf: 33, encoderPreset: "realtime" } },
          { codec: VideoCodec.AV1, resolution: "480p", av1: { crf: 40, maxBitrateKbps: 900, encoderPreset: "10", tune: "psnr", filmGrain: 8 } },
        ],
      }),
    ).commands[0]!;
    expect(after(cmd, "-c:v:0")).toBe("libx265");
    expect(after(cmd, "-tag:v:0")).toBe("hvc1");
    expect(after(cmd, "-x265-params:v:0")).toBe("keyint=60:log-level=error:bframes=4");
    expect(graph(cmd)).toContain("format=yuv420p10le[v0]");
    const vp9 = cmd.slice(cmd.indexOf("[v1]"));
    expect([
      after(vp9, "-c:v:0"),
      after(vp9, "-deadline:v:0"),
      after(vp9, "-cpu-used:v:0"),
      after(vp9, "-row-mt:v:0"),
      after(vp9, "-crf:v:0"),
      after(vp9, "-b:v:0"),
    ]).toEqual(["libvpx-vp9", "realtime", "8", "1", "33", "0"]);
    const av1 = cmd.slice(cmd.indexOf("[v2]"));
    expect([after(av1, "-c:v:0"), after(av1, "-preset:v:0"), after(av1, "-crf:v:0"), after(av1, "-maxrate:v:0"), after(av1, "-svtav1-params:v:0")]).toEqual([
      "libsvtav1",
      "10",
      "40",
      "900k",
      "tune=1:film-grain=8",
    ]);
  });

  it("auto mode caps each rung's maxrate at the input's ceiling scaled by pixels", () => {
    // A 1080p input at 1 Mbps: the 720p rung may not spend more than 1 Mbps × 720²/1080² ≈ 444 kbps.
    const input = probe({ bitRate: 1_128_000 }, { bitRate: 1_000_000 });
    const p = plan(
      spec({
        type: OutputType.MP4,
        encodingMode: EncodingMode.AUTO,
        video: [
          { codec: VideoCodec.H264, resolution: "1080p" },
          { codec: VideoCodec.H264, resolution: "720p" },
          { codec: VideoCodec.H265, resolution: "720p" },
        ],
      }),
      input,
    );
    const cmd = p.commands[0]!;
    const rung = (i: number) => cmd.slice(cmd.indexOf(`[v${i}]`));
    expect(after(rung(0), "-maxrate:v:0")).toBe("1000k");
    expect(after(rung(1), "-maxrate:v:0")).toBe("444k");
    expect(after(rung(1), "-bufsize:v:0")).toBe("888k");
    // H.265 needs fewer bits than the H.264 source for the same quality.
    expect(after(rung(2), "-maxrate:v:0")).toBe("267k");
    // A rich source is capped by the tier's target instead.
    const rich = plan(
      spec({ type: OutputType.MP4, encodingMode: EncodingMode.AUTO, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }),
      probe({}, { bitRate: 50_000_000 }),
    );
    expect(after(rich.commands[0]!, "-maxrate:v:0")).toBe(`${tierTargetKbps("h264", 1280, 720, 30)}k`);
    // Fixed mode leaves CRF uncapped.
    expect(plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }), input).commands[0]).not.toContain("-maxrate:v:0");
  });
});

describe("planOutput: audio", () => {
  it("adds one default track when the input has audio; none with disable_audio or a silent input", () => {
    const withAudio = plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264 }] })).commands[0]!;
    expect([after(withAudio, "-c:a:0"), after(withAudio, "-b:a:0"), after(withAudio, "-ar:a:0")]).toEqual(["aac", "128k", "44100"]);
    expect(plan(spec({ type: OutputType.MP4, disableAudio: true, video: [{ codec: VideoCodec.H264 }] })).commands[0]).not.toContain("-c:a:0");
    expect(plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264 }] }), probe({ audio: undefined, audioStreams: 0 })).commands[0]).not.toContain(
      "-c:a:0",
    );
    const webm = plan(spec({ type: OutputType.WEBM, video: [{ codec: VideoCodec.VP9 }] })).commands[0]!;
    expect([after(webm, "-c:a:0"), after(webm, "-ar:a:0")]).toEqual(["libopus", "48000"]);
  });

  it("normalizes loudness with loudnorm and maps track i to input stream i when there are several", () => {
    const cmd = plan(
      spec({
        type: OutputType.MKV,
        video: [{ codec: VideoCodec.H264 }],
        audio: [
          { codec: AudioCodec.AAC, normalize: true, language: "en" },
          { codec: AudioCodec.MP3, channels: 2, sampleRate: 44100, language: "pt", name: "Português" },
        ],
      }),
      probe({ audioStreams: 2 }),
    ).commands[0]!;
    expect([after(cmd, "-filter:a:0"), after(cmd, "-ar:a:0")]).toEqual(["loudnorm=I=-23:TP=-1:LRA=7", "44100"]);
    expect(cmd.join(" ")).toContain("-map 0:a:0 -map 0:a:1");
    expect([after(cmd, "-c:a:1"), after(cmd, "-metadata:s:a:0")]).toEqual(["libmp3lame", "language=en"]);
  });

  it("plans an audio-only output from audio tracks and no variants", () => {
    const p = plan(spec({ type: OutputType.MP4, audio: [{ codec: AudioCodec.AAC, bitrateKbps: 96 }] }));
    expect(p.main).toBe("audio.mp4");
    expect(p.commands[0]).toContain("-vn");
    expect(() => plan(spec({ type: OutputType.MP4, audio: [{ codec: AudioCodec.AAC }] }), probe({ audio: undefined }))).toThrow(MediaError);
  });
});
