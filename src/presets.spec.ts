// Presets: the system catalog, the settings rules, expansion into a job output, slugs in the store,
// and resolution of a job output that names a preset.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { ConnectError, Code } from "@connectrpc/connect";
import { beforeEach, describe, expect, it } from "vitest";
import { CLAIM_GRACE_MS } from "./claims.js";
import { EncodingMode, OutputSpecSchema, OutputType } from "./gen/media/v1/job_pb.js";
import { AudioCodec as A, BitrateMode, Container, ContentType, DeliveryFormat, QualityTier, SegmentFormat, VideoCodec } from "./gen/media/v1/preset_pb.js";
import {
  changePreset,
  checkPresetSettings,
  checkSlug,
  findPresetBySlug,
  insertPreset,
  PRESET_SLUGS,
  plainAudio,
  plainVideo,
  presetToOutputSpec,
  resolveOutputSpec,
  SYSTEM_PRESETS,
  systemPreset,
  type PresetRecord,
  type PresetSettings,
} from "./presets.js";
import { outputRateIfKnown } from "./pricing.js";
import { FileStore } from "./store/file-store.js";
import { Check } from "./validation.js";

const settings = (over: Partial<PresetSettings> = {}): PresetSettings => ({
  slug: "my_preset",
  name: "Mine",
  contentType: ContentType.FILM,
  container: Container.MP4,
  faststart: true,
  deliveryFormat: DeliveryFormat.PROGRESSIVE,
  video: plainVideo({ codec: VideoCodec.H264, resolution: "720p", crf: 23, bitrateMode: BitrateMode.CRF }),
  audio: plainAudio({ codec: A.AAC, bitrateKbps: 128 }),
  qualityTier: QualityTier.STANDARD,
  ...over,
});

const violations = (p: PresetSettings): Record<string, string> => {
  const check = new Check();
  checkPresetSettings(check, p);
  return Object.fromEntries(check.violations.map((v) => [v.field, v.description]));
};

describe("the system catalog", () => {
  it("has stable ids derived from slugs, read-only flags and fixed times", () => {
    expect(SYSTEM_PRESETS.map((p) => p.id)).toEqual([
      "pst_system_web_mp4",
      "pst_system_web_mp4_720p",
      "pst_system_hls_h264",
      "pst_system_cmaf_h264",
      "pst_system_webm_vp9",
      "pst_system_av1_mp4",
      "pst_system_audio_aac",
    ]);
    for (const p of SYSTEM_PRESETS) {
      expect(p.system).toBe(true);
      expect(p.createdAt).toBe(Date.UTC(2025, 0, 1));
      expect(Object.isFrozen(p)).toBe(true);
      expect(systemPreset(p.id)).toBe(p);
      expect(systemPreset(p.slug)).toBe(p);
    }
  });

  it("obeys its own rules and has a known price per minute", () => {
    for (const p of SYSTEM_PRESETS) {
      expect(violations(p), p.slug).toEqual({});
      expect(outputRateIfKnown(presetToOutputSpec(p), undefined), p.slug).toBeGreaterThan(0);
    }
    expect(outputRateIfKnown(presetToOutputSpec(systemPreset("system_hls_h264")!), undefined)).toBe(9_000 + 6_000 + 4_000 + 4_000);
    expect(outputRateIfKnown(presetToOutputSpec(systemPreset("system_audio_aac")!), undefined)).toBe(1_000);
  });
});

