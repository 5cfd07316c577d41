// Hosting at the gateway: where the public address is, the links a video read carries (signed
// playback and poster URLs, the embed URL and snippet), and the presigned upload URLs the edge
// accepts. Shared by VideoService and the edge routes.
import type { VideoRecord } from "../actors/video/messages.js";
import type { AppRecord } from "../src/directory.js";
import { signDirectoryUrl } from "../src/cdn-token.js";
import { signingKey, tokenPathOf, TOKEN_SECONDS } from "../src/hosting.js";
import type { ManagedStorage } from "../src/managed-storage.js";
import type { SecretBox } from "../src/secrets.js";
import { embedCode, type VideoLinks } from "../wire/present-video.js";

export interface Hosting {
  /** Where clients reach this deployment, without a trailing slash (known once the gateway listens). */
  publicUrl(): string;
  readonly managed: ManagedStorage;
  /** The edge's cache of videos being played (PlaybackRecords); whoever changes a video forgets it there. */
  readonly playback: { forget(videoId: string): void };
}

/** A settable public URL: MEDIA_PUBLIC_URL, or http://localhost:<port> once the port is known. */
export class PublicAddress {
  private url: string | undefined;
  constructor(configured: string | undefined) {
    this.url = configured;
  }
  listening(port: number): void {
    this.url ??= `http://localhost:${port}`;
  }
  get(): string {
    if (this.url === undefined) throw new Error("the public URL is not known before the gateway listens");
    return this.url;
  }
}

/** Base of the app's playback URLs: its CDN hostname over the public URL's scheme, or the public URL. */
export function cdnBase(app: AppRecord, publicUrl: string): string {
  const host = app.hosting?.cdnHostname;
  return host ? `${new URL(publicUrl).protocol}//${host}` : publicUrl;
}

export function playerBase(app: AppRecord, publicUrl: string): string {
  return app.hosting?.playerBaseUrl || publicUrl;
}

/**
 * The links of one read (spec, Playback rules): only for ready videos of an app with a signing
 * key; playback and poster signed with one directory token each (about 6 h); embed URL and code
 * only for non-private videos. Owner reads (every authenticated API read) get private videos' links.
 */
export function videoLinks(v: VideoRecord, app: AppRecord | undefined, box: SecretBox, publicUrl: string, now = Date.now()): VideoLinks {
  if (v.status !== "ready" || !app?.hosting || !v.playlistKey) return {};
  const key = signingKey(box, app.hosting);
  const base = cdnBase(app, publicUrl);
  const expires = Math.floor(now / 1000) + TOKEN_SECONDS;
  const sign = (k: string | undefined) => (k ? signDirectoryUrl(base, key, tokenPathOf(v.id), `/${k}`, expires) : undefined);
  const links: { -readonly [K in keyof VideoLinks]: VideoLinks[K] } = {
    playbackUrl: sign(v.playlistKey),
    posterUrl: sign(v.posterKey),
    hoverPreviewUrl: sign(v.hoverWebpKey),
    hoverPreviewMp4Url: sign(v.hoverMp4Key),
  };
  if (v.visibility !== "private") {
    links.embedUrl = `${playerBase(app, publicUrl)}/v/${v.id}`;
    links.embedCode = embedCode(links.embedUrl, v.title);
  }
  for (const k of Object.keys(links) as (keyof VideoLinks)[]) if (links[k] === undefined) delete links[k];
  return links;
}

/** What an upload URL authorizes: the whole source (part 0) or one part of a multipart upload. */
const uploadClaim = (videoId: string, uploadId: string, part: number, expires: number) => `upload:${videoId}:${uploadId}:${part}:${expires}`;

/** A presigned PUT URL of the edge: signed with the server key, valid until `expires` (unix seconds). */
export function uploadUrl(box: SecretBox, publicUrl: string, videoId: string, uploadId: string, part: number, expires: number): string {
  const sig = box.sign(uploadClaim(videoId, uploadId, part, expires));
  const path = part === 0 ? `/uploads/${videoId}` : `/uploads/${videoId}/${uploadId}/${part}`;
  return `${publicUrl}${path}?expires=${expires}&signature=${sig}`;
}

/** Whether an upload URL's query is genuine and unexpired. */
export function uploadAllowed(
  box: SecretBox,
  videoId: string,
  uploadId: string,
  part: number,
  query: URLSearchParams,
  now = Date.now(),
): "ok" | "expired" | "signature" {
  const expires = query.get("expires") ?? "";
  const sig = query.get("signature") ?? "";
  if (!/^\d{1,12}$/.test(expires) || !box.verify(uploadClaim(videoId, uploadId, part, Number(expires)), sig)) return "signature";
  return Number(expires) * 1000 < now ? "expired" : "ok";
}
