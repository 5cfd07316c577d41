// One ladder, many encoder nodes: what a chunk produced, and the join. A chunked output's lowest
// rung and audio are encoded whole by the node that runs its encode task; its other rungs are cut
// into chunks of whole segments (plan.ts chunkSpans), each encoded wherever a node is free, its
// segments stored under the names and timestamps they have in the whole (plan.ts PlanOptions.chunk).
// The join re-encodes nothing: each rung's media playlist lists every chunk's segments in order,
// and the master is measured from the sizes the chunks reported.
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { MediaError } from "./media-errors.js";
import { parseMediaPlaylist, playlistCodecString } from "./ffmpeg.js";
import type { OutputPlan } from "./plan.js";

/** One rung of one chunk: its segments (file names in the rung's folder, seconds, bytes) and its codec string. */
export interface ChunkRendition {
  readonly playlist: string;
  readonly codecs: string;
  readonly segments: readonly { readonly uri: string; readonly duration: number; readonly bytes: number }[];
}

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

/**
 * Joins a chunked ladder in the main plan's folder: each chunked rung's media playlist (the
 * header of the whole rung's, its segments in chunk order, ended), then the master plan knows
 * their codecs and segment sizes, to be written by writeHlsMaster. `chunks` holds every chunk's
 * renditions, in chunk order. Returns the bytes stored per rung folder.
 */
export async function joinChunks(plan: OutputPlan, chunks: readonly (readonly ChunkRendition[])[]): Promise<Map<string, number>> {
  const chunked = plan.chunked;
  const master = plan.hlsMaster;
  if (!chunked || !master) throw new MediaError("internal", "joining chunks of a plan that is not chunked");
  // The header of a playlist encoded whole (same muxer settings): version, init map, independence.
  const whole = (await readFile(path.join(plan.dir, wholePlaylist(plan)), "utf8")).split("\n");
  const header = whole.slice(
    0,
    whole.findIndex((l) => l.startsWith("#EXTINF:")),
  );
  const stored: Record<string, number> = { ...master.storedBytes };
  const byFolder = new Map<string, number>();
  for (const rung of chunked.rest) {
    const segments = chunks.flatMap((c, k) => {
      const r = c.find((x) => x.playlist === rung.file);
      if (!r) throw new MediaError("internal", `chunk ${k} has no ${rung.name} rendition`);
      return r.segments;
    });
    const target = Math.max(1, ...segments.map((s) => Math.ceil(s.duration - 1e-6)));
    const lines = header
      .filter((l) => !l.startsWith("#EXT-X-PLAYLIST-TYPE:"))
      .map((l) => (l.startsWith("#EXT-X-TARGETDURATION:") ? `#EXT-X-TARGETDURATION:${target}` : l));
    lines.splice(lines.findIndex((l) => l.startsWith("#EXT-X-TARGETDURATION:")) + 1, 0, "#EXT-X-PLAYLIST-TYPE:VOD");
    for (const s of segments) lines.push(`#EXTINF:${s.duration.toFixed(6)},`, s.uri);
    lines.push("#EXT-X-ENDLIST", "");
    const file = path.join(plan.dir, rung.file);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, lines.join("\n"));
    const folder = path.posix.dirname(rung.file);
    for (const s of segments) stored[path.posix.join(folder, s.uri)] = s.bytes;
    byFolder.set(
      folder,
      segments.reduce((sum, s) => sum + s.bytes, 0),
    );
    const variant = master.variants.find((v) => v.playlist === rung.file);
    if (variant) variant.codecs = chunks[0]!.find((x) => x.playlist === rung.file)!.codecs;
  }
  master.storedBytes = stored;
  return byFolder;
}

/** The rung a chunked plan encodes whole (the one rendition the chunks do not), if any. */
export function wholeRung(plan: OutputPlan): string | undefined {
  const rest = new Set(plan.chunked!.rest.map((r) => r.file));
  return (plan.renditions ?? []).find((r) => !rest.has(r.file))?.file;
}

/** A media playlist a chunked plan's own command writes: its whole rung's, else its first audio track's. */
function wholePlaylist(plan: OutputPlan): string {
  const file = wholeRung(plan) ?? plan.hlsMaster?.audio[0]?.playlist;
  if (!file) throw new MediaError("internal", "a chunked plan that encodes neither a rung nor audio of its own");
  return file;
}
