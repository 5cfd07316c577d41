// Managed hosting in the kernel: an app's hosting settings (CDN signing keys, hostnames, source
// retention, the auto-profile ladder), where a video's files live in managed storage, and the
// ladder a source gets when no preset is given.
import { create, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { randomBytes } from "node:crypto";
import { AudioCodec, QualityTier, VideoCodec } from "./gen/media/v1/preset_pb.js";
import {
  DrmConfigSchema,
  EncodingMode,
  EncryptionScheme,
  OutputSpecSchema,
  OutputType,
  ThumbnailFormat,
  ThumbnailMode,
  ThumbnailSpecSchema,
} from "./gen/media/v1/job_pb.js";
import type { SecretBox } from "./secrets.js";

/** A CDN signing key, sealed at rest. */
export interface SigningKey {
  readonly sealed: string;
  readonly hint: string;
  readonly createdAt: number;
}

export interface AppHostingRecord {
  readonly key: SigningKey;
  /** The key before the last rotation: it verifies until expiresAt (one token lifetime). */
  readonly previous?: SigningKey & { readonly expiresAt: number };
  /** Host[:port] of playback URLs; "" is the public URL's. */
  readonly cdnHostname: string;
  /** Base of embed URLs; "" is the public URL. */
  readonly playerBaseUrl: string;
  /** 0 keeps sources. */
  readonly deleteSourceAfterDays: number;
  /** Rung heights, tallest first. */
  readonly ladder: readonly number[];
}

/** Lifetime of a playback token: about 6 hours (spec, Limits). */
export const TOKEN_SECONDS = 6 * 3600;
/** Lifetime of an upload URL: about 1 hour (spec, Limits). */
export const UPLOAD_URL_SECONDS = 3600;
export const DEFAULT_LADDER: readonly number[] = [1080, 720, 480, 360];
export const HOSTING_LIMITS = {
  ladderRungs: 8,
  minRung: 144,
  maxRung: 2160,
  maxRetentionDays: 3650,
  uploadBytes: 5_368_709_120,
  minPartBytes: 5 * 1024 * 1024,
  maxParts: 10_000,
} as const;

function newKey(box: SecretBox, now: number): SigningKey {
  const key = randomBytes(32).toString("base64url");
  return { sealed: box.encrypt(key), hint: key.slice(-4), createdAt: now };
}

/** The settings EnableHosting gives an app: a fresh signing key and the defaults. */
export function newHosting(box: SecretBox, now = Date.now()): AppHostingRecord {
  return { key: newKey(box, now), cdnHostname: "", playerBaseUrl: "", deleteSourceAfterDays: 0, ladder: DEFAULT_LADDER };
}

/** A new key; the current one keeps verifying for one token lifetime, so issued URLs keep working. */
export function rotateKey(box: SecretBox, h: AppHostingRecord, now = Date.now()): AppHostingRecord {
  return { ...h, key: newKey(box, now), previous: { ...h.key, expiresAt: now + TOKEN_SECONDS * 1000 } };
}

/** The key that signs new URLs. */
export function signingKey(box: SecretBox, h: AppHostingRecord): string {
  return box.decrypt(h.key.sealed);
}

/** Every key a presented token may have been signed with. */
export function verifyingKeys(box: SecretBox, h: AppHostingRecord, now = Date.now()): string[] {
  const keys = [box.decrypt(h.key.sealed)];
  if (h.previous && h.previous.expiresAt > now) keys.push(box.decrypt(h.previous.sealed));
  return keys;
}

// ── where a video's files live ──

/** The uploaded or fetched original: never under the playable directory. */
export const sourceKey = (videoId: string) => `sources/${videoId}/source`;
/** Where the parts of a multipart upload are stored (each named by its number and MD5). */
export const partsPrefix = (videoId: string, uploadId: string) => `uploads/${videoId}/${uploadId}`;
/** The playable directory: renditions, playlists, poster, previews. One token covers it. */
export const playPrefix = (videoId: string) => `play/${videoId}`;
/** The token_path of a video's playback URLs. */
export const tokenPathOf = (videoId: string) => `/${playPrefix(videoId)}/`;

// ── the auto-profile ladder ──

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

export interface LadderSource {
  readonly width: number;
  readonly height: number;
  readonly sampleAspectRatio?: number;
  readonly rotation?: number;
}

/** Rungs of the ladder for a source: no upscaling; a source shorter than every rung gets one rung at its own size. */
export function ladderRungs(heights: readonly number[], source: LadderSource): { width: number; height: number }[] {
  const w0 = source.width * (source.sampleAspectRatio && source.sampleAspectRatio > 0 ? source.sampleAspectRatio : 1);
  const rotated = source.rotation !== undefined && Math.abs(source.rotation) % 180 === 90;
  const display = rotated ? { width: source.height, height: w0 } : { width: w0, height: source.height };
  // A rung names the short side, so portrait sources get portrait rungs of the same quality.
  const portrait = display.height > display.width;
  const short = Math.min(display.width, display.height);
  const long = Math.max(display.width, display.height);
  const fits = [...new Set(heights)].sort((a, b) => b - a).filter((h) => h <= short);
  const chosen = fits.length > 0 ? fits : [even(short)];
  return chosen.map((s) => {
    const shortSide = even(s);
    const longSide = even((s * long) / short);
    return portrait ? { width: shortSide, height: longSide } : { width: longSide, height: shortSide };
  });
}

/** The output a hosted video gets without a preset: H.264 HLS rungs at constrained CRF, AAC audio (when the source has audio). */
export function ladderOutputSpec(
  heights: readonly number[],
  source: LadderSource | undefined,
  hasAudio: boolean,
  drm?: JsonValue,
): { [field: string]: JsonValue } {
  const rungs = source ? ladderRungs(heights, source) : [];
  const protection = drm === undefined ? undefined : fromJson(DrmConfigSchema, drm);
  // Protected ladders: aes_128 (the default) keeps HLS on ts segments, which hls.js and native HLS
  // play; cbcs makes it adaptive, one CMAF segment set for DASH and HLS; cenc is DASH only.
  const scheme = protection?.scheme ?? EncryptionScheme.UNSPECIFIED;
  const type = scheme === EncryptionScheme.CBCS ? OutputType.ADAPTIVE : scheme === EncryptionScheme.CENC ? OutputType.DASH : OutputType.HLS;
  const spec = create(OutputSpecSchema, {
    type,
    video: rungs.map((r) => ({ codec: VideoCodec.H264, width: r.width, height: r.height, quality: QualityTier.STANDARD })),
    audio: hasAudio ? [{ codec: AudioCodec.AAC, bitrateKbps: 128 }] : [],
    ...(type === OutputType.HLS ? { hls: { segmentDurationSeconds: 4 } } : { segments: { segmentDurationSeconds: 4 } }),
    encodingMode: EncodingMode.AUTO,
    disableAudio: !hasAudio,
    ...(protection ? { drm: protection } : {}),
  });
  return toJson(OutputSpecSchema, spec) as { [field: string]: JsonValue };
}

/** The poster: one JPEG frame 10% into the source (the single mode's default), 1280 wide. */
export function posterThumbnailSpec(): JsonValue {
  return toJson(ThumbnailSpecSchema, create(ThumbnailSpecSchema, { mode: ThumbnailMode.SINGLE, format: ThumbnailFormat.JPG, width: 1280 }));
}

/** Hover previews: a WebP loop (about 4 s, 12 fps, 320 px wide) and a muted MP4 loop. */
export function hoverPreviewSpecs(): JsonValue[] {
  return [ThumbnailFormat.WEBP, ThumbnailFormat.MP4].map((format) =>
    toJson(ThumbnailSpecSchema, create(ThumbnailSpecSchema, { mode: ThumbnailMode.ANIMATED, format, width: 320, durationSeconds: 4, fps: 12 })),
  );
}
