// The join of a split ladder (chunks.ts): each chunked rung's media playlist written from the
// segments every chunk reported, in chunk order, and the master's facts (codecs, stored sizes)
// recorded for its writer. Re-encodes nothing.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ChunkRendition } from "../../actors/job/messages.js";
import { MediaError } from "../media-errors.js";
import { wholeRung, type OutputPlan } from "../plan.js";
import { hlsFactsOf } from "./hls-facts.js";

/**
 * Joins a chunked ladder in the main plan's folder: each chunked rung's media playlist (the
 * header of the whole rung's, its segments in chunk order, ended), then the master's facts hold
 * their codecs and segment sizes, for writeHlsMaster. `chunks` holds every chunk's
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
  const facts = hlsFactsOf(master);
  const stored: Record<string, number> = { ...facts.storedBytes };
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
    if (master.variants.some((v) => v.playlist === rung.file)) facts.codecs.set(rung.file, chunks[0]!.find((x) => x.playlist === rung.file)!.codecs);
  }
  facts.storedBytes = stored;
  return byFolder;
}

/** A media playlist a chunked plan's own command writes: its whole rung's, else its first audio track's. */
function wholePlaylist(plan: OutputPlan): string {
  const file = wholeRung(plan) ?? plan.hlsMaster?.audio[0]?.playlist;
  if (!file) throw new MediaError("internal", "a chunked plan that encodes neither a rung nor audio of its own");
  return file;
}
