// checkOutputSpec: every rule, each violation on its exact field path.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  DrmSystem,
  EncodingMode,
  EncryptionScheme,
  HdrMode,
  OutputSpecSchema,
  OutputType,
  SubtitleFormat,
  SubtitleKind,
  SubtitleSource,
  SubtitleTrackSchema,
} from "./gen/media/v1/job_pb.js";
import { AudioCodec, BitrateMode, HlsPlaylistType, QualityTier, SegmentFormat, VideoCodec } from "./gen/media/v1/preset_pb.js";
import { Check } from "./validation.js";
import { checkOutputSpec, drmSchemeOf } from "./spec-check.js";

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
    expect(
      violations({
        type: OutputType.HLS,
        video: [h264, { codec: VideoCodec.H265, resolution: "480p" }],
        audio: [
          { codec: AudioCodec.AAC, language: "en", name: "English" },
          { codec: AudioCodec.AAC, language: "pt-BR" },
        ],
      }),
    ).toEqual([]);
    expect(
      violations({
        type: OutputType.WEBM,
        video: [{ codec: VideoCodec.VP9, vp9: { crf: 31, encoderPreset: "good", cpuUsed: 4 } }],
        audio: [{ codec: AudioCodec.OPUS }],
      }),
    ).toEqual([]);
    expect(
      violations({
        type: OutputType.ADAPTIVE,
        video: [{ codec: VideoCodec.AV1, width: 1280, height: 720, av1: { crf: 35, encoderPreset: "8", tune: "vq", level: "4.0" } }],
      }),
    ).toEqual([]);
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
    expect(
      fields({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, resolution: "toString" },
          { codec: VideoCodec.H264, resolution: "constructor" },
        ],
      }),
    ).toEqual(["outputs[0].video[0].resolution", "outputs[0].video[1].resolution"]);
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
          { codec: VideoCodec.H264, hdr: { mode: HdrMode.HDR10 } },
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
      "outputs[0].video[7].hdr.mode",
    ]);
  });

  it("names a codec option object that does not match the variant's codec", () => {
    const v = violations({
      type: OutputType.MP4,
      video: [
        { codec: VideoCodec.H264, h265: { crf: 20 } },
        { codec: VideoCodec.AV1, av1: {}, vp9: {} },
      ],
    });
    expect(v.map((x) => x.field)).toEqual(["outputs[0].video[0].h265", "outputs[0].video[1].vp9"]);
    expect(v[0]!.description).toBe("applies to h265 variants; this variant's codec is h264");
  });

  it("checks codec options against the codec's ranges and names", () => {
    expect(
      fields({
        type: OutputType.MKV,
        video: [
          {
            codec: VideoCodec.H264,
            h264: {
              crf: 14,
              keyint: 601,
              bframes: 17,
              refs: 17,
              maxBitrateKbps: 99,
              bufferSizeKbps: 480_001,
              encoderPreset: "placebo",
              tune: "psnr",
              profile: "high10",
              level: "3.5",
            },
          },
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
    expect(at(OutputType.MOV, [{ codec: VideoCodec.VP9 }, { codec: VideoCodec.AV1 }, { codec: VideoCodec.H265 }])).toEqual([
      "outputs[0].video[0].codec",
      "outputs[0].video[1].codec",
    ]);
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
      "outputs[0].dash.min_buffer_time_seconds",
      "outputs[0].dash.manifest_name",
      "outputs[0].segments.segment_format",
      "outputs[0].hls.segment_format",
      "outputs[0].dash.segment_duration_seconds",
    ]);
    expect(fields({ type: OutputType.HLS, video: [h264], hls: { segmentDurationSeconds: 31 }, segments: { segmentDurationSeconds: -1 } })).toEqual([
      "outputs[0].hls.segment_duration_seconds",
      "outputs[0].segments.segment_duration_seconds",
    ]);
  });

  it("names the encoding mode and long path templates", () => {
    const v = violations({ type: OutputType.HLS, video: [h264], pathTemplate: "x".repeat(1025), encodingMode: 5 as EncodingMode });
    expect(v.map((x) => x.field)).toEqual(["outputs[0].encoding_mode", "outputs[0].path_template"]);
  });

  it("content_aware: bounds and target, and no rate of a variant's own for it to overrule", () => {
    const said = (init: Init) => violations(init).map((v) => `${v.field}: ${v.description}`);
    const at = "outputs[0].content_aware";
    expect(
      said({ type: OutputType.HLS, video: [h264, h264], contentAware: { enabled: true, minBitrateKbps: 100, maxBitrateKbps: 240_000, targetVmaf: 50 } }),
    ).toEqual([]);
    expect(said({ type: OutputType.MP4, video: [h264], contentAware: { enabled: true, targetVmaf: 100 } })).toEqual([]);
    expect(
      said({ type: OutputType.MP4, video: [h264], contentAware: { enabled: false, minBitrateKbps: 99, maxBitrateKbps: 240_001, targetVmaf: 49.9 } }),
    ).toEqual([
      `${at}.min_bitrate_kbps: must be 100 to 240000 (or 0 for no floor)`,
      `${at}.max_bitrate_kbps: must be 100 to 240000 (or 0 for no ceiling)`,
      `${at}.target_vmaf: must be 50 to 100 (or 0 for the quality tier's target)`,
    ]);
    expect(said({ type: OutputType.MP4, video: [h264], contentAware: { minBitrateKbps: 2000, maxBitrateKbps: 1000, targetVmaf: 100.5 } })).toEqual([
      `${at}.min_bitrate_kbps: must be at most max_bitrate_kbps`,
      `${at}.target_vmaf: must be 50 to 100 (or 0 for the quality tier's target)`,
    ]);
    expect(said({ type: OutputType.MP4, video: [h264], contentAware: { minBitrateKbps: 1000, maxBitrateKbps: 1000 } })).toEqual([]);
    expect(said({ type: OutputType.HLS, audio: [{ codec: AudioCodec.AAC }], contentAware: { enabled: true } })).toEqual([
      `${at}.enabled: applies to outputs with video variants: it chooses their rates`,
    ]);
    const why = "is chosen by content_aware: remove it, or disable content_aware";
    expect(
      said({
        type: OutputType.HLS,
        video: [
          { ...h264, bitrate: 3000 },
          { codec: VideoCodec.H265, h265: { crf: 20, maxBitrateKbps: 5000 } },
          { codec: VideoCodec.VP9, vp9: { bitrateMode: BitrateMode.CRF } },
          { codec: VideoCodec.AV1, av1: { bitrateMode: BitrateMode.VBR } },
        ],
        hls: { segmentFormat: SegmentFormat.FMP4 },
        contentAware: { enabled: true },
      }).filter((m) => !m.includes(".codec:")),
    ).toEqual([
      `outputs[0].video[0].bitrate: ${why}`,
      `outputs[0].video[1].h265.crf: ${why}`,
      "outputs[0].video[1].h265.max_bitrate_kbps: use content_aware.max_bitrate_kbps, which caps every variant",
      "outputs[0].video[3].av1.bitrate_mode: must be crf or unset with content_aware, which chooses a CRF",
    ]);
  });

  describe("drm", () => {
    const said = (init: Init) => violations(init).map((v) => `${v.field}: ${v.description}`);
    const fmp4 = { segmentFormat: SegmentFormat.FMP4 };
    const url = "https://keys.example.com/speke/v2";

    it("accepts cbcs on CMAF, cenc on DASH and aes_128 on ts HLS, with the defaults filled in", () => {
      expect(said({ type: OutputType.ADAPTIVE, video: [h264], drm: { systems: [DrmSystem.CLEARKEY] } })).toEqual([]);
      expect(
        said({
          type: OutputType.DASH,
          video: [h264],
          drm: {
            systems: [DrmSystem.CLEARKEY, DrmSystem.WIDEVINE, DrmSystem.PLAYREADY],
            scheme: EncryptionScheme.CENC,
            keyProviderUrl: url,
            resourceId: "course-12:lesson.3_a",
          },
        }),
      ).toEqual([]);
      expect(
        said({ type: OutputType.HLS, video: [h264], hls: fmp4, drm: { systems: [DrmSystem.FAIRPLAY], scheme: EncryptionScheme.CBCS, keyProviderUrl: url } }),
      ).toEqual([]);
      expect(said({ type: OutputType.HLS, video: [h264], drm: {} })).toEqual([]);
      expect(said({ type: OutputType.HLS, video: [{ codec: VideoCodec.H265, resolution: "720p" }], drm: { systems: [DrmSystem.CLEARKEY] } })).toEqual([]);
      expect(drmSchemeOf(create(OutputSpecSchema, { type: OutputType.HLS, video: [h264], drm: {} }))).toBe(EncryptionScheme.AES_128);
      expect(drmSchemeOf(create(OutputSpecSchema, { type: OutputType.HLS, video: [h264], hls: fmp4, drm: {} }))).toBe(EncryptionScheme.CBCS);
      expect(drmSchemeOf(create(OutputSpecSchema, { type: OutputType.DASH, video: [h264], drm: { scheme: EncryptionScheme.CENC } }))).toBe(
        EncryptionScheme.CENC,
      );
      expect(drmSchemeOf(create(OutputSpecSchema, { type: OutputType.DASH, video: [h264] }))).toBeUndefined();
    });

    it("names the field of every refused combination", () => {
      expect(said({ type: OutputType.MP4, video: [h264], drm: { systems: [DrmSystem.CLEARKEY] } })).toEqual([
        "outputs[0].drm: applies to streaming outputs: hls, dash or adaptive",
      ]);
      expect(said({ type: OutputType.DASH, video: [h264], drm: { systems: [DrmSystem.CLEARKEY], scheme: 9 as EncryptionScheme } })).toEqual([
        "outputs[0].drm.scheme: must be cbcs, cenc or aes_128",
      ]);
      expect(said({ type: OutputType.DASH, video: [h264], drm: { scheme: EncryptionScheme.AES_128 } })).toEqual([
        "outputs[0].drm.scheme: aes_128 encrypts whole ts segments: it applies to hls outputs on ts segments; CMAF (fmp4) segments take cbcs or cenc",
      ]);
      expect(said({ type: OutputType.HLS, video: [h264], drm: { systems: [DrmSystem.CLEARKEY], scheme: EncryptionScheme.CBCS } })).toEqual([
        "outputs[0].drm.scheme: hls on ts segments takes aes_128; for cbcs set hls.segment_format to fmp4",
      ]);
      expect(said({ type: OutputType.ADAPTIVE, video: [h264], drm: { systems: [DrmSystem.CLEARKEY], scheme: EncryptionScheme.CENC } })).toEqual([
        "outputs[0].drm.scheme: cenc applies to dash outputs: HLS players decrypt cbcs, which also serves DASH from the same segments",
      ]);
      expect(said({ type: OutputType.HLS, video: [h264], hls: fmp4, drm: { systems: [DrmSystem.CLEARKEY], scheme: EncryptionScheme.CENC } })).toHaveLength(1);
      expect(said({ type: OutputType.HLS, video: [h264], drm: { systems: [DrmSystem.CLEARKEY] } })).toEqual([
        "outputs[0].drm.systems: must be empty with aes_128: players fetch the key from the key URI in the playlists",
      ]);
      expect(said({ type: OutputType.DASH, video: [h264], drm: {} })).toEqual([
        "outputs[0].drm.systems: needs at least one of clearkey, widevine, playready, fairplay",
      ]);
      expect(said({ type: OutputType.HLS, video: [h264], segments: { singleFile: true }, drm: {} })).toEqual([
        "outputs[0].segments.single_file: is not combined with aes_128: each ts segment is encrypted as a file of its own",
      ]);
      expect(said({ type: OutputType.HLS, video: [h264], hls: fmp4, segments: { singleFile: true }, drm: { systems: [DrmSystem.CLEARKEY] } })).toEqual([]);
      expect(said({ type: OutputType.DASH, video: [h264], drm: { systems: [DrmSystem.CLEARKEY, 0 as DrmSystem, DrmSystem.CLEARKEY] } })).toEqual([
        "outputs[0].drm.systems[1]: must be clearkey, widevine, playready or fairplay",
        "outputs[0].drm.systems[2]: lists clearkey twice",
      ]);
      expect(said({ type: OutputType.DASH, video: [h264], drm: { systems: [DrmSystem.FAIRPLAY], keyProviderUrl: url } })).toEqual([
        "outputs[0].drm.systems[0]: fairplay is signalled in HLS: use an hls or adaptive output",
      ]);
      expect(
        said({ type: OutputType.HLS, video: [h264], hls: fmp4, drm: { systems: [DrmSystem.FAIRPLAY], scheme: EncryptionScheme.CENC, keyProviderUrl: url } }),
      ).toEqual([
        "outputs[0].drm.scheme: cenc applies to dash outputs: HLS players decrypt cbcs, which also serves DASH from the same segments",
        "outputs[0].drm.systems[0]: fairplay requires the cbcs scheme",
      ]);
      expect(said({ type: OutputType.ADAPTIVE, video: [h264], drm: { systems: [DrmSystem.CLEARKEY, DrmSystem.WIDEVINE, DrmSystem.FAIRPLAY] } })).toEqual([
        "outputs[0].drm.key_provider_url: is required with widevine and fairplay: their license services need the keys, which a SPEKE v2 key service shares; the built-in provider serves clearkey and aes_128 keys only",
      ]);
      expect(said({ type: OutputType.DASH, video: [h264], drm: { systems: [DrmSystem.PLAYREADY], keyProviderUrl: "http://keys.example.com/" } })).toEqual([
        "outputs[0].drm.key_provider_url: must be an https URL",
      ]);
      expect(said({ type: OutputType.DASH, video: [h264], drm: { systems: [DrmSystem.PLAYREADY], keyProviderUrl: "https://u:p@keys.example.com/" } })).toEqual([
        "outputs[0].drm.key_provider_url: must not carry credentials",
      ]);
      expect(said({ type: OutputType.DASH, video: [h264], drm: { systems: [DrmSystem.PLAYREADY], keyProviderUrl: "not a url" } })).toEqual([
        "outputs[0].drm.key_provider_url: must be an https URL",
      ]);
      expect(
        said({ type: OutputType.DASH, video: [h264], drm: { systems: [DrmSystem.PLAYREADY], keyProviderUrl: `https://k.example.com/${"a".repeat(2048)}` } }),
      ).toEqual(["outputs[0].drm.key_provider_url: must be at most 2048 characters"]);
      expect(
        said({
          type: OutputType.DASH,
          video: [h264],
          drm: { systems: [DrmSystem.CLEARKEY], keyProviderUrl: `https://k.example.com/${"a".repeat(2048 - 22)}` },
        }),
      ).toEqual([]);
      expect(said({ type: OutputType.DASH, video: [h264], drm: { systems: [DrmSystem.CLEARKEY], resourceId: "a b" } })).toEqual([
        "outputs[0].drm.resource_id: must be 1 to 256 letters, digits, '.', '_', ':' or '-'",
      ]);
      expect(said({ type: OutputType.DASH, video: [h264], drm: { systems: [DrmSystem.CLEARKEY], resourceId: "a".repeat(257) } })).toHaveLength(1);
      expect(said({ type: OutputType.DASH, video: [h264], drm: { systems: [DrmSystem.CLEARKEY], resourceId: "a".repeat(256) } })).toEqual([]);
    });
  });

  describe("every rule's boundaries and exact messages", () => {
    const said = (init: Init) => violations(init).map((v) => `${v.field}: ${v.description}`);
    const mkv = (video: Init["video"], audio: Init["audio"] = []) => said({ type: OutputType.MKV, video, audio });

    it("names the type, the variant and track counts, disable_audio and encoding mode", () => {
      expect(said({ video: [h264] })).toEqual(["outputs[0].type: is required: mp4, webm, mkv, mov, hls, dash or adaptive"]);
      expect(said({ type: 42 as OutputType, video: [h264] })).toEqual(["outputs[0].type: must be mp4, webm, mkv, mov, hls, dash or adaptive"]);
      expect(
        said({ type: OutputType.MP4, video: Array.from({ length: 20 }, () => h264), audio: Array.from({ length: 8 }, () => ({ codec: AudioCodec.AAC })) }),
      ).toEqual([]);
      expect(said({ type: OutputType.MP4, video: Array.from({ length: 21 }, () => h264) })).toEqual(["outputs[0].video: must have at most 20 video variants"]);
      expect(said({ type: OutputType.MP4, video: [h264], audio: Array.from({ length: 9 }, () => ({ codec: AudioCodec.AAC })) })).toEqual([
        "outputs[0].audio: must have at most 8 audio tracks",
      ]);
      expect(said({ type: OutputType.MP4, video: [h264], disableAudio: true })).toEqual([]);
      expect(said({ type: OutputType.MP4, video: [h264], disableAudio: true, audio: [{ codec: AudioCodec.AAC }] })).toEqual([
        "outputs[0].disable_audio: cannot be combined with audio tracks; remove the audio tracks or disable_audio",
      ]);
      expect(said({ type: OutputType.MP4, video: [h264], encodingMode: EncodingMode.AUTO })).toEqual([]);
      expect(said({ type: OutputType.MP4, video: [h264], encodingMode: 5 as EncodingMode })).toEqual(["outputs[0].encoding_mode: must be fixed or auto"]);
      expect(said({ type: OutputType.MP4, video: [h264], contentAware: { enabled: true } })).toEqual([]);
      expect(said({ type: OutputType.MP4, video: [h264], contentAware: { enabled: false } })).toEqual([]);
    });

    it("checks only the first 20 variants and the first 8 audio tracks one by one", () => {
      const v = said({
        type: OutputType.MP4,
        video: Array.from({ length: 21 }, () => ({ resolution: "720p" })),
        audio: Array.from({ length: 9 }, () => ({ codec: 7 as AudioCodec })),
      });
      expect(v).toHaveLength(1 + 1 + 20 + 8);
      expect(v.filter((x) => x.startsWith("outputs[0].video[")).at(-1)).toBe("outputs[0].video[19].codec: is required: h264, h265, vp9 or av1");
      expect(v.filter((x) => x.startsWith("outputs[0].audio[")).at(-1)).toBe("outputs[0].audio[7].codec: must be aac, opus or mp3");
    });

    it("names a missing or unknown video codec, and options for a codec the variant lacks", () => {
      expect(mkv([{ resolution: "720p" }, { codec: 9 as VideoCodec }, { h264: {} }])).toEqual([
        "outputs[0].video[0].codec: is required: h264, h265, vp9 or av1",
        "outputs[0].video[1].codec: must be h264, h265, vp9 or av1",
        "outputs[0].video[2].codec: is required: h264, h265, vp9 or av1",
        "outputs[0].video[2].h264: applies to h264 variants; this variant's codec is not set",
      ]);
    });

    it("takes every size from 128 up to 7680 by 4320, even only, and a named resolution only without a size", () => {
      expect(
        mkv([
          { codec: VideoCodec.H264, width: 128, height: 128 },
          { codec: VideoCodec.H264, width: 7680, height: 4320 },
          { codec: VideoCodec.H264, width: 640 },
          { codec: VideoCodec.H264, height: 360 },
        ]),
      ).toEqual([]);
      expect(
        mkv([
          { codec: VideoCodec.H264, width: 126, height: 126 },
          { codec: VideoCodec.H264, width: 7682, height: 4322 },
          { codec: VideoCodec.H264, width: 640.5, height: 361 },
        ]),
      ).toEqual([
        "outputs[0].video[0].width: must be 128 to 7680",
        "outputs[0].video[0].height: must be 128 to 4320",
        "outputs[0].video[1].width: must be 128 to 7680",
        "outputs[0].video[1].height: must be 128 to 4320",
        "outputs[0].video[2].width: must be 128 to 7680",
        "outputs[0].video[2].height: must be even (4:2:0 chroma halves each side)",
      ]);
      expect(
        mkv([
          { codec: VideoCodec.H264, resolution: "8k" },
          { codec: VideoCodec.H264, resolution: "720p", width: 1280 },
          { codec: VideoCodec.H264, resolution: "720p", height: 720 },
        ]),
      ).toEqual([
        "outputs[0].video[0].resolution: must be one of 480p, 720p, 1080p, 1440p, 2160p, 4320p",
        "outputs[0].video[1].resolution: must be empty when width or height is set",
        "outputs[0].video[2].resolution: must be empty when width or height is set",
      ]);
    });

    it("takes frame rates 1 to 240 and bitrates 100 to 240000 kbps, 0 meaning the default", () => {
      expect(
        mkv([
          { codec: VideoCodec.H264, framerate: 1, bitrate: 100 },
          { codec: VideoCodec.H264, framerate: 240, bitrate: 240_000 },
          { codec: VideoCodec.H264, framerate: 0, bitrate: 0 },
        ]),
      ).toEqual([]);
      expect(
        mkv([
          { codec: VideoCodec.H264, framerate: 241, bitrate: 99 },
          { codec: VideoCodec.H264, framerate: 29.97, bitrate: 240_001 },
        ]),
      ).toEqual([
        "outputs[0].video[0].framerate: must be 1 to 240 (or 0 for the input's frame rate)",
        "outputs[0].video[0].bitrate: must be 100 to 240000 (or 0 for a rate chosen from resolution and quality)",
        "outputs[0].video[1].framerate: must be 1 to 240 (or 0 for the input's frame rate)",
        "outputs[0].video[1].bitrate: must be 100 to 240000 (or 0 for a rate chosen from resolution and quality)",
      ]);
    });

    it("checks the quality tier", () => {
      expect(mkv([{ codec: VideoCodec.H264, quality: QualityTier.PREMIUM, hdr: {} }])).toEqual([]);
      expect(mkv([{ codec: VideoCodec.H264, quality: 9 as QualityTier }])).toEqual(["outputs[0].video[0].quality: must be economy, standard or premium"]);
    });

    it("takes HDR on h265, vp9 and av1, and tonemap on every codec", () => {
      const md = "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)";
      expect(
        mkv([
          { codec: VideoCodec.H265, hdr: { mode: HdrMode.PASSTHROUGH } },
          { codec: VideoCodec.H265, h265: { profile: "main10" }, hdr: { mode: HdrMode.HDR10, masterDisplay: md, maxCll: 1000, maxFall: 400 } },
          { codec: VideoCodec.VP9, vp9: { profile: "2" }, hdr: { mode: HdrMode.HLG } },
          { codec: VideoCodec.AV1, hdr: { mode: HdrMode.HDR10, maxCll: 0 } },
          { codec: VideoCodec.H264, hdr: { mode: HdrMode.TONEMAP } },
          { codec: VideoCodec.H265, h265: { profile: "main" }, hdr: { mode: HdrMode.TONEMAP } },
        ]),
      ).toEqual([]);
    });

    it("refuses HDR on h264 and on 8-bit profiles, and PQ metadata where it does not apply, naming the field", () => {
      expect(
        mkv([
          { codec: VideoCodec.H264, hdr: { mode: HdrMode.PASSTHROUGH } },
          { codec: VideoCodec.H265, h265: { profile: "main" }, hdr: { mode: HdrMode.HDR10 } },
          { codec: VideoCodec.VP9, vp9: { profile: "0" }, hdr: { mode: HdrMode.HLG } },
          { codec: VideoCodec.H265, hdr: { mode: HdrMode.HLG, maxCll: 1000 } },
          { codec: VideoCodec.H265, hdr: { mode: HdrMode.TONEMAP, masterDisplay: "G(1,2)" } },
          { codec: VideoCodec.H265, hdr: { mode: 9 as HdrMode } },
        ]),
      ).toEqual([
        "outputs[0].video[0].hdr.mode: passthrough makes 10-bit HDR, which needs h265, vp9 or av1; h264 variants take tonemap (BT.709 SDR)",
        "outputs[0].video[1].h265.profile: main is 8-bit; hdr.mode hdr10 is 10-bit: main10, or no profile",
        "outputs[0].video[2].vp9.profile: 0 is 8-bit; hdr.mode hlg is 10-bit: 2 or 3, or no profile",
        "outputs[0].video[3].hdr.max_cll: applies with hdr.mode passthrough or hdr10 (PQ's static metadata); hlg carries none",
        "outputs[0].video[4].hdr.master_display: applies with hdr.mode passthrough or hdr10 (PQ's static metadata); tonemap carries none",
        "outputs[0].video[5].hdr.mode: must be passthrough, hdr10, hlg or tonemap",
      ]);
    });

    it("checks the PQ metadata: x265's mastering display notation, light levels", () => {
      expect(
        mkv([
          { codec: VideoCodec.H265, hdr: { mode: HdrMode.HDR10, masterDisplay: "G(0.265,0.69)B(0.15,0.06)R(0.68,0.32)WP(0.3127,0.329)L(1000,0.0001)" } },
          { codec: VideoCodec.H265, hdr: { mode: HdrMode.HDR10, masterDisplay: "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,50001)L(10000000,1)" } },
          { codec: VideoCodec.H265, hdr: { mode: HdrMode.PASSTHROUGH, masterDisplay: "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(5,10)" } },
          { codec: VideoCodec.AV1, hdr: { mode: HdrMode.HDR10, maxCll: 10_001, maxFall: -1 } },
          { codec: VideoCodec.AV1, hdr: { mode: HdrMode.HDR10, maxCll: 400, maxFall: 1000 } },
        ]).map((v) => v.replace(/:.*/, "")),
      ).toEqual([
        "outputs[0].video[0].hdr.master_display",
        "outputs[0].video[1].hdr.master_display",
        "outputs[0].video[2].hdr.master_display",
        "outputs[0].video[3].hdr.max_cll",
        "outputs[0].video[3].hdr.max_fall",
        "outputs[0].video[4].hdr.max_fall",
      ]);
    });

    it("keeps one hdr mode across a DASH adaptation set; HLS variants may differ", () => {
      const ladder = [
        { codec: VideoCodec.H265, hdr: { mode: HdrMode.HDR10 } },
        { codec: VideoCodec.H265, hdr: { mode: HdrMode.TONEMAP } },
        { codec: VideoCodec.H265 },
        { codec: VideoCodec.H265, hdr: { mode: HdrMode.HDR10 } },
      ];
      expect(violations({ type: OutputType.DASH, video: ladder }).map((v) => `${v.field}: ${v.description}`)).toEqual([
        "outputs[0].video[1].hdr.mode: must be video[0]'s (hdr10): a dash output's video is one DASH adaptation set, of one dynamic range",
        "outputs[0].video[2].hdr.mode: must be video[0]'s (hdr10): a dash output's video is one DASH adaptation set, of one dynamic range",
      ]);
      expect(fields({ type: OutputType.ADAPTIVE, video: [ladder[1]!, ladder[2]!] })).toEqual([]);
      expect(fields({ type: OutputType.HLS, video: ladder })).toEqual([]);
    });

    it("takes every codec option at the ends of its range", () => {
      expect(
        mkv([
          { codec: VideoCodec.H264, bitrate: 100, framerate: 1, h264: { crf: 15, keyint: 1, bframes: 0, refs: 1, maxBitrateKbps: 100, bufferSizeKbps: 100 } },
          {
            codec: VideoCodec.H264,
            bitrate: 240_000,
            framerate: 240,
            h264: { crf: 35, keyint: 600, bframes: 16, refs: 16, maxBitrateKbps: 240_000, bufferSizeKbps: 480_000 },
          },
          { codec: VideoCodec.H264, h264: { crf: 0, keyint: 0, refs: 0, maxBitrateKbps: 0, bufferSizeKbps: 0, level: "4.0", profile: "high", tune: "film" } },
          { codec: VideoCodec.H265, h265: { crf: 18 } },
          { codec: VideoCodec.VP9, vp9: { crf: 50, cpuUsed: 0, tileColumns: 0 } },
          { codec: VideoCodec.VP9, vp9: { crf: 15, cpuUsed: 8, tileColumns: 6 } },
          { codec: VideoCodec.AV1, av1: { crf: 20, filmGrain: 0 } },
          { codec: VideoCodec.AV1, av1: { crf: 55, filmGrain: 50 } },
        ]),
      ).toEqual([]);
    });

    it("says each codec option's range and names", () => {
      expect(
        mkv([
          {
            codec: VideoCodec.H264,
            h264: { crf: 14, keyint: 601, bframes: 17, refs: 17, maxBitrateKbps: 99, bufferSizeKbps: 480_001, profile: "high10", level: "1.0b" },
          },
          { codec: VideoCodec.H264, h264: { crf: 36, keyint: -1, refs: -1, maxBitrateKbps: 240_001, bufferSizeKbps: 99, bitrateMode: 9 as BitrateMode } },
          { codec: VideoCodec.VP9, vp9: { cpuUsed: -1, tileColumns: 7 } },
          { codec: VideoCodec.AV1, av1: { filmGrain: -1 } },
          { codec: VideoCodec.H264, h264: { bframes: -1 } },
        ]),
      ).toEqual([
        "outputs[0].video[0].h264.crf: must be 15 to 35 (or 0 for the quality tier's value)",
        "outputs[0].video[0].h264.max_bitrate_kbps: must be 100 to 240000 (or 0 for no VBV cap)",
        "outputs[0].video[0].h264.buffer_size_kbps: must be 100 to 480000 (or 0 for twice the max bitrate)",
        "outputs[0].video[0].h264.keyint: must be 1 to 600 (or 0 for about 2 seconds)",
        "outputs[0].video[0].h264.profile: must be one of baseline, main, high for h264",
        "outputs[0].video[0].h264.level: must be one of 1, 1b, 1.1, 1.2, 1.3, 2, 2.1, 2.2, 3, 3.1, 3.2, 4, 4.1, 4.2, 5, 5.1, 5.2, 6, 6.1, 6.2 for h264",
        "outputs[0].video[0].h264.bframes: must be 0 to 16",
        "outputs[0].video[0].h264.refs: must be 1 to 16 (or 0 for the encoder default)",
        "outputs[0].video[1].h264.bitrate_mode: must be crf, cbr or vbr",
        "outputs[0].video[1].h264.crf: must be 15 to 35 (or 0 for the quality tier's value)",
        "outputs[0].video[1].h264.max_bitrate_kbps: must be 100 to 240000 (or 0 for no VBV cap)",
        "outputs[0].video[1].h264.buffer_size_kbps: must be 100 to 480000 (or 0 for twice the max bitrate)",
        "outputs[0].video[1].h264.keyint: must be 1 to 600 (or 0 for about 2 seconds)",
        "outputs[0].video[1].h264.refs: must be 1 to 16 (or 0 for the encoder default)",
        "outputs[0].video[2].vp9.cpu_used: must be 0 to 8",
        "outputs[0].video[2].vp9.tile_columns: must be 0 to 6",
        "outputs[0].video[3].av1.film_grain: must be 0 to 50",
        "outputs[0].video[4].h264.bframes: must be 0 to 16",
      ]);
    });

    it("checks rate control: crf only in crf mode, a VBV buffer needs a cap, vbr's cap covers the bitrate, cbr takes no cap", () => {
      const rc = (bitrate: number, h: NonNullable<NonNullable<Init["video"]>[number]["h264"]>) =>
        said({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, bitrate, h264: h }] });
      expect(rc(3000, { bitrateMode: BitrateMode.CBR })).toEqual([]);
      expect(rc(3000, { bitrateMode: BitrateMode.CBR, crf: 23, maxBitrateKbps: 4000 })).toEqual([
        "outputs[0].video[0].h264.crf: applies with bitrate_mode crf; cbr and vbr aim at the variant's bitrate",
        "outputs[0].video[0].h264.max_bitrate_kbps: does not apply with bitrate_mode cbr: the rate is the variant's bitrate",
      ]);
      expect(rc(3000, { bitrateMode: BitrateMode.VBR, crf: 23 })).toEqual([
        "outputs[0].video[0].h264.crf: applies with bitrate_mode crf; cbr and vbr aim at the variant's bitrate",
      ]);
      expect(rc(3000, { bitrateMode: BitrateMode.VBR, maxBitrateKbps: 2999 })).toEqual([
        "outputs[0].video[0].h264.max_bitrate_kbps: must be at least the variant's bitrate",
      ]);
      expect(rc(3000, { bitrateMode: BitrateMode.VBR, maxBitrateKbps: 3000 })).toEqual([]);
      expect(rc(3000, { bitrateMode: BitrateMode.VBR })).toEqual([]);
      expect(rc(0, { bitrateMode: BitrateMode.VBR, maxBitrateKbps: -5 })).toEqual([
        "outputs[0].video[0].h264.max_bitrate_kbps: must be 100 to 240000 (or 0 for no VBV cap)",
      ]);
      expect(rc(3000, { maxBitrateKbps: 2000 })).toEqual([]);
      expect(rc(3000, { bitrateMode: BitrateMode.CRF, maxBitrateKbps: 2000 })).toEqual([]);
      expect(rc(0, { bitrateMode: BitrateMode.CRF, bufferSizeKbps: 4000 })).toEqual([
        "outputs[0].video[0].h264.buffer_size_kbps: needs max_bitrate_kbps: a VBV buffer caps a rate",
      ]);
      expect(rc(0, { bufferSizeKbps: 4000 })).toEqual(["outputs[0].video[0].h264.buffer_size_kbps: needs max_bitrate_kbps: a VBV buffer caps a rate"]);
      expect(rc(0, { bufferSizeKbps: 4000, maxBitrateKbps: 2000 })).toEqual([]);
      expect(rc(3000, { bitrateMode: BitrateMode.CRF, bufferSizeKbps: 4000 })).toEqual([]);
      expect(rc(3000, { bufferSizeKbps: 4000 })).toEqual([]);
      expect(rc(0, { bitrateMode: BitrateMode.VBR, bufferSizeKbps: 4000 })).toEqual([]);
      expect(rc(0, { bitrateMode: BitrateMode.CBR, bufferSizeKbps: 4000 })).toEqual([]);
    });

    it("puts av1 in HLS only with fmp4 segments, from hls or segments settings", () => {
      const av1 = [{ codec: VideoCodec.AV1 }];
      expect(said({ type: OutputType.HLS, video: av1 })).toEqual([]);
      expect(said({ type: OutputType.HLS, video: av1, hls: { segmentFormat: SegmentFormat.FMP4 } })).toEqual([]);
      expect(said({ type: OutputType.HLS, video: av1, hls: { segmentFormat: SegmentFormat.FMP4 }, segments: { segmentFormat: SegmentFormat.TS } })).toEqual([]);
      expect(said({ type: OutputType.MP4, video: av1, hls: { segmentFormat: SegmentFormat.TS } })).toEqual([]);
      expect(said({ type: OutputType.HLS, video: av1, segments: { segmentFormat: SegmentFormat.TS } })).toEqual([
        "outputs[0].video[0].codec: av1 in HLS needs fmp4 segments (hls.segment_format fmp4)",
      ]);
      expect(said({ type: OutputType.HLS, video: [...av1, h264], hls: { segmentFormat: SegmentFormat.TS } })).toEqual([
        "outputs[0].video[0].codec: av1 in HLS needs fmp4 segments (hls.segment_format fmp4)",
      ]);
    });

    it("says what each container holds", () => {
      expect(said({ type: OutputType.WEBM, video: [h264], audio: [{ codec: AudioCodec.AAC }] })).toEqual([
        "outputs[0].video[0].codec: webm holds vp9 or av1 video",
        "outputs[0].audio[0].codec: webm holds opus audio",
      ]);
      expect(said({ type: OutputType.MOV, video: [{ codec: VideoCodec.VP9 }], audio: [{ codec: AudioCodec.OPUS }] })).toEqual([
        "outputs[0].video[0].codec: mov holds h264 or h265 video here; use mp4, mkv or webm for vp9 and av1",
        "outputs[0].audio[0].codec: mov holds aac or mp3 audio; QuickTime does not play opus",
      ]);
      expect(said({ type: OutputType.HLS, video: [{ codec: VideoCodec.VP9 }], audio: [{ codec: AudioCodec.OPUS }] })).toEqual([
        "outputs[0].video[0].codec: HLS players do not play vp9; use dash for vp9, or h264, h265 or av1",
        "outputs[0].audio[0].codec: HLS players play aac or mp3 audio, not opus",
      ]);
      expect(said({ type: OutputType.DASH, video: [h264], audio: [{ codec: AudioCodec.MP3 }] })).toEqual([
        "outputs[0].audio[0].codec: DASH outputs hold aac or opus audio",
      ]);
      expect(said({ type: OutputType.ADAPTIVE, video: [{ codec: VideoCodec.VP9 }], audio: [{ codec: AudioCodec.OPUS }] })).toEqual([
        "outputs[0].video[0].codec: an adaptive output is also played as HLS, which does not carry vp9; use dash for vp9",
        "outputs[0].audio[0].codec: an adaptive output's shared CMAF audio must play in HLS and DASH players: aac",
      ]);
      expect(said({ type: OutputType.WEBM, video: [{ codec: VideoCodec.VP9 }], audio: [{ bitrateKbps: 96 }] })).toEqual([]);
    });

    it("takes audio bitrates 32 to 512 kbps and 1 to 8 channels (2 for mp3), 0 meaning the default", () => {
      expect(
        mkv(
          [h264],
          [
            { codec: AudioCodec.AAC, bitrateKbps: 32, channels: 1 },
            { codec: AudioCodec.AAC, bitrateKbps: 512, channels: 8 },
            { codec: AudioCodec.MP3, channels: 2 },
            { bitrateKbps: 0, channels: 8, sampleRate: 96000 },
          ],
        ),
      ).toEqual([]);
      expect(
        mkv(
          [h264],
          [
            { codec: AudioCodec.AAC, bitrateKbps: 31, channels: 9, sampleRate: 47000, language: "english!" },
            { codec: AudioCodec.MP3, bitrateKbps: 513, channels: 3 },
            { channels: 9, sampleRate: 47000, name: "x".repeat(129) },
          ],
        ),
      ).toEqual([
        "outputs[0].audio[0].bitrate_kbps: must be 32 to 512 (or 0 for the codec's default)",
        "outputs[0].audio[0].channels: must be 1 to 8 (or 0 for the input's channels)",
        "outputs[0].audio[0].sample_rate: must be 0 (keep the input's) or one of 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000 for aac",
        "outputs[0].audio[0].language: must be a BCP 47 tag such as en or pt-BR",
        "outputs[0].audio[1].bitrate_kbps: must be 32 to 512 (or 0 for the codec's default)",
        "outputs[0].audio[1].channels: must be 1 to 2 (or 0 for the input's channels)",
        "outputs[0].audio[2].channels: must be 1 to 8 (or 0 for the input's channels)",
        "outputs[0].audio[2].sample_rate: must be 0 (keep the input's) or one of 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000",
        "outputs[0].audio[2].name: must be at most 128 characters",
      ]);
    });

    it("takes segment lengths 1 to 30 seconds and a DASH buffer of 1 to 30, 0 meaning the default", () => {
      expect(
        said({
          type: OutputType.DASH,
          video: [h264],
          dash: { segmentDurationSeconds: 1, minBufferTimeSeconds: 1, manifestName: "manifest" },
          segments: { segmentDurationSeconds: 30 },
        }),
      ).toEqual([]);
      expect(
        said({ type: OutputType.DASH, video: [h264], dash: { segmentDurationSeconds: 30, minBufferTimeSeconds: 30 }, segments: { segmentDurationSeconds: 1 } }),
      ).toEqual([]);
      expect(said({ type: OutputType.DASH, video: [h264], dash: {} })).toEqual([]);
      expect(said({ type: OutputType.HLS, video: [h264], hls: { segmentDurationSeconds: 1 } })).toEqual([]);
      expect(said({ type: OutputType.HLS, video: [h264], hls: { segmentDurationSeconds: 30 } })).toEqual([]);
      expect(
        said({
          type: OutputType.DASH,
          video: [h264],
          hls: { segmentDurationSeconds: 31 },
          dash: { segmentDurationSeconds: 31, minBufferTimeSeconds: 31 },
          segments: { segmentDurationSeconds: 31 },
        }),
      ).toEqual([
        "outputs[0].hls.segment_duration_seconds: must be 1 to 30 (or 0 for the default of 6)",
        "outputs[0].dash.segment_duration_seconds: must be 1 to 30 (or 0 for the default of 6)",
        "outputs[0].dash.min_buffer_time_seconds: must be 1 to 30 (or 0 for the default of 2)",
        "outputs[0].segments.segment_duration_seconds: must be 1 to 30 (or 0 for the default of 6)",
      ]);
    });

    it("checks HLS and DASH settings by name", () => {
      expect(
        said({ type: OutputType.HLS, video: [h264], hls: { playlistType: HlsPlaylistType.EVENT, segmentFormat: SegmentFormat.TS, manifestName: "media_1" } }),
      ).toEqual([]);
      expect(
        said({
          type: OutputType.HLS,
          video: [h264],
          hls: { playlistType: 9 as HlsPlaylistType, segmentFormat: 9 as SegmentFormat, manifestName: "index.m3u8", iframePlaylists: true },
          dash: { manifestName: "manifest.mpd" },
          segments: { segmentFormat: 9 as SegmentFormat },
        }),
      ).toEqual([
        "outputs[0].hls.playlist_type: must be vod or event",
        "outputs[0].hls.segment_format: must be ts or fmp4",
        "outputs[0].hls.manifest_name: must be 1 to 64 letters, digits, - or _ (no extension)",
        "outputs[0].dash.manifest_name: must be 1 to 64 letters, digits, - or _ (no extension)",
        "outputs[0].segments.segment_format: must be ts or fmp4",
      ]);
    });

    it("keeps media_<n> for an adaptive output's media playlists", () => {
      const name = (manifestName: string) => said({ type: OutputType.ADAPTIVE, video: [h264], hls: { manifestName } });
      const taken = "outputs[0].hls.manifest_name: media_<n> and media_<n>_iframes name the media playlists of an adaptive output";
      for (const bad of ["media_1", "media_12", "media_0_iframes"]) expect(name(bad)).toEqual([taken]);
      for (const ok of ["media_x", "xmedia_1", "media_1x", "media", "master", "media_1_iframesx", "media__iframes"]) expect(name(ok)).toEqual([]);
    });

    it("writes I-frame playlists for HLS video that decrypts range by range", () => {
      const field = "outputs[0].hls.iframe_playlists";
      const iframes = (spec: Record<string, unknown>, segmentFormat = SegmentFormat.UNSPECIFIED) =>
        said({ type: OutputType.HLS, video: [h264], ...spec, hls: { iframePlaylists: true, segmentFormat } } as Init);
      expect(iframes({})).toEqual([]);
      expect(iframes({ drm: { scheme: EncryptionScheme.CBCS, systems: [DrmSystem.CLEARKEY] } }, SegmentFormat.FMP4)).toEqual([]);
      expect(iframes({ type: OutputType.ADAPTIVE })).toEqual([]);
      expect(iframes({ drm: {} })).toEqual([
        `${field}: aes_128 encrypts whole segments, so an I-frame's byte range cannot be decrypted alone: use cbcs or cenc (fmp4 segments)`,
      ]);
      expect(iframes({ type: OutputType.DASH })).toEqual([`${field}: I-frame playlists are written for hls and adaptive outputs`]);
      expect(iframes({ type: OutputType.MP4 })).toEqual([`${field}: I-frame playlists are written for hls and adaptive outputs`]);
      expect(iframes({ video: [], audio: [{}] })).toEqual([`${field}: an output without video variants has no I-frames`]);
    });

    it("requires fmp4 segments for DASH and adaptive outputs, and one segment length for adaptive", () => {
      const ts = { segmentFormat: SegmentFormat.TS };
      expect(said({ type: OutputType.DASH, video: [h264], segments: ts, hls: ts })).toEqual([
        "outputs[0].segments.segment_format: dash outputs use fmp4 segments",
      ]);
      expect(said({ type: OutputType.ADAPTIVE, video: [h264], segments: ts, hls: ts })).toEqual([
        "outputs[0].segments.segment_format: adaptive outputs use fmp4 segments",
        "outputs[0].hls.segment_format: adaptive outputs use fmp4 segments shared by HLS and DASH",
      ]);
      expect(said({ type: OutputType.HLS, video: [h264], segments: ts })).toEqual([]);
      expect(said({ type: OutputType.MP4, video: [h264], segments: ts })).toEqual([]);
      const lengths = (type: OutputType, h: number, d: number, s = 0) =>
        said({ type, video: [h264], hls: { segmentDurationSeconds: h }, dash: { segmentDurationSeconds: d }, segments: { segmentDurationSeconds: s } });
      expect(lengths(OutputType.ADAPTIVE, 4, 6)).toEqual([
        "outputs[0].dash.segment_duration_seconds: must equal hls.segment_duration_seconds: an adaptive output's HLS and DASH share one set of segments (or set segments.segment_duration_seconds)",
      ]);
      expect(lengths(OutputType.ADAPTIVE, 4, 6, 6)).toEqual([]);
      expect(lengths(OutputType.ADAPTIVE, 6, 6)).toEqual([]);
      expect(lengths(OutputType.ADAPTIVE, 4, 0)).toEqual([]);
      expect(lengths(OutputType.ADAPTIVE, 0, 4)).toEqual([]);
      expect(lengths(OutputType.DASH, 4, 6)).toEqual([]);
      expect(lengths(OutputType.HLS, 4, 6)).toEqual([]);
    });
  });

  describe("subtitle tracks", () => {
    const URL_ = SubtitleSource.URL;
    const GEN = SubtitleSource.GENERATED;
    type TrackInit = NonNullable<Parameters<typeof create<typeof SubtitleTrackSchema>>[1]>;
    const on = (tracks: TrackInit[], type = OutputType.HLS) =>
      violations({ type, video: [h264], subtitleTracks: tracks.map((t) => create(SubtitleTrackSchema, t)) });

    it("takes generated tracks (language given or detected) and provided ones by https URL or origin path, on every output type", () => {
      for (const type of [OutputType.MP4, OutputType.HLS, OutputType.DASH, OutputType.ADAPTIVE]) {
        expect(
          on(
            [
              { source: GEN, language: "en", generateChapters: true, isDefault: true },
              { source: GEN, language: "pt-BR" },
              { source: GEN },
              { source: URL_, url: "https://example.com/fr.srt", format: SubtitleFormat.SRT, language: "fr" },
              { source: URL_, url: "captions/de.vtt", language: "de" },
            ],
            type,
          ),
        ).toEqual([]);
      }
    });

    it("names each bad field", () => {
      const fields = (t: Parameters<typeof on>[0]) => on(t).map((x) => `${x.field}: ${x.description}`);
      expect(fields([{}])[0]).toMatch(/^outputs\[0\]\.subtitle_tracks\[0\]\.source: is required/);
      expect(fields([{ source: URL_ }])[0]).toMatch(/^outputs\[0\]\.subtitle_tracks\[0\]\.url: is required/);
      expect(fields([{ source: URL_, url: "s3://bucket" }])[0]).toMatch(/\.url: must be s3:\/\/bucket\/path\/file\.vtt/);
      expect(fields([{ source: URL_, url: "http://example.com/a.vtt" }])[0]).toMatch(/\.url: must be an https URL/);
      expect(fields([{ source: URL_, url: "../a.vtt" }])[0]).toMatch(/\.url: a path in the input origin is relative/);
      expect(fields([{ source: URL_, url: "/etc/passwd" }])[0]).toMatch(/\.url: a path in the input origin is relative/);
      expect(fields([{ source: URL_, url: "https://u:p@example.com/a.vtt" }])[0]).toMatch(/\.url: must be an https URL with a host and no credentials/);
      expect(fields([{ source: URL_, url: `https://example.com/${"a".repeat(2048)}` }])[0]).toMatch(/\.url: must be at most 2048/);
      expect(fields([{ source: URL_, url: "https://example.com/a.vtt", generateChapters: true }])[0]).toMatch(
        /\.generate_chapters: applies to generated tracks/,
      );
      expect(fields([{ source: GEN, url: "https://example.com/a.vtt" }])[0]).toMatch(/\.url: applies to source url/);
      expect(fields([{ source: GEN, format: SubtitleFormat.SRT }])[0]).toMatch(/\.format: applies to source url/);
      expect(fields([{ source: GEN, language: "tlh" }])).toEqual([
        "outputs[0].subtitle_tracks[0].language: the speech recogniser does not know tlh; leave it empty to detect the spoken language",
      ]);
      expect(fields([{ source: GEN, language: "english" }])[0]).toMatch(/\.language: must be a BCP 47 tag/);
      expect(
        fields([
          { source: GEN, language: "en" },
          { source: GEN, language: "en-GB" },
        ]),
      ).toEqual(["outputs[0].subtitle_tracks[1].language: repeats subtitle_tracks[0]: one generated track per language"]);
      expect(fields([{ source: GEN }, { source: GEN }])[0]).toMatch(/^outputs\[0\]\.subtitle_tracks\[1\]\.language: repeats subtitle_tracks\[0\]/);
      expect(
        fields([
          { source: GEN, language: "en", isDefault: true },
          { source: URL_, url: "a.vtt", isDefault: true },
        ]),
      ).toEqual(["outputs[0].subtitle_tracks[1].is_default: only one track is the default; subtitle_tracks[0] already is"]);
      expect(fields([{ source: GEN, name: "n".repeat(129) }])[0]).toMatch(/\.name: /);
      expect(
        fields([{ source: 9 as SubtitleSource }, { source: GEN, kind: 7 as SubtitleKind }, { source: URL_, url: "a.vtt", format: 5 as SubtitleFormat }]),
      ).toEqual([
        "outputs[0].subtitle_tracks[0].source: must be url or generated",
        "outputs[0].subtitle_tracks[1].kind: must be subtitles or captions",
        "outputs[0].subtitle_tracks[2].format: must be vtt or srt",
      ]);
      expect(fields(Array.from({ length: 9 }, (_, k) => ({ source: URL_, url: `t${k}.vtt` })))).toEqual([
        "outputs[0].subtitle_tracks: must have at most 8 tracks",
      ]);
    });
    describe("exact messages and limits", () => {
      const said = (t: Parameters<typeof on>[0]) => on(t).map((x) => `${x.field}: ${x.description}`);
      const at = "outputs[0].subtitle_tracks[0]";

      it("takes 8 tracks, and checks only the first 8 one by one", () => {
        expect(said(Array.from({ length: 8 }, (_, k) => ({ source: URL_, url: `t${k}.vtt` })))).toEqual([]);
        expect(said(Array.from({ length: 9 }, () => ({})))).toEqual([
          "outputs[0].subtitle_tracks: must have at most 8 tracks",
          ...Array.from(
            { length: 8 },
            (_, k) => `outputs[0].subtitle_tracks[${k}].source: is required: url (a WebVTT or SRT file) or generated (speech recognition)`,
          ),
        ]);
      });

      it("says what each field needs", () => {
        expect(said([{ source: URL_, kind: SubtitleKind.CAPTIONS, format: SubtitleFormat.VTT, name: "n".repeat(128), url: "a.vtt" }])).toEqual([]);
        expect(said([{ source: URL_ }])).toEqual([`${at}.url: is required with source url: an https, s3:// or gs:// URL, or a path in the job's input origin`]);
        expect(said([{ source: URL_, url: "a.vtt", language: "english", name: "n".repeat(129) }])).toEqual([
          `${at}.name: must be at most 128 characters`,
          `${at}.language: must be a BCP 47 tag, e.g. en or pt-BR`,
        ]);
        expect(said([{ source: URL_, url: "a.vtt", generateChapters: true }])).toEqual([
          `${at}.generate_chapters: applies to generated tracks: chapters come from the transcript`,
        ]);
        expect(said([{ source: GEN, url: "a.vtt", format: SubtitleFormat.VTT }])).toEqual([
          `${at}.url: applies to source url; a generated track is transcribed from the input's audio`,
          `${at}.format: applies to source url; generated tracks are written as WebVTT`,
        ]);
        expect(said([{ source: GEN, language: "english" }])).toEqual([`${at}.language: must be a BCP 47 tag, e.g. en or pt-BR`]);
      });

      it("allows one generated track per language, and one with a detected language", () => {
        expect(said([{ source: GEN }, { source: GEN }])).toEqual([
          "outputs[0].subtitle_tracks[1].language: repeats subtitle_tracks[0]: one generated track with a detected language",
        ]);
        expect(
          said([{ source: GEN, language: "fr" }, { source: GEN }, { source: GEN, language: "en" }, { source: GEN, language: "en-US" }, { source: GEN }]),
        ).toEqual([
          "outputs[0].subtitle_tracks[3].language: repeats subtitle_tracks[2]: one generated track per language",
          "outputs[0].subtitle_tracks[4].language: repeats subtitle_tracks[1]: one generated track with a detected language",
        ]);
        expect(
          said([{ source: URL_, url: "en.vtt", language: "en" }, { source: URL_, url: "x.vtt" }, { source: GEN, language: "en" }, { source: GEN }]),
        ).toEqual([]);
        expect(said([{ source: GEN, language: "english" }, { source: GEN }])).toEqual([`${at}.language: must be a BCP 47 tag, e.g. en or pt-BR`]);
        expect(
          said([
            { source: GEN, language: "tlh" },
            { source: GEN, language: "tlh" },
          ]),
        ).toEqual([
          `${at}.language: the speech recogniser does not know tlh; leave it empty to detect the spoken language`,
          "outputs[0].subtitle_tracks[1].language: the speech recogniser does not know tlh; leave it empty to detect the spoken language",
        ]);
      });

      it("names the second default track and the first", () => {
        expect(
          said([
            { source: URL_, url: "a.vtt" },
            { source: URL_, url: "b.vtt", isDefault: true },
            { source: URL_, url: "c.vtt", isDefault: true },
            { source: URL_, url: "d.vtt", isDefault: true },
          ]),
        ).toEqual(["outputs[0].subtitle_tracks[2].is_default: only one track is the default; subtitle_tracks[1] already is"]);
      });

      it("takes https URLs with a host and no credentials, s3:// and gs:// URLs with a bucket and a key, and relative origin paths", () => {
        const url = (u: string) => said([{ source: URL_, url: u }]);
        for (const ok of ["HTTPS://example.com/a.vtt", "captions/x:y.vtt", "1st:take.vtt", "a.b/c-d.vtt", `https://example.com/${"a".repeat(2048 - 20)}`])
          expect(url(ok)).toEqual([]);
        expect(url(`https://example.com/${"a".repeat(2048 - 19)}`)).toEqual([`${at}.url: must be at most 2048 characters`]);
        expect(url(`s3://${"a".repeat(2048)}`)).toEqual([`${at}.url: must be at most 2048 characters`]);
        for (const bad of ["/a.vtt", "../a.vtt", "a/../b.vtt", "./a.vtt", "a//b.vtt", "a/", "a/."])
          expect(url(bad)).toEqual([`${at}.url: a path in the input origin is relative, with no empty, . or .. segments`]);
        for (const ok of ["s3://bucket/a.vtt", "gs://b/captions/en.srt", "s3://b/a//b c.vtt"]) expect(url(ok)).toEqual([]);
        for (const bad of [
          "s3://bucket",
          "s3://bucket/",
          "gs:///a.vtt",
          "s3://u:p@bucket/a.vtt",
          "gs://u@b/a.vtt",
          "s3://b:9000/a.vtt",
          "S3://bucket/a.vtt",
          "s3:bucket/a.vtt",
        ])
          expect(url(bad), bad).toEqual([`${at}.url: must be s3://bucket/path/file.vtt or gs://bucket/path/file.vtt: a bucket and an object, no credentials`]);
        for (const bad of ["r2://bucket/a.vtt", "http://example.com/a.vtt", "web+x://a", "file:a.vtt"]) {
          expect(url(bad)).toEqual([
            `${at}.url: must be an https URL, an s3:// or gs:// URL in a bucket of the job's origins, or a path in the job's input origin`,
          ]);
        }
        for (const bad of ["https://u:p@example.com/a.vtt", "https://u@example.com/a.vtt", "https://:p@example.com/a.vtt"])
          expect(url(bad)).toEqual([`${at}.url: must be an https URL with a host and no credentials`]);
        for (const bad of ["https://", "https://exa mple.com/a.vtt", "https://[::1/a.vtt"]) expect(url(bad)).toEqual([`${at}.url: must be a valid URL`]);
      });
    });
  });
});
