// The hosting routes of the edge router, on every gateway: presigned uploads streamed into managed
// storage (a whole file, or one part of a multipart upload), token-checked playback of a video's
// playable directory (Bunny-compatible directory tokens in the path, so playlists' relative URIs
// stay covered), and the player page with its token renewal.
import { Video, VIDEOS, type VideoRecord } from "../actors/video/messages.js";
import type { AppRecord, Directory } from "../src/directory.js";
import { verifyDirectoryPath } from "../src/cdn-token.js";
import { clearKeyLicense, clearKeyRequest, DRM_LIMITS } from "../src/drm/clearkey.js";
import { openKeys } from "../src/drm/keys.js";
import { HOSTING_LIMITS, partsPrefix, sourceKey, verifyingKeys } from "../src/hosting.js";
import { contentTypeOf } from "../src/content-types.js";
import type { SecretBox } from "../src/secrets.js";
import type { Store } from "../src/store/port.js";
import { uploadReceived, type EdgeKind } from "../src/metrics-flow.js";
import { EdgeError, entityResponse, fileResponse, type EdgeRequest, type EdgeResponse, type EdgeRoute } from "./edge.js";
import { EdgeRefused, measured, playbackKind } from "./edge-metrics.js";
import { uploadAllowed, videoLinks, type Hosting } from "./hosting.js";
import { playerAssetRoutes, renderPlayerPage } from "./player.js";

export interface HostingEdgeDeps {
  readonly store: Store;
  readonly directory: Directory;
  readonly box: SecretBox;
  /** The edge reads its playback cache too, not only forgets in it. */
  readonly hosting: Hosting & { readonly playback: PlaybackRecords };
}

/** Segments and images never change under their name; playlists of a finished VOD neither, but stay short-lived. */
/**
 * Segments are immutable; playlists are kept a minute, except while the video's ladder still
 * encodes: then they grow (the master gains rungs, media playlists segments) and every read is
 * checked again. The record read may be 5 s old, and a stale one still says "encoding": never
 * the other way round.
 */
const cacheControlOf = (file: string, encoding: boolean) =>
  file.endsWith(".m3u8") || file.endsWith(".mpd") ? (encoding ? "no-cache" : "public, max-age=60") : "public, max-age=31536000, immutable";

/** The updates of an entity, as the gateway's hub hands them out; returns the unsubscribe function. */
export type FollowUpdates = (type: string, id: string, listener: () => void) => () => void;

interface PlaybackEntry {
  readonly at: number;
  readonly video: VideoRecord | undefined;
  readonly app: AppRecord | undefined;
  readonly keys: string[];
}

/**
 * Videos and apps of recent playback requests: every segment would otherwise cost two store reads
 * and a key decryption. An entry goes when its video changes: the video's own updates (in-process
 * in the embedded mode, over the updates topic in a cluster) and, at once, the gateway that
 * answered an Archive, Delete or Update (`forget`), so a takedown holds when its call returns. The
 * time to live bounds what a missed update could leave behind.
 */
export class PlaybackRecords {
  private readonly entries = new Map<string, PlaybackEntry>();
  /** Unsubscribe functions of the videos followed, one per cached entry. */
  private readonly following = new Map<string, () => void>();
  /** Bumped by every forget: a read that started before it is not cached. */
  private readonly generation = new Map<string, number>();

  constructor(
    private readonly d: { readonly store: Store; readonly directory: Directory; readonly box: SecretBox },
    private readonly follow: FollowUpdates | undefined,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
  ) {}

  /** The video, its app, and the keys its tokens may be signed with (decrypted once per entry). */
  async get(videoId: string): Promise<PlaybackEntry> {
    const now = Date.now();
    const hit = this.entries.get(videoId);
    if (hit && now - hit.at < this.ttlMs) return hit;
    if (this.entries.size >= this.maxEntries) this.clear();
    // Followed before the read: an update that lands during it forgets what the read returns.
    if (this.follow && !this.following.has(videoId))
      this.following.set(
        videoId,
        this.follow(Video.type, videoId, () => this.forget(videoId)),
      );
    const generation = this.generation.get(videoId) ?? 0;
    const video = (await this.d.store.get<VideoRecord>(VIDEOS, videoId))?.value;
    const app = video ? await this.d.directory.app(video.appId) : undefined;
    const entry = { at: now, video, app, keys: app?.hosting ? verifyingKeys(this.d.box, app.hosting, now) : [] };
    if ((this.generation.get(videoId) ?? 0) !== generation) return entry;
    this.entries.set(videoId, entry);
    return entry;
  }