describe("expansion into a job output", () => {
  it("makes a progressive MP4 with the codec's options and one audio track", () => {
    const spec = presetToOutputSpec(systemPreset("pst_system_web_mp4")!);
    expect(spec.type).toBe(OutputType.MP4);
    expect(spec.video).toHaveLength(1);
    expect(spec.video[0]).toMatchObject({ codec: VideoCodec.H264, resolution: "1080p", quality: QualityTier.STANDARD, bitrate: 0 });
    expect(spec.video[0]!.h264).toMatchObject({
      crf: 23,
      bitrateMode: BitrateMode.CRF,
      maxBitrateKbps: 8_000,
      bufferSizeKbps: 16_000,
      profile: "high",
      level: "4.1",
      encoderPreset: "medium",
    });
    expect(spec.video[0]!.h265).toBeUndefined();
    expect(spec.audio.map((a) => [a.codec, a.bitrateKbps, a.sampleRate, a.channels])).toEqual([[A.AAC, 128, 48_000, 2]]);
    expect(spec.disableAudio).toBe(false);
    expect(spec.hls).toBeUndefined();
  });

  it("turns a ladder into one variant per rung, top first, over HLS with TS segments", () => {
    const spec = presetToOutputSpec(systemPreset("system_hls_h264")!);
    expect(spec.type).toBe(OutputType.HLS);
    expect(spec.video.map((v) => [v.resolution, v.width, v.height, v.bitrate, v.h264?.profile])).toEqual([
      ["1080p", 0, 0, 5_000, "high"],
      ["720p", 0, 0, 2_800, "high"],
      ["480p", 0, 0, 1_200, "main"],
      ["", 640, 360, 700, "main"],
    ]);
    expect(spec.video.every((v) => v.h264?.bitrateMode === BitrateMode.VBR)).toBe(true);
    expect(spec.hls).toMatchObject({ segmentDurationSeconds: 6, segmentFormat: SegmentFormat.TS, manifestName: "index" });
  });

  it("maps CMAF to an adaptive output over fMP4 segments, WebM to webm, and audio-only to no video", () => {
    const cmaf = presetToOutputSpec(systemPreset("system_cmaf_h264")!);
    expect(cmaf.type).toBe(OutputType.ADAPTIVE);
    expect(cmaf.segments).toMatchObject({ segmentFormat: SegmentFormat.FMP4, segmentDurationSeconds: 6 });
    expect(cmaf.video).toHaveLength(3);
    const webm = presetToOutputSpec(systemPreset("system_webm_vp9")!);
    expect(webm.type).toBe(OutputType.WEBM);
    expect(webm.video[0]!.vp9).toMatchObject({ crf: 31, encoderPreset: "good" });
    expect(webm.audio[0]!.codec).toBe(A.OPUS);
    const audio = presetToOutputSpec(systemPreset("system_audio_aac")!);
    expect(audio).toMatchObject({ type: OutputType.MP4, video: [], disableAudio: false });
    expect(audio.audio[0]).toMatchObject({ codec: A.AAC, bitrateKbps: 192, normalize: true });
  });

  it("marks a preset without audio as a video-only output, and applies its quality tier", () => {
    const spec = presetToOutputSpec({
      ...settings({ audio: plainAudio(), qualityTier: QualityTier.PREMIUM, container: Container.MKV }),
      id: "pst_x",
      system: true,
      createdAt: 0,
      updatedAt: 0,
    });
    expect(spec).toMatchObject({ type: OutputType.MKV, audio: [], disableAudio: true });
    expect(spec.video[0]!.quality).toBe(QualityTier.PREMIUM);
  });

  it("maps HLS over an MP4 container to fMP4 segments and DASH to a dash output", () => {
    expect(
      presetToOutputSpec({ ...settings({ deliveryFormat: DeliveryFormat.HLS }), id: "pst_x", system: true, createdAt: 0, updatedAt: 0 }).hls?.segmentFormat,
    ).toBe(SegmentFormat.FMP4);
    const dash = presetToOutputSpec({
      ...settings({
        deliveryFormat: DeliveryFormat.DASH,
        streaming: { dash: { segmentDurationSeconds: 4, manifestName: "", segmentTimeline: true, minBufferTimeSeconds: 0 } },
      }),
      id: "pst_x",
      system: true,
      createdAt: 0,
      updatedAt: 0,
    });
    expect(dash.type).toBe(OutputType.DASH);
    expect(dash.dash).toMatchObject({ segmentDurationSeconds: 4, segmentTimeline: true });
  });
});

