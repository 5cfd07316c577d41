// A job's thumbnails, after its outputs: rendered from the input, stored under the job's
// thumbnail prefix (a sprite's WebVTT index beside its image), reported once.
import { fromJson } from "@bufbuild/protobuf";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { JobRecord, ThumbnailResultData } from "../../actors/job/messages.js";
import type { BlobStore } from "../../src/blob/index.js";
import { contentTypeOf } from "../../src/content-types.js";
import { ThumbnailSpecSchema } from "../../src/gen/media/v1/job_pb.js";
import type { ProbeResult } from "../probe.js";
import type { Executors } from "./context.js";

/** Renders and stores the job's thumbnails; what the job records of them. */
export async function storeThumbnails(
  exec: Pick<Executors, "renderThumbnails">,
  blob: BlobStore,
  job: JobRecord,
  input: { file: string; probe: ProbeResult },
  workDir: string,
  signal: AbortSignal,
): Promise<ThumbnailResultData[]> {
  const dir = path.join(workDir, "thumbnails");
  await mkdir(dir, { recursive: true });
  const specs = job.thumbnails.map((t) => fromJson(ThumbnailSpecSchema, t));
  const artifacts = await exec.renderThumbnails(specs, input, { dir, signal });
  const results: ThumbnailResultData[] = [];
  for (const a of artifacts) {
    const key = `${job.thumbnailPrefix}/${a.file}`;
    // A sprite's WebVTT index names its tiles by the image's file name: it goes beside it.
    for (const f of a.indexFile ? [a.file, a.indexFile] : [a.file]) await blob.put(`${job.thumbnailPrefix}/${f}`, path.join(dir, f), contentTypeOf(f));
    results.push({
      url: blob.url(key),
      key,
      mode: a.mode,
      index: a.index,
      thumbnailIndex: a.thumbnailIndex,
      format: a.format,
      width: a.width,
      height: a.height,
      timeSeconds: a.timeSeconds,
      sizeBytes: a.sizeBytes,
    });
  }
  return results;
}
