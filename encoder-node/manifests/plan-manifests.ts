// A plan's manifests once its commands (and packaging) ran, by the plan's kind: aes_128's codecs
// read from a decrypted segment, the MPD finished, the HLS master written (a split ladder's waits
// for its join).
import path from "node:path";
import type { ContentKey } from "../../src/drm/types.js";
import type { HlsMasterPlan, OutputPlan, PlanKind, PlanOf } from "../plan.js";
import { readAes128Codecs } from "./aes128-codecs.js";
import { hlsFactsOf } from "./hls-facts.js";
import { writeHlsMaster } from "./hls-master.js";
import { finishMpd } from "./mpd.js";

type ManifestWriter<P> = (plan: P, key: ContentKey | undefined, signal: AbortSignal) => Promise<void>;

const masterOf = async (plan: { readonly dir: string; readonly hlsMaster?: HlsMasterPlan }, signal: AbortSignal) => {
  if (plan.hlsMaster) await writeHlsMaster(plan.dir, plan.hlsMaster, signal);
};

/** One writer per kind of plan: a kind without its writer does not compile. */
const WRITERS: { [K in PlanKind]: ManifestWriter<PlanOf<K>> } = {
  file: async () => {},
  // A chunk's playlists are joined into the whole by the encode that split it (chunk-join.ts).
  chunk: async () => {},
  hls: async (plan, key, signal) => {
    if (plan.aes128 && key) await readAes128Codecs(plan.dir, plan.hlsMaster, hlsFactsOf(plan.hlsMaster), key, path.dirname(plan.aes128.keyInfoFile), signal);
    // A chunked ladder's master waits for the join (manifests/chunk-join.ts).
    if (!plan.chunked) await masterOf(plan, signal);
  },
  dash: async (plan, _key, signal) => {
    await finishMpd(plan.dir, plan.dashManifest);
    await masterOf(plan, signal);
  },
  packaged: async (plan, _key, signal) => {
    if (plan.dashManifest) await finishMpd(plan.dir, plan.dashManifest);
    await masterOf(plan, signal);
  },
};

export function writePlanManifests(plan: OutputPlan, key: ContentKey | undefined, signal: AbortSignal): Promise<void> {
  // TypeScript does not tie WRITERS[plan.kind] to plan's own kind; the table's type does.
  const write = WRITERS[plan.kind ?? "file"] as ManifestWriter<OutputPlan>;
  return write(plan, key, signal);
}
