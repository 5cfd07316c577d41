// One file's resumable upload: CreateMultipartUpload once, each part PUT to its presigned URL
// (its ETag kept), CompleteUpload at the end. The upload's ids live in localStorage under the
// file's name, size and date, so after a reload the same file picked again asks ListUploadParts
// which parts the store holds and sends only the rest.
import { SubtitleSource } from "../../src/gen/media/v1/job_pb.js";
import { api } from "./api.js";

export interface Progress {
  readonly sent: number;
  readonly total: number;
  /** Bytes a second over the last few seconds. */
  readonly speed: number;
  readonly state: "uploading" | "paused" | "done" | "failed";
  readonly videoId: string;
  readonly error?: string;
}

interface Saved {
  readonly videoId: string;
  readonly uploadId: string;
}

const PART_BYTES = 8 * 1024 * 1024;

const keyOf = (f: File) => `media-upload:${f.name}:${f.size}:${f.lastModified}`;

export class Upload {
  private paused = false;
  private controller: AbortController | undefined;
  private samples: { at: number; sent: number }[] = [];
  private etags = new Map<number, string>();
  private sent = 0;
  videoId = "";

  constructor(
    readonly file: File,
    private readonly appId: string,
    private readonly onProgress: (p: Progress) => void,
    /** Captions generated from the video's speech, in its spoken language. */
    private readonly captions = false,
  ) {}

  pause(): void {
    this.paused = true;
    this.controller?.abort();
    this.report("paused");
  }

  async start(): Promise<void> {
    this.paused = false;
    try {
      const { uploadId, parts, partSize } = await this.plan();
      for (const part of parts) {
        if (this.paused) return;
        const start = (part.partNumber - 1) * partSize;
        const blob = this.file.slice(start, Math.min(start + partSize, this.file.size));
        this.etags.set(part.partNumber, await this.put(part.uploadUrl, blob));
      }
      const sorted = [...this.etags].sort((a, b) => a[0] - b[0]).map(([partNumber, etag]) => ({ partNumber, etag }));
      await api.videos.completeUpload({ id: this.videoId, uploadId, parts: sorted });
      localStorage.removeItem(keyOf(this.file));
      this.report("done");
    } catch (e) {
      if (this.paused) return;
      this.report("failed", e instanceof Error ? e.message : String(e));
    }
  }

  /** The parts still to send: all of a new upload, or those the store lacks of a saved one. */
  private async plan(): Promise<{ uploadId: string; parts: { partNumber: number; uploadUrl: string }[]; partSize: number }> {
    const saved = JSON.parse(localStorage.getItem(keyOf(this.file)) ?? "null") as Saved | null;
    if (saved) {
      try {
        const listed = await api.videos.listUploadParts({ id: saved.videoId, uploadId: saved.uploadId });
        this.videoId = saved.videoId;
        const partSize = Number(listed.partSizeBytes);
        this.sent = 0;
        for (const p of listed.stored) {
          this.etags.set(p.partNumber, p.etag);
          this.sent += Number(p.sizeBytes);
        }
        this.report("uploading");
        return { uploadId: saved.uploadId, parts: listed.missing, partSize };
      } catch {
        localStorage.removeItem(keyOf(this.file)); // expired or unknown: start again
      }
    }
    const created = await api.videos.createMultipartUpload({
      appId: this.appId,
      filename: this.file.name,
      contentType: this.file.type || "video/mp4",
      sizeBytes: BigInt(this.file.size),
      // Parts of 8 MiB (more for files past 80 GB, at most 10,000 parts): a resume after a reload resends little.
      partSizeBytes: BigInt(Math.max(PART_BYTES, Math.ceil(this.file.size / 10_000))),
      title: this.file.name.replace(/\.[^.]+$/, ""),
      subtitleTracks: this.captions ? [{ source: SubtitleSource.GENERATED, name: "Captions", isDefault: true }] : [],
    });
    this.videoId = created.video!.id;
    localStorage.setItem(keyOf(this.file), JSON.stringify({ videoId: this.videoId, uploadId: created.uploadId } satisfies Saved));
    this.report("uploading");
    return { uploadId: created.uploadId, parts: created.parts, partSize: Number(created.partSizeBytes) };
  }

  /** PUTs one part with progress events (XMLHttpRequest: fetch reports no upload progress). */
  private put(url: string, blob: Blob): Promise<string> {
    this.controller = new AbortController();
    const signal = this.controller.signal;
    const base = this.sent;
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("PUT", url);
      xhr.upload.onprogress = (e) => {
        this.sent = base + e.loaded;
        this.report("uploading");
      };
      xhr.onload = () => {
        if (xhr.status >= 200 && xhr.status < 300) {
          this.sent = base + blob.size;
          resolve(xhr.getResponseHeader("etag") ?? "");
        } else reject(new Error(`part upload answered ${xhr.status}`));
      };
      xhr.onerror = () => reject(new Error("the part upload failed"));
      xhr.onabort = () => reject(new Error("paused"));
      signal.addEventListener("abort", () => xhr.abort());
      xhr.send(blob);
    });
  }

  private report(state: Progress["state"], error?: string): void {
    const now = performance.now();
    this.samples.push({ at: now, sent: this.sent });
    while (this.samples.length > 2 && now - this.samples[0]!.at > 3000) this.samples.shift();
    const first = this.samples[0]!;
    const speed = now > first.at ? ((this.sent - first.sent) * 1000) / (now - first.at) : 0;
    this.onProgress({ sent: this.sent, total: this.file.size, speed, state, videoId: this.videoId, ...(error ? { error } : {}) });
  }
}
