// Every rule of an output specification, checked at job creation after presets are resolved, so an
// encode never starts on settings ffmpeg would refuse. Violations name the field at fault.
import { AUDIO_NAMES, AUDIO_RULES, CODEC_NAMES, CODEC_RULES, CONTAINER_CODECS, RESOLUTION_LINES } from "./codec-rules.js";
import { toWhisperLanguage } from "./asr-languages.js";
import { LIGHT_LEVEL_MAX, parseMasterDisplay } from "./hdr-metadata.js";
import type { DrmSystemName } from "./drm/types.js";
import { parseStorageUrl } from "./blob/index.js";
import {
  DrmSystem,
  EncodingMode,
  EncryptionScheme,
  HdrMode,
  OutputType,
  SubtitleFormat,
  SubtitleKind,
  SubtitleSource,
  type AudioTrack,
  type OutputSpec,
  type VideoVariant,
} from "./gen/media/v1/job_pb.js";
import { AudioCodec, BitrateMode, HlsPlaylistType, QualityTier, SegmentFormat, VideoCodec } from "./gen/media/v1/preset_pb.js";
import type { Check } from "./validation.js";

export const OUTPUT_LIMITS = {
  variants: 20,
  audioTracks: 8,
  pathTemplate: 1024,
  width: [128, 7680],
  height: [128, 4320],
  framerate: 240,
  variantKbps: [100, 240_000],
  maxKbps: [100, 240_000],
  bufferKbps: [100, 480_000],
  keyint: [1, 600],
  bframes: [0, 16],
  refs: [1, 16],
  audioKbps: [32, 512],
  channels: 8,
  segmentSeconds: [1, 30],
  trackName: 128,
  subtitleTracks: 8,
  subtitleUrl: 2048,
  keyProviderUrl: 2048,
} as const;

const TYPE_NAMES: Partial<Record<OutputType, string>> = {
  [OutputType.MP4]: "mp4",
  [OutputType.WEBM]: "webm",
  [OutputType.MKV]: "mkv",
  [OutputType.MOV]: "mov",
  [OutputType.HLS]: "hls",
  [OutputType.DASH]: "dash",
  [OutputType.ADAPTIVE]: "adaptive",
};

/** What each output type can hold, and why not when it cannot: the file containers' codecs, and what streaming players play. */
const HOLDS: Record<string, { video: readonly VideoCodec[]; videoWhy: string; audio: readonly AudioCodec[]; audioWhy: string }> = {
  mp4: { ...CONTAINER_CODECS.mp4, videoWhy: "", audioWhy: "" },
  mkv: { ...CONTAINER_CODECS.mkv, videoWhy: "", audioWhy: "" },
  webm: { ...CONTAINER_CODECS.webm, videoWhy: "webm holds vp9 or av1 video", audioWhy: "webm holds opus audio" },
  mov: {
    ...CONTAINER_CODECS.mov,
    videoWhy: "mov holds h264 or h265 video here; use mp4, mkv or webm for vp9 and av1",
    audioWhy: "mov holds aac or mp3 audio; QuickTime does not play opus",
  },
  hls: {
    video: [VideoCodec.H264, VideoCodec.H265, VideoCodec.AV1],
    videoWhy: "HLS players do not play vp9; use dash for vp9, or h264, h265 or av1",
    audio: [AudioCodec.AAC, AudioCodec.MP3],
    audioWhy: "HLS players play aac or mp3 audio, not opus",
  },
  dash: { video: CONTAINER_CODECS.mp4.video, videoWhy: "", audio: [AudioCodec.AAC, AudioCodec.OPUS], audioWhy: "DASH outputs hold aac or opus audio" },
  adaptive: {
    video: [VideoCodec.H264, VideoCodec.H265, VideoCodec.AV1],
    videoWhy: "an adaptive output is also played as HLS, which does not carry vp9; use dash for vp9",
    audio: [AudioCodec.AAC],
    audioWhy: "an adaptive output's shared CMAF audio must play in HLS and DASH players: aac",
  },
};

const MANIFEST_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const LANGUAGE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/;

function range(check: Check, field: string, value: number, [min, max]: readonly [number, number], zeroMeans?: string): void {
  // Stryker disable next-line ConditionalExpression: every range checked without zeroMeans (bframes, cpu_used, tile_columns, film_grain) starts at 0, so returning early on 0 for them changes nothing
  if (zeroMeans !== undefined && value === 0) return;
  if (!Number.isInteger(value) || value < min || value > max)
    check.add(field, `must be ${min} to ${max}${zeroMeans !== undefined ? ` (or 0 for ${zeroMeans})` : ""}`);
}

