// Content protection, the shared vocabulary: schemes, DRM systems, track classes and content keys.
// The key providers (src/drm/keys.ts, src/drm/speke.ts) make keys, the encoder node packages with
// them (encoder-node/packager.ts), the edge's key server serves them (gateway/drm-edge.ts).

/** cbcs and cenc: CMAF common encryption (Shaka Packager); aes128: whole-segment AES-128 on TS HLS (ffmpeg). */
export type DrmScheme = "cbcs" | "cenc" | "aes128";

/** Systems signalled in the manifests: pssh boxes, ContentProtection elements, EXT-X-KEY lines. */
export type DrmSystemName = "clearkey" | "widevine" | "playready" | "fairplay";

/** Keys are made per track class, so an audio-only or SD-only license does not open HD. */
export type TrackClass = "audio" | "sd" | "hd";

/** Heights from this one up are HD. */
export const HD_MIN_HEIGHT = 720;

export const trackClassOf = (kind: "video" | "audio", height = 0): TrackClass => (kind === "audio" ? "audio" : height >= HD_MIN_HEIGHT ? "hd" : "sd");

/** One content key: 16-byte key ID and 16-byte AES key, both lowercase hex (32 characters). */
export interface ContentKey {
  readonly trackClass: TrackClass;
  readonly kid: string;
  readonly key: string;
  /** AES-128 only: the 16-byte IV, hex (a SPEKE service's explicitIV); absent, the encoder picks a random one and writes it into the playlists. */
  readonly iv?: string;
}

export interface KeyRequest {
  /** Content identifier sent to the provider (the output's resource_id, else its output ID). */
  readonly resourceId: string;
  /** One key per class, in this order. */
  readonly classes: readonly TrackClass[];
  readonly scheme: DrmScheme;
  readonly systems: readonly DrmSystemName[];
  readonly signal?: AbortSignal;
}

/** Where keys come from: the built-in random provider, or an operator's SPEKE v2 key service. */
export interface KeyProvider {
  /** One key per requested class, in the requested order; throws DrmKeyError when none can be had. */
  keys(request: KeyRequest): Promise<ContentKey[]>;
}

/** The key provider failed or answered something unusable: the output fails with drm_key_unavailable. */
export class DrmKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DrmKeyError";
  }
}

/** System IDs (DASH-IF registry), as pssh SystemID and ContentProtection schemeIdUri. */
export const SYSTEM_IDS: Readonly<Record<DrmSystemName, string>> = {
  clearkey: "1077efec-c0b2-4d02-ace3-3c1e52e2fb4b",
  widevine: "edef8ba9-79d6-4ace-a3c8-27dcd51d21ed",
  playready: "9a04f079-9840-4286-ab92-e65be0885f95",
  fairplay: "94ce86fb-07ff-4f43-adb8-93d2fa968ca2",
};

export const HEX16 = /^[0-9a-f]{32}$/;
