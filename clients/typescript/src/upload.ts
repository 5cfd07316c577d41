// Resumable upload of a file to hosting (Node): CreateMultipartUpload, one PUT per part, then
// CompleteUpload. The state to resume is handed to `onState` before the first part goes out; a
// later call given that state asks the service which parts it holds (ListUploadParts) and sends
// only the rest.
import { open, stat } from "node:fs/promises";
import path from "node:path";
import type { MediaClient } from "./client.js";
import type { UploadPart, Video, VideoVisibility } from "./gen/media/v1/video_pb.js";

/** What resumes an upload: keep it (e.g. as JSON in a file) until uploadFile answers. */
export interface UploadState {
  readonly videoId: string;
  readonly uploadId: string;
  readonly size: number;
  readonly partSizeBytes: number;
}

export interface UploadOptions {
  readonly title?: string;
  readonly description?: string;
  readonly visibility?: VideoVisibility;
  readonly appId?: string;
  /** MIME type; default from the file's extension (video/mp4 when unknown). */
  readonly contentType?: string;
  /** 5 MiB or more; default 16 MiB. */
  readonly partSizeBytes?: number;
  /** The state an earlier, interrupted call handed to onState: resumes that upload. */
  readonly resume?: UploadState;
  /** Called once the upload exists, before any part is sent: persist it to resume after a crash. */
  readonly onState?: (state: UploadState) => void | Promise<void>;
  /** Called after each part is stored, with the bytes stored so far. */
  readonly onProgress?: (storedBytes: number, totalBytes: number) => void;
  readonly signal?: AbortSignal;
}

const TYPES: Record<string, string> = {
  ".mp4": "video/mp4",
  ".mov": "video/quicktime",
  ".mkv": "video/x-matroska",
  ".webm": "video/webm",
  ".ts": "video/mp2t",
};
const MIN_PART = 5 * 1024 * 1024;

/** Uploads `file` (resuming `options.resume` when given) and answers the video, now processing. */
export async function uploadFile(client: MediaClient, file: string, options: UploadOptions = {}): Promise<Video> {
  const info = await stat(file);
  if (!info.isFile() || info.size === 0) throw new TypeError(`${file} is not a non-empty file`);
  const call = options.signal ? { signal: options.signal } : {};
  let state: UploadState;
  let todo: readonly UploadPart[];
  if (options.resume) {
    state = options.resume;
    if (state.size !== info.size) throw new TypeError(`${file} is ${info.size} bytes; the upload to resume was of ${state.size}: start a new one`);
    todo = (await client.videos.listUploadParts({ id: state.videoId, uploadId: state.uploadId }, call)).missing;
  } else {
    const created = await client.videos.createMultipartUpload(
      {
        filename: path.basename(file),
        contentType: options.contentType ?? TYPES[path.extname(file).toLowerCase()] ?? "video/mp4",
        sizeBytes: BigInt(info.size),
        partSizeBytes: BigInt(Math.max(MIN_PART, options.partSizeBytes ?? 16 * 1024 * 1024)),
        title: options.title ?? "",
        description: options.description ?? "",
        ...(options.appId ? { appId: options.appId } : {}),
        ...(options.visibility !== undefined ? { visibility: options.visibility } : {}),
      },
      call,
    );
    state = { videoId: created.video!.id, uploadId: created.uploadId, size: info.size, partSizeBytes: Number(created.partSizeBytes) };
    todo = created.parts;
    await options.onState?.(state);
  }
  const fetcher = client.options.fetch ?? globalThis.fetch;
  const partsTotal = Math.ceil(state.size / state.partSizeBytes);
  let stored = state.size - todo.reduce((s, p) => s + partLength(state, p.partNumber), 0);
  const handle = await open(file, "r");
  try {
    for (const part of todo) {
      if (part.partNumber < 1 || part.partNumber > partsTotal) throw new Error(`the service asked for part ${part.partNumber} of ${partsTotal}`);
      const length = partLength(state, part.partNumber);
      const bytes = new Uint8Array(new ArrayBuffer(length));
      await handle.read(bytes, 0, length, (part.partNumber - 1) * state.partSizeBytes);
      await putPart(fetcher, part, bytes, options.signal);
      stored += length;
      options.onProgress?.(stored, state.size);
    }
  } finally {
    await handle.close();
  }
  const listed = await client.videos.listUploadParts({ id: state.videoId, uploadId: state.uploadId }, call);
  if (listed.missing.length > 0)
    throw new Error(`parts ${listed.missing.map((p) => p.partNumber).join(", ")} of ${state.videoId} are not stored: resume the upload`);
  const parts = listed.stored.map((p) => ({ partNumber: p.partNumber, etag: p.etag }));
  return (await client.videos.completeUpload({ id: state.videoId, uploadId: state.uploadId, parts }, call)).video!;
}

function partLength(state: UploadState, partNumber: number): number {
  return Math.min(state.partSizeBytes, state.size - (partNumber - 1) * state.partSizeBytes);
}

/** One part's PUT, tried 3 times: a part is stored whole or not at all, so sending it again is safe. */
async function putPart(fetcher: typeof fetch, part: UploadPart, bytes: Uint8Array<ArrayBuffer>, signal: AbortSignal | undefined): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    let failure: string;
    try {
      const res = await fetcher(part.uploadUrl, { method: "PUT", body: bytes, ...(signal ? { signal } : {}) });
      if (res.ok) return void (await res.arrayBuffer());
      failure = `HTTP ${res.status} ${await res.text()}`;
      if (res.status < 500 && res.status !== 429) throw new Error(`part ${part.partNumber} was refused: ${failure}`);
    } catch (e) {
      if (signal?.aborted || (e as Error).message.startsWith(`part ${part.partNumber} was refused`)) throw e;
      failure = (e as Error).message;
    }
    if (attempt >= 3) throw new Error(`part ${part.partNumber} failed 3 times (${failure}): resume the upload`);
    await new Promise((r) => setTimeout(r, 500 * attempt));
  }
}
