// Uploads of an output's local folder to its storage: every file under its deterministic key, the
// main file last, with the sizes the job records.
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { BlobStore } from "../../src/blob/index.js";
import { contentTypeOf } from "../../src/content-types.js";

/** What an upload stored: the total size, and the size under each top folder (a rendition's, for HLS). */
export interface Uploaded {
  readonly size: number;
  readonly byFolder: ReadonlyMap<string, number>;
}

/** A rendition's top folder (its name, for HLS). */
export const folderOf = (file: string) => (file.includes("/") ? file.slice(0, file.indexOf("/")) : "");

async function filesUnder(dir: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(dir, rel), { withFileTypes: true })) {
    const child = path.posix.join(rel, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(dir, child)));
    else out.push(child);
  }
  return out;
}

/** Uploads a plan's files; what a progressive output's publisher stored already (`stored`) is counted, not sent again. */
export async function upload(blob: BlobStore, dir: string, prefix: string, main: string, stored: ReadonlySet<string> = new Set()): Promise<Uploaded> {
  let size = 0;
  const byFolder = new Map<string, number>();
  // The main file last: a player that reads it finds everything it names.
  const files = (await filesUnder(dir)).sort((a, b) => Number(a === main) - Number(b === main));
  for (const rel of files) {
    const r = stored.has(rel) ? await stat(path.join(dir, rel)) : await blob.put(`${prefix}/${rel}`, path.join(dir, rel), contentTypeOf(rel));
    size += r.size;
    const folder = folderOf(rel);
    byFolder.set(folder, (byFolder.get(folder) ?? 0) + r.size);
  }
  return { size, byFolder };
}