  /** The video changed: its next request reads it again. */
  forget(videoId: string): void {
    this.entries.delete(videoId);
    this.generation.set(videoId, (this.generation.get(videoId) ?? 0) + 1);
    this.following.get(videoId)?.();
    this.following.delete(videoId);
    if (this.generation.size > this.maxEntries) this.generation.clear();
  }

  private clear(): void {
    for (const unsubscribe of this.following.values()) unsubscribe();
    this.following.clear();
    this.entries.clear();
  }
}

function json(status: number, value: unknown, header = new Headers()): EdgeResponse {
  header.set("content-type", "application/json");
  return { status, header, body: new TextEncoder().encode(JSON.stringify(value)) };
}

/** The kind of object each hosting route serves, for the edge metrics; playback's is told by its file. */
const ROUTE_KINDS: Readonly<Record<string, EdgeKind>> = {
  "PUT /uploads/:id": "upload",
  "PUT /uploads/:id/:upload/:part": "upload_part",
  "GET /v/:id": "player_page",
  "GET /v/:id/renew": "token_renewal",
  "POST /:token/play/*": "license",
  "GET /assets/player/:file": "player_asset",
};

export function hostingRoutes(d: HostingEdgeDeps): EdgeRoute[] {
  const recent = d.hosting.playback;
  const managed = d.hosting.managed;
  /** The main playlist of the video a playback request was for, once its token passed: that file is the master. */
  const masters = new WeakMap<EdgeRequest, string>();
  const playbackKindOf = (req: EdgeRequest) => playbackKind(`play/${req.params["*"] ?? ""}`, masters.get(req));

  /** The video an upload URL is for, when the URL is genuine and the video still takes bytes. */
  async function uploading(req: EdgeRequest, uploadId: string, part: number): Promise<VideoRecord> {
    const id = req.params.id!;
    const allowed = uploadAllowed(d.box, id, uploadId, part, req.query);
    if (allowed === "expired") throw new EdgeRefused(403, "upload_url_expired", "the upload URL has expired; ask for a new one");
    if (allowed !== "ok") throw new EdgeRefused(403, "upload_url_invalid", "the upload URL is not valid");
    const video = (await d.store.get<VideoRecord>(VIDEOS, id))?.value;
    if (!video?.upload) throw new EdgeError(404, "no such upload");
    if (video.status !== "uploading") throw new EdgeError(409, `the video is ${video.status}; it takes no more bytes`);
    return video;
  }

  const etag = (md5: string) => {
    const header = new Headers();
    header.set("etag", `"${md5}"`);
    return header;
  };

  const routes: EdgeRoute[] = [
    {
      method: "PUT",
      pattern: "/uploads/:id",
      maxBodyBytes: HOSTING_LIMITS.uploadBytes,
      handler: async (req) => {
        const video = await uploading(req, "", 0);
        if (video.upload!.kind !== "single") throw new EdgeError(409, "this video takes its file in parts: PUT each part to its own URL");
        const declared = req.header.get("content-length");
        if (declared !== null && Number(declared) !== video.upload!.sizeBytes)
          throw new EdgeError(400, `Content-Length ${declared} is not the ${video.upload!.sizeBytes} bytes declared at CreateUpload`);
        const { md5, size } = await managed.write(sourceKey(video.id), req.body, video.inputContentType || "application/octet-stream");
        uploadReceived("single", size);
        return { status: 200, header: etag(md5) };
      },
    },
    {
      method: "PUT",
      pattern: "/uploads/:id/:upload/:part",
      maxBodyBytes: HOSTING_LIMITS.uploadBytes,
      handler: async (req) => {
        const part = /^[1-9]\d{0,4}$/.test(req.params.part!) ? Number(req.params.part) : NaN;
        if (!(part >= 1 && part <= HOSTING_LIMITS.maxParts)) throw new EdgeError(400, "the part number must be 1 to 10000");
        const video = await uploading(req, req.params.upload!, part);
        const upload = video.upload!;
        if (upload.kind !== "multipart" || upload.uploadId !== req.params.upload) throw new EdgeError(404, "no such upload");
        const count = Math.ceil(upload.sizeBytes / upload.partSizeBytes);
        if (part > count) throw new EdgeError(400, `this upload has ${count} parts`);
        const expected = part < count ? upload.partSizeBytes : upload.sizeBytes - upload.partSizeBytes * (count - 1);
        const declared = req.header.get("content-length");
        if (declared !== null && Number(declared) !== expected) throw new EdgeError(400, `part ${part} must be ${expected} bytes, not ${declared}`);
        const stored = await managed.writePart(partsPrefix(video.id, upload.uploadId), part, limit(req.body, expected));
        uploadReceived("multipart", stored.size);
        return { status: 200, header: etag(stored.md5) };
      },
    },
    ...playerAssetRoutes(),
    {
      method: "GET",
      pattern: "/v/:id",
      handler: async (req) => {
        const page = await playable(req.params.id!);
        const header = new Headers();
        header.set("content-type", "text/html; charset=utf-8");
        header.set("cache-control", "no-store");
        header.set("referrer-policy", "strict-origin-when-cross-origin");
        const html = renderPlayerPage({
          videoId: page.video.id,
          title: page.video.title ?? "Video",
          playbackUrl: page.links.playbackUrl!,
          ...(page.links.posterUrl ? { posterUrl: page.links.posterUrl } : {}),
          // Paths on the page's own origin: the player base may be another name for this gateway.
          renewUrl: `/v/${page.video.id}/renew`,
          assetBase: "/assets/player",
          ...(page.video.drm && page.video.drm.scheme !== "aes128" ? { drm: "clearkey" as const } : {}),
        });
        return { status: 200, header, body: new TextEncoder().encode(html) };
      },
    },
    {
      method: "GET",
      pattern: "/v/:id/renew",
      handler: async (req) => {
        const page = await playable(req.params.id!);
        const header = new Headers();
        header.set("cache-control", "no-store");
        return json(200, { playback_url: page.links.playbackUrl, ...(page.links.posterUrl ? { poster_url: page.links.posterUrl } : {}) }, header);
      },
    },
    // The key server (src/drm): a protected video's keys, behind the same token as its media. The
    // routes hang under the playable directory, so the playlists' relative key URIs stay covered.
    {
      method: "POST",
      pattern: "/:token/play/*",
      maxBodyBytes: DRM_LIMITS.licenseRequestBytes,
      handler: async (req) => {
        const { video, filePath } = await covered(req);
        if (!/(^|\/)drm\/clearkey$/.test(filePath)) throw new EdgeError(404, "no such file");
        const drm = video.drm;
        if (!drm?.clearKey || drm.scheme === "aes128") throw new EdgeError(404, "this video has no Clear Key protection");
        const kids = clearKeyRequest(await readBody(req.body));
        if (!kids)
          throw new EdgeError(
            400,
            `a Clear Key license request is JSON {"kids": [1 to ${DRM_LIMITS.licenseRequestKids} base64url key IDs], "type": "temporary"}`,
          );
        const keys = openKeys(d.box, drm.sealed).filter((k) => kids.includes(k.kid));
        if (keys.length === 0) throw new EdgeRefused(403, "key_not_granted", "none of the requested key IDs belong to this video");
        const header = new Headers();
        header.set("cache-control", "no-store");
        return json(200, clearKeyLicense(keys), header);
      },
    },
    // Last: the token is the first path segment, so this pattern would take any GET.
    {
      method: "GET",
      pattern: "/:token/play/*",
      handler: async (req) => {
        const { video, filePath } = await covered(req);
        const key = filePath.slice(1);
        const raw = /(?:^|\/)drm\/([0-9a-f]{32})\.key$/.exec(key);
        if (raw) return rawKeyResponse(video, raw[1]!);
        const type = contentTypeOf(key);
        const extra = new Headers();
        extra.set("cache-control", cacheControlOf(key, video.encoding === true));
        if (managed.localFile) return fileResponse(req, managed.localFile(key), type, extra);
        return objectResponse(req, key, type, extra);
      },
    },
  ];

  /** The ready video a playback URL names, when its token is genuine, unexpired and covers the video's directory. */
  async function covered(req: EdgeRequest): Promise<{ video: VideoRecord; filePath: string }> {
    if (!req.params.token!.startsWith("bcdn_token=")) throw new EdgeError(404, "no such file");
    // The video is named by the path; its app's keys decide whether the token is genuine.
    const m = /^\/bcdn_token=[^/]*\/play\/(vid_[A-Za-z0-9]+)\//.exec(req.path);
    if (!m) throw new EdgeRefused(403, "token_outside", "the token does not cover this path");
    const { video, keys } = await recent.get(m[1]!);
    // The same answer for a video that is not there, so a token prober learns nothing; the metrics tell them apart.
    if (!video) throw new EdgeRefused(403, "not_found", "the token does not cover this path");
    if (keys.length === 0) throw new EdgeRefused(403, "token_outside", "the token does not cover this path");
    const check = verifyDirectoryPath(req.path, keys, Math.floor(Date.now() / 1000));
    if (!check.ok) throw new EdgeRefused(403, `token_${check.reason}`, `playback refused (${check.reason})`);
    if (check.tokenPath !== `/play/${video.id}/`) throw new EdgeRefused(403, "token_outside", "the token does not cover this path");
    if (video.status !== "ready") throw new EdgeRefused(403, "not_ready", `the video is ${video.status}`);
    if (video.playlistKey) masters.set(req, video.playlistKey);
    return { video, filePath: check.filePath };
  }

  /**
   * A content key of the video's, 16 raw bytes: HLS key format "identity", which hls.js and native
   * HLS fetch for AES-128 and Shaka Player for Clear Key SAMPLE-AES (the URI the packager wrote is
   * rewritten to this one: encoder-node/packager.ts).
   */
  function rawKeyResponse(video: VideoRecord, kid: string): EdgeResponse {
    const drm = video.drm;
    if (!drm?.clearKey || !drm.kids.some((k) => k.kid === kid)) throw new EdgeError(404, "no such key");
    const key = openKeys(d.box, drm.sealed).find((k) => k.kid === kid);
    if (!key) throw new EdgeError(404, "no such key");
    const header = new Headers();
    header.set("content-type", "application/octet-stream");
    header.set("cache-control", "no-store");
    return { status: 200, header, body: new Uint8Array(Buffer.from(key.key, "hex")) };
  }

  /** A ready, non-private video and its links for the player (private and missing ones: 404). */
  async function playable(id: string) {
    if (!/^vid_[A-Za-z0-9]{1,64}$/.test(id)) throw new EdgeError(404, "no such video");
    const video = (await d.store.get<VideoRecord>(VIDEOS, id))?.value;
    const app = video && (await d.directory.app(video.appId));
    if (!video || !app || video.visibility === "private" || video.status !== "ready") throw new EdgeError(404, "no such video");
    const links = videoLinks(video, app, d.box, d.hosting.publicUrl());
    if (!links.playbackUrl) throw new EdgeError(404, "no such video");
    return { video, links };
  }

  /** An object of managed storage as an answer (S3): its ETag and ranges read from the bucket. */
  async function objectResponse(req: EdgeRequest, key: string, contentType: string, extra: Headers): Promise<EdgeResponse> {
    const info = await managed.stat(key);
    if (!info) throw new EdgeError(404, "no such file");
    return entityResponse(req, info, contentType, extra, (start, end) => managed.read(key, start, end));
  }

  return routes.map((r) => measured(r, ROUTE_KINDS[`${r.method} ${r.pattern}`] ?? playbackKindOf));
}

async function readBody(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** A part's body held to its size: a longer one is refused rather than stored. */
async function* limit(body: AsyncIterable<Uint8Array>, max: number): AsyncIterable<Uint8Array> {
  let read = 0;
  for await (const chunk of body) {
    read += chunk.byteLength;
    if (read > max) throw new EdgeError(400, `the part is longer than its ${max} bytes`);
    yield chunk;
  }
}
