// A job's input on the node: a local copy fetched once per job through the network guard, from
// managed storage (a hosted video's source), an origin, or a URL.
import { existsSync } from "node:fs";
import { mkdir, rename } from "node:fs/promises";
import path from "node:path";
import { BlobError, fetchUrlToFile, parseStorageUrl } from "../../src/blob/index.js";
import { sourceKey } from "../../src/hosting.js";
import type { Config } from "../../src/config.js";
import type { JobRecord } from "../../actors/job/messages.js";
import type { ManagedStorage } from "../../src/managed-storage.js";
import type { NetGuard } from "../../src/net-guard.js";
import { openOriginBlob, originKey } from "../../src/origins.js";
import type { SecretBox } from "../../src/secrets.js";
import { MediaError } from "../media-errors.js";

export interface InputDeps {
  readonly box: SecretBox;
  readonly guard: NetGuard;
  readonly config: Config;
  readonly managed: ManagedStorage;
}

/** Where a job's input lives on the node: one file per job in the node's work folder. */
export const inputFileOf = (workRoot: string, job: Pick<JobRecord, "id">) => path.join(workRoot, job.id, "input");

/** A local copy of the job's input, fetched through the network guard (for a chunk, without storing a hosted video's source again). */
export async function fetchInput(d: InputDeps, file: string, job: JobRecord, signal: AbortSignal, forChunk = false): Promise<string> {
  if (existsSync(file)) return file;
  await mkdir(path.dirname(file), { recursive: true });
  const partial = `${file}.part`;
  if (job.inputVideoId) {
    // A hosted video's source; a job that needs a deleted one says so.
    try {
      await d.managed.blob.getToFile(sourceKey(job.inputVideoId), partial);
    } catch (e) {
      if (e instanceof BlobError && e.kind === "not_found")
        throw new MediaError("input_unreachable", `the source file of ${job.inputVideoId} is not in managed storage (deleted, or never uploaded)`);
      throw e;
    }
  } else if (job.inputOrigin) {
    const blob = openOriginBlob(job.inputOrigin, d.box, d.guard, d.config);
    await blob.getToFile(originKey(job.inputOrigin, job.inputPath), partial);
  } else if (job.inputUrl.startsWith("https://") || (job.managed && job.inputUrl.startsWith("http://"))) {
    // Plain http only for URL ingest of hosted videos (the spec allows it there), still through the guard.
    await fetchUrlToFile(job.inputUrl, partial, d.guard, { allowHttp: job.inputUrl.startsWith("http://") });
  } else if (job.inputUrlOrigin) {
    const { key } = parseStorageUrl(job.inputUrl);
    await openOriginBlob(job.inputUrlOrigin, d.box, d.guard, d.config).getToFile(key, partial);
  } else {
    throw new MediaError("input_unreachable", `no way to read ${job.inputUrl || job.inputVideoId}`);
  }
  if (signal.aborted) throw new MediaError("canceled", "canceled");
  // A hosted video ingested from a URL or a bucket keeps its source, as an upload does.
  if (job.managed && !job.inputVideoId && !forChunk) await d.managed.blob.put(sourceKey(job.managed.videoId), partial);
  await rename(partial, file);
  return file;
}
