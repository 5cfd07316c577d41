// Presets: an app's custom presets as versioned store records, the read-only system catalog served
// from code, the rules a preset's settings obey, and the expansion of a preset into a job output.
import { clone, create, type Message } from "@bufbuild/protobuf";
import { inGrace, type ClaimStamp } from "./claims.js";
import { AUDIO_NAMES, AUDIO_RULES, CODEC_RULES, CONTAINER_CODECS, RESOLUTIONS, videoCodecName, type CodecRules, type VideoCodecName } from "./codec-rules.js";
import { alreadyExists, notFound, VersionConflict } from "./errors.js";
import { AudioTrackSchema, EncodingMode, OutputSpecSchema, OutputType, VideoVariantSchema, type OutputSpec, type VideoVariant } from "./gen/media/v1/job_pb.js";
import {
  AudioCodec,
  AudioSettingsSchema,
  BitrateMode,
  Container,
  ContentType,
  DashConfigSchema,
  DeliveryFormat,
  HlsConfigSchema,
  HlsPlaylistType,
  QualityTier,
  SegmentFormat,
  SegmentsConfigSchema,
  VideoCodec,
  VideoSettingsSchema,
  type AudioSettings,
  type DashConfig,
  type HlsConfig,
  type SegmentsConfig,
  type StreamingConfig,
  type VideoSettings,
} from "./gen/media/v1/preset_pb.js";
import { Prefix } from "./ids.js";
import { sortKey } from "./pagination.js";
import type { RecordWrite, Store, StoredRecord } from "./store/port.js";
import type { Check } from "./validation.js";

export const PRESETS = "presets";
/** `${appId}:${slug}` → the preset holding the slug; a claim (claims.ts) written before the preset. */
export const PRESET_SLUGS = "preset_slugs";

export const PRESET_LIMITS = { slugMin: 3, slugMax: 64, name: 128, description: 1024 } as const;

/** A generated message as a plain stored value (no $typeName). */
type Plain<T> = Omit<T, "$typeName" | "$unknown">;
export type VideoSettingsRecord = Plain<VideoSettings>;
export type AudioSettingsRecord = Plain<AudioSettings>;
export interface StreamingRecord {
  readonly hls?: Plain<HlsConfig>;
  readonly dash?: Plain<DashConfig>;
  readonly segments?: Plain<SegmentsConfig>;
}
/** A rendition below the top one: the top's codec settings with its own size and rates. */
export type LadderRung = Pick<
  VideoSettingsRecord,
  "resolution" | "width" | "height" | "bitrateKbps" | "maxBitrateKbps" | "bufferSizeKbps" | "profile" | "level"
>;

/** What a preset says about encoding; the Preset resource's fields without identity and times. */
export interface PresetSettings {
  readonly slug: string;
  readonly name: string;
  readonly description?: string;
  readonly contentType: ContentType;
  readonly container: Container;
  readonly faststart: boolean;
  readonly deliveryFormat: DeliveryFormat;
  readonly streaming?: StreamingRecord;
  /** The top rendition. Codec unspecified: an audio-only preset. */
  readonly video: VideoSettingsRecord;
  /** Codec unspecified: a video-only preset. */
  readonly audio: AudioSettingsRecord;
  readonly qualityTier: QualityTier;
  /** Renditions below `video`, largest first: how one preset describes an adaptive ladder. */
  readonly ladder?: readonly LadderRung[];
}

export interface PresetRecord extends PresetSettings {
  readonly id: string;
  readonly appId: string;
  readonly organizationId: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly archivedAt?: number;
}