function oneOf(check: Check, field: string, value: string, allowed: readonly string[], codec: string): void {
  if (value === "") return;
  // Stryker disable next-line ConditionalExpression,StringLiteral: every list oneOf is given is non-empty (vp9, whose tunes and levels are empty, has no tune or level field), so this branch guards edits to CODEC_RULES and is never reached
  if (allowed.length === 0) check.add(field, `is not available for ${codec}`);
  else if (!allowed.includes(value)) check.add(field, `must be one of ${allowed.join(", ")} for ${codec}`);
}

const isCodec = (c: VideoCodec): c is keyof typeof CODEC_NAMES => c in CODEC_NAMES;

/** Checks one output specification; violations go to check under `path` (e.g. outputs[0]). */
export function checkOutputSpec(check: Check, path: string, spec: OutputSpec): void {
  const type = TYPE_NAMES[spec.type];
  if (spec.type === OutputType.UNSPECIFIED) check.add(`${path}.type`, "is required: mp4, webm, mkv, mov, hls, dash or adaptive");
  else if (!type) check.add(`${path}.type`, "must be mp4, webm, mkv, mov, hls, dash or adaptive");

  if (spec.video.length === 0) {
    if (spec.audio.length === 0 || spec.disableAudio)
      check.add(
        `${path}.video`,
        "needs 1 to 20 video variants; an audio-only output has no video variants and at least one audio track (and no disable_audio)",
      );
  } else if (spec.video.length > OUTPUT_LIMITS.variants) check.add(`${path}.video`, `must have at most ${OUTPUT_LIMITS.variants} video variants`);
  if (spec.audio.length > OUTPUT_LIMITS.audioTracks) check.add(`${path}.audio`, `must have at most ${OUTPUT_LIMITS.audioTracks} audio tracks`);
  if (spec.disableAudio && spec.audio.length > 0)
    check.add(`${path}.disable_audio`, "cannot be combined with audio tracks; remove the audio tracks or disable_audio");
  if (!(spec.encodingMode in EncodingMode)) check.add(`${path}.encoding_mode`, "must be fixed or auto");
  check.length(`${path}.path_template`, spec.pathTemplate, 0, OUTPUT_LIMITS.pathTemplate);

  checkContentAware(check, path, spec);

  const holds = type ? HOLDS[type] : undefined;
  const hlsTs = spec.type === OutputType.HLS && (spec.hls?.segmentFormat || spec.segments?.segmentFormat) === SegmentFormat.TS;
  spec.video.slice(0, OUTPUT_LIMITS.variants).forEach((v, i) => {
    const at = `${path}.video[${i}]`;
    checkVariant(check, at, v);
    // A DASH adaptation set switches between its representations: one dynamic range for them all.
    if (i > 0 && (spec.type === OutputType.DASH || spec.type === OutputType.ADAPTIVE)) {
      const [mode, first] = [effectiveHdrMode(v), effectiveHdrMode(spec.video[0]!)];
      if (mode !== first && HDR_MODES[mode] && HDR_MODES[first])
        check.add(
          `${at}.hdr.mode`,
          `must be video[0]'s (${HDR_MODES[first]}): a ${TYPE_NAMES[spec.type]} output's video is one DASH adaptation set, of one dynamic range`,
        );
    }
    if (!holds || !isCodec(v.codec)) return;
    if (!holds.video.includes(v.codec)) check.add(`${at}.codec`, holds.videoWhy);
    else if (hlsTs && v.codec === VideoCodec.AV1) check.add(`${at}.codec`, "av1 in HLS needs fmp4 segments (hls.segment_format fmp4)");
  });
  spec.audio.slice(0, OUTPUT_LIMITS.audioTracks).forEach((a, j) => {
    const at = `${path}.audio[${j}]`;
    checkAudioTrack(check, at, a);
    // Stryker disable next-line ConditionalExpression: AUDIO_NAMES has no entry for UNSPECIFIED, so the next test already excludes it; the explicit test only reads better
    if (holds && a.codec !== AudioCodec.UNSPECIFIED && AUDIO_NAMES[a.codec] && !holds.audio.includes(a.codec)) check.add(`${at}.codec`, holds.audioWhy);
  });
  checkStreaming(check, path, spec);
  checkSubtitleTracks(check, path, spec);
  checkDrm(check, path, spec);
}

/**
 * content_aware: the analysis chooses every video variant's rate (a CRF towards target_vmaf, within
 * the bitrate bounds), so a variant's own rate settings would be overruled; they are refused on
 * their fields. Its bounds and target are checked whether or not it is enabled.
 */