describe("settings rules", () => {
  it("accepts a plain H.264 MP4", () => {
    expect(violations(settings())).toEqual({});
  });

  it("checks CRF by codec", () => {
    const crf = (codec: VideoCodec, value: number) =>
      violations(settings({ container: Container.MKV, audio: plainAudio({ codec: A.OPUS }), video: plainVideo({ codec, resolution: "720p", crf: value }) }))[
        "video.crf"
      ];
    expect([crf(VideoCodec.H264, 15), crf(VideoCodec.H264, 35), crf(VideoCodec.H265, 18), crf(VideoCodec.VP9, 50), crf(VideoCodec.AV1, 55)]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(crf(VideoCodec.H264, 36)).toMatch(/15 to 35/);
    expect(crf(VideoCodec.H265, 17)).toMatch(/18 to 35/);
    expect(crf(VideoCodec.VP9, 51)).toMatch(/15 to 50/);
    expect(crf(VideoCodec.AV1, 19)).toMatch(/20 to 55/);
  });

  it("names every bad video and audio field", () => {
    const v = violations(
      settings({
        video: plainVideo({
          codec: VideoCodec.H264,
          resolution: "999p",
          framerate: 241,
          bitrateMode: BitrateMode.CBR,
          crf: 20,
          maxBitrateKbps: 99,
          bufferSizeKbps: 480_001,
          profile: "main10",
          level: "four",
          encoderPreset: "veryslow",
          tune: "vq",
          keyint: 601,
          bframes: 17,
          refs: 17,
        }),
        audio: plainAudio({ codec: A.AAC, bitrateKbps: 600, sampleRate: 44_000, channels: 9 }),
      }),
    );
    expect(Object.keys(v).sort()).toEqual(
      [
        "video.resolution",
        "video.framerate",
        "video.crf",
        "video.bitrate_kbps",
        "video.max_bitrate_kbps",
        "video.buffer_size_kbps",
        "video.profile",
        "video.level",
        "video.encoder_preset",
        "video.tune",
        "video.keyint",
        "video.bframes",
        "video.refs",
        "audio.bitrate_kbps",
        "audio.sample_rate",
        "audio.channels",
      ].sort(),
    );
    expect(v["video.bitrate_kbps"]).toMatch(/required with bitrate_mode cbr or vbr/);
  });

  it("checks custom dimensions and options that do not belong to the codec", () => {
    expect(violations(settings({ video: plainVideo({ codec: VideoCodec.H264, width: 1280 }) }))).toEqual({ "video.height": "is required with width" });
    expect(violations(settings({ video: plainVideo({ codec: VideoCodec.H264, width: 127, height: 4322, resolution: "720p" }) }))).toMatchObject({
      "video.width": expect.stringMatching(/128 to 7680/),
      "video.height": expect.stringMatching(/128 to 4320/),
      "video.resolution": "must be empty when width and height are set",
    });
    expect(
      violations(
        settings({
          container: Container.WEBM,
          audio: plainAudio({ codec: A.OPUS }),
          video: plainVideo({ codec: VideoCodec.VP9, resolution: "720p", bframes: 2, refs: 3, level: "4.0", tune: "film" }),
        }),
      ),
    ).toEqual({
      "video.bframes": "applies to h264 and h265 only",
      "video.refs": "applies to h264 and h265 only",
      "video.level": "vp9 takes no level",
      "video.tune": "vp9 takes no value here",
    });
    expect(
      violations(settings({ container: Container.MKV, video: plainVideo({ codec: VideoCodec.AV1, resolution: "720p", encoderPreset: "13" }) }))[
        "video.encoder_preset"
      ],
    ).toMatch(/3, 4, .* 12/);
  });

  it("checks codecs against the container and the container against the delivery format", () => {
    expect(violations(settings({ container: Container.WEBM }))).toEqual({
      "video.codec": "webm carries vp9, av1 video, not h264",
      "audio.codec": "webm carries opus audio, not aac",
    });
    expect(violations(settings({ container: Container.MOV, audio: plainAudio({ codec: A.OPUS }) }))["audio.codec"]).toMatch(/mov carries aac, mp3/);
    expect(violations(settings({ container: Container.TS }))["delivery_format"]).toMatch(/progressive delivery packages mp4 or webm or mkv or mov, not ts/);
    expect(violations(settings({ container: Container.TS, deliveryFormat: DeliveryFormat.HLS }))).toEqual({});
    expect(
      violations(
        settings({
          container: Container.WEBM,
          deliveryFormat: DeliveryFormat.CMAF,
          video: plainVideo({ codec: VideoCodec.VP9 }),
          audio: plainAudio({ codec: A.OPUS }),
        }),
      )["delivery_format"],
    ).toMatch(/cmaf delivery packages mp4/);
    expect(violations(settings({ container: Container.UNSPECIFIED }))["container"]).toMatch(/is required/);
    expect(violations(settings({ video: plainVideo(), audio: plainAudio() }))["video.codec"]).toBe("a preset needs video, audio or both");
    expect(violations(settings({ video: plainVideo({ crf: 20 }) }))["video.codec"]).toMatch(/is required when other video settings are set/);
  });

  it("checks streaming settings against the delivery format", () => {
    const hls = { segmentDurationSeconds: 31, playlistType: 0, segmentFormat: SegmentFormat.FMP4, manifestName: "index.m3u8", iframePlaylists: false };
    expect(violations(settings({ streaming: { hls } }))).toEqual({ streaming: "applies to hls, dash and cmaf delivery only" });
    expect(
      violations(
        settings({
          container: Container.TS,
          deliveryFormat: DeliveryFormat.HLS,
          streaming: { hls, segments: { segmentDurationSeconds: 6, segmentFormat: 0, singleFile: false } },
        }),
      ),
    ).toEqual({
      "streaming.hls.segment_duration_seconds": "must be 1 to 30 (or 0 for the default)",
      "streaming.hls.manifest_name": "must be 1 to 64 letters, digits, - or _ (no extension)",
      "streaming.hls.segment_format": "must be ts with container ts",
      "streaming.segments": "applies to cmaf delivery",
    });
  });

  it("checks slugs", () => {
    const slug = (s: string) => {
      const check = new Check();
      checkSlug(check, "slug", s);
      return check.violations.map((v) => v.description);
    };
    expect(slug("web_1080")).toEqual([]);
    expect(slug("ab")).toEqual(["must be 3 to 64 characters"]);
    expect(slug("Web-1080")).toEqual(["must use only lowercase letters, digits and underscores"]);
    expect(slug("x".repeat(65))).toEqual(["must be 3 to 64 characters"]);
    expect(slug("system_mine")).toEqual(["the system_ prefix is reserved for system presets"]);
    expect(slug("")).toEqual(["is required"]);
  });
});

describe("stored presets", () => {
  let store: FileStore;
  beforeEach(async () => {
    store = new FileStore(mkdtempSync(path.join(tmpdir(), "presets-")));
    await store.open();
  });

  let n = 0;
  const record = (over: Partial<PresetRecord> = {}): PresetRecord => ({
    ...settings(),
    id: `pst_test${++n}`,
    appId: "app_a",
    organizationId: "org_a",
    createdAt: Date.now() + n,
    updatedAt: Date.now(),
    ...over,
  });
  const codeOf = async (p: Promise<unknown>) => {
    try {
      await p;
      return "ok";
    } catch (e) {
      return e instanceof ConnectError ? Code[e.code] : String(e);
    }
  };

  it("keeps a slug unique per app, frees it lazily on archive, and moves it on rename", async () => {
    const first = await insertPreset(store, record({ slug: "web" }));
    expect(await codeOf(insertPreset(store, record({ slug: "web" })))).toBe("AlreadyExists");
    expect(await codeOf(insertPreset(store, record({ slug: "web", appId: "app_b" })))).toBe("ok");
    expect(await codeOf(insertPreset(store, record({ slug: "system_web_mp4" })))).toBe("AlreadyExists");

    await changePreset(store, first.id, (p) => ({ ...p, archivedAt: Date.now() }));
    // Until reused, the slug still leads to the archived preset, so jobs hear why it is unusable.
    expect((await findPresetBySlug(store, "app_a", "web"))?.id).toBe(first.id);
    const second = await insertPreset(store, record({ slug: "web" }));
    expect((await findPresetBySlug(store, "app_a", "web"))?.id).toBe(second.id);

    const renamed = await changePreset(store, second.id, (p) => ({ ...p, slug: "web_v2" }));
    expect(renamed.slug).toBe("web_v2");
    expect(await findPresetBySlug(store, "app_a", "web")).toBeUndefined();
    expect((await findPresetBySlug(store, "app_a", "web_v2"))?.id).toBe(second.id);
    const other = await insertPreset(store, record({ slug: "other" }));
    expect(await codeOf(changePreset(store, other.id, (p) => ({ ...p, slug: "web_v2" })))).toBe("AlreadyExists");
  });

  it("treats a slug link whose preset does not hold the slug as absent, and lets a new preset take it over after the grace", async () => {
    const link = (slug: string, value: Record<string, unknown>) =>
      store.commit({ writes: [{ table: PRESET_SLUGS, id: `app_a:${slug}`, value, expectedVersion: 0 }] });
    const old = Date.now() - CLAIM_GRACE_MS - 1;
    // Left by creates that died after claiming: one preset never written, one from before links were stamped.
    await link("gone", { presetId: "pst_gone", createdAt: old });
    await link("legacy", { presetId: "pst_gone" });
    // Left by a rename whose preset write lost a race: the preset still has its old slug.
    const kept = await insertPreset(store, record({ slug: "kept" }));
    await link("renamed", { presetId: kept.id, createdAt: old });
    for (const slug of ["gone", "legacy", "renamed"]) {
      expect(await findPresetBySlug(store, "app_a", slug)).toBeUndefined();
      const taker = await insertPreset(store, record({ slug }));
      expect((await findPresetBySlug(store, "app_a", slug))?.id).toBe(taker.id);
      expect(await store.get(PRESET_SLUGS, `app_a:${slug}`)).toMatchObject({ version: 2 });
    }
    expect((await findPresetBySlug(store, "app_a", "kept"))?.id).toBe(kept.id);

    // Inside the grace the writer may still be at work: the slug stays taken, though nothing resolves.
    await link("fresh", { presetId: "pst_writing", createdAt: Date.now() });
    expect(await findPresetBySlug(store, "app_a", "fresh")).toBeUndefined();
    expect(await codeOf(insertPreset(store, record({ slug: "fresh" })))).toBe("AlreadyExists");
    expect(await codeOf(changePreset(store, kept.id, (p) => ({ ...p, slug: "fresh" })))).toBe("AlreadyExists");
  });

  it("resolves a job output naming a preset, request fields first", async () => {
    const mine = await insertPreset(store, record({ slug: "mine", video: plainVideo({ codec: VideoCodec.H265, resolution: "1080p", crf: 24 }) }));
    const check = new Check();
    const byId = await resolveOutputSpec(store, "app_a", create(OutputSpecSchema, { preset: mine.id, pathTemplate: "{job_id}/x" }), "outputs[0]", check);
    expect(byId).toMatchObject({ type: OutputType.MP4, preset: mine.id, pathTemplate: "{job_id}/x" });
    expect(byId.video[0]).toMatchObject({ codec: VideoCodec.H265, resolution: "1080p" });
    expect(byId.video[0]!.h265?.crf).toBe(24);

    const overridden = await resolveOutputSpec(
      store,
      "app_a",
      create(OutputSpecSchema, {
        preset: "system_hls_h264",
        video: [{ codec: VideoCodec.H264, resolution: "720p" }],
        encodingMode: EncodingMode.AUTO,
        disableAudio: true,
      }),
      "outputs[1]",
      check,
    );
    expect(overridden).toMatchObject({ type: OutputType.HLS, preset: "system_hls_h264", encodingMode: EncodingMode.AUTO, disableAudio: true, audio: [] });
    expect(overridden.video.map((v) => v.resolution)).toEqual(["720p"]);
    expect(overridden.hls?.segmentFormat).toBe(SegmentFormat.TS);

    // A different output type drops the preset's packaging with it.
    const asMp4 = await resolveOutputSpec(
      store,
      "app_a",
      create(OutputSpecSchema, { preset: "pst_system_hls_h264", type: OutputType.MP4 }),
      "outputs[2]",
      check,
    );
    expect(asMp4.hls).toBeUndefined();
    expect(asMp4.video).toHaveLength(4);
    expect(check.violations).toEqual([]);

    const plain = create(OutputSpecSchema, { type: OutputType.MP4 });
    expect(await resolveOutputSpec(store, "app_a", plain, "outputs[3]", check)).toBe(plain);
  });

  it("refuses unknown, foreign and archived presets on the output's preset field", async () => {
    const archived = await insertPreset(store, record({ slug: "old" }));
    await changePreset(store, archived.id, (p) => ({ ...p, archivedAt: Date.now() }));
    const foreign = await insertPreset(store, record({ slug: "theirs", appId: "app_b" }));
    const check = new Check();
    for (const [i, preset] of ["nope", "pst_nope", foreign.id, "theirs", archived.id, "old"].entries()) {
      await resolveOutputSpec(store, "app_a", create(OutputSpecSchema, { preset }), `outputs[${i}]`, check);
    }
    expect(check.violations.map((v) => [v.field, v.description.startsWith("no preset") ? "unknown" : v.description])).toEqual([
      ["outputs[0].preset", "unknown"],
      ["outputs[1].preset", "unknown"],
      ["outputs[2].preset", "unknown"],
      ["outputs[3].preset", "unknown"],
      ["outputs[4].preset", "preset is archived"],
      ["outputs[5].preset", "preset is archived"],
    ]);
  });
});