export interface SystemPreset extends PresetSettings {
  readonly id: string;
  readonly system: true;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type AnyPreset = PresetRecord | SystemPreset;
export const isSystemPreset = (p: AnyPreset): p is SystemPreset => "system" in p;

/** The encoding settings of any preset, without identity, owner and times. */
export function presetSettings(p: AnyPreset): PresetSettings {
  return {
    slug: p.slug,
    name: p.name,
    ...(p.description !== undefined ? { description: p.description } : {}),
    contentType: p.contentType,
    container: p.container,
    faststart: p.faststart,
    deliveryFormat: p.deliveryFormat,
    ...(p.streaming ? { streaming: p.streaming } : {}),
    video: p.video,
    audio: p.audio,
    qualityTier: p.qualityTier,
    ...(p.ladder ? { ladder: p.ladder } : {}),
  };
}

/** A message as a plain stored value: its fields without $typeName. */
function plain<T extends Message>(m: T): Plain<T> {
  const { $typeName: _t, $unknown: _u, ...fields } = m;
  return fields;
}
/** Video settings with every unset field at its default; accepts a request's message too. */
export const plainVideo = (v: Partial<VideoSettingsRecord> = {}): VideoSettingsRecord => plain(create(VideoSettingsSchema, v));
export const plainAudio = (a: Partial<AudioSettingsRecord> = {}): AudioSettingsRecord => plain(create(AudioSettingsSchema, a));
export function plainStreaming(s: StreamingConfig): StreamingRecord {
  return { ...(s.hls ? { hls: plain(s.hls) } : {}), ...(s.dash ? { dash: plain(s.dash) } : {}), ...(s.segments ? { segments: plain(s.segments) } : {}) };
}

// ───────────────────────────── the system catalog ─────────────────────────────

// Fixed, so every process on every start serves identical system presets.
const CATALOG_AT = Date.UTC(2025, 0, 1);
const AAC_STEREO = plainAudio({ codec: AudioCodec.AAC, bitrateKbps: 128, sampleRate: 48_000, channels: 2 });
const rung = (resolution: string, bitrateKbps: number, profile = "", size?: { width: number; height: number }): LadderRung => ({
  resolution: size ? "" : resolution,
  width: size?.width ?? 0,
  height: size?.height ?? 0,
  bitrateKbps,
  maxBitrateKbps: Math.round(bitrateKbps * 1.5),
  bufferSizeKbps: bitrateKbps * 2,
  profile,
  level: "",
});
const system = (slug: string, p: Omit<PresetSettings, "slug" | "qualityTier" | "contentType" | "faststart"> & Partial<PresetSettings>): SystemPreset =>
  Object.freeze({
    slug,
    contentType: ContentType.FILM,
    faststart: false,
    qualityTier: QualityTier.STANDARD,
    ...p,
    id: `${Prefix.preset}${slug}`,
    system: true as const,
    createdAt: CATALOG_AT,
    updatedAt: CATALOG_AT,
  });

const H264_LADDER_TOP = { codec: VideoCodec.H264, bitrateMode: BitrateMode.VBR, encoderPreset: "medium", keyint: 0 };

/** Read-only presets every app may use; ids are `pst_` + slug and never change. */
export const SYSTEM_PRESETS: readonly SystemPreset[] = Object.freeze([
  system("system_web_mp4", {
    name: "Web MP4 1080p",
    description: "H.264 High 1080p at CRF 23 with AAC stereo, progressive MP4 with the index up front for instant playback.",
    container: Container.MP4,
    faststart: true,
    deliveryFormat: DeliveryFormat.PROGRESSIVE,
    video: plainVideo({
      codec: VideoCodec.H264,
      resolution: "1080p",
      bitrateMode: BitrateMode.CRF,
      crf: 23,
      maxBitrateKbps: 8_000,
      bufferSizeKbps: 16_000,
      profile: "high",
      level: "4.1",
      encoderPreset: "medium",
    }),
    audio: AAC_STEREO,
  }),
  system("system_web_mp4_720p", {
    name: "Web MP4 720p",
    description: "H.264 High 720p at CRF 23 with AAC stereo, progressive MP4 with the index up front.",
    container: Container.MP4,
    faststart: true,
    deliveryFormat: DeliveryFormat.PROGRESSIVE,
    video: plainVideo({
      codec: VideoCodec.H264,
      resolution: "720p",
      bitrateMode: BitrateMode.CRF,
      crf: 23,
      maxBitrateKbps: 5_000,
      bufferSizeKbps: 10_000,
      profile: "high",
      level: "3.1",
      encoderPreset: "medium",
    }),
    audio: AAC_STEREO,
  }),
  system("system_hls_h264", {
    name: "HLS H.264 ladder",
    description: "Four H.264 renditions (1080p, 720p, 480p, 360p) in 6-second MPEG-TS segments with AAC stereo.",
    container: Container.TS,
    deliveryFormat: DeliveryFormat.HLS,
    streaming: {
      hls: { segmentDurationSeconds: 6, playlistType: HlsPlaylistType.VOD, segmentFormat: SegmentFormat.TS, manifestName: "index", iframePlaylists: false },
    },
    video: plainVideo({ ...H264_LADDER_TOP, resolution: "1080p", bitrateKbps: 5_000, maxBitrateKbps: 7_500, bufferSizeKbps: 10_000, profile: "high" }),
    ladder: [rung("720p", 2_800, "high"), rung("480p", 1_200, "main"), rung("", 700, "main", { width: 640, height: 360 })],
    audio: AAC_STEREO,
  }),
  system("system_cmaf_h264", {
    name: "CMAF H.264 ladder (HLS and DASH)",
    description: "Three H.264 renditions (1080p, 720p, 480p) in shared fragmented-MP4 segments behind both an HLS playlist and a DASH manifest.",
    container: Container.MP4,
    deliveryFormat: DeliveryFormat.CMAF,
    streaming: { segments: { segmentDurationSeconds: 6, segmentFormat: SegmentFormat.FMP4, singleFile: false } },
    video: plainVideo({ ...H264_LADDER_TOP, resolution: "1080p", bitrateKbps: 5_000, maxBitrateKbps: 7_500, bufferSizeKbps: 10_000, profile: "high" }),
    ladder: [rung("720p", 2_800, "high"), rung("480p", 1_200, "main")],
    audio: AAC_STEREO,
  }),
  system("system_webm_vp9", {
    name: "WebM VP9 1080p",
    description: "VP9 1080p at CRF 31 with Opus stereo in WebM.",
    container: Container.WEBM,
    deliveryFormat: DeliveryFormat.PROGRESSIVE,
    video: plainVideo({ codec: VideoCodec.VP9, resolution: "1080p", bitrateMode: BitrateMode.CRF, crf: 31, encoderPreset: "good" }),
    audio: plainAudio({ codec: AudioCodec.OPUS, bitrateKbps: 128, sampleRate: 48_000, channels: 2 }),
  }),
  system("system_av1_mp4", {
    name: "AV1 MP4 1080p",
    description: "SVT-AV1 1080p at CRF 32 (preset 8) with AAC stereo in MP4: the smallest files for modern players.",
    container: Container.MP4,
    faststart: true,
    deliveryFormat: DeliveryFormat.PROGRESSIVE,
    video: plainVideo({ codec: VideoCodec.AV1, resolution: "1080p", bitrateMode: BitrateMode.CRF, crf: 32, encoderPreset: "8" }),
    audio: AAC_STEREO,
  }),
  system("system_audio_aac", {
    name: "Audio only AAC (M4A)",
    description: "The audio alone as AAC stereo at 192 kbit/s in an MP4 (M4A) file, loudness-normalized; no video.",
    container: Container.MP4,
    faststart: true,
    deliveryFormat: DeliveryFormat.PROGRESSIVE,
    video: plainVideo(),
    audio: plainAudio({ codec: AudioCodec.AAC, bitrateKbps: 192, sampleRate: 48_000, channels: 2, normalize: true }),
  }),
]);

const SYSTEM_BY_ID = new Map(SYSTEM_PRESETS.map((p) => [p.id, p]));
const SYSTEM_BY_SLUG = new Map(SYSTEM_PRESETS.map((p) => [p.slug, p]));
export const systemPreset = (idOrSlug: string): SystemPreset | undefined => SYSTEM_BY_ID.get(idOrSlug) ?? SYSTEM_BY_SLUG.get(idOrSlug);
/** Custom slugs may not start with it, so a slug names at most one system or custom preset. */
export const SYSTEM_SLUG_PREFIX = "system_";

// ───────────────────────────── rules ─────────────────────────────

// What each codec takes and each container carries come from src/codec-rules.ts, which the encoder's
// output check reads too. One exception: presets have always taken av1 profile "high", which the output
// check refuses once a job uses the preset (this build's SVT-AV1 encodes main only); kept so stored
// presets stay valid until that is settled.
const PRESET_AV1_PROFILES = [...CODEC_RULES.av1.profiles, "high"];
const codecRules = (c: VideoCodec): (CodecRules & { name: VideoCodecName }) | undefined => {
  const name = videoCodecName(c);
  if (!name) return undefined;
  return { ...CODEC_RULES[name], name, ...(name === "av1" ? { profiles: PRESET_AV1_PROFILES } : {}) };
};

const CONTAINERS: Record<Container, { name: string; video: readonly VideoCodec[]; audio: readonly AudioCodec[]; output?: OutputType }> = {
  [Container.UNSPECIFIED]: { name: "unspecified", video: [], audio: [] },
  [Container.MP4]: { name: "mp4", ...CONTAINER_CODECS.mp4, output: OutputType.MP4 },
  [Container.WEBM]: { name: "webm", ...CONTAINER_CODECS.webm, output: OutputType.WEBM },
  [Container.MKV]: { name: "mkv", ...CONTAINER_CODECS.mkv, output: OutputType.MKV },
  [Container.TS]: { name: "ts", ...CONTAINER_CODECS.ts },
  [Container.MOV]: { name: "mov", ...CONTAINER_CODECS.mov, output: OutputType.MOV },
};
/** Containers each delivery format packages; progressive is the default. */
const DELIVERY: Record<DeliveryFormat, { name: string; containers: readonly Container[] }> = {
  [DeliveryFormat.UNSPECIFIED]: { name: "progressive", containers: [Container.MP4, Container.WEBM, Container.MKV, Container.MOV] },
  [DeliveryFormat.PROGRESSIVE]: { name: "progressive", containers: [Container.MP4, Container.WEBM, Container.MKV, Container.MOV] },
  [DeliveryFormat.HLS]: { name: "hls", containers: [Container.TS, Container.MP4] },
  [DeliveryFormat.DASH]: { name: "dash", containers: [Container.MP4, Container.WEBM] },
  [DeliveryFormat.CMAF]: { name: "cmaf", containers: [Container.MP4] },
};

const inRange = (check: Check, field: string, value: number, min: number, max: number, zeroAllowed = true): void => {
  if (zeroAllowed && value === 0) return;
  if (!Number.isInteger(value) || value < min || value > max)
    check.add(field, zeroAllowed ? `must be ${min} to ${max} (or 0 for the default)` : `must be ${min} to ${max}`);
};
const oneOf = (check: Check, field: string, value: string, allowed: readonly string[], what: string): void => {
  if (value !== "" && !allowed.includes(value))
    check.add(field, allowed.length === 0 ? `${what} takes no value here` : `must be one of ${allowed.join(", ")} for ${what}`);
};

export function checkSlug(check: Check, field: string, slug: string): void {
  if (slug === "") return void check.add(field, "is required");
  check.length(field, slug, PRESET_LIMITS.slugMin, PRESET_LIMITS.slugMax);
  if (!/^[a-z0-9_]+$/.test(slug)) check.add(field, "must use only lowercase letters, digits and underscores");
  else if (slug.startsWith(SYSTEM_SLUG_PREFIX) && !SYSTEM_BY_SLUG.has(slug))
    check.add(field, `the ${SYSTEM_SLUG_PREFIX} prefix is reserved for system presets`);
}

export function checkName(check: Check, field: string, name: string): void {
  check.required(field, name).length(field, name, 1, PRESET_LIMITS.name);
}

export function checkDescription(check: Check, field: string, description: string | undefined): void {
  check.length(field, description, 0, PRESET_LIMITS.description);
}

function checkVideo(check: Check, v: VideoSettingsRecord, path: string): void {
  const rules = codecRules(v.codec);
  if (!rules) {
    const anySet =
      v.resolution !== "" ||
      v.width ||
      v.height ||
      v.framerate ||
      v.bitrateMode ||
      v.crf ||
      v.bitrateKbps ||
      v.maxBitrateKbps ||
      v.bufferSizeKbps ||
      v.profile ||
      v.level ||
      v.encoderPreset ||
      v.tune ||
      v.keyint ||
      v.bframes !== undefined ||
      v.refs;
    if (v.codec !== VideoCodec.UNSPECIFIED) check.add(`${path}.codec`, "must be h264, h265, vp9 or av1");
    else if (anySet) check.add(`${path}.codec`, "is required when other video settings are set (leave video empty for an audio-only preset)");
    return;
  }
  if (v.resolution !== "" && !RESOLUTIONS.includes(v.resolution)) check.add(`${path}.resolution`, `must be one of ${RESOLUTIONS.join(", ")}`);
  if (v.resolution !== "" && (v.width || v.height)) check.add(`${path}.resolution`, "must be empty when width and height are set");
  for (const [side, max, other] of [
    ["width", 7680, "height"],
    ["height", 4320, "width"],
  ] as const) {
    const n = v[side];
    if (n !== 0 && (n < 128 || n > max)) check.add(`${path}.${side}`, `must be 128 to ${max}`);
    else if (n % 2 !== 0) check.add(`${path}.${side}`, "must be even (4:2:0 chroma halves each side)");
    if (n === 0 && v[other] !== 0) check.add(`${path}.${side}`, `is required with ${other}`);
  }
  inRange(check, `${path}.framerate`, v.framerate, 1, 240);
  if (!(v.bitrateMode in BitrateMode)) check.add(`${path}.bitrate_mode`, "must be crf, cbr or vbr");
  const targetMode = v.bitrateMode === BitrateMode.CBR || v.bitrateMode === BitrateMode.VBR;
  inRange(check, `${path}.crf`, v.crf, rules.crf[0], rules.crf[1]);
  if (v.crf !== 0 && targetMode) check.add(`${path}.crf`, "applies with bitrate_mode crf; cbr and vbr use bitrate_kbps");
  inRange(check, `${path}.bitrate_kbps`, v.bitrateKbps, 100, 100_000);
  if (targetMode && v.bitrateKbps === 0) check.add(`${path}.bitrate_kbps`, "is required with bitrate_mode cbr or vbr");
  inRange(check, `${path}.max_bitrate_kbps`, v.maxBitrateKbps, 100, 240_000);
  if (v.maxBitrateKbps !== 0 && v.bitrateKbps !== 0 && v.maxBitrateKbps < v.bitrateKbps) check.add(`${path}.max_bitrate_kbps`, "must be at least bitrate_kbps");
  inRange(check, `${path}.buffer_size_kbps`, v.bufferSizeKbps, 100, 480_000);
  oneOf(check, `${path}.profile`, v.profile, rules.profiles, rules.name);
  if (v.level !== "" && rules.levels.length === 0) check.add(`${path}.level`, `${rules.name} takes no level`);
  else if (v.level !== "" && !/^\d(\.\d)?$/.test(v.level)) check.add(`${path}.level`, "must look like 3.0, 4.1 or 5.1");
  oneOf(check, `${path}.encoder_preset`, v.encoderPreset, rules.presets, rules.name);
  oneOf(check, `${path}.tune`, v.tune, rules.tunes, rules.name);
  inRange(check, `${path}.keyint`, v.keyint, 1, 600);
  if (v.bframes !== undefined) {
    if (!rules.bframes) check.add(`${path}.bframes`, "applies to h264 and h265 only");
    else inRange(check, `${path}.bframes`, v.bframes, 0, 16, false);
  }
  if (v.refs !== 0 && !rules.bframes) check.add(`${path}.refs`, "applies to h264 and h265 only");
  else inRange(check, `${path}.refs`, v.refs, 1, 16);
}

function checkAudio(check: Check, a: AudioSettingsRecord, path: string): void {
  const name = AUDIO_NAMES[a.codec];
  if (!name) {
    if (a.codec !== AudioCodec.UNSPECIFIED) check.add(`${path}.codec`, "must be aac, opus or mp3");
    else if (a.bitrateKbps || a.sampleRate || a.channels || a.normalize)
      check.add(`${path}.codec`, "is required when other audio settings are set (leave audio empty for a video-only preset)");
    return;
  }
  inRange(check, `${path}.bitrate_kbps`, a.bitrateKbps, 32, 512);
  const { sampleRates: rates, maxChannels } = AUDIO_RULES[name];
  if (a.sampleRate !== 0 && !rates.includes(a.sampleRate))
    check.add(`${path}.sample_rate`, `must be 0 (keep the original) or one of ${rates.join(", ")} for ${name}`);
  inRange(check, `${path}.channels`, a.channels, 1, maxChannels);
}

function checkStreaming(check: Check, p: PresetSettings): void {
  const s = p.streaming;
  if (!s) return;
  const delivery = DELIVERY[p.deliveryFormat]?.name ?? "progressive";
  if (delivery === "progressive") return void check.add("streaming", "applies to hls, dash and cmaf delivery only");
  const seconds = (field: string, n: number) => inRange(check, field, n, 1, 30);
  const manifest = (field: string, m: string) => {
    if (m !== "" && !/^[A-Za-z0-9_-]{1,64}$/.test(m)) check.add(field, "must be 1 to 64 letters, digits, - or _ (no extension)");
  };
  if (s.hls) {
    if (delivery === "dash") check.add("streaming.hls", "applies to hls and cmaf delivery");
    seconds("streaming.hls.segment_duration_seconds", s.hls.segmentDurationSeconds);
    manifest("streaming.hls.manifest_name", s.hls.manifestName);
    const wanted = p.container === Container.TS ? SegmentFormat.TS : SegmentFormat.FMP4;
    if (s.hls.segmentFormat !== SegmentFormat.UNSPECIFIED && s.hls.segmentFormat !== wanted)
      check.add("streaming.hls.segment_format", `must be ${wanted === SegmentFormat.TS ? "ts" : "fmp4"} with container ${CONTAINERS[p.container]?.name}`);
  }
  if (s.dash) {
    if (delivery === "hls") check.add("streaming.dash", "applies to dash and cmaf delivery");
    seconds("streaming.dash.segment_duration_seconds", s.dash.segmentDurationSeconds);
    seconds("streaming.dash.min_buffer_time_seconds", s.dash.minBufferTimeSeconds);
    manifest("streaming.dash.manifest_name", s.dash.manifestName);
  }
  if (s.segments) {
    if (delivery !== "cmaf") check.add("streaming.segments", "applies to cmaf delivery");
    seconds("streaming.segments.segment_duration_seconds", s.segments.segmentDurationSeconds);
    if (s.segments.segmentFormat === SegmentFormat.TS) check.add("streaming.segments.segment_format", "must be fmp4 for cmaf");
  }
}

/** Where a codec that does not fit the container is reported: the codec, or the container when only it changed. */
export interface Blame {
  readonly video: string;
  readonly audio: string;
}

/** Every rule on a preset's encoding settings (not slug, name or description). */
export function checkPresetSettings(check: Check, p: PresetSettings, blame: Blame = { video: "video.codec", audio: "audio.codec" }): void {
  checkVideo(check, p.video, "video");
  checkAudio(check, p.audio, "audio");
  const container = CONTAINERS[p.container];
  if (p.container === Container.UNSPECIFIED) return void check.add("container", "is required: mp4, webm, mkv, ts or mov");
  if (!container) return void check.add("container", "must be mp4, webm, mkv, ts or mov");
  const delivery = DELIVERY[p.deliveryFormat];
  if (!delivery) check.add("delivery_format", "must be progressive, hls, dash or cmaf");
  else if (!delivery.containers.includes(p.container)) {
    check.add(
      "delivery_format",
      `${delivery.name} delivery packages ${delivery.containers.map((c) => CONTAINERS[c].name).join(" or ")}, not ${container.name}`,
    );
  }
  const videoRules = codecRules(p.video.codec);
  const audioName = AUDIO_NAMES[p.audio.codec];
  if (p.video.codec === VideoCodec.UNSPECIFIED && p.audio.codec === AudioCodec.UNSPECIFIED) check.add("video.codec", "a preset needs video, audio or both");
  if (videoRules && !container.video.includes(p.video.codec))
    check.add(blame.video, `${container.name} carries ${container.video.map((c) => videoCodecName(c)).join(", ")} video, not ${videoRules.name}`);
  if (audioName && !container.audio.includes(p.audio.codec))
    check.add(blame.audio, `${container.name} carries ${container.audio.map((c) => AUDIO_NAMES[c]).join(", ")} audio, not ${audioName}`);
  if (!(p.contentType in ContentType)) check.add("content_type", "must be film, animation, grain, gaming, sports or stillimage");
  if (!(p.qualityTier in QualityTier)) check.add("quality_tier", "must be economy, standard or premium");
  checkStreaming(check, p);
}

// ───────────────────────────── expansion into a job output ─────────────────────────────

function outputTypeOf(p: PresetSettings): OutputType {
  switch (p.deliveryFormat) {
    case DeliveryFormat.HLS:
      return OutputType.HLS;
    case DeliveryFormat.DASH:
      return OutputType.DASH;
    case DeliveryFormat.CMAF:
      return OutputType.ADAPTIVE;
    default:
      return CONTAINERS[p.container]?.output ?? OutputType.UNSPECIFIED;
  }
}

function variantOf(v: VideoSettingsRecord, quality: QualityTier): VideoVariant {
  const rate = {
    crf: v.crf,
    bitrateMode: v.bitrateMode,
    maxBitrateKbps: v.maxBitrateKbps,
    bufferSizeKbps: v.bufferSizeKbps,
    keyint: v.keyint,
    profile: v.profile,
    encoderPreset: v.encoderPreset,
  };
  const h26x = { ...rate, level: v.level, tune: v.tune, bframes: v.bframes, refs: v.refs };
  return create(VideoVariantSchema, {
    codec: v.codec,
    resolution: v.resolution,
    quality,
    framerate: v.framerate,
    width: v.width,
    height: v.height,
    bitrate: v.bitrateKbps,
    ...(v.codec === VideoCodec.H264 ? { h264: h26x } : {}),
    ...(v.codec === VideoCodec.H265 ? { h265: h26x } : {}),
    ...(v.codec === VideoCodec.VP9 ? { vp9: rate } : {}),
    ...(v.codec === VideoCodec.AV1 ? { av1: { ...rate, level: v.level, tune: v.tune } } : {}),
  });
}

/** The job output a preset describes: a ladder becomes one video variant per rung, top first. */
export function presetToOutputSpec(p: PresetRecord | SystemPreset): OutputSpec {
  const type = outputTypeOf(p);
  const video =
    p.video.codec === VideoCodec.UNSPECIFIED ? [] : [p.video, ...(p.ladder ?? []).map((r) => ({ ...p.video, ...r }))].map((v) => variantOf(v, p.qualityTier));
  const a = p.audio;
  const audio =
    a.codec === AudioCodec.UNSPECIFIED
      ? []
      : [create(AudioTrackSchema, { codec: a.codec, bitrateKbps: a.bitrateKbps, sampleRate: a.sampleRate, channels: a.channels, normalize: a.normalize })];
  const s = p.streaming;
  const segmentFormat = p.container === Container.TS ? SegmentFormat.TS : SegmentFormat.FMP4;
  const hls =
    type === OutputType.HLS || (type === OutputType.ADAPTIVE && s?.hls)
      ? create(HlsConfigSchema, { ...s?.hls, segmentFormat: s?.hls?.segmentFormat || segmentFormat })
      : undefined;
  const dash = (type === OutputType.DASH || type === OutputType.ADAPTIVE) && s?.dash ? create(DashConfigSchema, s.dash) : undefined;
  const segments = type === OutputType.ADAPTIVE ? create(SegmentsConfigSchema, { ...s?.segments, segmentFormat: SegmentFormat.FMP4 }) : undefined;
  return create(OutputSpecSchema, { type, video, audio, hls, dash, segments, disableAudio: audio.length === 0 });
}

/**
 * A job output naming a preset (id or slug; system or the app's own): the preset's output with the
 * request's explicit fields taking precedence. Problems are added to `check` on `${path}.preset`.
 */
export async function resolveOutputSpec(store: Store, appId: string, spec: OutputSpec, path: string, check: Check): Promise<OutputSpec> {
  if (spec.preset === "") return spec;
  const found = spec.preset.startsWith(Prefix.preset) ? await findPreset(store, spec.preset) : await findPresetBySlug(store, appId, spec.preset);
  if (!found || (!isSystemPreset(found) && found.appId !== appId)) {
    check.add(`${path}.preset`, `no preset ${spec.preset} in this app or the system catalog`);
    return spec;
  }
  if (!isSystemPreset(found) && found.archivedAt !== undefined) {
    check.add(`${path}.preset`, "preset is archived");
    return spec;
  }
  const base = presetToOutputSpec(found);
  const out = clone(OutputSpecSchema, spec);
  if (out.type === OutputType.UNSPECIFIED) out.type = base.type;
  if (out.video.length === 0) out.video = base.video;
  // Audio tracks of the request win; disable_audio in the request drops the preset's.
  if (spec.audio.length === 0) {
    out.audio = spec.disableAudio ? [] : base.audio;
    out.disableAudio = spec.disableAudio || base.disableAudio;
  }
  // The preset's packaging applies only while the output keeps the preset's type.
  if (out.type === base.type) {
    out.hls ??= base.hls;
    out.dash ??= base.dash;
    out.segments ??= base.segments;
  }
  if (out.encodingMode === EncodingMode.UNSPECIFIED) out.encodingMode = base.encodingMode;
  return out;
}

// ───────────────────────────── store ─────────────────────────────

interface SlugLink extends ClaimStamp {
  readonly presetId: string;
}
const slugKey = (appId: string, slug: string) => `${appId}:${slug}`;

/** The preset a slug link leads to, if that preset holds the slug; else the link is an orphan. */
async function holderOf(store: Store, appId: string, slug: string, link: StoredRecord<SlugLink>): Promise<PresetRecord | undefined> {
  const p = (await store.get<PresetRecord>(PRESETS, link.value.presetId))?.value;
  return p?.appId === appId && p.slug === slug ? p : undefined;
}

/** A system preset, or a stored one of any app (callers check visibility). */
export async function findPreset(store: Store, id: string): Promise<AnyPreset | undefined> {
  return systemPreset(id) ?? (id.startsWith(Prefix.preset) ? (await store.get<PresetRecord>(PRESETS, id))?.value : undefined);
}

/** A slug resolves to a system preset, else to the app's preset holding it (possibly archived, until reused). */
export async function findPresetBySlug(store: Store, appId: string, slug: string): Promise<AnyPreset | undefined> {
  const sys = SYSTEM_BY_SLUG.get(slug);
  if (sys) return sys;
  const link = await store.get<SlugLink>(PRESET_SLUGS, slugKey(appId, slug));
  return link && holderOf(store, appId, slug, link);
}

/** The app's presets that are not archived, newest first. */
export async function appPresets(store: Store, appId: string): Promise<readonly StoredRecord<PresetRecord>[]> {
  return (await store.scan<PresetRecord>(PRESETS, appId, { limit: 100_000, filter: (p) => p.archivedAt === undefined })).items;
}

// An archived preset keeps its slug link, so jobs naming the slug hear "preset is archived", until a
// new preset claims the slug; a live holder makes the slug taken, and so does an orphan link in its
// grace (its preset may still be being written).
async function claimSlug(store: Store, appId: string, slug: string, presetId: string) {
  if (SYSTEM_BY_SLUG.has(slug)) throw alreadyExists(`slug "${slug}" belongs to a system preset`, "slug");
  const id = slugKey(appId, slug);
  const held = await store.get<SlugLink>(PRESET_SLUGS, id);
  if (held && held.value.presetId !== presetId) {
    const holder = await holderOf(store, appId, slug, held);
    if (holder ? holder.archivedAt === undefined : inGrace(held)) throw alreadyExists(`preset slug "${slug}" is taken in this app`, "slug");
  }
  return { table: PRESET_SLUGS, id, value: { presetId, createdAt: Date.now() } satisfies SlugLink, expectedVersion: held?.version ?? 0 };
}

const presetWrite = (p: PresetRecord, expectedVersion: number) => ({
  table: PRESETS,
  id: p.id,
  value: p,
  partition: p.appId,
  sort: sortKey(p.createdAt, p.id),
  expectedVersion,
});

/** Claims the slug, then stores the new preset; a lost race is already_exists. */
export async function insertPreset(store: Store, p: PresetRecord): Promise<PresetRecord> {
  const slug = await claimSlug(store, p.appId, p.slug, p.id);
  try {
    await store.commit({ writes: [slug, presetWrite(p, 0)] });
  } catch (e) {
    if (e instanceof VersionConflict) throw alreadyExists(`preset slug "${p.slug}" is taken in this app`, "slug");
    throw e;
  }
  return p;
}

/**
 * Read, change and write back conditionally, retrying a lost race. A new slug is claimed before the
 * preset is written and the old link dropped after it; a link left by a failure between those is an
 * orphan, since its preset no longer (or not yet) holds that slug.
 */
export async function changePreset(store: Store, id: string, fn: (current: PresetRecord) => PresetRecord): Promise<PresetRecord> {
  for (let attempt = 0; ; attempt++) {
    const current = await store.get<PresetRecord>(PRESETS, id);
    if (!current) throw notFound("preset", id);
    const next = { ...fn(current.value), updatedAt: Date.now() };
    const writes: RecordWrite[] = [presetWrite(next, current.version)];
    if (next.slug !== current.value.slug) {
      writes.unshift(await claimSlug(store, next.appId, next.slug, next.id));
      const old = await store.get<SlugLink>(PRESET_SLUGS, slugKey(next.appId, current.value.slug));
      if (old?.value.presetId === id) writes.push({ table: PRESET_SLUGS, id: old.id, value: null, expectedVersion: old.version });
    }
    try {
      await store.commit({ writes });
      return next;
    } catch (e) {
      if (!(e instanceof VersionConflict) || attempt >= 4) throw e;
    }
  }
}