function checkContentAware(check: Check, path: string, spec: OutputSpec): void {
  const ca = spec.contentAware;
  if (!ca) return;
  const at = `${path}.content_aware`;
  range(check, `${at}.min_bitrate_kbps`, ca.minBitrateKbps, OUTPUT_LIMITS.variantKbps, "no floor");
  range(check, `${at}.max_bitrate_kbps`, ca.maxBitrateKbps, OUTPUT_LIMITS.variantKbps, "no ceiling");
  if (ca.minBitrateKbps > 0 && ca.maxBitrateKbps > 0 && ca.minBitrateKbps > ca.maxBitrateKbps)
    check.add(`${at}.min_bitrate_kbps`, "must be at most max_bitrate_kbps");
  if (ca.targetVmaf !== 0 && !(ca.targetVmaf >= 50 && ca.targetVmaf <= 100))
    check.add(`${at}.target_vmaf`, "must be 50 to 100 (or 0 for the quality tier's target)");
  if (!ca.enabled) return;
  if (spec.video.length === 0) check.add(`${at}.enabled`, "applies to outputs with video variants: it chooses their rates");
  spec.video.slice(0, OUTPUT_LIMITS.variants).forEach((v, i) => {
    const variant = `${path}.video[${i}]`;
    const why = "is chosen by content_aware: remove it, or disable content_aware";
    if (v.bitrate !== 0) check.add(`${variant}.bitrate`, why);
    const codec = isCodec(v.codec) ? CODEC_NAMES[v.codec] : undefined;
    const o = codec ? v[codec] : undefined;
    if (!o) return;
    if (o.crf !== 0) check.add(`${variant}.${codec}.crf`, why);
    if (o.bitrateMode !== BitrateMode.UNSPECIFIED && o.bitrateMode !== BitrateMode.CRF)
      check.add(`${variant}.${codec}.bitrate_mode`, "must be crf or unset with content_aware, which chooses a CRF");
    if (o.maxBitrateKbps !== 0) check.add(`${variant}.${codec}.max_bitrate_kbps`, "use content_aware.max_bitrate_kbps, which caps every variant");
  });
}

/** HLS segments as they will be written: the request's format, else fmp4 when a codec needs it (h265, av1), else ts. */
export function hlsSegmentFormat(spec: Pick<OutputSpec, "hls" | "segments" | "video">): SegmentFormat {
  const asked = spec.hls?.segmentFormat || spec.segments?.segmentFormat || SegmentFormat.UNSPECIFIED;
  if (asked !== SegmentFormat.UNSPECIFIED) return asked;
  // HEVC and AV1 in HLS are specified over fmp4 (Apple's authoring rules); H.264 keeps the widest-played ts.
  return spec.video.some((v) => v.codec === VideoCodec.H265 || v.codec === VideoCodec.AV1) ? SegmentFormat.FMP4 : SegmentFormat.TS;
}

/** The scheme an output's drm asks for, with the default filled in: aes_128 on ts HLS, cbcs on CMAF. */
export function drmSchemeOf(spec: Pick<OutputSpec, "type" | "drm" | "hls" | "segments" | "video">): EncryptionScheme | undefined {
  if (!spec.drm) return undefined;
  if (spec.drm.scheme !== EncryptionScheme.UNSPECIFIED) return spec.drm.scheme;
  return spec.type === OutputType.HLS && hlsSegmentFormat(spec) === SegmentFormat.TS ? EncryptionScheme.AES_128 : EncryptionScheme.CBCS;
}

export const DRM_SYSTEM_NAMES: Partial<Record<DrmSystem, DrmSystemName>> = {
  [DrmSystem.CLEARKEY]: "clearkey",
  [DrmSystem.WIDEVINE]: "widevine",
  [DrmSystem.PLAYREADY]: "playready",
  [DrmSystem.FAIRPLAY]: "fairplay",
};
const RESOURCE_ID = /^[A-Za-z0-9._:-]{1,256}$/;

/**
 * Content protection: cbcs or cenc common encryption of CMAF segments (the packager), or aes_128 of
 * ts segments (ffmpeg). Whether the keys can be served for this output (managed hosting or the
 * caller's own license service) is the job service's check.
 */
