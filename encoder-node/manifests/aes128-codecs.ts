// aes_128: ffprobe cannot read an encrypted ts segment, so each media playlist's codec string, and
// the first media timestamp, are read here once from its first segment decrypted, and recorded as
// facts for every later write of the master (the subtitle renditions write it again, after the key is gone).
import { createDecipheriv } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ContentKey } from "../../src/drm/types.js";
import { MediaError } from "../media-errors.js";
import { probeStartSeconds, probeStreamCodec } from "../probe.js";
import type { HlsMasterPlan } from "../plan.js";
import type { HlsFacts } from "./hls-facts.js";
import { codecString, parseMediaPlaylist } from "./media-playlist.js";

/** Reads the codecs of the master's playlists whose codecs are not known yet (and the first timestamp) into `facts`, decrypting into `scratch`. */
export async function readAes128Codecs(
  dir: string,
  m: Pick<HlsMasterPlan, "variants" | "audio">,
  facts: HlsFacts,
  key: ContentKey,
  scratch: string,
  signal: AbortSignal,
): Promise<void> {
  for (const entry of [...m.variants, ...m.audio]) {
    if (facts.codecs.has(entry.playlist)) continue;
    const file = path.join(dir, entry.playlist);
    const text = await readFile(file, "utf8");
    const iv = /^#EXT-X-KEY:METHOD=AES-128,.*IV=0x([0-9a-f]{32})/im.exec(text)?.[1];
    const first = parseMediaPlaylist(text).segments[0];
    if (!iv || !first) throw new MediaError("encode_failed", `${entry.playlist} has no AES-128 key line with an IV, or no segment`);
    // With single_file the first segment is the file's first byte range.
    const bytes = (await readFile(path.join(path.dirname(file), first.uri))).subarray(0, first.bytes);
    const decipher = createDecipheriv("aes-128-cbc", Buffer.from(key.key, "hex"), Buffer.from(iv, "hex"));
    // The scratch folder is the key's, outside the plan's dir; gone once the commands ran (packager.ts).
    await mkdir(scratch, { recursive: true });
    const clear = path.join(scratch, "probe.ts");
    await writeFile(clear, Buffer.concat([decipher.update(bytes), decipher.final()]));
    facts.codecs.set(entry.playlist, codecString(await probeStreamCodec(clear, signal), false));
    facts.firstTimestampSeconds ??= await probeStartSeconds(clear, signal);
    await rm(clear, { force: true });
  }
}
