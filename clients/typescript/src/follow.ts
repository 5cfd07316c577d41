// Following things to their end: a job through Watch until its terminal status, a video until it
// plays, and every page of a list as one async iterator.
import { ConnectError } from "@connectrpc/connect";
import type { MediaClient } from "./client.js";
import { MediaApiError } from "./errors.js";
import type { PaginationResponse } from "./gen/media/v1/common_pb.js";
import { JobStatus, type Job, type WatchJobResponse } from "./gen/media/v1/job_pb.js";
import { VideoStatus, type Video, type WatchVideoResponse } from "./gen/media/v1/video_pb.js";

const ENDED = new Set([JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELED, JobStatus.PARTIAL]);

async function* typedErrors<T>(procedure: string, stream: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* stream;
  } catch (e) {
    throw e instanceof MediaApiError ? e : new MediaApiError(ConnectError.from(e), procedure);
  }
}

/** The job's updates as Watch sends them: `snapshot`, then `updated`, then its terminal status name. */
export function watchJob(client: MediaClient, id: string, options: { signal?: AbortSignal } = {}): AsyncIterable<WatchJobResponse> {
  return typedErrors("media.v1.JobService/Watch", client.jobs.watch({ id }, options.signal ? { signal: options.signal } : {}));
}

/**
 * Follows a job with Watch until it ends (completed, failed, canceled or partial) and answers it;
 * `onUpdate` sees every state on the way. A stream cut before the end is opened again (Watch
 * starts with the current snapshot), up to `reconnects` times.
 */
export async function followJob(
  client: MediaClient,
  id: string,
  options: { signal?: AbortSignal; onUpdate?: (job: Job, eventType: string) => void; reconnects?: number } = {},
): Promise<Job> {
  for (let left = options.reconnects ?? 3; ; left--) {
    try {
      for await (const m of watchJob(client, id, options)) {
        if (!m.job) continue;
        options.onUpdate?.(m.job, m.eventType);
        if (ENDED.has(m.job.status)) return m.job;
      }
    } catch (e) {
      if (left <= 0 || !(e instanceof MediaApiError) || !["unavailable", "unknown", "internal"].includes(e.errorCode)) throw e;
      continue;
    }
    if (left <= 0) throw new Error(`the Watch stream of ${id} ended before the job did`);
  }
}

/** Thrown by waitUntilPlayable when the video failed instead. */
export class VideoFailedError extends Error {
  override name = "VideoFailedError";
  constructor(readonly video: Video) {
    super(
      `video ${video.id} is ${VideoStatus[video.status]?.toLowerCase() ?? video.status}: ${video.errorCode || "no error code"} ${video.errorMessage ?? ""}`.trim(),
    );
  }
}

/**
 * Follows a video with Watch until it plays (status ready: its stream plays, possibly still
 * encoding the higher rungs) and answers it with its playback URL; throws VideoFailedError when it
 * ends in error or is taken down instead.
 */
export async function waitUntilPlayable(
  client: MediaClient,
  id: string,
  options: { signal?: AbortSignal; onUpdate?: (video: Video) => void } = {},
): Promise<Video> {
  const stream: AsyncIterable<WatchVideoResponse> = typedErrors(
    "media.v1.VideoService/Watch",
    client.videos.watch({ id }, options.signal ? { signal: options.signal } : {}),
  );
  for await (const m of stream) {
    if (!m.video) continue;
    options.onUpdate?.(m.video);
    if (m.video.status === VideoStatus.READY) return m.video;
    if ([VideoStatus.ERROR, VideoStatus.ARCHIVED, VideoStatus.DELETED].includes(m.video.status)) throw new VideoFailedError(m.video);
  }
  throw new Error(`the Watch stream of ${id} ended before the video played`);
}

/** A list method taking `pagination` and answering `pagination.next_cursor`. */
type CursorList<Req, Res> = (
  request: Req & { pagination?: { limit?: number; cursor?: string } },
) => Promise<Res & { pagination?: PaginationResponse | undefined }>;

/**
 * Every item of a cursor-paged list, page after page: `paginate(client.jobs.list, { status }, (r) => r.jobs)`.
 * `pageSize` is the limit of each page (1 to 100, default 100).
 */
export async function* paginate<Req extends object, Res, Item>(
  list: CursorList<Req, Res>,
  request: Req,
  items: (response: Res) => readonly Item[],
  pageSize = 100,
): AsyncGenerator<Item> {
  let cursor = "";
  for (;;) {
    const page = await list({ ...request, pagination: { limit: pageSize, cursor } });
    yield* items(page);
    cursor = page.pagination?.nextCursor ?? "";
    if (!cursor) return;
  }
}

/** Every video (the video list pages with page_size and page_token, as the spec has it). */
export async function* allVideos(
  client: MediaClient,
  filter: { status?: VideoStatus; tag?: string; titleQuery?: string } = {},
  pageSize = 100,
): AsyncGenerator<Video> {
  let pageToken = "";
  for (;;) {
    const page = await client.videos.list({ ...filter, pageSize, pageToken });
    yield* page.videos;
    pageToken = page.nextPageToken;
    if (!pageToken) return;
  }
}