export function checkDrm(check: Check, path: string, spec: OutputSpec): void {
  const drm = spec.drm;
  if (!drm) return;
  const at = `${path}.drm`;
  if (spec.type !== OutputType.HLS && spec.type !== OutputType.DASH && spec.type !== OutputType.ADAPTIVE) {
    check.add(at, "applies to streaming outputs: hls, dash or adaptive");
    return;
  }
  const hlsTs = spec.type === OutputType.HLS && hlsSegmentFormat(spec) === SegmentFormat.TS;
  const scheme = drmSchemeOf(spec)!;
  if (!(drm.scheme in EncryptionScheme)) check.add(`${at}.scheme`, "must be cbcs, cenc or aes_128");
  else if (scheme === EncryptionScheme.AES_128 && !hlsTs)
    check.add(`${at}.scheme`, "aes_128 encrypts whole ts segments: it applies to hls outputs on ts segments; CMAF (fmp4) segments take cbcs or cenc");
  else if (scheme !== EncryptionScheme.AES_128 && hlsTs) check.add(`${at}.scheme`, "hls on ts segments takes aes_128; for cbcs set hls.segment_format to fmp4");
  else if (scheme === EncryptionScheme.CENC && spec.type !== OutputType.DASH)
    check.add(`${at}.scheme`, "cenc applies to dash outputs: HLS players decrypt cbcs, which also serves DASH from the same segments");

  // ffmpeg 5.1's single-file HLS leaves an encrypted copy of its last segment behind.
  if (scheme === EncryptionScheme.AES_128 && hlsTs && spec.segments?.singleFile)
    check.add(`${path}.segments.single_file`, "is not combined with aes_128: each ts segment is encrypted as a file of its own");
  const systems = drm.systems;
  if (scheme === EncryptionScheme.AES_128) {
    if (systems.length > 0) check.add(`${at}.systems`, "must be empty with aes_128: players fetch the key from the key URI in the playlists");
  } else if (systems.length === 0) check.add(`${at}.systems`, "needs at least one of clearkey, widevine, playready, fairplay");
  const seen = new Set<DrmSystem>();
  systems.forEach((system, k) => {
    const name = DRM_SYSTEM_NAMES[system];
    if (!name) {
      check.add(`${at}.systems[${k}]`, "must be clearkey, widevine, playready or fairplay");
      return;
    }
    if (seen.has(system)) check.add(`${at}.systems[${k}]`, `lists ${name} twice`);
    seen.add(system);
    if (system === DrmSystem.FAIRPLAY && spec.type === OutputType.DASH)
      check.add(`${at}.systems[${k}]`, "fairplay is signalled in HLS: use an hls or adaptive output");
    else if (system === DrmSystem.FAIRPLAY && scheme !== EncryptionScheme.CBCS) check.add(`${at}.systems[${k}]`, "fairplay requires the cbcs scheme");
  });
  const licensed = systems.filter((s) => s === DrmSystem.WIDEVINE || s === DrmSystem.PLAYREADY || s === DrmSystem.FAIRPLAY);
  if (drm.keyProviderUrl === "") {
    if (licensed.length > 0)
      check.add(
        `${at}.key_provider_url`,
        `is required with ${licensed.map((s) => DRM_SYSTEM_NAMES[s]).join(" and ")}: their license services need the keys, which a SPEKE v2 key service shares; the built-in provider serves clearkey and aes_128 keys only`,
      );
  } else checkHttpsUrl(check, `${at}.key_provider_url`, drm.keyProviderUrl);
  if (drm.resourceId !== "" && !RESOURCE_ID.test(drm.resourceId)) check.add(`${at}.resource_id`, "must be 1 to 256 letters, digits, '.', '_', ':' or '-'");
}

function checkHttpsUrl(check: Check, field: string, url: string): void {
  if (url.length > OUTPUT_LIMITS.keyProviderUrl) {
    check.add(field, `must be at most ${OUTPUT_LIMITS.keyProviderUrl} characters`);
    return;
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    check.add(field, "must be an https URL");
    return;
  }
  if (u.protocol !== "https:") check.add(field, "must be an https URL");
  else if (u.username !== "" || u.password !== "") check.add(field, "must not carry credentials");
}

/**
 * Subtitle tracks: generated (speech recognition of the input's audio) or provided (a WebVTT or SRT
 * file at an https URL, or at a path in the job's input origin: see the job service). Every output
 * type carries them: streaming outputs as renditions, files as a sidecar .vtt.
 */
