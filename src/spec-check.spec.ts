// checkOutputSpec: every rule, each violation on its exact field path.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EncodingMode, HdrMode, OutputSpecSchema, OutputType, SubtitleFormat, SubtitleKind, SubtitleSource, SubtitleTrackSchema } from "./gen/media/v1/job_pb.js";
import { AudioCodec, BitrateMode, SegmentFormat, VideoCodec } from "./gen/media/v1/preset_pb.js";
import { Check } from "./validation.js";
import { checkOutputSpec } from "./spec-check.js";

type Init = NonNullable<Parameters<typeof create<typeof OutputSpecSchema>>[1]>;
const violations = (init: Init) => {
  const check = new Check();
  checkOutputSpec(check, "outputs[0]", create(OutputSpecSchema, init));
  return check.violations;
};
const fields = (init: Init) => violations(init).map((v) => v.field);
const h264 = { codec: VideoCodec.H264, resolution: "720p" };

describe("checkOutputSpec", () => {
  it("accepts common outputs, including an audio-only one", () => {
    expect(violations({ type: OutputType.MP4, video: [h264] })).toEqual([]);
    expect(violations({ type: OutputType.HLS, video: [h264, { codec: VideoCodec.H265, resolution: "480p" }], audio: [{ codec: AudioCodec.AAC, language: "en", name: "English" }, { codec: AudioCodec.AAC, language: "pt-BR" }] })).toEqual([]);
    expect(violations({ type: OutputType.WEBM, video: [{ codec: VideoCodec.VP9, vp9: { crf: 31, encoderPreset: "good", cpuUsed: 4 } }], audio: [{ codec: AudioCodec.OPUS }] })).toEqual([]);
    expect(violations({ type: OutputType.ADAPTIVE, video: [{ codec: VideoCodec.AV1, width: 1280, height: 720, av1: { crf: 35, encoderPreset: "8", tune: "vq", level: "4.0" } }] })).toEqual([]);
    expect(violations({ type: OutputType.MP4, audio: [{ codec: AudioCodec.AAC, bitrateKbps: 96 }] })).toEqual([]);
  });

  it("requires a type and 1 to 20 video variants (or audio tracks only), at most 8 audio tracks", () => {
    expect(fields({ video: [h264] })).toEqual(["outputs[0].type"]);
    expect(fields({ type: 42 as OutputType, video: [h264] })).toEqual(["outputs[0].type"]);
    const none = violations({ type: OutputType.MP4 });
    expect(none.map((v) => v.field)).toEqual(["outputs[0].video"]);
    expect(none[0]!.description).toContain("audio-only");
    expect(fields({ type: OutputType.MP4, video: Array.from({ length: 21 }, () => h264) })).toEqual(["outputs[0].video"]);
    expect(fields({ type: OutputType.HLS, video: [h264], audio: Array.from({ length: 9 }, () => ({ codec: AudioCodec.AAC })) })).toEqual(["outputs[0].audio"]);
    expect(fields({ type: OutputType.MP4, video: [h264], disableAudio: true, audio: [{ codec: AudioCodec.AAC }] })).toEqual(["outputs[0].disable_audio"]);
  });

  it("a name that exists on every object is not a resolution", () => {
    expect(fields({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution: "toString" }, { codec: VideoCodec.H264, resolution: "constructor" }] })).toEqual([
      "outputs[0].video[0].resolution",
      "outputs[0].video[1].resolution",
    ]);
  });

  it("checks each variant: codec, resolution, custom size, frame rate, bitrate", () => {
    expect(
      fields({
        type: OutputType.MKV,
        video: [
          { resolution: "720p" },
          { codec: VideoCodec.H264, resolution: "360p" },
          { codec: VideoCodec.H264, width: 100, height: 4322 },
          { codec: VideoCodec.H264, width: 641, height: 360 },
          { codec: VideoCodec.H264, resolution: "720p", width: 1280, height: 720 },
          { codec: VideoCodec.H264, framerate: 241, bitrate: 99 },
          { codec: VideoCodec.H264, bitrate: 240_001 },
          { codec: VideoCodec.H265, hdr: { mode: HdrMode.HDR10 } },
        ],
      }),
    ).toEqual([
      "outputs[0].video[0].codec",
      "outputs[0].video[1].resolution",
      "outputs[0].video[2].width",
      "outputs[0].video[2].height",
      "outputs[0].video[3].width",
      "outputs[0].video[4].resolution",
      "outputs[0].video[5].framerate",
      "outputs[0].video[5].bitrate",
      "outputs[0].video[6].bitrate",
      "outputs[0].video[7].hdr",
    ]);
  });

  it("names a codec option object that does not match the variant's codec", () => {
    const v = violations({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, h265: { crf: 20 } }, { codec: VideoCodec.AV1, av1: {}, vp9: {} }] });
    expect(v.map((x) => x.field)).toEqual(["outputs[0].video[0].h265", "outputs[0].video[1].vp9"]);
    expect(v[0]!.description).toBe("applies to h265 variants; this variant's codec is h264");
  });

  it("checks codec options against the codec's ranges and names", () => {
    expect(
      fields({
        type: OutputType.MKV,
        video: [
          { codec: VideoCodec.H264, h264: { crf: 14, keyint: 601, bframes: 17, refs: 17, maxBitrateKbps: 99, bufferSizeKbps: 480_001, encoderPreset: "placebo", tune: "psnr", profile: "high10", level: "3.5" } },
          { codec: VideoCodec.H265, h265: { crf: 17, encoderPreset: "slower", tune: "film", profile: "main10" } },
          { codec: VideoCodec.VP9, vp9: { crf: 51, encoderPreset: "fast", profile: "4", cpuUsed: 9, tileColumns: 7 } },
          { codec: VideoCodec.AV1, av1: { crf: 56, encoderPreset: "2", tune: "film", profile: "high", filmGrain: 51 } },
          { codec: VideoCodec.AV1, av1: { crf: 19, encoderPreset: "13" } },
        ],
      }),
    ).toEqual([
      "outputs[0].video[0].h264.crf",
      "outputs[0].video[0].h264.max_bitrate_kbps",
      "outputs[0].video[0].h264.buffer_size_kbps",
      "outputs[0].video[0].h264.keyint",
      "outputs[0].video[0].h264.profile",
      "outputs[0].video[0].h264.encoder_preset",
      "outputs[0].video[0].h264.tune",
      "outputs[0].video[0].h264.level",
      "outputs[0].video[0].h264.bframes",
      "outputs[0].video[0].h264.refs",
      "outputs[0].video[1].h265.crf",
      "outputs[0].video[1].h265.tune",
      "outputs[0].video[2].vp9.crf",
      "outputs[0].video[2].vp9.profile",
      "outputs[0].video[2].vp9.encoder_preset",
      "outputs[0].video[2].vp9.cpu_used",
      "outputs[0].video[2].vp9.tile_columns",
      "outputs[0].video[3].av1.crf",
      "outputs[0].video[3].av1.profile",
      "outputs[0].video[3].av1.encoder_preset",
      "outputs[0].video[3].av1.tune",
      "outputs[0].video[3].av1.film_grain",
      "outputs[0].video[4].av1.crf",
      "outputs[0].video[4].av1.encoder_preset",
    ]);
  });

  it("checks rate control combinations", () => {
    expect(
      fields({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, bitrate: 3000, h264: { bitrateMode: BitrateMode.CBR, crf: 23, maxBitrateKbps: 4000 } },
          { codec: VideoCodec.H264, bitrate: 3000, h264: { bitrateMode: BitrateMode.VBR, maxBitrateKbps: 2000 } },
          { codec: VideoCodec.H264, h264: { bufferSizeKbps: 4000 } },
          { codec: VideoCodec.H264, h264: { bitrateMode: 9 as BitrateMode } },
        ],
      }),
    ).toEqual([
      "outputs[0].video[0].h264.crf",
      "outputs[0].video[0].h264.max_bitrate_kbps",
      "outputs[0].video[1].h264.max_bitrate_kbps",
      "outputs[0].video[2].h264.buffer_size_kbps",
      "outputs[0].video[3].h264.bitrate_mode",
    ]);
  });

  it("names impossible codec and container pairs on the codec field", () => {
    const at = (type: OutputType, video: Init["video"], audio: Init["audio"] = [], extra: Init = {}) => fields({ type, video, audio, ...extra });
    expect(at(OutputType.WEBM, [h264])).toEqual(["outputs[0].video[0].codec"]);
    expect(at(OutputType.MOV, [{ codec: VideoCodec.VP9 }, { codec: VideoCodec.AV1 }, { codec: VideoCodec.H265 }])).toEqual(["outputs[0].video[0].codec", "outputs[0].video[1].codec"]);
    expect(at(OutputType.HLS, [h264, { codec: VideoCodec.VP9 }])).toEqual(["outputs[0].video[1].codec"]);
    expect(at(OutputType.ADAPTIVE, [{ codec: VideoCodec.VP9 }])).toEqual(["outputs[0].video[0].codec"]);
    expect(at(OutputType.HLS, [{ codec: VideoCodec.AV1 }], [], { hls: { segmentFormat: SegmentFormat.TS } })).toEqual(["outputs[0].video[0].codec"]);
    expect(at(OutputType.DASH, [{ codec: VideoCodec.VP9 }, h264])).toEqual([]);
    expect(at(OutputType.WEBM, [{ codec: VideoCodec.VP9 }], [{ codec: AudioCodec.AAC }])).toEqual(["outputs[0].audio[0].codec"]);
    expect(at(OutputType.MOV, [h264], [{ codec: AudioCodec.OPUS }])).toEqual(["outputs[0].audio[0].codec"]);
    expect(at(OutputType.HLS, [h264], [{ codec: AudioCodec.AAC }, { codec: AudioCodec.OPUS }])).toEqual(["outputs[0].audio[1].codec"]);
    expect(at(OutputType.ADAPTIVE, [h264], [{ codec: AudioCodec.MP3 }])).toEqual(["outputs[0].audio[0].codec"]);
    expect(at(OutputType.MKV, [{ codec: VideoCodec.VP9 }], [{ codec: AudioCodec.MP3 }, { codec: AudioCodec.OPUS }, { codec: AudioCodec.AAC }])).toEqual([]);
  });

  it("checks audio tracks: bitrate, channels, sample rate by codec, name and language", () => {
    expect(
      fields({
        type: OutputType.MKV,
        video: [h264],
        audio: [
          { codec: AudioCodec.AAC, bitrateKbps: 31, channels: 9, sampleRate: 47000 },
          { codec: AudioCodec.MP3, bitrateKbps: 513, channels: 6, sampleRate: 96000 },
          { codec: AudioCodec.OPUS, sampleRate: 44100, name: "x".repeat(129), language: "english!" },
          { codec: 7 as AudioCodec },
        ],
      }),
    ).toEqual([
      "outputs[0].audio[0].bitrate_kbps",
      "outputs[0].audio[0].channels",
      "outputs[0].audio[0].sample_rate",
      "outputs[0].audio[1].bitrate_kbps",
      "outputs[0].audio[1].channels",
      "outputs[0].audio[1].sample_rate",
      "outputs[0].audio[2].sample_rate",
      "outputs[0].audio[2].name",
      "outputs[0].audio[2].language",
      "outputs[0].audio[3].codec",
    ]);
  });

  it("checks streaming settings: segment lengths, manifest names, fmp4 for DASH and adaptive", () => {
    expect(
      fields({
        type: OutputType.ADAPTIVE,
        video: [h264],
        hls: { segmentDurationSeconds: 4, manifestName: "../index", iframePlaylists: true, segmentFormat: SegmentFormat.TS },
        dash: { segmentDurationSeconds: 6, minBufferTimeSeconds: 31, manifestName: "manifest.mpd" },
        segments: { segmentDurationSeconds: 0, segmentFormat: SegmentFormat.TS },
      }),
    ).toEqual([
      "outputs[0].hls.manifest_name",
      "outputs[0].hls.iframe_playlists",
      "outputs[0].dash.min_buffer_time_seconds",
      "outputs[0].dash.manifest_name",
      "outputs[0].segments.segment_format",
      "outputs[0].hls.segment_format",
      "outputs[0].dash.segment_duration_seconds",
    ]);
    expect(fields({ type: OutputType.HLS, video: [h264], hls: { segmentDurationSeconds: 31 }, segments: { segmentDurationSeconds: -1 } })).toEqual(["outputs[0].hls.segment_duration_seconds", "outputs[0].segments.segment_duration_seconds"]);
  });

  it("refuses what this build does not do, on that field, and long path templates", () => {
    const v = violations({
      type: OutputType.HLS,
      video: [h264],
      drm: { systems: [1] },
      contentAware: { enabled: true },
      pathTemplate: "x".repeat(1025),
      encodingMode: 5 as EncodingMode,
    });
    expect(v.map((x) => x.field)).toEqual(["outputs[0].encoding_mode", "outputs[0].path_template", "outputs[0].drm", "outputs[0].content_aware"]);
    expect(v.find((x) => x.field === "outputs[0].drm")!.description).toContain("not supported in this build");
  });

  describe("subtitle tracks", () => {
    const URL_ = SubtitleSource.URL;
    const GEN = SubtitleSource.GENERATED;
    type TrackInit = NonNullable<Parameters<typeof create<typeof SubtitleTrackSchema>>[1]>;
    const on = (tracks: TrackInit[], type = OutputType.HLS) => violations({ type, video: [h264], subtitleTracks: tracks.map((t) => create(SubtitleTrackSchema, t)) });

    it("takes generated tracks (language given or detected) and provided ones by https URL or origin path, on every output type", () => {
      for (const type of [OutputType.MP4, OutputType.HLS, OutputType.DASH, OutputType.ADAPTIVE]) {
        expect(on([{ source: GEN, language: "en", generateChapters: true, isDefault: true }, { source: GEN, language: "pt-BR" }, { source: GEN }, { source: URL_, url: "https://example.com/fr.srt", format: SubtitleFormat.SRT, language: "fr" }, { source: URL_, url: "captions/de.vtt", language: "de" }], type)).toEqual([]);
      }
    });

    it("names each bad field", () => {
      const fields = (t: Parameters<typeof on>[0]) => on(t).map((x) => `${x.field}: ${x.description}`);
      expect(fields([{}])[0]).toMatch(/^outputs\[0\]\.subtitle_tracks\[0\]\.source: is required/);
      expect(fields([{ source: URL_ }])[0]).toMatch(/^outputs\[0\]\.subtitle_tracks\[0\]\.url: is required/);
      expect(fields([{ source: URL_, url: "s3://bucket/a.vtt" }])[0]).toMatch(/\.url: must be an https URL/);
      expect(fields([{ source: URL_, url: "http://example.com/a.vtt" }])[0]).toMatch(/\.url: must be an https URL/);
      expect(fields([{ source: URL_, url: "../a.vtt" }])[0]).toMatch(/\.url: a path in the input origin is relative/);
      expect(fields([{ source: URL_, url: "/etc/passwd" }])[0]).toMatch(/\.url: a path in the input origin is relative/);
      expect(fields([{ source: URL_, url: "https://u:p@example.com/a.vtt" }])[0]).toMatch(/\.url: must be an https URL with a host and no credentials/);
      expect(fields([{ source: URL_, url: `https://example.com/${"a".repeat(2048)}` }])[0]).toMatch(/\.url: must be at most 2048/);
      expect(fields([{ source: URL_, url: "https://example.com/a.vtt", generateChapters: true }])[0]).toMatch(/\.generate_chapters: applies to generated tracks/);
      expect(fields([{ source: GEN, url: "https://example.com/a.vtt" }])[0]).toMatch(/\.url: applies to source url/);
      expect(fields([{ source: GEN, format: SubtitleFormat.SRT }])[0]).toMatch(/\.format: applies to source url/);
      expect(fields([{ source: GEN, language: "tlh" }])).toEqual(["outputs[0].subtitle_tracks[0].language: the speech recogniser does not know tlh; leave it empty to detect the spoken language"]);
      expect(fields([{ source: GEN, language: "english" }])[0]).toMatch(/\.language: must be a BCP 47 tag/);
      expect(fields([{ source: GEN, language: "en" }, { source: GEN, language: "en-GB" }])).toEqual(["outputs[0].subtitle_tracks[1].language: repeats subtitle_tracks[0]: one generated track per language"]);
      expect(fields([{ source: GEN }, { source: GEN }])[0]).toMatch(/^outputs\[0\]\.subtitle_tracks\[1\]\.language: repeats subtitle_tracks\[0\]/);
      expect(fields([{ source: GEN, language: "en", isDefault: true }, { source: URL_, url: "a.vtt", isDefault: true }])).toEqual(["outputs[0].subtitle_tracks[1].is_default: only one track is the default; subtitle_tracks[0] already is"]);
      expect(fields([{ source: GEN, name: "n".repeat(129) }])[0]).toMatch(/\.name: /);
      expect(fields([{ source: 9 as SubtitleSource }, { source: GEN, kind: 7 as SubtitleKind }, { source: URL_, url: "a.vtt", format: 5 as SubtitleFormat }])).toEqual([
        "outputs[0].subtitle_tracks[0].source: must be url or generated",
        "outputs[0].subtitle_tracks[1].kind: must be subtitles or captions",
        "outputs[0].subtitle_tracks[2].format: must be vtt or srt",
      ]);
      expect(fields(Array.from({ length: 9 }, (_, k) => ({ source: URL_, url: `t${k}.vtt` })))).toEqual(["outputs[0].subtitle_tracks: must have at most 8 tracks"]);
    });
  });
});
