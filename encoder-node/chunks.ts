// One ladder, many encoder nodes: what a chunk produced, and the join. A chunked output's lowest
// rung and audio are encoded whole by the node that runs its encode task; its other rungs are cut
// into chunks of whole segments (plan.ts chunkSpans), each encoded wherever a node is free, its
// segments stored under the names and timestamps they have in the whole (plan.ts PlanOptions.chunk).
// The join (manifests/chunk-join.ts) re-encodes nothing: each rung's media playlist lists every
// chunk's segments in order, and the master is measured from the sizes the chunks reported.
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { MediaError } from "./media-errors.js";
import { parseMediaPlaylist, playlistCodecString } from "./manifests/media-playlist.js";
import type { ChunkRendition } from "../actors/job/messages.js";
import type { OutputPlan } from "./plan.js";

export { joinChunks } from "./manifests/chunk-join.js";

/** One rung of one chunk: its segments (file names in the rung's folder, seconds, bytes) and its codec string, as the job records it. */
export type { ChunkRendition } from "../actors/job/messages.js";

/** What a chunk plan wrote, read after runPlan: per rung, its segments and codecs. */
export async function chunkRenditions(plan: OutputPlan, signal: AbortSignal): Promise<ChunkRendition[]> {
  return Promise.all(
    (plan.renditions ?? []).map(async (r) => {
      const file = path.join(plan.dir, r.file);
      const media = parseMediaPlaylist(await readFile(file, "utf8"));
      if (media.segments.length === 0) throw new MediaError("encode_failed", `the chunk's ${r.name} playlist lists no segments`);
      const base = path.dirname(file);
      const segments = await Promise.all(
        media.segments.map(async (s) => ({ uri: s.uri, duration: s.duration, bytes: (await stat(path.join(base, s.uri))).size })),
      );
      return { playlist: r.file, codecs: await playlistCodecString(base, media, signal), segments };
    }),
  );
}

/** Files a chunk stores: its segments (and fmp4's init segment), not its playlists, which the join writes. */
export async function chunkFiles(plan: OutputPlan): Promise<string[]> {
  const files: string[] = [];
  for (const r of plan.renditions ?? []) {
    const media = parseMediaPlaylist(await readFile(path.join(plan.dir, r.file), "utf8"));
    const folder = path.posix.dirname(r.file);
    if (media.init) files.push(path.posix.join(folder, media.init));
    for (const s of media.segments) files.push(path.posix.join(folder, s.uri));
  }
  return files;
}