export function checkSubtitleTracks(check: Check, path: string, spec: Pick<OutputSpec, "subtitleTracks">): void {
  const tracks = spec.subtitleTracks;
  if (tracks.length > OUTPUT_LIMITS.subtitleTracks) check.add(`${path}.subtitle_tracks`, `must have at most ${OUTPUT_LIMITS.subtitleTracks} tracks`);
  const generated = new Map<string, number>();
  tracks.slice(0, OUTPUT_LIMITS.subtitleTracks).forEach((t, k) => {
    const at = `${path}.subtitle_tracks[${k}]`;
    if (t.source === SubtitleSource.UNSPECIFIED) check.add(`${at}.source`, "is required: url (a WebVTT or SRT file) or generated (speech recognition)");
    else if (!(t.source in SubtitleSource)) check.add(`${at}.source`, "must be url or generated");
    if (!(t.kind in SubtitleKind)) check.add(`${at}.kind`, "must be subtitles or captions");
    if (!(t.format in SubtitleFormat)) check.add(`${at}.format`, "must be vtt or srt");
    check.length(`${at}.name`, t.name, 0, OUTPUT_LIMITS.trackName);
    if (t.language !== "" && !LANGUAGE.test(t.language)) check.add(`${at}.language`, "must be a BCP 47 tag, e.g. en or pt-BR");
    if (t.source === SubtitleSource.URL) {
      if (t.url === "") check.add(`${at}.url`, "is required with source url: an https, s3:// or gs:// URL, or a path in the job's input origin");
      else checkSubtitleUrl(check, `${at}.url`, t.url);
      if (t.generateChapters) check.add(`${at}.generate_chapters`, "applies to generated tracks: chapters come from the transcript");
    }
    if (t.source === SubtitleSource.GENERATED) {
      if (t.url !== "") check.add(`${at}.url`, "applies to source url; a generated track is transcribed from the input's audio");
      if (t.format !== SubtitleFormat.UNSPECIFIED) check.add(`${at}.format`, "applies to source url; generated tracks are written as WebVTT");
      // Stryker disable next-line ConditionalExpression,StringLiteral: LANGUAGE never matches "", so the empty-language test is implied by the pattern and only spells out the branch below
      if (t.language !== "" && LANGUAGE.test(t.language)) {
        const code = toWhisperLanguage(t.language);
        if (!code) check.add(`${at}.language`, `the speech recogniser does not know ${t.language}; leave it empty to detect the spoken language`);
        else if (generated.has(code)) check.add(`${at}.language`, `repeats subtitle_tracks[${generated.get(code)}]: one generated track per language`);
        else generated.set(code, k);
      } else if (t.language === "") {
        if (generated.has("")) check.add(`${at}.language`, `repeats subtitle_tracks[${generated.get("")}]: one generated track with a detected language`);
        else generated.set("", k);
      }
    }
  });
  const defaults = tracks.flatMap((t, k) => (t.isDefault ? [k] : []));
  if (defaults.length > 1)
    check.add(`${path}.subtitle_tracks[${defaults[1]}].is_default`, `only one track is the default; subtitle_tracks[${defaults[0]}] already is`);
}

/** A provided track's location: https, s3:// or gs:// (bucket and key), or a relative path in the input origin (no scheme, no "..", no leading "/"). */
function checkSubtitleUrl(check: Check, field: string, url: string): void {
  if (url.length > OUTPUT_LIMITS.subtitleUrl) {
    check.add(field, `must be at most ${OUTPUT_LIMITS.subtitleUrl} characters`);
    return;
  }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    // Stryker disable next-line MethodExpression: a path that starts (or ends) with "/" also has an empty segment, so the segment test refuses it either way
    if (url.startsWith("/") || url.split("/").some((part) => part === ".." || part === "." || part === ""))
      check.add(field, "a path in the input origin is relative, with no empty, . or .. segments");
    return;
  }
  if (scheme === "s3" || scheme === "gs") {
    // Read with the job's origin for that bucket (the gateway checks there is one); credentials come from the origin only.
    let bucket: string | undefined;
    try {
      bucket = parseStorageUrl(url).bucket;
    } catch {
      bucket = undefined;
    }
    if (bucket === undefined || /[@:]/.test(bucket))
      check.add(field, "must be s3://bucket/path/file.vtt or gs://bucket/path/file.vtt: a bucket and an object, no credentials");
    return;
  }
  if (scheme !== "https") {
    check.add(field, "must be an https URL, an s3:// or gs:// URL in a bucket of the job's origins, or a path in the job's input origin");
    return;
  }
  try {
    const u = new URL(url);
    // Stryker disable next-line ConditionalExpression,StringLiteral: the URL parser refuses an https URL without a host, so hostname is never "" here; the test guards a parser change
    if (u.hostname === "" || u.username !== "" || u.password !== "") check.add(field, "must be an https URL with a host and no credentials");
  } catch {
    check.add(field, "must be a valid URL");
  }
}

const HDR_MODES: Partial<Record<HdrMode, string>> = {
  [HdrMode.PASSTHROUGH]: "passthrough",
  [HdrMode.HDR10]: "hdr10",
  [HdrMode.HLG]: "hlg",
  [HdrMode.TONEMAP]: "tonemap",
};
/** No mode is tonemap over an HDR input and SDR over an SDR one, as tonemap is. */
const effectiveHdrMode = (v: VideoVariant): HdrMode => v.hdr?.mode || HdrMode.TONEMAP;
/** Profiles that are 8-bit only: PQ and HLG outputs are 10-bit. */
const EIGHT_BIT_PROFILES: Partial<Record<string, readonly string[]>> = { h265: ["main"], vp9: ["0", "1"] };

/**
 * A variant's hdr: passthrough, hdr10 and hlg make 10-bit PQ or HLG (h265, vp9 or av1, no 8-bit
 * profile); tonemap makes BT.709 SDR on any codec. The static metadata is PQ's: passthrough and hdr10.
 */
function checkHdr(check: Check, variant: string, v: VideoVariant): void {
  const hdr = v.hdr;
  if (!hdr) return;
  const at = `${variant}.hdr`;
  const name = HDR_MODES[hdr.mode];
  if (hdr.mode !== HdrMode.UNSPECIFIED && !name) check.add(`${at}.mode`, "must be passthrough, hdr10, hlg or tonemap");
  if (hdr.mode === HdrMode.PASSTHROUGH || hdr.mode === HdrMode.HDR10 || hdr.mode === HdrMode.HLG) {
    if (v.codec === VideoCodec.H264) check.add(`${at}.mode`, `${name} makes 10-bit HDR, which needs h265, vp9 or av1; h264 variants take tonemap (BT.709 SDR)`);
    const codec = isCodec(v.codec) ? CODEC_NAMES[v.codec] : undefined;
    const profile = codec ? (v[codec]?.profile ?? "") : "";
    if (codec && EIGHT_BIT_PROFILES[codec]?.includes(profile))
      check.add(`${variant}.${codec}.profile`, `${profile} is 8-bit; hdr.mode ${name} is 10-bit: ${codec === "h265" ? "main10" : "2 or 3"}, or no profile`);
  }
  const pq = hdr.mode === HdrMode.PASSTHROUGH || hdr.mode === HdrMode.HDR10;
  const notPq = `applies with hdr.mode passthrough or hdr10 (PQ's static metadata); ${name ? `${name} carries none` : "no mode is set"}`;
  if (hdr.masterDisplay !== "") {
    const parsed = pq ? parseMasterDisplay(hdr.masterDisplay) : notPq;
    if (typeof parsed === "string") check.add(`${at}.master_display`, parsed);
  }
  for (const [field, value] of [
    ["max_cll", hdr.maxCll],
    ["max_fall", hdr.maxFall],
  ] as const) {
    if (value === undefined) continue;
    if (!pq) check.add(`${at}.${field}`, notPq);
    else range(check, `${at}.${field}`, value, [0, LIGHT_LEVEL_MAX]);
  }
  if (pq && hdr.maxCll !== undefined && hdr.maxFall !== undefined && hdr.maxFall > hdr.maxCll)
    check.add(`${at}.max_fall`, "must be at most max_cll: a frame's average light is at most its brightest pixel's");
}

function checkVariant(check: Check, at: string, v: VideoVariant): void {
  if (v.codec === VideoCodec.UNSPECIFIED) check.add(`${at}.codec`, "is required: h264, h265, vp9 or av1");
  else if (!isCodec(v.codec)) check.add(`${at}.codec`, "must be h264, h265, vp9 or av1");
  if (v.resolution !== "" && !Object.hasOwn(RESOLUTION_LINES, v.resolution))
    check.add(`${at}.resolution`, `must be one of ${Object.keys(RESOLUTION_LINES).join(", ")}`);
  if (v.resolution !== "" && (v.width !== 0 || v.height !== 0)) check.add(`${at}.resolution`, "must be empty when width or height is set");
  for (const [side, limits] of [
    ["width", OUTPUT_LIMITS.width],
    ["height", OUTPUT_LIMITS.height],
  ] as const) {
    const n = v[side];
    if (n === 0) continue;
    if (!Number.isInteger(n) || n < limits[0] || n > limits[1]) check.add(`${at}.${side}`, `must be ${limits[0]} to ${limits[1]}`);
    else if (n % 2 !== 0) check.add(`${at}.${side}`, "must be even (4:2:0 chroma halves each side)");
  }
  range(check, `${at}.framerate`, v.framerate, [1, OUTPUT_LIMITS.framerate], "the input's frame rate");
  range(check, `${at}.bitrate`, v.bitrate, OUTPUT_LIMITS.variantKbps, "a rate chosen from resolution and quality");
  if (!(v.quality in QualityTier)) check.add(`${at}.quality`, "must be economy, standard or premium");
  checkHdr(check, at, v);

  const codec = isCodec(v.codec) ? CODEC_NAMES[v.codec] : undefined;
  for (const name of ["h264", "h265", "vp9", "av1"] as const) {
    if (v[name] && name !== codec) check.add(`${at}.${name}`, `applies to ${name} variants; this variant's codec is ${codec ?? "not set"}`);
  }
  if (!codec) return;
  const o = v[codec];
  if (!o) return;
  const rules = CODEC_RULES[codec];
  const f = `${at}.${codec}`;
  if (!(o.bitrateMode in BitrateMode)) check.add(`${f}.bitrate_mode`, "must be crf, cbr or vbr");
  const targetMode = o.bitrateMode === BitrateMode.CBR || o.bitrateMode === BitrateMode.VBR;
  // Stryker disable next-line ConditionalExpression: crfMode is read only by the buffer rule below, which itself requires v.bitrate === 0, so dropping that term here changes nothing
  const crfMode = o.bitrateMode === BitrateMode.CRF || (o.bitrateMode === BitrateMode.UNSPECIFIED && v.bitrate === 0);
  range(check, `${f}.crf`, o.crf, rules.crf, "the quality tier's value");
  if (o.crf !== 0 && targetMode) check.add(`${f}.crf`, "applies with bitrate_mode crf; cbr and vbr aim at the variant's bitrate");
  range(check, `${f}.max_bitrate_kbps`, o.maxBitrateKbps, OUTPUT_LIMITS.maxKbps, "no VBV cap");
  range(check, `${f}.buffer_size_kbps`, o.bufferSizeKbps, OUTPUT_LIMITS.bufferKbps, "twice the max bitrate");
  if (crfMode && o.bufferSizeKbps !== 0 && o.maxBitrateKbps === 0 && v.bitrate === 0)
    check.add(`${f}.buffer_size_kbps`, "needs max_bitrate_kbps: a VBV buffer caps a rate");
  if (o.bitrateMode === BitrateMode.VBR && o.maxBitrateKbps !== 0 && v.bitrate !== 0 && o.maxBitrateKbps < v.bitrate)
    check.add(`${f}.max_bitrate_kbps`, "must be at least the variant's bitrate");
  if (o.bitrateMode === BitrateMode.CBR && o.maxBitrateKbps !== 0)
    check.add(`${f}.max_bitrate_kbps`, "does not apply with bitrate_mode cbr: the rate is the variant's bitrate");
  range(check, `${f}.keyint`, o.keyint, OUTPUT_LIMITS.keyint, "about 2 seconds");
  oneOf(check, `${f}.profile`, o.profile, rules.profiles, codec);
  oneOf(check, `${f}.encoder_preset`, o.encoderPreset, rules.presets, codec);
  if ("tune" in o) oneOf(check, `${f}.tune`, o.tune, rules.tunes, codec);
  if ("level" in o) oneOf(check, `${f}.level`, o.level.replace(/\.0$/, ""), rules.levels, codec);
  if ("bframes" in o && o.bframes !== undefined) range(check, `${f}.bframes`, o.bframes, OUTPUT_LIMITS.bframes);
  if ("refs" in o) range(check, `${f}.refs`, o.refs, OUTPUT_LIMITS.refs, "the encoder default");
  if ("cpuUsed" in o && o.cpuUsed !== undefined) range(check, `${f}.cpu_used`, o.cpuUsed, [0, 8]);
  if ("tileColumns" in o && o.tileColumns !== undefined) range(check, `${f}.tile_columns`, o.tileColumns, [0, 6]);
  if ("filmGrain" in o) range(check, `${f}.film_grain`, o.filmGrain, [0, 50]);
}

function checkAudioTrack(check: Check, at: string, a: AudioTrack): void {
  const codec = AUDIO_NAMES[a.codec];
  if (a.codec !== AudioCodec.UNSPECIFIED && !codec) check.add(`${at}.codec`, "must be aac, opus or mp3");
  range(check, `${at}.bitrate_kbps`, a.bitrateKbps, OUTPUT_LIMITS.audioKbps, "the codec's default");
  const maxChannels = codec ? AUDIO_RULES[codec].maxChannels : OUTPUT_LIMITS.channels;
  range(check, `${at}.channels`, a.channels, [1, maxChannels], "the input's channels");
  const rates = AUDIO_RULES[codec ?? "aac"].sampleRates;
  if (a.sampleRate !== 0 && !rates.includes(a.sampleRate))
    check.add(`${at}.sample_rate`, `must be 0 (keep the input's) or one of ${rates.join(", ")}${codec ? ` for ${codec}` : ""}`);
  check.length(`${at}.name`, a.name, 0, OUTPUT_LIMITS.trackName);
  if (a.language !== "" && !LANGUAGE.test(a.language)) check.add(`${at}.language`, "must be a BCP 47 tag such as en or pt-BR");
}

/** I-frame playlists are byte ranges of the video segments: HLS video, whose segments decrypt range by range. */
function checkIFramePlaylists(check: Check, field: string, spec: OutputSpec): void {
  if (spec.type !== OutputType.HLS && spec.type !== OutputType.ADAPTIVE) check.add(field, "I-frame playlists are written for hls and adaptive outputs");
  else if (spec.video.length === 0) check.add(field, "an output without video variants has no I-frames");
  else if (drmSchemeOf(spec) === EncryptionScheme.AES_128)
    check.add(field, "aes_128 encrypts whole segments, so an I-frame's byte range cannot be decrypted alone: use cbcs or cenc (fmp4 segments)");
}

function checkStreaming(check: Check, path: string, spec: OutputSpec): void {
  const seconds = (field: string, n: number) => range(check, field, n, OUTPUT_LIMITS.segmentSeconds, "the default of 6");
  const { hls, dash, segments } = spec;
  if (hls) {
    seconds(`${path}.hls.segment_duration_seconds`, hls.segmentDurationSeconds);
    if (!(hls.playlistType in HlsPlaylistType)) check.add(`${path}.hls.playlist_type`, "must be vod or event");
    if (!(hls.segmentFormat in SegmentFormat)) check.add(`${path}.hls.segment_format`, "must be ts or fmp4");
    if (hls.manifestName !== "" && !MANIFEST_NAME.test(hls.manifestName))
      check.add(`${path}.hls.manifest_name`, "must be 1 to 64 letters, digits, - or _ (no extension)");
    else if (spec.type === OutputType.ADAPTIVE && /^media_\d+(_iframes)?$/.test(hls.manifestName))
      check.add(`${path}.hls.manifest_name`, "media_<n> and media_<n>_iframes name the media playlists of an adaptive output");
    if (hls.iframePlaylists) checkIFramePlaylists(check, `${path}.hls.iframe_playlists`, spec);
  }
  if (dash) {
    seconds(`${path}.dash.segment_duration_seconds`, dash.segmentDurationSeconds);
    range(check, `${path}.dash.min_buffer_time_seconds`, dash.minBufferTimeSeconds, [1, 30], "the default of 2");
    if (dash.manifestName !== "" && !MANIFEST_NAME.test(dash.manifestName))
      check.add(`${path}.dash.manifest_name`, "must be 1 to 64 letters, digits, - or _ (no extension)");
  }
  if (segments) {
    seconds(`${path}.segments.segment_duration_seconds`, segments.segmentDurationSeconds);
    if (!(segments.segmentFormat in SegmentFormat)) check.add(`${path}.segments.segment_format`, "must be ts or fmp4");
  }
  if (spec.type === OutputType.DASH || spec.type === OutputType.ADAPTIVE) {
    const name = spec.type === OutputType.DASH ? "dash" : "adaptive";
    if (segments?.segmentFormat === SegmentFormat.TS) check.add(`${path}.segments.segment_format`, `${name} outputs use fmp4 segments`);
    if (spec.type === OutputType.ADAPTIVE && hls?.segmentFormat === SegmentFormat.TS)
      check.add(`${path}.hls.segment_format`, "adaptive outputs use fmp4 segments shared by HLS and DASH");
  }
  if (spec.type === OutputType.ADAPTIVE && !segments?.segmentDurationSeconds) {
    const h = hls?.segmentDurationSeconds ?? 0;
    const d = dash?.segmentDurationSeconds ?? 0;
    if (h !== 0 && d !== 0 && h !== d)
      check.add(
        `${path}.dash.segment_duration_seconds`,
        "must equal hls.segment_duration_seconds: an adaptive output's HLS and DASH share one set of segments (or set segments.segment_duration_seconds)",
      );
  }
}
